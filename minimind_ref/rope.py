"""Rotary position embeddings (RoPE, arXiv 2104.09864) with MiniMind's YaRN scaling (module 06).

Attention by itself cannot tell positions apart (module 01). RoPE rotates each query and key by an
angle proportional to its position, one angle per pair of dimensions, at geometric frequencies
theta_i = base^(-2i/dim). The dot product of a query rotated by m and a key rotated by n then
depends on m - n only: relative position, with nothing added to the values.

This file uses the "rotate-half" layout of MiniMind and transformers: dimension i is paired with
dimension i + dim/2 (not with its neighbour i + 1, as the paper's complex-number form does). Both
are the same rotation up to a fixed permutation of dimensions; module 06 proves it numerically.

YaRN (arXiv 2309.00071) stretches a model past its trained length: frequencies that turn many times
within it are kept (they carry local order), those that turn less than once are divided by `factor`
(interpolated, so long distances map onto angles seen in training), a linear ramp blends the rest.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ._checks import check_features, check_rope_table, check_rotary_args

# MiniMind's YaRN settings (2048 trained positions, stretched 16 times): what `inference_rope_scaling`
# uses, and where a `rope_scaling` that leaves a key out takes its value.
MINIMIND_YARN: dict[str, Any] = {"type": "yarn", "beta_fast": 32, "beta_slow": 1, "factor": 16,
                                 "original_max_position_embeddings": 2048, "attention_factor": 1.0}


def rope_inverse_frequencies(dim: int, rope_base: float) -> torch.Tensor:
    """theta_i = rope_base^(-2i/dim) for i = 0 .. dim/2 - 1: one angular speed per pair. [dim/2]"""
    return 1.0 / (rope_base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))


def yarn_correction_dim(num_rotations: float, dim: int, rope_base: float, original_max: int) -> float:
    """The (fractional) pair index whose frequency turns `num_rotations` times over `original_max`
    positions: solve original_max * theta_i / (2 pi) = num_rotations for i."""
    return dim * math.log(original_max / (num_rotations * 2 * math.pi)) / (2 * math.log(rope_base))


def yarn_ramp(dim: int, rope_base: float, rope_scaling: dict) -> torch.Tensor:
    """How much each pair is interpolated, in [0, 1]: 0 keeps the frequency, 1 divides it by the
    factor. Pairs below `low` (fast: more than beta_fast turns) get 0, pairs above `high` (slow:
    fewer than beta_slow turns) get 1, linear in between. [dim/2]"""
    orig = rope_scaling["original_max_position_embeddings"]
    low = max(math.floor(yarn_correction_dim(rope_scaling["beta_fast"], dim, rope_base, orig)), 0)
    high = min(math.ceil(yarn_correction_dim(rope_scaling["beta_slow"], dim, rope_base, orig)), dim // 2 - 1)
    pair = torch.arange(dim // 2, dtype=torch.float32)
    return torch.clamp((pair - low) / max(high - low, 0.001), 0.0, 1.0)


def yarn_inverse_frequencies(dim: int, rope_base: float, rope_scaling: dict) -> torch.Tensor:
    """The theta_i that `precompute_freqs_cis` uses with YaRN past the trained length, [dim/2]:
    theta_i * (1 - ramp_i + ramp_i / factor). Pairs with ramp 0 keep their frequency, pairs with
    ramp 1 turn `factor` times slower (position interpolation for that pair), the rest blend."""
    ramp = yarn_ramp(dim, rope_base, rope_scaling)  # [dim/2], 0 = keep, 1 = divide
    return rope_inverse_frequencies(dim, rope_base) * (1 - ramp + ramp / rope_scaling["factor"])


def precompute_freqs_cis(dim: int, end: int = 32 * 1024, rope_base: float = 1e6,
                         rope_scaling: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every position's angles, each [end, dim], in rotate-half layout.

    Row p holds cos(p * theta_i) for i = 0 .. dim/2 - 1, then the same half again (dimension i and
    i + dim/2 share an angle). With `rope_scaling` (YaRN), the frequencies are rescaled only when the
    table reaches past `original_max_position_embeddings`; within it, plain RoPE is already right.
    The result is multiplied by `attention_factor` (1.0 in MiniMind): every score by its square.
    """
    check_rope_table(dim, end, rope_base, rope_scaling, MINIMIND_YARN)
    freqs = rope_inverse_frequencies(dim, rope_base)  # [dim/2]
    attention_factor = 1.0
    if rope_scaling is not None:
        rope_scaling = {**MINIMIND_YARN, **rope_scaling}  # a key left out takes MiniMind's value
        attention_factor = rope_scaling["attention_factor"]
        if end > rope_scaling["original_max_position_embeddings"]:
            freqs = yarn_inverse_frequencies(dim, rope_base, rope_scaling)
    positions = torch.arange(end, dtype=torch.float32)
    angles = torch.outer(positions, freqs)  # [end, dim/2]
    angles = torch.cat([angles, angles], dim=-1)  # [end, dim]: pair (i, i + dim/2) shares angle i
    return torch.cos(angles) * attention_factor, torch.sin(angles) * attention_factor


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension: a 90-degree turn of every
    pair (i, i + dim/2)."""
    if type(x) is not torch.Tensor or x.ndim == 0 or x.shape[-1] % 2:
        check_features("rotate_half", x)
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Rotate queries and keys by their positions' angles: x * cos + rotate_half(x) * sin.

    q: [B, H, T, D], k: [B, H_kv, T, D]; cos and sin: [T, D] (one set of positions for the batch)
    or [B, T, D] (per-sequence positions, as with left padding). Values are never rotated: position
    should change which tokens attend to which, not what they carry.
    """
    check_rotary_args(q, k, cos, sin)
    if cos.ndim == 3:
        cos, sin = cos[:, None], sin[:, None]  # [B, 1, T, D]
    q_rot = (q * cos + rotate_half(q) * sin).to(q.dtype)
    k_rot = (k * cos + rotate_half(k) * sin).to(k.dtype)
    return q_rot, k_rot


# -- the layouts: the paper pairs neighbouring dimensions, this file i with i + dim/2 (the paper's own
# complex-number form is labkit/rope_paper.py; MLA's rotary part and module 06 use the permutation).


def interleaved_to_half_permutation(dim: int) -> torch.Tensor:
    """The fixed reordering of dimensions that turns the paper's pairs into rotate-half pairs. [dim]

    `x[..., perm]` puts the first member of every neighbour pair (0, 2, 4, ...) in the first half
    and the second members (1, 3, 5, ...) in the second, so that neighbour pair i lands on
    dimensions (i, i + dim/2). Its inverse is `torch.argsort(perm)`.
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2 or dim % 2:
        raise ValueError(f"interleaved_to_half_permutation: dim must be a positive even int, got {dim!r}.")
    return torch.cat([torch.arange(0, dim, 2), torch.arange(1, dim, 2)])
