"""Upstream MiniMind's own attention paths, reproduced to show what its causal-mask fix changed,
and where its padding mask turns a left-padded float16 batch into NaN.

Not `minimind_ref`, and not upstream's code: the course's own rewrite of the two branches of
`Attention.forward` in github jingyaogong/minimind, `model/model_minimind.py`, at two commits:

- the MiniMind2 series, commit 9d898576 (2026-01-01, the last before the fix): with `flash_attn`, any step of
  more than one token goes to torch's SDPA with `is_causal=True`, cache or not; the explicit path
  adds a square `[T, T]` causal mask to the `[T, past + T]` scores.
- MiniMind-3, from commit 1279a616 (2026-01-13, "prompt prefill"), kept by 101d7df2 (the
  minimind-3 release) and dddedc68: SDPA only when there is no cache; the explicit path adds the
  square mask to the last `T` columns of the scores, `scores[..., -T:]`.

Both take the tensors as upstream's attention has them after the cache is concatenated and the
key/value heads repeated: q `[B, H, T, D]`, k and v `[B, H, past + T, D]`, and optionally
upstream's `attention_mask` `[B, past + T]` (1 for a token, 0 for a pad). Module 05 runs them on
a prompt, a single-token step and a multi-token step after a cache, against the true causal
attention. They reproduce the mask logic only (no dropout).

The padding path (every commit above): a batch with a pad goes to the explicit path, which adds
`(1.0 - attention_mask) * -1e9` to the scores. `1.0 - attention_mask` of an integer mask is float32,
and what that sum becomes depends on how it is written:

- up to c090b69c, the last change before the release, `scores = scores + mask`: float16 scores
  plus a float32 tensor is a float32 tensor, where -1e9 is finite; the causal mask, added the same
  way at 9d898576, promotes too;
- from 101d7df2 (the minimind-3 release) to dddedc68 and the newest commit, `scores += mask`: an
  in-place add keeps the scores' dtype, and -1e9 rounded to float16 (largest magnitude 65504) is
  -inf. A left-padded pad query sees pads only (the causal mask hides the rest), its row is all
  -inf, and softmax gives 0 / 0 = NaN. Upstream's own scripts run the model in float16
  (`eval_llm.py`: `model.half()`), where bfloat16 (largest magnitude 3.4e38) would not overflow.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .arguments import flag

MINIMIND2_COMMIT = "9d898576"
FIX_COMMIT = "1279a616"
MINIMIND3_COMMITS = ("101d7df2", "dddedc68")
IN_PLACE_PADDING_COMMIT = "101d7df2"  # the first with `scores += (1.0 - attention_mask ...) * -1e9`
NEWEST_COMMIT = "d65ef2c0"  # 2026-08-21, the repository's newest: model_minimind.py as at dddedc68
UPSTREAM_FILL = -1e9  # what upstream adds to a pad key's score


def _square_future(query_len: int, device: torch.device) -> torch.Tensor:
    """Upstream's mask: -inf above the diagonal of a [T, T] matrix, 0 elsewhere, in the default dtype
    (float32), as upstream's `torch.full` makes it, on the scores' device."""
    return torch.full((query_len, query_len), float("-inf"), device=device).triu(1)


def _pad_scores(attention_mask: torch.Tensor) -> torch.Tensor:
    """Upstream's padding term, [B, 1, 1, S]: -1e9 on pad keys, 0 on tokens; float32 for an int mask."""
    return (1.0 - attention_mask[:, None, None, :]) * UPSTREAM_FILL


def _check(where: str, q, k, v, cached, flash, attention_mask) -> None:
    """What upstream's attention has at this point, or a named error: q [B, H, T, D], k and v
    [B, H, past + T, D] after the key/value heads are repeated, floating point; upstream's mask
    [B, past + T] of integers 1 (token) and 0 (pad); `cached` and `flash` True or False."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where}: {name} must be a tensor, got {type(t).__name__}.")
        _dense(where, name, t)
        if t.dim() != 4:
            raise ValueError(f"{where}: {name} must be 4-D [batch, heads, tokens, head_dim], as upstream's attention "
                             f"has it after the heads are split, got shape {tuple(t.shape)}"
                             f"{' (add the batch dimension: x[None])' if t.dim() == 3 else ''}.")
        if not t.is_floating_point():
            raise TypeError(f"{where}: {name} must be floating point (float32, float16 or bfloat16, as the model "
                            f"runs), got {t.dtype}: convert it with .float().")
    if not q.device == k.device == v.device:
        raise ValueError(f"{where}: q, k and v must be on one device, got {q.device}, {k.device} and {v.device}: "
                         f"move them with .to(q.device).")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"{where}: q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}.")
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"{where}: k and v must be [B, H, past + T, D] alike, got {tuple(k.shape)} and "
                         f"{tuple(v.shape)}.")
    if q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{where}: q {tuple(q.shape)} and k {tuple(k.shape)} must agree on batch, heads and "
                         f"head_dim (upstream repeats the key/value heads before this point: repeat_kv).")
    if q.shape[2] < 1:
        raise ValueError(f"{where}: q must hold at least one new token, got shape {tuple(q.shape)}.")
    if k.shape[2] < q.shape[2]:
        raise ValueError(f"{where}: k and v hold the past + T tokens, so at least q's T = {q.shape[2]}, "
                         f"got {k.shape[2]}.")
    for name, value in (("cached", cached), ("flash", flash)):
        flag(where, name, value)
    if attention_mask is None:
        return
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.is_floating_point() \
            or attention_mask.dtype in (torch.bool, torch.complex64, torch.complex128):
        kind = attention_mask.dtype if isinstance(attention_mask, torch.Tensor) else type(attention_mask).__name__
        raise TypeError(f"{where}: attention_mask must be upstream's integer tensor of 1 (token) and 0 (pad), as "
                        f"its tokenizer returns it, got {kind}: convert it with .long().")
    _dense(where, "attention_mask", attention_mask)
    if attention_mask.device != q.device:
        raise ValueError(f"{where}: attention_mask must be on q's device, {q.device}, got {attention_mask.device}: "
                         f"move it with .to(q.device).")
    if tuple(attention_mask.shape) != (k.shape[0], k.shape[2]):
        raise ValueError(f"{where}: attention_mask must be [B, past + T] = [{k.shape[0]}, {k.shape[2]}], one entry "
                         f"per cached and new token, got {tuple(attention_mask.shape)}.")
    if attention_mask.device.type == "meta":
        raise ValueError(f"{where}: attention_mask is a meta tensor: it has a shape but no values, and upstream "
                         f"chooses its path from them; pass the real mask (or None for no padding).")
    if not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        raise ValueError(f"{where}: attention_mask must hold only 1 (token) and 0 (pad), got the values "
                         f"{sorted(set(attention_mask.unique().tolist()))[:6]}.")


def _dense(where: str, name: str, t: torch.Tensor) -> None:
    """Upstream's tensors are dense: a sparse or nested one is named, not left to fail inside torch."""
    if t.layout != torch.strided or t.is_nested:
        kind = "nested" if t.is_nested else f"sparse ({t.layout})"
        fix = ".to_padded_tensor(0.0) (sequences padded to one length)" if t.is_nested else ".to_dense()"
        raise TypeError(f"{where}: {name} must be a dense tensor, as upstream's attention has it, got a {kind} "
                        f"tensor: convert it with {fix}.")


def _has_pads(attention_mask: torch.Tensor | None) -> bool:
    return attention_mask is not None and not bool(torch.all(attention_mask == 1))


def minimind2_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cached: bool,
                        flash: bool, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The MiniMind2 series' branch choice and masks (commit 9d898576). `cached`: a cache held earlier tokens.
    Upstream's own shape error is kept: its explicit path raises RuntimeError for a step of several
    tokens after a cache (a [T, T] mask onto [T, past + T] scores)."""
    _check("minimind2_attention", q, k, v, cached, flash, attention_mask)
    query_len = q.shape[-2]
    if flash and query_len > 1 and not _has_pads(attention_mask):  # is_causal=True is top-left
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores + _square_future(query_len, scores.device)  # [T, T] onto [T, past + T]; float32 from here on
    if attention_mask is not None:
        scores = scores + _pad_scores(attention_mask)
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ v


def minimind3_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cached: bool,
                        flash: bool, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """MiniMind-3's branch choice and masks (commit 1279a616, unchanged at dddedc68); its padding
    mask as the release (101d7df2) writes it, in place, unchanged at dddedc68 and the newest commit."""
    _check("minimind3_attention", q, k, v, cached, flash, attention_mask)
    query_len = q.shape[-2]
    if flash and query_len > 1 and not cached and not _has_pads(attention_mask):  # top-left is bottom-right
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores[..., -query_len:] += _square_future(query_len, scores.device)  # in place: the scores keep their dtype
    if attention_mask is not None:
        scores += _pad_scores(attention_mask)  # in place: -1e9 is -inf in float16
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ v
