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

from .cache import CacheError
from .values import is_int

# The dtypes torch's attention supports on the CPU. Half precision is computed in float32, as
# torch's CPU kernels do.
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


def check_flash_args(caller: str, q, k, v, attn_mask, is_causal, scale, enable_gqa, block_q, block_k) -> None:
    """What attention accepts, and FlashAttention's tile sizes."""
    check_attention_args(caller, q, k, v, attn_mask, is_causal, scale, 0.0, enable_gqa)
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if not is_int(size) or size < 1:
            raise ValueError(f"{caller}: {name} (a tile size) must be a positive int, got {size!r}.")


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
    try:  # broadcast *to* the scores: a larger batch or an extra leading dimension would grow them
        fits = attn_mask.dim() <= 4 and torch.broadcast_shapes(attn_mask.shape, scores_shape) == scores_shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"{caller}: attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the scores "
            f"[batch, heads, queries, keys] = {scores_shape}: each of its dimensions must be 1 or the "
            f"scores' own, with at most 4 dimensions.")


def check_repeat_kv(x, n_rep) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"repeat_kv expects a 4-D tensor [batch, kv_heads, seq, head_dim], got {shape}.")
    if not is_int(n_rep) or n_rep < 1:
        raise ValueError(f"repeat_kv's n_rep must be a positive integer, got {n_rep!r}.")


def check_rotary_args(q, k, cos, sin) -> None:
    """apply_rotary_pos_emb's: q [B, H, T, D], k [B, H_kv, T, D], cos and sin [T, D] or [B, T, D]."""
    for name, t in (("q", q), ("k", k), ("cos", cos), ("sin", sin)):
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            what = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
            raise TypeError(f"apply_rotary_pos_emb: {name} must be a floating-point tensor, got {what}.")
    if q.dim() != 4 or k.dim() != 4 or cos.dim() not in (2, 3):
        raise ValueError(
            f"apply_rotary_pos_emb: q and k must be [B, H, T, D] and cos, sin [T, D] or [B, T, D], got q "
            f"{tuple(q.shape)}, k {tuple(k.shape)}, cos {tuple(cos.shape)}.")
    T, D = q.shape[2], q.shape[3]
    table = (T, D) if cos.dim() == 2 else (q.shape[0], T, D)
    if cos.shape != sin.shape or tuple(cos.shape) != table or k.shape[0] != q.shape[0] or k.shape[2:] != q.shape[2:] \
            or D % 2:
        raise ValueError(
            f"apply_rotary_pos_emb: q {tuple(q.shape)} and k {tuple(k.shape)} must share batch, length T and an "
            f"even head_dim D, and cos and sin be [T, D] = {(T, D)} or [B, T, D], got cos {tuple(cos.shape)} and "
            f"sin {tuple(sin.shape)}.")


def check_mla_inputs(config, x, cache, absorbed, cache_type) -> None:
    """MultiHeadLatentAttention.forward's: hidden states [B, T, C] and its own latent cache."""
    if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point:
        what = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(
            f"MultiHeadLatentAttention expects hidden states (floating point) [batch, seq, hidden_size], got {what}: "
            f"token ids go through an embedding first.")
    if x.dim() != 3 or x.shape[-1] != config.hidden_size or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"MultiHeadLatentAttention expects x as [batch, seq, hidden_size={config.hidden_size}] "
                         f"with at least one token, got shape {tuple(x.shape)}.")
    if cache is not None:
        if not isinstance(cache, cache_type):
            raise TypeError(f"MultiHeadLatentAttention's cache must be a LatentCache (it stores latents, not keys "
                            f"and values), got {type(cache).__name__}.")
        if cache.config.kv_lora_rank != config.kv_lora_rank or cache.config.qk_rope_head_dim != config.qk_rope_head_dim:
            raise CacheError("this LatentCache was built for another MLAConfig (its d_c or d_R differs).")
    if not isinstance(absorbed, bool):
        raise TypeError(f"MultiHeadLatentAttention: absorbed must be True or False, got {absorbed!r}.")
