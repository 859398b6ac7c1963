"""Module 08's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import math

import torch
from torch.utils.flop_counter import FlopCounterMode

import minimind_ref as mm
from minimind_ref.variants.flash_attention import key_tiles


def _score_matrix_gib(seq_len: int = 8192) -> float:
    heads = mm.MiniMindConfig().num_attention_heads
    scores = torch.empty(heads, seq_len, seq_len, dtype=torch.float32, device="meta")  # no memory used
    return scores.numel() * scores.element_size() / 2**30


def _standard_hbm(n: int = 1024, d: int = 64) -> int:
    """Algorithm 0 of the FlashAttention paper, line by line."""
    line1 = 2 * n * d + n * n  # read Q, K; write S
    line2 = n * n + n * n  # read S; write P
    line3 = n * n + n * d + n * d  # read P, V; write O
    return line1 + line2 + line3


def _causal_visited(seq_len: int = 4096, block_q: int = 256, block_k: int = 512) -> float:
    computed = sum((min(row + block_q, seq_len) - row) * (end - start)
                   for row in range(0, seq_len, block_q)
                   for start, end, _ in key_tiles(row, min(row + block_q, seq_len), seq_len, seq_len, block_k, True))
    return computed / seq_len ** 2


def _recompute_flops(seq_len: int = 64, dim: int = 16) -> float:
    """Matmul FLOPs of one more Q K^T, relative to explicit attention's forward + backward."""
    q, k, v = (torch.randn(1, 2, seq_len, dim, requires_grad=True) for _ in range(3))
    with FlopCounterMode(display=False) as explicit:
        out = mm.scaled_dot_product_attention(q, k, v)
        torch.autograd.grad(out, (q, k, v), torch.randn_like(out))
    with FlopCounterMode(display=False) as one_product:
        q @ k.transpose(-2, -1)
    return one_product.get_total_flops() / explicit.get_total_flops()


def _merge_weight() -> float:
    lse1, lse2 = torch.tensor(math.log(3.0)), torch.tensor(0.0)
    return torch.exp(lse1 - torch.logaddexp(lse1, lse2)).item()


ANSWERS = {
    "score-matrix-gib": _score_matrix_gib,
    "standard-hbm": _standard_hbm,
    "causal-visited": _causal_visited,
    "recompute-flops": _recompute_flops,
    "merge-weight": _merge_weight,
}
