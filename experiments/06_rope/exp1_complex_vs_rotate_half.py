"""The paper's complex-number RoPE and the rotate-half RoPE of MiniMind and transformers are the
same rotation up to a fixed permutation of dimensions; without that permutation they differ.

RoFormer (arXiv 2104.09864) pairs neighbouring dimensions, (x0, x1), (x2, x3), ..., reads each
pair as a complex number and multiplies it by e^{j m theta_i}. MiniMind and transformers pair
dimension i with dimension i + d/2 and compute x * cos + rotate_half(x) * sin. This script
measures, on random vectors at many positions:
- the rotate-half form (minimind_ref.apply_rotary_pos_emb) of the permuted vector against the
  permuted complex form (labkit.rope_paper.apply_rotary_complex): equal to float32 rounding;
- the two forms on the same, unpermuted vector: a different rotation, errors of order |x|;
- the two d x d rotation matrices at one position: R_half = P R_complex P^T exactly;
- attention scores of a layer written for the complex form, and of the same layer run with
  rotate-half RoPE after its W_q and W_k rows are permuted head by head (as transformers' Llama
  conversion script does, "permute for sliced rotary"): equal; without permuting: different.

Why it matters: both layouts are common (Meta's original LLaMA code uses the complex form,
transformers rotate-half). Loading weights trained in one layout into code written for the other
runs without an error and gives wrong scores, unless the rows of W_q and W_k are permuted.
"""

from __future__ import annotations

import torch

from labkit import EPS32, Experiment, float_in, int_in, print_table, relative_error, show_heatmaps
from labkit.i18n import phrase
from labkit.rope_paper import apply_rotary_complex
from minimind_ref import apply_rotary_pos_emb, precompute_freqs_cis
from minimind_ref.rope import interleaved_to_half_permutation, rope_inverse_frequencies

DIFFERENT = 0.1  # "a different rotation": an error of at least 10% of the largest entry


def add_arguments(parser):
    parser.add_argument("--head-dim", type=int_in(2, 512), default=64,
                        help="head size d, even (default 64, MiniMind's)")
    parser.add_argument("--positions", type=int_in(2, 4096), default=2048,
                        help="positions 0 .. N-1 rotated (default 2048, MiniMind's trained length)")
    parser.add_argument("--heads", type=int_in(1, 16), default=4, help="heads of the converted layer (default 4)")
    parser.add_argument("--base", type=float_in(1.0, 1e12, low_open=True), default=1e6,
                        help="rope_theta, above 1 (default 1e6, MiniMind's)")
    parser.add_argument("--matrix-dim", type=int_in(2, 64), default=8,
                        help="size of the rotation matrices drawn, even (default 8)")
    parser.add_argument("--matrix-base", type=float_in(1.0, 1e12, low_open=True), default=100.0,
                        help="base of the matrices drawn: small, so every pair visibly turns (default 100)")
    parser.add_argument("--matrix-position", type=int_in(1, 65536), default=3,
                        help="position of the matrices drawn (default 3)")


MAX_SCORES = 2 ** 26  # --heads x --positions^2 scores: 256 MiB a tensor, and a few are held at once
MAX_WIDTH = 4096  # --heads x --head-dim, the layer's width: W_q and W_k are width x width


def check_arguments(args):
    for flag, value in (("--head-dim", args.head_dim), ("--matrix-dim", args.matrix_dim)):
        if value % 2:
            return f"{flag} must be even (RoPE rotates pairs), got {value}"
    if args.heads * args.head_dim > MAX_WIDTH:
        return (f"--heads x --head-dim must be at most {MAX_WIDTH}, got {args.heads} x {args.head_dim} = "
                f"{args.heads * args.head_dim}")
    scores = args.heads * args.positions ** 2
    if scores > MAX_SCORES:
        return (f"--heads x --positions^2 must be at most {MAX_SCORES}, got {args.heads} x {args.positions}^2 "
                f"= {scores}")
    return None


def rotation_matrices(dim: int, position: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The d x d matrices of both forms at one position, found by rotating the basis vectors:
    column j of R is R e_j. Returns (R_complex, R_half), each [d, d]."""
    basis = torch.eye(dim, dtype=torch.float64)  # row j = e_j, read as position `position`
    positions = torch.full((dim,), float(position), dtype=torch.float64)
    r_complex = apply_rotary_complex(basis, positions, rope_inverse_frequencies(dim, base).double()).T
    cos, sin = precompute_freqs_cis(dim, position + 1, base)
    cos, sin = cos[position].double().expand(dim, dim), sin[position].double().expand(dim, dim)
    rows = basis[None, None]  # [1, 1, T, d]: the d basis vectors as d positions, all at `position`
    r_half, _ = apply_rotary_pos_emb(rows, rows, cos, sin)
    return r_complex, r_half[0, 0].T


def transformers_permute(w: torch.Tensor, heads: int) -> torch.Tensor:
    """The row permutation of transformers' Llama conversion script ("permute for sliced
    rotary"): within each head, rows (0, 1, 2, 3, ...) become (0, 2, 4, ..., 1, 3, 5, ...)."""
    out_features, in_features = w.shape
    return w.view(heads, out_features // heads // 2, 2, in_features).transpose(1, 2).reshape(out_features, in_features)


def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """[H, T, D] x [H, T, D] -> [H, T, T] raw scores q . k (the scale does not matter here)."""
    return q @ k.transpose(-2, -1)


# Tolerances, in float32 roundings (EPS32 each) of the largest entry
VECTOR_TOLERANCE = 16 * EPS32  # a handful of float32 roundings of the largest entry
MATRIX_TOLERANCE = 4 * EPS32  # the rotate-half matrix comes from precompute_freqs_cis's float32 table
SCORE_TOLERANCE = 64 * EPS32  # both sides round the same float32 products: a few dozen ulps at most


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    d, n, heads = args.head_dim, args.positions, args.heads
    perm, inv_freq, cos, sin, positions = the_two_layouts(d, n, args.base)
    vectors = rotate_vectors(d, n, heads, perm, inv_freq, cos, sin, positions)
    matrices = rotation_matrices_at_one_position(args.matrix_dim, args.matrix_position, args.matrix_base)
    layer = convert_a_layer(d, n, heads, perm, inv_freq, cos, sin, positions)
    print_comparison(vectors, matrices, layer, args.matrix_dim, args.matrix_position)
    claim_layouts(exp, n, vectors, matrices, layer)
    draw_matrices(exp, matrices, args.matrix_dim, args.matrix_position, args.matrix_base)
    return exp.finish()


def the_two_layouts(d: int, n: int, base: float):
    """The permutation from interleaved pairs to halves, and each form's tables."""
    perm = interleaved_to_half_permutation(d)  # [d]
    inv_freq = rope_inverse_frequencies(d, base)  # [d/2]
    cos, sin = precompute_freqs_cis(d, n, base)  # [N, d] each
    positions = torch.arange(n)
    print(f"head_dim d = {d}, base = {base:g}, positions 0..{n - 1}")
    print(f"permutation (interleaved -> halves), first 8 of {d}: {perm[:8].tolist()} ..."
          f" then {perm[d // 2:d // 2 + 4].tolist()} ...")
    print()
    return perm, inv_freq, cos, sin, positions


def rotate_vectors(d, n, heads, perm, inv_freq, cos, sin, positions) -> dict:
    """Vectors: rotate-half of P x against P (complex form of x), at every position."""
    x = torch.randn(2, heads, n, d)  # [B, H, T, d], interleaved layout
    complex_form = apply_rotary_complex(x, positions, inv_freq)  # [B, H, T, d]
    half_form, _ = apply_rotary_pos_emb(x[..., perm], x[..., perm], cos, sin)
    same_error = relative_error(half_form, complex_form[..., perm])
    unpermuted, _ = apply_rotary_pos_emb(x, x, cos, sin)  # rotate-half applied to interleaved data
    different_error = relative_error(unpermuted, complex_form)
    return {"same_error": same_error, "different_error": different_error}


def rotation_matrices_at_one_position(matrix_dim: int, matrix_position: int, matrix_base: float) -> dict:
    """Matrices: R_half = P R_complex P^T at one position."""
    r_complex, r_half = rotation_matrices(matrix_dim, matrix_position, matrix_base)
    p_small = interleaved_to_half_permutation(matrix_dim)
    matrix_error = (r_half - r_complex[p_small][:, p_small]).abs().max().item()
    matrix_unpermuted = (r_half - r_complex).abs().max().item()

    return {"r_complex": r_complex, "r_half": r_half, "p_small": p_small, "error": matrix_error,
            "unpermuted": matrix_unpermuted}


def convert_a_layer(d, n, heads, perm, inv_freq, cos, sin, positions) -> dict:
    """A layer converted between the layouts: permute the rows of W_q and W_k per head."""
    hidden = heads * d
    w_q, w_k = torch.randn(hidden, hidden) / hidden ** 0.5, torch.randn(hidden, hidden) / hidden ** 0.5
    tokens = torch.randn(n, hidden)  # [T, C]

    def project(w):  # [T, C] -> [H, T, d]
        return (tokens @ w.T).view(n, heads, d).transpose(0, 1)

    q_c = apply_rotary_complex(project(w_q), positions, inv_freq)  # the layer as written for the paper's form
    k_c = apply_rotary_complex(project(w_k), positions, inv_freq)
    reference = scores(q_c, k_c)
    per_head_perm = torch.cat([h * d + perm for h in range(heads)])  # [H*d]
    permute_matches = torch.equal(transformers_permute(w_q, heads), w_q[per_head_perm])
    q_h, k_h = apply_rotary_pos_emb(project(transformers_permute(w_q, heads))[None],
                                    project(transformers_permute(w_k, heads))[None], cos, sin)
    converted_error = relative_error(scores(q_h[0], k_h[0]), reference)
    q_u, k_u = apply_rotary_pos_emb(project(w_q)[None], project(w_k)[None], cos, sin)
    unconverted_error = relative_error(scores(q_u[0], k_u[0]), reference)

    return {"permute_matches": permute_matches, "converted_error": converted_error,
            "unconverted_error": unconverted_error}


def print_comparison(vectors: dict, matrices: dict, layer: dict, matrix_dim: int, matrix_position: int) -> None:
    same_error, different_error = vectors["same_error"], vectors["different_error"]
    matrix_error, matrix_unpermuted = matrices["error"], matrices["unpermuted"]
    converted_error, unconverted_error = layer["converted_error"], layer["unconverted_error"]
    tolerance, matrix_tolerance, score_tolerance = VECTOR_TOLERANCE, MATRIX_TOLERANCE, SCORE_TOLERANCE

    def verdict(error: float, allowed: float) -> str:
        return phrase("same") if error <= allowed else phrase("differ")

    print_table(
        ["comparison", "relative max error", "verdict"],
        [["rotate_half(P x)  vs  P complex(x)", same_error, verdict(same_error, tolerance)],
         ["rotate_half(x)    vs  complex(x)", different_error, verdict(different_error, tolerance)],
         [f"R_half vs P R_complex P^T  ({matrix_dim}x{matrix_dim}, m={matrix_position})", matrix_error,
          verdict(matrix_error, matrix_tolerance)],
         [f"R_half vs R_complex        ({matrix_dim}x{matrix_dim}, m={matrix_position})",
          matrix_unpermuted, verdict(matrix_unpermuted, matrix_tolerance)],
         [phrase("scores: W_q, W_k rows permuted per head"), converted_error,
          verdict(converted_error, score_tolerance)],
         [phrase("scores: weights loaded as they are"), unconverted_error,
          verdict(unconverted_error, score_tolerance)]],
        ["", ".1e", ""])
    print()
    print(f"tolerances (float32 rounding): vectors 16 eps = {tolerance:.1e}, matrices 4 eps = "
          f"{matrix_tolerance:.1e}, scores 64 eps = {score_tolerance:.1e}")
    print(f"transformers' 'permute for sliced rotary' equals indexing each head's rows by the permutation: "
          f"{layer['permute_matches']}")
    print()



def claim_layouts(exp, n: int, vectors: dict, matrices: dict, layer: dict) -> None:
    same_error, different_error = vectors["same_error"], vectors["different_error"]
    matrix_error, matrix_unpermuted = matrices["error"], matrices["unpermuted"]
    permute_matches, converted_error = layer["permute_matches"], layer["converted_error"]
    unconverted_error = layer["unconverted_error"]
    tolerance, matrix_tolerance, score_tolerance = VECTOR_TOLERANCE, MATRIX_TOLERANCE, SCORE_TOLERANCE
    exp.claim(same_error <= tolerance,
              f"rotate-half of the permuted vector equals the permuted complex form at all {n} positions "
              f"(relative error {same_error:.1e} <= {tolerance:.1e})")
    exp.claim(matrix_error <= matrix_tolerance and matrix_unpermuted >= DIFFERENT,
              f"the rotation matrices satisfy R_half = P R_complex P^T (error {matrix_error:.1e}); without P they "
              f"differ by {matrix_unpermuted:.2f}")
    exp.claim(different_error >= DIFFERENT,
              f"applied to the same unpermuted vector the two forms are different rotations (error "
              f"{100 * different_error:.0f}% of the largest entry)")
    exp.claim(permute_matches and converted_error <= score_tolerance and unconverted_error >= DIFFERENT,
              f"a layer converts between the layouts by permuting the rows of W_q and W_k per head: scores equal "
              f"(error {converted_error:.1e}); loaded without the permutation they are off by "
              f"{100 * unconverted_error:.0f}%")



def draw_matrices(exp, matrices: dict, matrix_dim: int, matrix_position: int, matrix_base: float) -> None:
    r_complex, r_half, p_small = matrices["r_complex"], matrices["r_half"], matrices["p_small"]
    grid = torch.stack([r_complex, r_half, r_complex[p_small][:, p_small]]).float()
    fig = show_heatmaps(grid, titles=["complex form: pairs (2i, 2i+1)", "rotate-half: pairs (i, i + d/2)",
                                      "P R_complex P^T = rotate-half"],
                        xlabel="input dimension", ylabel="output dimension", cmap="RdBu_r", vmin=-1, vmax=1,
                        annotate=matrix_dim <= 8, fmt=".2f",
                        suptitle=f"RoPE's rotation matrix at position {matrix_position} "
                                 f"(d = {matrix_dim}, base {matrix_base:g})")
    exp.save(fig, "matrices")


if __name__ == "__main__":
    raise SystemExit(main())
