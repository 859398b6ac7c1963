"""With RoPE on queries and keys, the score <RoPE(q, m), RoPE(k, n)> depends only on m - n, so
shifting a whole sequence leaves attention unchanged; rotating the values as well breaks this.

Rotating q by m theta_i and k by n theta_i in every pair leaves only the difference of the angles,
(m - n) theta_i, in their dot product: score(m, n) = g(q, k, m - n) = sum_i Re(h_i e^{j (m-n) theta_i})
with h_i the complex product of pair i of q and of conj(k). This script measures:
- for one q and one k, every score over all N x N pairs of positions (minimind_ref's float32 table and
  apply_rotary_pos_emb): the spread of the scores along each diagonal m - n = const, and their
  distance from g computed in float64 from its formula;
- the same at random pairs of positions up to MiniMind's 32768: the float32 table rounds angles
  of up to 32768 rad, so the agreement loosens in proportion to the position (bounded by N eps);
- minimind_ref's Attention layer (random weights, RoPE on q and k) on the same tokens placed at
  positions 0..T-1 and shifted to s..s+T-1: the same output for every shift s. Then the same layer
  with the values rotated too: the output now changes with s.

Why it matters: relative position is what RoPE is for. Values carry the content that the weights
average; rotating them would make each output a mix of vectors turned by their keys' absolute
positions, so the same phrase would produce different outputs at different places.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from labkit import EPS32, Experiment, float_in, int_in, print_table, random_attention, relative_error, show_heatmaps
from labkit.i18n import phrase
from minimind_ref import (
    Attention,
    MiniMindConfig,
    apply_rotary_pos_emb,
    precompute_freqs_cis,
    scaled_dot_product_attention,
)

BROKEN = 0.01  # "depends on the shift": an output error of at least 1% of the output's size


def add_arguments(parser):
    parser.add_argument("--positions", type=int_in(2, 1024), default=512,
                        help="N: all N x N pairs are scored (default 512)")
    parser.add_argument("--far", type=int_in(2, 2 ** 17), default=32768,
                        help="largest position of the random far pairs (default 32768, MiniMind's table)")
    parser.add_argument("--far-pairs", type=int_in(1, 200_000), default=20000,
                        help="random far pairs of positions (default 20000)")
    parser.add_argument("--head-dim", type=int_in(2, 256), default=64, help="head size, even (default 64)")
    parser.add_argument("--base", type=float_in(1.0, 1e12, low_open=True), default=1e6,
                        help="rope_theta, above 1 (default 1e6)")
    parser.add_argument("--tokens", type=int_in(2, 1024), default=8,
                        help="T, tokens in the shifted sequence (default 8)")


LONGEST_FIXED_SHIFT = 1000  # the sequence is also shifted by 1, 2, 5, ..., 1000 positions
MAX_FORMULA = 2 ** 26  # --positions^2 x --head-dim: the float64 formula over every pair (256 MiB)


def check_arguments(args):
    if args.head_dim % 2:
        return f"--head-dim must be even (RoPE rotates pairs), got {args.head_dim}"
    if args.far < max(args.positions, LONGEST_FIXED_SHIFT + args.tokens):
        return (f"--far must be at least --positions and at least {LONGEST_FIXED_SHIFT} + --tokens (the sequence "
                f"is shifted by up to {LONGEST_FIXED_SHIFT}), got far={args.far}, positions={args.positions}, "
                f"tokens={args.tokens}")
    if args.positions ** 2 * args.head_dim > MAX_FORMULA:
        return (f"--positions^2 x --head-dim must be at most {MAX_FORMULA}, got {args.positions}^2 x "
                f"{args.head_dim} = {args.positions ** 2 * args.head_dim}")
    return None


def rotated(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """One vector x [D] placed at the positions whose cos, sin rows [P, D] are given -> [P, D]."""
    x_all = x.expand(cos.shape[0], x.shape[0])[None, None]  # [1, 1, P, D]
    out, _ = apply_rotary_pos_emb(x_all, x_all, cos, sin)
    return out[0, 0]


def g_formula(q: torch.Tensor, k: torch.Tensor, offsets: torch.Tensor, base: float) -> torch.Tensor:
    """score(m, n) written as a function of m - n alone, in float64 from the formula (rotate-half
    layout: pair i is dimensions i and i + D/2). [len(offsets)]"""
    half = q.shape[0] // 2
    theta = base ** (-torch.arange(0, 2 * half, 2, dtype=torch.float64) / (2 * half))  # [D/2]
    qc = torch.complex(q[:half].double(), q[half:].double())
    kc = torch.complex(k[:half].double(), k[half:].double())
    angles = offsets.double()[:, None] * theta[None, :]  # [R, D/2]
    return (qc * kc.conj() * torch.polar(torch.ones_like(angles), angles)).real.sum(-1)


def attention_outputs(layer: Attention, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                      rotate_values: bool) -> torch.Tensor:
    """The layer's causal output for tokens x [T, C] at the positions of cos, sin [T, D].
    With rotate_values, the values are rotated like the keys (what RoPE does not do)."""
    if not rotate_values:
        out, _ = layer(x[None], (cos, sin))
        return out[0]
    batch_x = x[None]  # [1, T, C]
    shape = (1, x.shape[0], layer.num_heads, layer.head_dim)
    q = layer.q_proj(batch_x).view(shape).transpose(1, 2)  # [1, H, T, D]
    k = layer.k_proj(batch_x).view(shape).transpose(1, 2)
    v = layer.v_proj(batch_x).view(shape).transpose(1, 2)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    v, _ = apply_rotary_pos_emb(v, v, cos, sin)  # the one change: values turned by their positions
    out = scaled_dot_product_attention(q, k, v, is_causal=True)  # [1, H, T, D]
    return layer.o_proj(out.transpose(1, 2).reshape(1, x.shape[0], -1))[0]


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    n, d, far, base = args.positions, args.head_dim, args.far, args.base
    cos, sin = precompute_freqs_cis(d, far, base)  # [far, D]
    q, k = torch.randn(d), torch.randn(d)
    near = every_pair_of_positions(q, k, cos, sin, n, base)
    far_error = random_far_pairs(q, k, cos, sin, far, args.far_pairs, base)
    print_pairs(near, far_error, n, d, far, args.far_pairs, base)
    shifts, errors = a_shifted_sequence(cos, sin, d, far, args.tokens, base)
    claim_relative(exp, near, far_error, shifts, errors, n, d, far)
    draw_scores(exp, near, n)
    draw_shift(exp, shifts, errors, d)
    return exp.finish()


def shift_tolerance(shifts: list[int], d: int) -> list[float]:
    """float32 rounding: of the angles (grows with the position) and of sums of D products."""
    return [(s + d) * EPS32 for s in shifts]


def every_pair_of_positions(q, k, cos, sin, n: int, base: float) -> dict:
    """Every pair (m, n) of N positions: the scores, their spread along m - n = const, and their
    distance from g(q, k, m - n) in float64 (relative to the largest score)."""
    scores = (rotated(q, cos[:n], sin[:n]) @ rotated(k, cos[:n], sin[:n]).T).double()  # [m, n]
    size = scores.abs().max().item()
    spread = max((torch.diagonal(scores, offset).max() - torch.diagonal(scores, offset).min()).item()
                 for offset in range(-n + 1, n)) / size
    m_idx, n_idx = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    formula = g_formula(q, k, (m_idx - n_idx).reshape(-1), base).view(n, n)
    near_error = (scores - formula).abs().max().item() / size
    offset_range = (formula.max() - formula.min()).item() / size  # how much the score does vary with m - n
    return {"scores": scores, "size": size, "spread": spread, "near_error": near_error, "offset_range": offset_range}


def random_far_pairs(q, k, cos, sin, far: int, far_pairs: int, base: float) -> float:
    """Random far pairs: float32 angles up to `far` rad; the largest error against g."""
    m_far = torch.randint(0, far, (far_pairs,))
    n_far = torch.randint(0, far, (far_pairs,))
    far_scores = (rotated(q, cos[m_far], sin[m_far]) * rotated(k, cos[n_far], sin[n_far])).sum(-1).double()
    far_formula = g_formula(q, k, m_far - n_far, base)
    far_error = (far_scores - far_formula).abs().max().item() / far_formula.abs().max().item()
    return far_error


def print_pairs(near: dict, far_error: float, n: int, d: int, far: int, far_pairs: int, base: float) -> None:
    spread, near_error, offset_range = near["spread"], near["near_error"], near["offset_range"]
    print(f"head_dim {d}, base {base:g}; one random q and k")
    print_table(["positions", "pairs scored", "spread along m-n = const", "|score - g(m-n)| (float64 g)",
                 "bound N x eps32"],
                [[phrase(f"0..{n - 1} (all pairs)"), n * n, f"{spread:.1e}", f"{near_error:.1e}", f"{n * EPS32:.1e}"],
                 [phrase(f"0..{far - 1} (random pairs)"), far_pairs, phrase("(few repeats)"), f"{far_error:.1e}",
                  f"{far * EPS32:.1e}"]],
                ["", "d", "", "", ""])
    print(f"(errors relative to the largest |score|; across offsets the score itself varies by {offset_range:.2f})")
    print()



def a_shifted_sequence(cos, sin, d: int, far: int, tokens: int, base: float):
    """A whole attention layer on a shifted sequence, with RoPE on q, k (MiniMind) and on v too."""
    config = MiniMindConfig(hidden_size=2 * d, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=1,
                            vocab_size=16, rope_theta=base, flash_attn=False)
    layer = random_attention(config)  # projections N(0, 1/fan_in): peaked weights
    x = torch.randn(tokens, config.hidden_size)  # [T, C]
    shifts = [1, 2, 5, 10, 100, 1000, far - tokens]
    rows, errors = [], {False: [], True: []}
    with torch.no_grad():
        base_out = {rv: attention_outputs(layer, x, cos[:tokens], sin[:tokens], rv) for rv in (False, True)}
        for s in shifts:
            row = [s]
            for rv in (False, True):
                out = attention_outputs(layer, x, cos[s:s + tokens], sin[s:s + tokens], rv)
                error = relative_error(out, base_out[rv])
                errors[rv].append(error)
                row.append(error)
            rows.append(row)
    print(f"Attention layer, T = {tokens} tokens at positions s..s+T-1 against 0..T-1 "
          f"(|out(s) - out(0)| / |out(0)|):")
    print_table(["shift s", "RoPE on q, k (MiniMind)", "RoPE on q, k and v"], rows, ["d", ".1e", ".1e"])
    print()
    return shifts, errors


def claim_relative(exp, near: dict, far_error: float, shifts: list[int], errors: dict, n: int, d: int,
                   far: int) -> None:
    spread, near_error, offset_range = near["spread"], near["near_error"], near["offset_range"]
    exp.claim(spread <= n * EPS32 and near_error <= n * EPS32,
              f"over all {n * n} pairs of positions 0..{n - 1}, scores with the same m - n agree (spread "
              f"{spread:.1e}) and equal g(q, k, m - n) ({near_error:.1e}), within float32 rounding N eps = "
              f"{n * EPS32:.1e}, while g itself varies by {offset_range:.2f} across offsets")
    exp.claim(far_error <= far * EPS32,
              f"up to position {far - 1} the rounding of float32 angles grows with the position but stays "
              f"under far x eps: {far_error:.1e} <= {far * EPS32:.1e}")
    exp.claim(all(e <= tol for e, tol in zip(errors[False], shift_tolerance(shifts, d))),
              f"MiniMind's attention (RoPE on q and k only) gives the same output wherever the sequence starts: "
              f"largest change {max(errors[False]):.1e} over shifts up to {shifts[-1]}, each under "
              f"(shift + D) x eps32")
    exp.claim(min(errors[True]) >= BROKEN,
              f"with the values rotated too, the output depends on the absolute position: it changes by "
              f"{100 * min(errors[True]):.0f}% to {100 * max(errors[True]):.0f}% of its size")



def draw_scores(exp, near: dict, n: int) -> None:
    scores, size = near["scores"], near["size"]
    shown = min(n, 24)
    fig = show_heatmaps(scores[:shown, :shown].float(), titles=[f"<RoPE(q, m), RoPE(k, n)>, m, n < {shown}"],
                        xlabel="key position n", ylabel="query position m", cmap="RdBu_r",
                        vmin=-size, vmax=size)
    exp.save(fig, "scores")



def draw_shift(exp, shifts: list[int], errors: dict, d: int) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.loglog(shifts, [max(e, 1e-9) for e in errors[False]], "o-", label="RoPE on q, k (MiniMind)")
    ax.loglog(shifts, errors[True], "s-", label="RoPE on q, k and v")
    ax.loglog(shifts, shift_tolerance(shifts, d), ":", color="gray", label="float32 rounding: (s + D) x eps")
    ax.set(xlabel="shift s of the whole sequence", ylabel="relative change of the output",
           title="Shifting a sequence: only rotating V makes it matter")
    ax.legend(fontsize=8)
    exp.save(fig, "shift")


if __name__ == "__main__":
    raise SystemExit(main())
