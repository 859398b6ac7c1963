"""Causal and padding masks against brute-force loops written from the definitions.

Convention (torch's): True = may attend. Query i of T new tokens sits at absolute position
S - T + i among S keys, so it may see key j exactly when j <= S - T + i (bottom-right alignment).
"""

import pytest
import torch

from minimind_ref._checks import check_attention_mask
from minimind_ref.masks import causal_mask, combined_mask, padding_mask


def brute_force_causal(query_len, key_len):
    mask = torch.zeros(query_len, key_len, dtype=torch.bool)
    for i in range(query_len):
        position = key_len - query_len + i  # absolute position of query i
        for j in range(key_len):
            mask[i, j] = j <= position
    return mask


def brute_force_combined(attention_mask, query_len, causal=True):
    batch, key_len = attention_mask.shape
    mask = torch.zeros(batch, 1, query_len, key_len, dtype=torch.bool)
    for b in range(batch):
        for i in range(query_len):
            for j in range(key_len):
                visible = attention_mask[b, j] == 1
                if causal:
                    visible = visible and j <= key_len - query_len + i
                mask[b, 0, i, j] = bool(visible)
    return mask


@pytest.mark.parametrize("query_len,key_len", [(1, 1), (4, 4), (1, 9), (3, 9), (8, 9)])
def test_causal_mask_is_bottom_right(query_len, key_len):
    mask = causal_mask(query_len, key_len)
    assert mask.dtype == torch.bool and mask.shape == (query_len, key_len)
    assert torch.equal(mask, brute_force_causal(query_len, key_len))
    assert mask[-1].all()  # the newest token sees every key, itself included


def test_causal_mask_square_is_lower_triangular():
    assert torch.equal(causal_mask(3, 3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))


@pytest.mark.parametrize("query_len,key_len", [(-1, 3), (4, 3)])
def test_causal_mask_refuses_more_queries_than_keys(query_len, key_len):
    with pytest.raises(ValueError, match="query_len"):
        causal_mask(query_len, key_len)


def test_padding_mask_shape_and_values():
    attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    mask = padding_mask(attention_mask)
    assert mask.shape == (2, 1, 1, 5) and mask.dtype == torch.bool
    assert mask[0, 0, 0].tolist() == [False, False, True, True, True]
    assert mask[1].all()


def test_combined_mask_is_none_when_nothing_is_padded():
    assert combined_mask(None, 4, 4) is None
    assert combined_mask(torch.ones(3, 6, dtype=torch.long), 2, 6) is None
    assert combined_mask(torch.ones(3, 6, dtype=torch.bool), 6, 6) is None


@pytest.mark.parametrize("query_len", [6, 2, 1])
@pytest.mark.parametrize("causal", [True, False])
def test_combined_mask_equals_brute_force(query_len, causal):
    torch.manual_seed(0)
    attention_mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 0, 1]])
    mask = combined_mask(attention_mask, query_len, 6, causal=causal)
    assert mask.shape == (3, 1, query_len, 6)
    assert torch.equal(mask, brute_force_combined(attention_mask, query_len, causal))


def test_combined_mask_left_padding_hides_pad_rows_entirely():
    mask = combined_mask(torch.tensor([[0, 0, 1, 1]]), 4, 4)
    # the two pad queries see only pad keys in their past: nothing visible
    assert not mask[0, 0, 0].any() and not mask[0, 0, 1].any()
    assert mask[0, 0, 3].tolist() == [False, False, True, True]


def test_check_attention_mask_refuses_3d():
    with pytest.raises(ValueError, match=r"must be 2-D \[batch, key_len\].*\(2, 1, 5\)"):
        check_attention_mask(torch.ones(2, 1, 5))


def test_check_attention_mask_refuses_wrong_batch():
    with pytest.raises(ValueError, match=r"batch size 2 but input_ids has 3"):
        check_attention_mask(torch.ones(2, 5), batch_size=3)


def test_check_attention_mask_refuses_wrong_length_mentioning_the_cache():
    with pytest.raises(ValueError, match=r"covers 5 positions but attention sees 8 keys \(3 cached \+ 5 new.*KV cache"):
        check_attention_mask(torch.ones(2, 5), key_len=8, cached=3)
    with pytest.raises(ValueError, match=r"covers 5 positions but there are 8 tokens") as info:
        check_attention_mask(torch.ones(2, 5), key_len=8)  # no cache: the message does not speak of one
    assert "cache" not in str(info.value)
    with pytest.raises(ValueError, match=r"KV cache"):
        combined_mask(torch.ones(2, 5), 1, 8)  # decoding step whose mask forgot the cached tokens


@pytest.mark.parametrize("bad", [torch.tensor([[1, 2, 1]]), torch.tensor([[1.0, 0.5, 0.0]]),
                                 torch.tensor([[-1, 1, 1]])])
def test_check_attention_mask_refuses_values_other_than_0_and_1(bad):
    with pytest.raises(ValueError, match=r"only 0 \(padding\) and 1 \(token\)"):
        check_attention_mask(bad)


def test_check_attention_mask_refuses_non_tensor():
    with pytest.raises(TypeError, match="torch.Tensor"):
        check_attention_mask([[1, 1, 0]])


def test_check_attention_mask_accepts_valid_masks():
    check_attention_mask(torch.tensor([[0, 1, 1]]), batch_size=1, key_len=3)
    check_attention_mask(torch.tensor([[False, True, True]]), batch_size=1, key_len=3)
    check_attention_mask(torch.tensor([[0.0, 1.0, 1.0]]))
