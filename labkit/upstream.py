"""Upstream MiniMind's own attention paths, reproduced to show what its causal-mask fix changed.

Not `minimind_ref`, and not upstream's code: the course's own rewrite of the two branches of
`Attention.forward` in github jingyaogong/minimind, `model/model_minimind.py`, at two commits:

- MiniMind2, commit 9d898576 (2026-01-01, the last before the fix): with `flash_attn`, any step of
  more than one token goes to torch's SDPA with `is_causal=True`, cache or not; the explicit path
  adds a square `[T, T]` causal mask to the `[T, past + T]` scores.
- MiniMind-3, from commit 1279a616 (2026-01-13, "prompt prefill"), kept by 101d7df2 (the
  minimind-3 release) and dddedc68: SDPA only when there is no cache; the explicit path adds the
  square mask to the last `T` columns of the scores, `scores[..., -T:]`.

Both take the tensors as upstream's attention has them after the cache is concatenated and the
key/value heads repeated: q `[B, H, T, D]`, k and v `[B, H, past + T, D]`. Module 05 runs them on
a prompt, a single-token step and a multi-token step after a cache, against the true causal
attention. They reproduce the mask logic only (no padding mask, no dropout).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

MINIMIND2_COMMIT = "9d898576"
FIX_COMMIT = "1279a616"
MINIMIND3_COMMITS = ("101d7df2", "dddedc68")


def _square_future(query_len: int, like: torch.Tensor) -> torch.Tensor:
    """Upstream's mask: -inf above the diagonal of a [T, T] matrix, 0 elsewhere."""
    return torch.full((query_len, query_len), float("-inf"), dtype=like.dtype).triu(1)


def minimind2_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cached: bool,
                        flash: bool) -> torch.Tensor:
    """MiniMind2's branch choice and masks (commit 9d898576). `cached`: a cache held earlier tokens."""
    query_len = q.shape[-2]
    if flash and query_len > 1:  # the cache is not looked at: is_causal=True is top-left
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores + _square_future(query_len, scores)  # [T, T] onto [T, past + T]
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ v


def minimind3_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cached: bool,
                        flash: bool) -> torch.Tensor:
    """MiniMind-3's branch choice and masks (commit 1279a616, unchanged at dddedc68)."""
    query_len = q.shape[-2]
    if flash and query_len > 1 and not cached:  # square scores: top-left is bottom-right
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores[..., -query_len:] += _square_future(query_len, scores)  # the new tokens' own columns
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ v
