"""sliding_window_mask against a loop written from the definition, against transformers' own
sliding-window predicate, and against causal_mask when the window covers every key.

Convention: True = may attend. Query i of T sits at absolute position p = S - T + i and sees key j
exactly when p - window < j <= p: the `window` most recent keys, itself included.
"""

import pytest
import torch

from minimind_ref.masks import causal_mask, sliding_window_mask

SIZES = [(1, 1), (4, 4), (7, 7), (1, 9), (3, 9), (8, 9)]


def loop_sliding_window(query_len, key_len, window):
    mask = torch.zeros(query_len, key_len, dtype=torch.bool)
    for i in range(query_len):
        position = key_len - query_len + i  # absolute position of query i
        for j in range(key_len):
            mask[i, j] = position - window < j <= position
    return mask


@pytest.mark.parametrize("query_len,key_len", SIZES)
@pytest.mark.parametrize("window", [1, 2, 3, 5])
def test_sliding_window_equals_the_loop(query_len, key_len, window):
    mask = sliding_window_mask(query_len, key_len, window)
    assert mask.dtype == torch.bool and mask.shape == (query_len, key_len)
    assert torch.equal(mask, loop_sliding_window(query_len, key_len, window))


@pytest.mark.parametrize("query_len,key_len", SIZES)
@pytest.mark.parametrize("window", [1, 3])
def test_each_query_sees_exactly_min_window_and_its_position_keys(query_len, key_len, window):
    counts = sliding_window_mask(query_len, key_len, window).sum(dim=-1)
    positions = torch.arange(key_len - query_len, key_len)
    assert torch.equal(counts, torch.clamp(positions + 1, max=window))


@pytest.mark.parametrize("query_len,key_len", SIZES)
def test_window_covering_every_key_is_the_causal_mask(query_len, key_len):
    for window in (key_len, key_len + 1, 10 * key_len):
        assert torch.equal(sliding_window_mask(query_len, key_len, window), causal_mask(query_len, key_len))


def test_window_one_sees_only_itself():
    assert torch.equal(sliding_window_mask(5, 5, 1), torch.eye(5, dtype=torch.bool))
    assert sliding_window_mask(2, 6, 1).tolist() == [[False] * 4 + [True, False], [False] * 5 + [True]]


@pytest.mark.parametrize("query_len,key_len", [(6, 6), (2, 6), (1, 6)])
@pytest.mark.parametrize("window", [1, 2, 4])
def test_matches_transformers_sliding_window_predicate(query_len, key_len, window):
    masking_utils = pytest.importorskip("transformers.masking_utils")
    predicate = masking_utils.and_masks(masking_utils.causal_mask_function,
                                        masking_utils.sliding_window_overlay(window))
    expected = torch.zeros(query_len, key_len, dtype=torch.bool)
    zero = torch.tensor(0)
    for i in range(query_len):
        q_idx = torch.tensor(key_len - query_len + i)  # transformers indexes queries by absolute position
        for j in range(key_len):
            expected[i, j] = bool(predicate(zero, zero, q_idx, torch.tensor(j)))
    assert torch.equal(sliding_window_mask(query_len, key_len, window), expected)


def test_mask_is_made_on_the_requested_device():
    assert sliding_window_mask(3, 3, 2, device="cpu").device.type == "cpu"
    assert sliding_window_mask(3, 3, 2, device=torch.device("meta")).device.type == "meta"


@pytest.mark.parametrize("window", [0, -2])
def test_refuses_a_window_below_one(window):
    with pytest.raises(ValueError, match=rf"window >= 1.*got window={window}"):
        sliding_window_mask(4, 4, window)


@pytest.mark.parametrize("query_len,key_len", [(0, 3), (4, 3)])
def test_refuses_more_queries_than_keys(query_len, key_len):
    with pytest.raises(ValueError, match=rf"query_len={query_len}, key_len={key_len}"):
        sliding_window_mask(query_len, key_len, 2)


@pytest.mark.parametrize("args,name", [((4, 4, 2.0), "window"), ((4.0, 4, 2), "query_len"),
                                       ((4, None, 2), "key_len"), ((4, 4, True), "window")])
def test_refuses_non_integer_sizes_naming_the_argument(args, name):
    with pytest.raises(TypeError, match=rf"{name} must be an int"):
        sliding_window_mask(*args)
