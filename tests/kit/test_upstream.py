"""labkit.upstream restates upstream MiniMind's mask logic (module 05's worked examples). Its
padding path: from the minimind-3 release the -1e9 fill is added in place, so float16 scores keep
float16 and a left-padded pad row turns NaN; the earlier out-of-place add promotes to float32.
The upstream facts themselves were read with `git show COMMIT:model/model_minimind.py` and run on
upstream's file at each commit (module 05's guide says what that gave)."""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ------------------------------------------------------------------------------ named inputs

PATHS = (upstream.minimind2_attention, upstream.minimind3_attention)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("change, error, message", [
    (lambda q, k, v: (q[0], k[0], v[0]), ValueError, "q must be 4-D [batch, heads, tokens, head_dim]"),
    (lambda q, k, v: (q.long(), k.long(), v.long()), TypeError, "q must be floating point"),
    (lambda q, k, v: (q, k.half(), v), TypeError, "q, k and v must share one dtype"),
    (lambda q, k, v: (q, k[:, :1], v[:, :1]), ValueError, "must agree on batch, heads and head_dim"),
    (lambda q, k, v: (q, k, v[:, :, :3]), ValueError, "k and v must be [B, H, past + T, D] alike"),
    (lambda q, k, v: (q, k[:, :, :3], v[:, :, :3]), ValueError, "so at least q's T = 4, got 3"),
    (lambda q, k, v: (q[:, :, :0], k, v), ValueError, "q must hold at least one new token"),
    (lambda q, k, v: (q.tolist(), k, v), TypeError, "q must be a tensor, got list"),
    (lambda q, k, v: (q.to_sparse(), k, v), TypeError,
     "q must be a dense tensor, as upstream's attention has it, got a sparse (torch.sparse_coo) tensor: convert it "
     "with .to_dense()"),
    (lambda q, k, v: (q, k.flatten(0, 2).to_sparse_csr(), v), TypeError, "k must be a dense tensor"),
    (lambda q, k, v: (torch.nested.nested_tensor(list(q)), k, v), TypeError, "got a nested tensor: convert it with "
                                                                             ".to_padded_tensor(0.0)"),
    (lambda q, k, v: (q, k, v.to("meta")), ValueError, "q, k and v must be on one device, got cpu, cpu and meta"),
])
def test_inputs_upstream_never_has_are_named(path, change, error, message):
    with pytest.raises(error) as raised:
        path(*change(*qkv(torch.float32)), cached=False, flash=True)
    assert str(raised.value).startswith(f"{path.__name__}: ") and message in str(raised.value)


@pytest.mark.parametrize("mask, error, message", [
    (LEFT.bool(), TypeError, "got torch.bool: convert it with .long()"),
    (LEFT.float(), TypeError, "got torch.float32"),
    (LEFT[:, :3], ValueError, "attention_mask must be [B, past + T] = [2, 4]"),
    (LEFT * 2, ValueError, "must hold only 1 (token) and 0 (pad), got the values [0, 2]"),
    ([[1, 1, 1, 1]] * 2, TypeError, "got list"),
    (LEFT.to_sparse(), TypeError, "attention_mask must be a dense tensor"),
    (LEFT.to("meta"), ValueError, "attention_mask must be on q's device, cpu, got meta"),
])
def test_a_mask_unlike_upstreams_is_named(mask, error, message):
    with pytest.raises(error, match=re.escape(message)):
        upstream.minimind3_attention(*qkv(torch.float32), cached=False, flash=False, attention_mask=mask)
    with pytest.raises(TypeError, match="cached must be True or False, got str 'yes'"):
        upstream.minimind3_attention(*qkv(torch.float32), cached="yes", flash=False)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("flash", [True, False])
def test_meta_tensors_give_the_shape_and_a_meta_mask_is_named(path, flash):
    """A meta tensor has a shape and no values: attention's shape comes out; upstream's mask chooses
    a path from its values, so a meta mask is named."""
    q, k, v = (t.to("meta") for t in qkv(torch.float32))
    out = path(q, k, v, cached=False, flash=flash)
    assert out.device.type == "meta" and out.shape == q.shape
    with pytest.raises(ValueError, match="attention_mask is a meta tensor: it has a shape but no values"):
        path(q, k, v, cached=False, flash=flash, attention_mask=LEFT.to("meta"))


@settings(derandomize=True, database=None, deadline=None, max_examples=150)
@given(shape=st.lists(st.integers(0, 3), min_size=2, max_size=5),
       dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.complex64]),
       past=st.integers(-1, 2), flash=st.booleans(), path=st.sampled_from(PATHS),
       form=st.sampled_from(["dense", "meta", "sparse q", "meta k"]))
def test_any_tensors_give_attention_or_a_named_error(shape, dtype, past, flash, path, form):
    """Upstream's own shape error (MiniMind2's explicit path, several tokens after a cache) is a
    RuntimeError, kept as upstream raises it; anything else wrong is named before it runs."""
    q = torch.ones(shape, dtype=dtype)
    kv_shape = shape[:-2] + [shape[-2] + past, shape[-1]] if len(shape) >= 2 and shape[-2] + past >= 0 else shape
    k = v = torch.ones(kv_shape, dtype=dtype)
    if form == "meta":
        q, k, v = q.to("meta"), k.to("meta"), v.to("meta")
    elif form == "meta k":
        k = k.to("meta")
    elif form == "sparse q":
        q = q.to_sparse()
    try:
        out = path(q, k, v, cached=past > 0, flash=flash)
    except (TypeError, ValueError) as error:
        assert str(error).startswith(f"{path.__name__}: ")
        return
    except RuntimeError:
        assert path is upstream.minimind2_attention and not flash and past > 0 and shape[-2] > 1
        return
    assert out.shape == q.shape[:-1] + v.shape[-1:] and out.dtype == dtype and out.device == q.device
    assert form in ("dense", "meta")
