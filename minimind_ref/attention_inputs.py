"""What every attention function of the course accepts, checked in one place (modules 01-05, 08).

The explicit path (`attention.scaled_dot_product_attention`), the fused one
(`attention.fused_attention`) and FlashAttention (`variants.flash_attention`) take the same
arguments and call `check_attention_args` first, so they accept the same inputs and refuse the
same ones, each with a message that names the argument, the rule and the fix. The rules follow
torch's own `scaled_dot_product_attention`, with two deliberate differences:

- `is_causal` is aligned to the bottom right (query i is the token at position S - T + i), so it
  needs T <= S: with more queries than keys the first T - S queries would see nothing. torch
  aligns it to the top left instead and accepts any T and S.
- an integer `attn_mask` is refused (torch refuses it too, with a message about dtypes): the
  usual mistake is a 0/1 padding mask, which, added to the scores as a bias, would hide nothing.
"""

from __future__ import annotations

import math
import numbers

import torch

# The dtypes torch's attention supports on the CPU. Half precision is computed in float32 (see
# `compute_dtype`), as torch's CPU kernels do.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_attention_args(caller: str, q, k, v, attn_mask=None, is_causal=False, scale=None,
                         dropout_p=0.0, enable_gqa=False) -> None:
    """Refuse, by name, what attention cannot compute. q: [B, H, T, D]; k: [B, H_kv, S, D];
    v: [B, H_kv, S, D_v]; attn_mask: None, bool (True = may attend) or float (added to the
    scores), broadcastable to [B, H, T, S]."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{caller}: {name} must be a torch.Tensor, got {type(t).__name__}.")
        if t.dim() != 4:
            raise ValueError(
                f"{caller} expects {name} as [batch, heads, seq, head_dim], got shape {tuple(t.shape)}.")
        if t.dtype not in FLOAT_DTYPES:
            raise TypeError(
                f"{caller}: {name} is {t.dtype}, but attention needs floating-point tensors "
                f"(float32, float64, bfloat16 or float16): convert with {name}.float().")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"{caller}: q, k and v must share one dtype, got q {q.dtype}, k {k.dtype} and v {v.dtype}: "
            f"convert them with .to(q.dtype).")
    if not q.device == k.device == v.device:
        raise ValueError(f"{caller}: q, k and v must be on one device, got {q.device}, {k.device} and {v.device}.")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"{caller}: k and v must agree on batch, heads and length (one value per key), got k "
            f"{tuple(k.shape)} and v {tuple(v.shape)}; only their last dimension may differ.")
    if q.shape[0] != k.shape[0] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{caller}: q {tuple(q.shape)} and k {tuple(k.shape)} must agree on batch (dim 0) and "
            f"head_dim (dim 3), since each score is a dot product of a query and a key.")
    _check_heads(caller, q.shape[1], k.shape[1], enable_gqa)
    _check_mask(caller, attn_mask, q, k)
    if not isinstance(is_causal, bool):
        raise TypeError(f"{caller}: is_causal must be True or False, got {is_causal!r}.")
    if is_causal and q.shape[-2] > k.shape[-2]:
        raise ValueError(
            f"{caller}: is_causal with {q.shape[-2]} queries over {k.shape[-2]} keys: the causal mask is "
            f"aligned to the bottom right (the queries are the last tokens of the keys), so it needs no more "
            f"queries than keys. For torch's top-left alignment, pass an explicit bool attn_mask.")
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError(
                f"{caller}: scale must be a number (or None for 1/sqrt(head_dim)), got {type(scale).__name__} "
                f"{scale!r}.")
        if not math.isfinite(scale):
            raise ValueError(f"{caller}: scale must be finite (or None for 1/sqrt(head_dim)), got {scale!r}.")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{caller}: dropout_p must be a number in [0, 1], got {dropout_p!r}.")
    if not isinstance(enable_gqa, bool):
        raise TypeError(f"{caller}: enable_gqa must be True or False, got {enable_gqa!r}.")


def default_scale(scale: float | None, head_dim: int) -> float:
    """1/sqrt(head_dim) unless given. A head_dim of 0 makes every score 0 whatever the scale."""
    if scale is not None:
        return float(scale)
    return 1.0 / math.sqrt(head_dim) if head_dim else 1.0


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype attention computes in: float32 for half precision, as torch's CPU kernels do
    (a float16 score of two large vectors overflows at 65504, and a half-precision softmax loses
    the small weights); the input's own dtype otherwise."""
    return torch.promote_types(dtype, torch.float32)


def _check_heads(caller: str, heads: int, kv_heads: int, enable_gqa: bool) -> None:
    if kv_heads == heads:
        return
    if not enable_gqa:
        raise ValueError(
            f"{caller}: q has {heads} heads but k and v have {kv_heads}: pass enable_gqa=True to share "
            f"key/value heads across groups of query heads, or repeat them with repeat_kv.")
    if kv_heads == 0 or heads % kv_heads:
        raise ValueError(
            f"{caller}: q's {heads} heads cannot be split into equal groups over k's {kv_heads} heads: "
            f"the number of query heads must be a multiple of the number of key/value heads.")


def _check_mask(caller: str, attn_mask, q: torch.Tensor, k: torch.Tensor) -> None:
    if attn_mask is None:
        return
    if not isinstance(attn_mask, torch.Tensor):
        raise TypeError(f"{caller}: attn_mask must be a torch.Tensor or None, got {type(attn_mask).__name__}.")
    if attn_mask.dtype != torch.bool and not attn_mask.dtype.is_floating_point:
        raise TypeError(
            f"{caller}: attn_mask is {attn_mask.dtype}; it must be bool (True = may attend) or float (added to "
            f"the scores: 0 keeps a key, -inf hides it). An integer 0/1 mask would be added as a bias and hide "
            f"nothing: pass attn_mask.bool().")
    if attn_mask.device != q.device:
        raise ValueError(f"{caller}: attn_mask is on {attn_mask.device} but q is on {q.device}.")
    scores_shape = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    try:
        torch.broadcast_shapes(attn_mask.shape, scores_shape)
    except RuntimeError:
        raise ValueError(
            f"{caller}: attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the scores "
            f"[batch, heads, queries, keys] = {scores_shape}.") from None
