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

MINIMIND2_COMMIT = "9d898576"
FIX_COMMIT = "1279a616"
MINIMIND3_COMMITS = ("101d7df2", "dddedc68")
IN_PLACE_PADDING_COMMIT = "101d7df2"  # the first with `scores += (1.0 - attention_mask ...) * -1e9`
NEWEST_COMMIT = "d65ef2c0"  # 2026-08-21, the repository's newest: model_minimind.py as at dddedc68
UPSTREAM_FILL = -1e9  # what upstream adds to a pad key's score


def _square_future(query_len: int) -> torch.Tensor:
    """Upstream's mask: -inf above the diagonal of a [T, T] matrix, 0 elsewhere, in the default dtype
    (float32), as upstream's `torch.full` makes it."""
    return torch.full((query_len, query_len), float("-inf")).triu(1)


def _pad_scores(attention_mask: torch.Tensor) -> torch.Tensor:
    """Upstream's padding term, [B, 1, 1, S]: -1e9 on pad keys, 0 on tokens; float32 for an int mask."""
    return (1.0 - attention_mask[:, None, None, :]) * UPSTREAM_FILL


def _has_pads(attention_mask: torch.Tensor | None) -> bool:
    return attention_mask is not None and not bool(torch.all(attention_mask == 1))


def minimind2_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cached: bool,
                        flash: bool, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The MiniMind2 series' branch choice and masks (commit 9d898576). `cached`: a cache held earlier tokens."""
    query_len = q.shape[-2]
    if flash and query_len > 1 and not _has_pads(attention_mask):  # is_causal=True is top-left
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores + _square_future(query_len)  # [T, T] onto [T, past + T]; float32 from here on
    if attention_mask is not None:
        scores = scores + _pad_scores(attention_mask)
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ v


def minimind3_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cached: bool,
                        flash: bool, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """MiniMind-3's branch choice and masks (commit 1279a616, unchanged at dddedc68); its padding
    mask as the release (101d7df2) writes it, in place, unchanged at dddedc68 and the newest commit."""
    query_len = q.shape[-2]
    if flash and query_len > 1 and not cached and not _has_pads(attention_mask):  # top-left is bottom-right
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores[..., -query_len:] += _square_future(query_len)  # in place: the scores keep their dtype
    if attention_mask is not None:
        scores += _pad_scores(attention_mask)  # in place: -1e9 is -inf in float16
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ v
