"""RoPE as the paper writes it (arXiv 2104.09864), for module 06's comparisons: the complex-number
rotation and RoFormer's long-range bound. MiniMind never calls these; its RoPE is the rotate-half
form in minimind_ref/rope.py, and `minimind_ref.rope.interleaved_to_half_permutation` maps one
layout onto the other.
"""

from __future__ import annotations

import torch


def apply_rotary_complex(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """RoPE in the paper's complex-number form (arXiv 2104.09864, section 3.2): pair i of a token
    at position p is the complex number x_{2i} + j x_{2i+1}, multiplied by e^{j p theta_i}.

    x: [..., T, D] in interleaved layout; positions: [T] (any real numbers); inv_freq: [D/2], the
    theta_i (for example `rope_inverse_frequencies(D, base)`). Returns [..., T, D] in x's layout
    and dtype; the complex product runs in complex128 when x is float64, else complex64.
    """
    if x.dim() < 2 or x.shape[-1] % 2:
        raise ValueError(f"apply_rotary_complex: x must be [..., T, D] with an even D, got shape {tuple(x.shape)}.")
    if positions.shape != (x.shape[-2],) or inv_freq.shape != (x.shape[-1] // 2,):
        raise ValueError(
            f"apply_rotary_complex: positions must be [T] = [{x.shape[-2]}] and inv_freq [D/2] = "
            f"[{x.shape[-1] // 2}], got {tuple(positions.shape)} and {tuple(inv_freq.shape)}.")
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    pairs = x.to(real).reshape(*x.shape[:-1], x.shape[-1] // 2, 2)  # [..., T, D/2, 2]
    z = torch.view_as_complex(pairs.contiguous())  # [..., T, D/2]
    angles = positions.to(real)[:, None] * inv_freq.to(real)[None, :]  # [T, D/2]
    rotated = z * torch.polar(torch.ones_like(angles), angles)  # multiply by e^{j p theta_i}
    return torch.view_as_real(rotated).reshape(x.shape).to(x.dtype)


def rope_decay_bound(distances: torch.Tensor, dim: int, rope_base: float) -> torch.Tensor:
    """RoFormer's long-range bound (arXiv 2104.09864, section 3.4.3), float64. [len(distances)]

    With h_i the complex product of pair i of q and of conj(k), the score at relative distance
    r = m - n is Re(sum_i h_i e^{j r theta_i}). Summing by parts (Abel) bounds its size by
    max_i |h_{i+1} - h_i| * sum_{j=1}^{dim/2} |S_j|, where S_j = sum_{i<j} e^{j r theta_i}. This
    returns the part that depends on r alone, averaged as in the paper's figure:
    (1 / (dim/2)) * sum_{j=1}^{dim/2} |S_j|. At r = 0 every S_j = j, so it starts at (dim/2 + 1) / 2.
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2 or dim % 2:
        raise ValueError(f"rope_decay_bound: dim must be a positive even int, got {dim!r}.")
    theta = rope_base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # [dim/2], exact in float64
    angles = torch.as_tensor(distances, dtype=torch.float64)[:, None] * theta[None, :]  # [R, dim/2]
    partial_sums = torch.cumsum(torch.polar(torch.ones_like(angles), angles), dim=-1)  # S_1 .. S_{dim/2}
    return partial_sums.abs().mean(dim=-1)
