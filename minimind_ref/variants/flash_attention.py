"""FlashAttention in plain PyTorch, as the algorithm reads: exact attention by tiles (module 08).

Not part of MiniMind: MiniMind's `config.flash_attn=True` calls torch's fused kernel. This file is
the course's own FlashAttention, written to be read beside the papers (Dao et al., arXiv 2205.14135;
FlashAttention-2, arXiv 2307.08691). `flash_attention_fast.py` is the same algorithm with the tricks
that make it fast in PyTorch; the tests hold the two equal.

Explicit attention (`minimind_ref.attention`) builds the whole [T, S] score matrix, softmaxes it and
multiplies it by V: memory and memory traffic grow with T * S. FlashAttention computes the same
numbers tile by tile:

- a tile of queries meets one tile of keys at a time; its scores live only as long as that tile;
- the **online softmax** keeps, for each query row, a running maximum `m`, a running sum
  `l = sum exp(score - m)` and an unnormalised output `acc = sum exp(score - m) v`; when a tile
  raises the maximum, `l` and `acc` are rescaled by `exp(m_old - m_new)`. At the end
  `out = acc / l`, and `lse = m + log(l)` is the row's log-sum-exp;
- with a causal mask, key tiles entirely in a row tile's future are skipped, never computed, and
  only the tile on the diagonal needs a mask (`key_tiles`);
- the backward pass saves only q, k, v, the output and the log-sum-exp (O(T) numbers beyond the
  inputs, not O(T S)) and **recomputes** each tile's probabilities as `exp(score - lse)`.

On a GPU the point is that a tile fits in on-chip SRAM, so the big matrices never travel to and
from HBM. Here, on a CPU, the same structure keeps the memory footprint linear in T.

Conventions, shared with `minimind_ref.scaled_dot_product_attention` (the same arguments, checked
by the same `minimind_ref._checks.check_attention_args`, and the tile sizes):
- q: [B, H, T, D]; k: [B, H_kv, S, D]; v: [B, H_kv, S, D_v] (H_kv < H with enable_gqa=True);
  output [B, H, T, D_v];
  lse [B, H, T] (natural log);
- causal masks are aligned to the bottom right (FlashAttention-2's choice, and masks.causal_mask's):
  query i is the token at position i + S - T and sees keys 0 .. i + S - T. With a KV cache
  (T < S) the new tokens see all the cached ones;
- attn_mask (bool, or float added to the scores) is applied tile by tile, as a slice of its
  broadcast view: nothing [T, S] is materialised that was not passed in;
- a row whose keys are all masked gets output 0 and lse -inf, never NaN, as explicit attention
  gives it (torch's SDPA gives 0 too);
- float16 and bfloat16 are computed in float32 (FlashAttention's kernels also keep the running
  maximum, sum and output in float32) and rounded back at the end.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from .._checks import check_attention_args, is_int
from ..attention import _scale
from ..gqa import repeat_kv

__all__ = ["DEFAULT_BLOCK_K", "DEFAULT_BLOCK_Q", "flash_attention", "key_tiles"]

DEFAULT_BLOCK_Q = 256  # queries per tile
DEFAULT_BLOCK_K = 512  # keys per tile


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    block_q: int = DEFAULT_BLOCK_Q,
    block_k: int = DEFAULT_BLOCK_K,
    return_lse: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Exact attention softmax(q k^T * scale) v, by tiles. q: [B, H, T, D]; k: [B, H_kv, S, D]; v: [B, H_kv, S, D_v].

    attn_mask: bool (True = may attend) or float (added to the scores), broadcastable to [B, H, T, S].
    is_causal: hide the future, bottom-right aligned (query i sees keys up to i + S - T; T <= S).
    scale: multiplies the scores; 1/sqrt(D) by default.
    enable_gqa: let groups of query heads share a key/value head (H a multiple of H_kv).
    block_q, block_k: the tile sizes, queries x keys. Any positive sizes give the same result
        (up to float rounding); they only change speed and the size of the one score tile alive
        at a time, [B, H, block_q, block_k].
    return_lse: also return the log-sum-exp of each row's scaled scores, [B, H, T].
    Differentiable in q, k and v (and through lse): the backward pass recomputes the scores.
    """
    check_flash_args("flash_attention", q, k, v, attn_mask, is_causal, scale, enable_gqa, block_q, block_k)
    q, k, v, attn_mask, input_dtype = prepare_inputs(q, k, v, attn_mask)
    out, lse = _FlashAttention.apply(q, k, v, attn_mask, is_causal, _scale(scale, q.shape[-1]), block_q,
                                     block_k)
    out = out.to(input_dtype)
    return (out, lse) if return_lse else out


def check_flash_args(caller: str, q, k, v, attn_mask, is_causal, scale, enable_gqa, block_q, block_k) -> None:
    """What every attention path accepts, and the tile sizes."""
    check_attention_args(caller, q, k, v, attn_mask, is_causal, scale, 0.0, enable_gqa)
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if not is_int(size) or size < 1:
            raise ValueError(f"{caller}: {name} (a tile size) must be a positive int, got {size!r}.")


def prepare_inputs(q, k, v, attn_mask):
    """What both FlashAttention versions compute on: shared key/value heads repeated for each query
    head, half precision raised to float32, and the mask as a [B, H, T, S] view (a broadcast, no
    copy) that each tile slices. Returns q, k, v, the mask (or None) and the dtype to return in."""
    input_dtype, dtype = q.dtype, torch.promote_types(q.dtype, torch.float32)  # half: computed in float32
    if k.shape[1] != q.shape[1]:
        k, v = repeat_kv(k, q.shape[1] // k.shape[1]), repeat_kv(v, q.shape[1] // k.shape[1])
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool:
            attn_mask = attn_mask.to(dtype)
        attn_mask = attn_mask.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    return q, k, v, attn_mask, input_dtype


def apply_mask(scores, attn_mask, rows: slice, keys: slice):
    """A score tile with its slice of attn_mask applied: bool hides with -inf, float is added."""
    if attn_mask is None:
        return scores
    tile = attn_mask[..., rows, keys]
    return scores.masked_fill(~tile, -math.inf) if tile.dtype == torch.bool else scores + tile


def key_tiles(row_start: int, row_end: int, key_len: int, query_len: int, block_k: int,
              is_causal: bool) -> list[tuple[int, int, bool]]:
    """The key tiles that the query rows [row_start, row_end) must visit: (start, end, needs_mask).

    Without a mask: every key, in tiles of block_k. Causal: query i sees keys j <= i + (S - T).
    Keys before row_start + S - T are seen by every row of the tile: full tiles, no mask. Keys from
    there up to row_end - 1 + S - T are seen by some rows only: one diagonal tile, masked. Keys
    after that are in every row's future: skipped, never computed (about half the work when
    T = S). The diagonal tile is as wide as the row tile, so about half of it is masked: wasted work.
    """
    if not is_causal:
        return [(c, min(c + block_k, key_len), False) for c in range(0, key_len, block_k)]
    offset = key_len - query_len
    full_end = min(max(row_start + offset, 0), key_len)  # keys every row of the tile sees
    diagonal_end = min(max(row_end + offset, 0), key_len)  # one past the last key any row sees
    tiles = [(c, min(c + block_k, full_end), False) for c in range(0, full_end, block_k)]
    if diagonal_end > full_end:
        tiles.append((full_end, diagonal_end, True))
    return tiles


def future_mask(row_start: int, row_end: int, key_start: int, key_end: int, offset: int,
                device: torch.device | None = None) -> torch.Tensor:
    """[rows, cols] bool, True where key j is in the future of query i: j > i + offset, with
    offset = S - T (the bottom-right alignment). Only a diagonal tile needs it."""
    i = torch.arange(row_start, row_end, device=device).unsqueeze(1)
    j = torch.arange(key_start, key_end, device=device).unsqueeze(0)
    return j > i + offset


class _FlashAttention(torch.autograd.Function):
    """Forward by tiles; backward by recomputing each tile's probabilities from the saved lse."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, is_causal, scale, block_q, block_k):
        out, lse = _forward(q, k, v, attn_mask, is_causal, scale, block_q, block_k)
        ctx.save_for_backward(q, k, v, out, lse)  # O(T + S) numbers per head: no [T, S] matrix is kept
        ctx.attn_mask = attn_mask  # what was passed in (or a broadcast view of it), never a new [T, S]
        ctx.settings = (is_causal, scale, block_q, block_k)
        return out, lse

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out, grad_lse):
        q, k, v, out, lse = ctx.saved_tensors
        if grad_out is None:
            grad_out = torch.zeros_like(out)
        dq, dk, dv = _backward(q, k, v, out, lse, grad_out, grad_lse, ctx.attn_mask, *ctx.settings)
        return dq, dk, dv, None, None, None, None, None


def _forward(q, k, v, attn_mask, is_causal, scale, block_q, block_k):
    """The online softmax, one query tile at a time. Every tensor keeps its [B, H] batch dimensions:
    each head is an independent attention problem, and one matrix product serves them all."""
    query_len, key_len = q.shape[-2], k.shape[-2]
    offset = key_len - query_len  # query i is the token at position i + offset
    out = q.new_empty(*q.shape[:-1], v.shape[-1])  # [B, H, T, D_v]
    lse = q.new_empty(q.shape[:-1])  # [B, H, T]

    for row_start in range(0, query_len, block_q):
        row_end = min(row_start + block_q, query_len)
        q_tile = q[..., row_start:row_end, :] * scale  # [B, H, rows, D]
        m = q.new_full(q_tile.shape[:-1], -math.inf)  # running maximum of each row's scores
        l = q.new_zeros(q_tile.shape[:-1])  # running sum of exp(score - m)
        acc = q.new_zeros(*q_tile.shape[:-1], v.shape[-1])  # running sum of exp(score - m) * v

        for key_start, key_end, needs_mask in key_tiles(row_start, row_end, key_len, query_len, block_k, is_causal):
            scores = q_tile @ k[..., key_start:key_end, :].transpose(-2, -1)  # [B, H, rows, cols]
            scores = apply_mask(scores, attn_mask, slice(row_start, row_end), slice(key_start, key_end))
            if needs_mask:
                scores = scores.masked_fill(future_mask(row_start, row_end, key_start, key_end, offset, q.device),
                                            -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))
            # A row that has seen only masked keys so far still has m_new = -inf; shift it by 0
            # instead, so that exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
            shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
            probs = torch.exp(scores - shift.unsqueeze(-1))  # exp(score - m_new); 0 where masked
            rescale = torch.exp(m - shift)  # exp(m_old - m_new) <= 1: what was summed so far shrinks
            l = l * rescale + probs.sum(dim=-1)
            acc = acc * rescale.unsqueeze(-1) + probs @ v[..., key_start:key_end, :]
            m = m_new

        # Normalise once, at the end (FlashAttention-2). A row that saw no key has acc = l = 0:
        # it gets output 0 and lse = -inf rather than 0 / 0 = NaN.
        out[..., row_start:row_end, :] = acc / torch.where(l > 0, l, torch.ones_like(l)).unsqueeze(-1)
        lse[..., row_start:row_end] = m + torch.log(l)
    return out, lse


def _backward(q, k, v, out, lse, grad_out, grad_lse, attn_mask, is_causal, scale, block_q, block_k):
    """Gradients by tiles, FlashAttention-2's Algorithm 2.

    With P = softmax(S), S = scale * q k^T: dV = P^T dO; dP = dO V^T; dS = P * (dP - delta) with
    delta = rowsum(dO * O) (= rowsum(P * dP), without any [T, S] sum); dQ = scale * dS K;
    dK = scale * dS^T Q. If lse is used downstream, d lse / dS = P, which subtracts grad_lse from
    delta. P itself is recomputed tile by tile as exp(S - lse): nothing [T, S] was saved.
    """
    query_len, key_len = q.shape[-2], k.shape[-2]
    offset = key_len - query_len
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    delta = (grad_out * out).sum(dim=-1)  # [B, H, T]
    if grad_lse is not None:
        delta = delta - grad_lse
    # A row that saw no key has lse = -inf; exp(score - inf) = 0 gives it P = 0, as in the forward.
    lse = torch.where(torch.isfinite(lse), lse, torch.full_like(lse, math.inf))

    for row_start in range(0, query_len, block_q):
        rows = slice(row_start, min(row_start + block_q, query_len))
        q_tile, d_out = q[..., rows, :], grad_out[..., rows, :]
        for key_start, key_end, needs_mask in key_tiles(row_start, rows.stop, key_len, query_len, block_k, is_causal):
            keys = slice(key_start, key_end)
            scores = apply_mask((q_tile @ k[..., keys, :].transpose(-2, -1)) * scale, attn_mask, rows, keys)
            if needs_mask:
                scores = scores.masked_fill(future_mask(row_start, rows.stop, key_start, key_end, offset, q.device),
                                            -math.inf)
            probs = torch.exp(scores - lse[..., rows].unsqueeze(-1))  # P, recomputed: the forward's softmax
            dv[..., keys, :] += probs.transpose(-2, -1) @ d_out  # dV_j += P^T dO_i
            d_probs = d_out @ v[..., keys, :].transpose(-2, -1)  # dP = dO_i V_j^T
            d_scores = probs * (d_probs - delta[..., rows].unsqueeze(-1))  # dS = P * (dP - delta)
            dq[..., rows, :] += (d_scores @ k[..., keys, :]) * scale  # dQ_i += scale * dS K_j
            dk[..., keys, :] += (d_scores.transpose(-2, -1) @ q_tile) * scale  # dK_j += scale * dS^T Q_i
    return dq, dk, dv
