"""FlashAttention made fast in PyTorch: the algorithm of flash_attention.py, with tricks (module 08).

Not part of MiniMind. Read `flash_attention.py` first: it is the algorithm as the papers state it,
and the tests hold this file equal to it. What this version adds, and why each trick pays on a CPU:

- the scale is folded into the queries once, and a column of ones appended to the keys, so that
  one matrix product computes `scale * q.k - m` (the running maximum subtracted for free);
- the running maximum is raised lazily: it starts at one score each row surely sees and is raised
  only when a tile's sum of exponentials would grow past a bound (TAU below), which skips a max
  and a rescaling per tile; any shift gives the same softmax as long as nothing overflows;
- `e^x` is computed as `2^(x log2 e)`: torch's exp2 is the cheaper function (FlashAttention-2's
  kernels use the same identity);
- the score tile, the accumulator and the shifted queries live in buffers allocated once and reused
  in place, and each diagonal tile's mask is built once per shape.

`make bench` (benchmarks/bench_flash.py) times this version; notebook 08 and the experiments use
the readable one, whose speed is not the point.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from ..attention import _scale
from .flash_attention import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, check_flash_args, key_tiles, prepare_inputs
from .flash_attention import _FlashAttention as _ReadableFlashAttention

__all__ = ["flash_attention_fast"]

# When the running maximum m is raised. A textbook online softmax raises it at every tile whose
# maximum is higher, which costs a pass over the tile (a max) and a rescaling. Mathematically any
# shift m gives the same softmax; numerically, exp(score - m) must not overflow, and m must not be
# above the row's true maximum (or every term could underflow to 0). Here m starts at one score the
# row surely sees and is only ever raised to a tile's true maximum, so it never passes the row's
# maximum. A tile is kept as computed while each row's sum of exp(score - m) stays under
# cols * e^TAU (then no single term exceeds that either: about 1.5e6 for a 512-key tile, far from
# float32's overflow at e^88.7); a row that breaks the bound makes the tile be redone with m raised
# to the row's maximum. With ordinary scores that almost never happens.
TAU = 8.0
BOUND = math.exp(TAU)
# e^x is computed as 2^(x * log2 e): torch's exp2 is the cheaper function (on one AVX-512 CPU, a
# multiply and an exp2 take less than half the time of one exp, over a score tile), and
# FlashAttention-2's kernels use the same identity. The multiply comes after m is subtracted, so
# its rounding touches only numbers near 0, where it costs nothing of exp's precision.
LOG2E = 1.0 / math.log(2.0)


def flash_attention_fast(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = DEFAULT_BLOCK_Q,
    block_k: int = DEFAULT_BLOCK_K,
    return_lse: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """flash_attention, faster: the same results up to float rounding, for the arguments it takes.
    It takes no attn_mask and no enable_gqa (its lazy running maximum starts at a key each row is
    sure to see, which an arbitrary mask could hide), and values as wide as keys.

    Exact attention softmax(q k^T * scale) v, computed by tiles. q: [B, H, T, D]; k, v: [B, H, S, D].

    is_causal: hide the future, bottom-right aligned (query i sees keys up to i + S - T).
    scale: multiplies the scores; 1/sqrt(D) by default.
    block_q, block_k: the tile sizes, queries x keys. Any positive sizes give the same result
        (up to float rounding); they only change speed and the size of the one score tile alive
        at a time, [B*H, block_q, max(block_q, block_k)].
    return_lse: also return the log-sum-exp of each row's scaled scores, [B, H, T].
    Differentiable in q, k and v (and through lse): the backward pass recomputes the scores.
    """
    check_flash_args("flash_attention_fast", q, k, v, None, is_causal, scale, False, block_q, block_k)
    if k.shape[-1] != v.shape[-1]:
        raise ValueError(
            f"flash_attention_fast: values must be as wide as keys (head_dim {k.shape[-1]}), got v "
            f"{tuple(v.shape)}; flash_attention (the readable version) accepts other widths.")
    q, k, v, _, input_dtype = prepare_inputs(q, k, v, None)
    scale = _scale(scale, q.shape[-1])
    if _folding_is_inexact(q, k, scale):
        # Scores so large that float rounding of the folded shift (q.k - m in one product) could
        # exceed TAU: the readable version subtracts the maximum exactly, so it is used instead.
        out, lse = _ReadableFlashAttention.apply(q, k, v, None, is_causal, scale, block_q, block_k)
    else:
        out, lse = _FlashAttention.apply(q, k, v, is_causal, scale, block_q, block_k)
    out = out.to(input_dtype)
    return (out, lse) if return_lse else out


def _folding_is_inexact(q, k, scale) -> bool:
    """Whether the folded product (q * scale, -m) . (k, 1) = scale * q.k - m could be off by more
    than 1 in the exponent. Its rounding error is at most about (D + 1) * eps * (|scale * q.k| + |m|),
    and by Cauchy-Schwarz |q.k| <= |q| |k|; at ordinary sizes the bound is about 1e-4."""
    if q.numel() == 0 or k.numel() == 0:
        return False
    with torch.no_grad():  # a bound, not part of the result: nothing for autograd to keep
        largest = abs(scale) * q.norm(dim=-1).max() * k.norm(dim=-1).max()
    return bool(2 * (q.shape[-1] + 1) * torch.finfo(q.dtype).eps * largest > 1.0)


class _FlashAttention(torch.autograd.Function):
    """Forward by tiles; backward by recomputing each tile's probabilities from the saved lse."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, block_q, block_k):
        batch, heads, query_len, head_dim = q.shape
        # [B, H, T, D] -> [B*H, T, D]: every head is one independent attention problem
        q3, k3, v3 = (t.reshape(batch * heads, t.shape[2], head_dim) for t in (q, k, v))  # sizes given: 0 is fine
        out, lse = _forward(q3, k3, v3, is_causal, scale, block_q, block_k)
        ctx.save_for_backward(q3, k3, v3, out, lse)  # O(T + S) numbers: no [T, S] matrix is kept
        ctx.settings = (is_causal, scale, block_q, block_k, q.shape, k.shape)
        return out.view(batch, heads, query_len, head_dim), lse.view(batch, heads, query_len)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out, grad_lse):
        q3, k3, v3, out, lse = ctx.saved_tensors
        is_causal, scale, block_q, block_k, q_shape, k_shape = ctx.settings
        bh = q3.shape[0]
        grad_out = (torch.zeros_like(out) if grad_out is None
                    else grad_out.reshape(bh, q3.shape[1], q3.shape[-1]).to(out.dtype))
        grad_lse = None if grad_lse is None else grad_lse.reshape(bh, q3.shape[1]).to(lse.dtype)
        dq, dk, dv = _backward(q3, k3, v3, out, lse, grad_out, grad_lse, is_causal, scale, block_q, block_k)
        return dq.view(q_shape), dk.view(k_shape), dv.view(k_shape), None, None, None, None


def _forward(q, k, v, is_causal, scale, block_q, block_k):
    """q: [N, T, D]; k, v: [N, S, D] (N = B*H). Returns out [N, T, D] and lse [N, T]."""
    n, query_len, head_dim = q.shape
    key_len = k.shape[1]
    offset = key_len - query_len  # query i is the token at position i + offset
    out = q.new_empty(n, query_len, head_dim)
    lse = q.new_empty(n, query_len)
    # Each key gets a 1 appended, each scaled query its row's -m: then (q, -m) . (k, 1) = q.k - m,
    # and the matrix product that computes the scores subtracts the running maximum for free.
    k1 = torch.cat([k, k.new_ones(n, key_len, 1)], dim=-1)  # [N, S, D+1]
    start_max = _starting_max(q, k, scale, is_causal)  # [N, T]
    block_q = max(1, min(block_q, query_len))  # no tile larger than the problem
    widest = max(1, min(max(block_q, block_k) if is_causal else block_k, key_len))
    score_buffer = q.new_empty(n * block_q * widest)  # the one score tile alive at a time
    q1_buffer = q.new_empty(n, block_q, head_dim + 1)
    acc_buffer = q.new_empty(n, block_q, head_dim)
    masks = {}  # the diagonal tiles' masks, built once per shape

    for row_start in range(0, query_len, block_q):
        row_end = min(row_start + block_q, query_len)
        rows = row_end - row_start
        q1, acc = q1_buffer[:, :rows], acc_buffer[:, :rows]  # [N, rows, D+1], [N, rows, D]
        torch.mul(q[:, row_start:row_end], scale, out=q1[..., :head_dim])  # scale folded into q, once
        m = start_max[:, row_start:row_end]  # [N, rows], updated below when a tile needs it
        sees_keys = torch.isfinite(m)  # False only for a row with no visible key at all
        q1[..., head_dim] = -m.masked_fill(~sees_keys, 0.0)
        l = q.new_zeros(n, rows)  # running sum of exp(score - m)
        acc.zero_()  # running sum of exp(score - m) * v

        for key_start, key_end, needs_mask in key_tiles(row_start, row_end, key_len, query_len, block_k, is_causal):
            cols = key_end - key_start
            scores = score_buffer[: n * rows * cols].view(n, rows, cols)
            k1_tile = k1[:, key_start:key_end].transpose(1, 2)  # [N, D+1, cols]
            mask = _tile_mask(masks, rows, cols, key_start - row_start - offset, q.device) if needs_mask else None
            torch.bmm(q1, k1_tile, out=scores)  # scale * q.k - m
            if mask is not None:
                scores.masked_fill_(mask, -math.inf)
            probs = scores.mul_(LOG2E).exp2_()  # [N, rows, cols]: exp(score - m); 0 where masked
            tile_sum = probs.sum(dim=-1)  # [N, rows]
            if not bool((tile_sum <= cols * BOUND).all()):
                # Rare: some score rose more than TAU above its row's m. Raise m to the row's
                # maximum, redo the tile, and rescale what was summed so far: the online softmax step.
                torch.bmm(q1, k1_tile, out=scores)
                if mask is not None:
                    scores.masked_fill_(mask, -math.inf)
                grow = scores.amax(dim=-1).clamp_(min=0.0).masked_fill_(~sees_keys, 0.0)  # m_new - m_old
                probs = scores.sub_(grow.unsqueeze(-1)).mul_(LOG2E).exp2_()
                tile_sum = probs.sum(dim=-1)
                shrink = torch.exp(-grow)  # exp(m_old - m_new) <= 1
                l.mul_(shrink)
                acc.mul_(shrink.unsqueeze(-1))
                m = m + grow
                q1[..., head_dim] = -m.masked_fill(~sees_keys, 0.0)
            l.add_(tile_sum)
            acc.baddbmm_(probs, v[:, key_start:key_end])  # acc += exp(score - m) @ V_tile

        # normalise once, at the end (FlashAttention-2). A row that saw no key has acc = l = 0:
        # it gets output 0 and lse = -inf + log(0) = -inf rather than 0 / 0 = NaN.
        torch.div(acc, l.masked_fill(~sees_keys, 1.0).unsqueeze(-1), out=out[:, row_start:row_end])
        lse[:, row_start:row_end] = m + torch.log(l)
    return out, lse


def _starting_max(q, k, scale, is_causal):
    """A first value for each row's running maximum: the score of one key the row surely sees
    (its own position when causal, key 0 otherwise). Any visible score is at most the row's true
    maximum, and that is all the online softmax needs. -inf for a row that sees no key at all.
    q: [N, T, D], k: [N, S, D] -> [N, T]."""
    n, query_len, _ = q.shape
    key_len = k.shape[1]
    if is_causal:  # query i is the token at position i + S - T
        key = torch.arange(query_len, device=q.device) + (key_len - query_len)
    else:
        key = torch.zeros(query_len, dtype=torch.long, device=q.device)
    visible = (key >= 0) & (key < key_len)  # [T]
    if not bool(visible.any()):
        return q.new_full((n, query_len), -math.inf)
    m = torch.einsum("ntd,ntd->nt", q, k[:, key.clamp(0, key_len - 1)]) * scale
    return m.masked_fill_(~visible, -math.inf)


def _tile_mask(cache, rows, cols, shift, device):
    """[rows, cols] bool, True where a key is in its query's future. At the tile's top-left
    corner the key's position minus the query's is `shift`, so cell (i, j) is in the future when
    j + shift > i. All full-size diagonal tiles share one mask, built once."""
    key = (rows, cols, shift)
    if key not in cache:
        i = torch.arange(rows, device=device).unsqueeze(1)
        j = torch.arange(cols, device=device).unsqueeze(0)
        cache[key] = j + shift > i
    return cache[key]


def _backward(q, k, v, out, lse, grad_out, grad_lse, is_causal, scale, block_q, block_k):
    """Gradients by tiles, FlashAttention-2's Algorithm 2. q, out, grad_out: [N, T, D]; k, v: [N, S, D];
    lse, grad_lse: [N, T]. Returns dq [N, T, D], dk, dv [N, S, D].

    With P = softmax(S), S = scale * q k^T: dV = P^T dO; dP = dO V^T; dS = P * (dP - delta) with
    delta = rowsum(dO * O) (= rowsum(P * dP), without any [T, S] sum); dQ = scale * dS K;
    dK = scale * dS^T Q. If lse is used downstream, d lse / dS = P, which subtracts grad_lse from
    delta. P itself is recomputed tile by tile as exp(S - lse): nothing [T, S] was saved.
    """
    n, query_len, head_dim = q.shape
    key_len = k.shape[1]
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    delta = (grad_out * out).sum(dim=-1)  # [N, T]
    if grad_lse is not None:
        delta = delta - grad_lse
    k1 = torch.cat([k, k.new_ones(n, key_len, 1)], dim=-1)  # [N, S, D+1], as in _forward
    sees_keys = torch.isfinite(lse)  # [N, T]
    masks = {}

    for row_start in range(0, query_len, block_q):
        row_end = min(row_start + block_q, query_len)
        rows = slice(row_start, row_end)
        q_scaled = q[:, rows] * scale  # [N, rows, D]
        # (q * scale, -lse) . (k, 1) = score - lse, so exp of it is P, the softmax, at once
        q1 = torch.cat([q_scaled, -lse[:, rows].masked_fill(~sees_keys[:, rows], 0.0).unsqueeze(-1)], dim=-1)
        d_out, d_q = grad_out[:, rows], torch.zeros_like(q_scaled)  # [N, rows, D]
        for key_start, key_end, needs_mask in key_tiles(row_start, row_end, key_len, query_len, block_k, is_causal):
            keys = slice(key_start, key_end)
            probs = torch.bmm(q1, k1[:, keys].transpose(1, 2))  # [N, rows, cols]: score - lse
            if needs_mask:
                probs.masked_fill_(_tile_mask(masks, row_end - row_start, key_end - key_start,
                                              key_start - row_start - (key_len - query_len), q.device), -math.inf)
            probs.mul_(LOG2E).exp2_()  # P = exp(score - lse), recomputed: the forward's softmax
            dv[:, keys] += torch.bmm(probs.transpose(1, 2), d_out)  # dV_j += P^T dO_i
            d_scores = torch.bmm(d_out, v[:, keys].transpose(1, 2))  # dP = dO_i V_j^T
            d_scores.sub_(delta[:, rows].unsqueeze(-1)).mul_(probs)  # dS = P * (dP - delta)
            d_q.baddbmm_(d_scores, k[:, keys])  # dQ_i += dS K_j (times scale below)
            dk[:, keys] += torch.bmm(d_scores.transpose(1, 2), q_scaled)  # dK_j += dS^T Q_i * scale
        dq[:, rows] = d_q * scale
    return dq, dk, dv
