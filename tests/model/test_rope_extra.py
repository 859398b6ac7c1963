"""Module 06's teaching helpers in minimind_ref/rope.py, against independent computations.

Oracles: explicit 2 x 2 rotation matrices applied pair by pair in plain Python floats (the
paper's definition of RoPE, arXiv 2104.09864, as a block-diagonal rotation matrix); RoFormer's partial sums written as a
Python loop over cmath exponentials; the YaRN table that `precompute_freqs_cis` itself builds.
"""

from __future__ import annotations

import cmath
import math

import pytest
import torch

import minimind_ref as mm
from labkit.rope_paper import apply_rotary_complex, rope_decay_bound
from minimind_ref.rope import (
    apply_rotary_pos_emb,
    interleaved_to_half_permutation,
    precompute_freqs_cis,
    rope_inverse_frequencies,
    yarn_inverse_frequencies,
)


def rotate_by_matrices(x: list[float], position: float, base: float) -> list[float]:
    """The paper's R^d_{Theta,m} x: pair (x_2i, x_2i+1) times the 2 x 2 rotation by m * theta_i."""
    d = len(x)
    out = []
    for i in range(d // 2):
        angle = position * base ** (-2.0 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        a, b = x[2 * i], x[2 * i + 1]
        out += [c * a - s * b, s * a + c * b]
    return out


def test_permutation_pairs_neighbours_into_halves():
    for dim in (2, 8, 64):
        perm = interleaved_to_half_permutation(dim).tolist()
        assert sorted(perm) == list(range(dim))
        for i in range(dim // 2):  # neighbour pair (2i, 2i+1) lands on (i, i + dim/2)
            assert (perm[i], perm[i + dim // 2]) == (2 * i, 2 * i + 1)


@pytest.mark.parametrize("dim", [0, 3, -2, 4.0, True])
def test_permutation_refuses_a_bad_dim(dim):
    with pytest.raises(ValueError, match="dim must be a positive even int"):
        interleaved_to_half_permutation(dim)


@pytest.mark.parametrize("dim,base", [(2, 1e4), (8, 1e4), (16, 1e6)])
def test_complex_form_equals_rotation_matrices(dim, base):
    torch.manual_seed(0)
    positions = torch.tensor([0.0, 1.0, 7.0, 123.0, 0.5])
    x = torch.randn(3, len(positions), dim, dtype=torch.float64)
    got = apply_rotary_complex(x, positions, rope_inverse_frequencies(dim, base).double())
    for b in range(3):
        for t, p in enumerate(positions.tolist()):
            expected = torch.tensor(rotate_by_matrices(x[b, t].tolist(), p, base), dtype=torch.float64)
            assert torch.allclose(got[b, t], expected, atol=1e-5, rtol=0), (b, t)
    assert got.dtype == torch.float64


def test_complex_form_keeps_float32_and_equals_rotate_half_after_permutation():
    torch.manual_seed(1)
    dim, end, base = 32, 50, 1e6
    x = torch.randn(2, 4, end, dim)  # interleaved layout
    perm = interleaved_to_half_permutation(dim)
    complex_form = apply_rotary_complex(x, torch.arange(end), rope_inverse_frequencies(dim, base))
    assert complex_form.dtype == torch.float32
    cos, sin = precompute_freqs_cis(dim, end, base)
    half_form, _ = apply_rotary_pos_emb(x[..., perm], x[..., perm], cos, sin)
    assert torch.allclose(half_form, complex_form[..., perm], atol=1e-5)
    assert torch.allclose(half_form[..., torch.argsort(perm)], complex_form, atol=1e-5)


def test_complex_form_refuses_mismatched_shapes():
    x = torch.randn(5, 8)
    with pytest.raises(ValueError, match="even D"):
        apply_rotary_complex(torch.randn(5, 7), torch.arange(5), torch.ones(3))
    with pytest.raises(ValueError, match="positions must be"):
        apply_rotary_complex(x, torch.arange(4), torch.ones(4))
    with pytest.raises(ValueError, match="inv_freq"):
        apply_rotary_complex(x, torch.arange(5), torch.ones(8))


def bound_by_loop(distance: float, dim: int, base: float) -> float:
    total, partial = 0.0, 0j
    for i in range(dim // 2):
        partial += cmath.exp(1j * distance * base ** (-2.0 * i / dim))  # S_{i+1}
        total += abs(partial)
    return total / (dim // 2)


@pytest.mark.parametrize("dim,base", [(8, 1e4), (64, 1e4), (64, 1e6)])
def test_decay_bound_equals_the_partial_sums(dim, base):
    distances = [0, 1, 2, 10, 100, 2047, 30000]
    got = rope_decay_bound(torch.tensor(distances), dim, base)
    assert got.dtype == torch.float64
    expected = torch.tensor([bound_by_loop(r, dim, base) for r in distances], dtype=torch.float64)
    assert torch.allclose(got, expected, atol=1e-9, rtol=1e-9)
    assert got[0].item() == pytest.approx((dim / 2 + 1) / 2)


def test_decay_bound_bounds_real_scores():
    """The inequality it comes from: |score| <= max_i |h_{i+1} - h_i| * sum_j |S_j| (h_{d/2} = 0)."""
    torch.manual_seed(2)
    dim, base = 16, 1e4
    perm = interleaved_to_half_permutation(dim)
    distances = torch.arange(0, 400)
    cos, sin = precompute_freqs_cis(dim, 400, base)
    bound = rope_decay_bound(distances, dim, base) * (dim // 2)  # undo the average
    for _ in range(20):
        q, k = torch.randn(dim, dtype=torch.float64), torch.randn(dim, dtype=torch.float64)
        h = torch.view_as_complex(q.reshape(-1, 2).contiguous()) * torch.view_as_complex(
            k.reshape(-1, 2).contiguous()).conj()
        step = (torch.cat([h, torch.zeros(1, dtype=h.dtype)]).diff()).abs().max().item()
        q_rot, k_rot = apply_rotary_pos_emb(q[perm].float().expand(400, dim)[None, None],
                                            k[perm].float().expand(400, dim)[None, None], cos, sin)
        scores = q_rot[0, 0, distances] @ k_rot[0, 0, 0]  # query at r, key at 0
        assert torch.all(scores.double().abs() <= step * bound + 1e-3)


def test_yarn_inverse_frequencies_are_the_tables_frequencies():
    scaling = mm.MINIMIND_YARN
    freqs = yarn_inverse_frequencies(64, 1e6, scaling)
    cos, sin = precompute_freqs_cis(64, scaling["original_max_position_embeddings"] + 1, 1e6, scaling)
    from_table = torch.atan2(sin[1, :32].double(), cos[1, :32].double())  # the angle at position 1
    assert torch.allclose(freqs.double(), from_table, rtol=1e-6, atol=0)
    plain = rope_inverse_frequencies(64, 1e6)
    assert torch.equal(freqs[:6], plain[:6])  # the fast pairs are kept
    assert torch.allclose(freqs[14:], plain[14:] / 16)  # the slow ones divided by the factor
