"""labkit.upstream restates upstream MiniMind's mask logic (module 05's worked examples). Its
padding path: from the minimind-3 release the -1e9 fill is added in place, so float16 scores keep
float16 and a left-padded pad row turns NaN; the earlier out-of-place add promotes to float32.
The upstream facts themselves were read with `git show COMMIT:model/model_minimind.py` and run on
upstream's file at each commit (module 05's guide says what that gave)."""

from __future__ import annotations

import pytest
import torch

import minimind_ref as mm
from labkit import upstream

LEFT = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])  # "the cat sat down", "<pad> <pad> a dog"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def qkv(dtype):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(2, 2, 4, 8, generator=generator).to(dtype) for _ in range(3)]


def nan_rows(out: torch.Tensor) -> torch.Tensor:
    return torch.isnan(out).any(-1).any(1)  # [B, T]


def test_the_fill_is_minus_infinity_in_float16_only():
    assert upstream.UPSTREAM_FILL == -1e9
    assert torch.tensor(upstream.UPSTREAM_FILL).half().item() == float("-inf")
    assert torch.isfinite(torch.tensor(upstream.UPSTREAM_FILL).bfloat16())
    scores = torch.zeros(2, dtype=torch.float16)
    fill = torch.full((2,), upstream.UPSTREAM_FILL)  # float32, as (1.0 - int mask) * -1e9 is
    assert (scores + fill).dtype == torch.float32  # out of place: promoted, finite
    scores += fill  # in place: float16 kept, -inf
    assert scores.dtype == torch.float16 and torch.isinf(scores).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("flash", [True, False])
def test_minimind3_padding_turns_the_pad_rows_nan_in_float16(dtype, flash):
    out = upstream.minimind3_attention(*qkv(dtype), cached=False, flash=flash, attention_mask=LEFT)
    expected = torch.zeros(2, 4, dtype=torch.bool)
    if dtype == torch.float16:
        expected[1, :2] = True  # exactly the queries that see no token: the two pads
        assert torch.equal(~mm.combined_mask(LEFT, 4, 4)[:, 0].any(-1), expected)
    assert torch.equal(nan_rows(out), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_minimind2_padding_promotes_to_float32_and_stays_finite(dtype):
    out = upstream.minimind2_attention(*qkv(dtype), cached=False, flash=True, attention_mask=LEFT)
    assert out.dtype == dtype and not nan_rows(out).any()


def test_the_nan_spreads_to_every_row_in_the_next_layer():
    q, k, v = qkv(torch.float16)
    first = upstream.minimind3_attention(q, k, v, cached=False, flash=True, attention_mask=LEFT)
    second = upstream.minimind3_attention(first, first, first, cached=False, flash=True, attention_mask=LEFT)
    assert nan_rows(second)[1].all() and not nan_rows(second)[0].any()


def test_the_padded_rows_that_are_real_tokens_match_the_truth_in_float32():
    q, k, v = qkv(torch.float32)
    mask = mm.combined_mask(LEFT, 4, 4)
    truth = mm.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    for path in (upstream.minimind2_attention, upstream.minimind3_attention):
        out = path(q, k, v, cached=False, flash=False, attention_mask=LEFT)
        real = LEFT.bool()[:, None, :, None].expand_as(out)
        torch.testing.assert_close(out[real], truth[real], rtol=1e-5, atol=1e-6)


def test_the_fix_keeps_float16_finite():
    q, k, v = qkv(torch.float16)
    out = mm.scaled_dot_product_attention(q, k, v, attn_mask=mm.combined_mask(LEFT, 4, 4))
    assert not torch.isnan(out).any() and (out[1, :, :2] == 0).all()
    filled = (q @ k.transpose(-2, -1)).masked_fill(~mm.combined_mask(LEFT, 4, 4), torch.finfo(q.dtype).min)
    assert not torch.isnan(torch.softmax(filled.float(), -1)).any()  # finfo.min: uniform pad rows, no NaN
