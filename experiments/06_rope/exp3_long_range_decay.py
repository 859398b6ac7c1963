"""RoFormer's upper bound on the attention score decays with the distance m - n, and with
MiniMind's rope_theta of 1e6 it decays several times more slowly than with the original 1e4.

RoFormer (arXiv 2104.09864, section 3.4.3) sums the score by parts: with h_i the complex product
of pair i of q and of conj(k) and S_j = sum_{i<j} e^{j r theta_i} at distance r = m - n,
|score| <= max_i |h_{i+1} - h_i| * sum_{j=1}^{d/2} |S_j|. The part that depends on r alone,
(1 / (d/2)) sum_j |S_j|, is what the paper plots; it starts at (d/2 + 1) / 2. This script computes
it (labkit.rope_paper.rope_decay_bound) for head_dim 64 at every distance up to 32768, for base 1e4
and 1e6, and averages it over octaves of distance (1, 2-3, 4-7, ...) because the curve itself
oscillates. It checks the inequality on random q, k; it shows the score of a key equal to its query
(averaged over directions: the mean of cos(r theta_i)); and it shows what the bound does not say:
a query and key that live in the slowest pair keep nearly their full score at any distance.

Why it matters: the bound is the paper's argument that distant tokens interact less. A larger base
makes the theta_i smaller, so more pairs barely turn over a long context and the bound stays high
further out: with MiniMind's 1e6, attention can still reach far across its 32768 positions. But it
is a bound, not a law: learned queries and keys can still attend far away with any base.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, int_in, print_table
from labkit.rope_paper import rope_decay_bound
from minimind_ref import apply_rotary_pos_emb, precompute_freqs_cis

BASES = (1e4, 1e6)  # RoFormer's (and the Transformer's) base, and MiniMind's rope_theta
QUARTER = 0.25  # the decay milestone: an octave whose mean bound is below a quarter of the start


def add_arguments(parser):
    parser.add_argument("--head-dim", type=int_in(4, 256), default=64,
                        help="head size d, even (default 64, MiniMind's)")
    parser.add_argument("--max-distance", type=int_in(1024, 2 ** 18), default=32768,
                        help="largest distance, a power of two >= 1024 (default 32768, MiniMind's table)")
    parser.add_argument("--draws", type=int_in(1, 2048), default=200,
                        help="random (q, k) pairs for the inequality (default 200)")


MAX_TABLE = 2 ** 24  # --max-distance x --head-dim: the bound at every distance, float64, per base
MAX_ROTATED = 2 ** 17  # --draws x --head-dim: each query is rotated to 512 distances at once (256 MiB)


def check_arguments(args):
    d, far = args.head_dim, args.max_distance
    if d % 2:
        return f"--head-dim must be even, got {d}"
    if far & (far - 1):
        return f"--max-distance must be a power of two, got {far}"
    if far * d > MAX_TABLE:
        return f"--max-distance x --head-dim must be at most {MAX_TABLE}, got {far} x {d} = {far * d}"
    if args.draws * d > MAX_ROTATED:
        return f"--draws x --head-dim must be at most {MAX_ROTATED}, got {args.draws} x {d} = {args.draws * d}"
    return None


def octave_means(values: torch.Tensor, octaves: int) -> list[float]:
    """Mean of values[r] over r in [2^o, 2^(o+1)) for o = 0 .. octaves - 1."""
    return [values[2 ** o: 2 ** (o + 1)].mean().item() for o in range(octaves)]


def mean_cosine(distances: torch.Tensor, dim: int, base: float) -> torch.Tensor:
    """The score of a key equal to its query at distance r, relative to r = 0, averaged over the
    query's direction: every pair carries the same share of |q|^2 on average, so it is the mean of
    cos(r theta_i). [R]"""
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return torch.cos(distances.double()[:, None] * theta[None, :]).mean(-1)


def worst_ratio(dim: int, base: float, distances: torch.Tensor, draws: int) -> float:
    """Largest |score| / bound over random q, k (normal entries) and the given distances, with the
    score from minimind_ref's RoPE (query at r, key at 0). Must be <= 1."""
    half = dim // 2
    cos, sin = precompute_freqs_cis(dim, int(distances.max()) + 1, base)
    sums = rope_decay_bound(distances, dim, base) * half  # [R]: sum_j |S_j|
    q, k = torch.randn(draws, dim, dtype=torch.float64), torch.randn(draws, dim, dtype=torch.float64)
    h = torch.complex(q[:, :half], q[:, half:]) * torch.complex(k[:, :half], k[:, half:]).conj()  # [N, d/2]
    step = torch.cat([h, h.new_zeros(draws, 1)], dim=1).diff(dim=1).abs().amax(dim=1)  # [N]: max_i |h_{i+1} - h_i|
    q_all = q.float()[:, None, None, :].expand(draws, 1, len(distances), dim)  # [N, 1, R, D]
    q_at, _ = apply_rotary_pos_emb(q_all, q_all, cos[distances], sin[distances])  # each query at each r
    score = (q_at[:, 0] @ k.float()[:, :, None])[..., 0].double()  # [N, R]: the key sits at 0 (no rotation)
    return (score.abs() / (step[:, None] * sums[None, :])).max().item()


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    d, far = exp.args.head_dim, exp.args.max_distance
    curves = Curves(d, far)
    print_octaves(curves, d)
    reach = where_the_bound_falls(curves, far)
    ratios = the_bound_holds(d, far, exp.args.draws)
    slow_score = the_slowest_pair_keeps_its_score(d, far)
    claim_decay(exp, curves, reach, ratios, slow_score, far)
    draw_bound(exp, curves, d, far)
    return exp.finish()


class Curves:
    """RoFormer's bound at every distance below `far`, for each base; its octave means, and those of
    the score of a key equal to its query."""

    def __init__(self, d: int, far: int):
        self.octaves = int(math.log2(far))
        distances = torch.arange(0, far)
        self.start = (d / 2 + 1) / 2
        self.bound = {base: rope_decay_bound(distances, d, base) for base in BASES}
        self.means = {base: octave_means(self.bound[base], self.octaves) for base in BASES}
        self.cosine = {base: octave_means(mean_cosine(distances, d, base), self.octaves) for base in BASES}


def print_octaves(curves: Curves, d: int) -> None:
    bound, means, cosine, start, octaves = curves.bound, curves.means, curves.cosine, curves.start, curves.octaves
    print(f"head_dim {d}: bound (1/{d // 2}) sum_j |S_j| at distance 0 = {bound[BASES[0]][0].item():g} "
          f"(predicted (d/2 + 1)/2 = {start:g}) for both bases")
    print("octave means of the bound, and of the score of a key equal to its query (mean cos):")
    rows = []
    for o in range(octaves):
        rows.append([f"{2 ** o}-{2 ** (o + 1) - 1}", means[1e4][o], means[1e6][o], cosine[1e4][o], cosine[1e6][o]])
    print_table(["distance", "bound, 1e4", "bound, 1e6", "key = query, 1e4", "key = query, 1e6"], rows,
                ["", ".2f", ".2f", ".3f", ".3f"])
    print()



def where_the_bound_falls(curves: Curves, far: int) -> dict:
    """Per base, the first octave whose mean bound is below a quarter of the start (None: none is)."""
    bound, means, start = curves.bound, curves.means, curves.start

    def first_octave_below(base):
        below = [o for o, m in enumerate(means[base]) if m < QUARTER * start]
        return below[0] if below else None

    reach = {base: first_octave_below(base) for base in BASES}
    for base in BASES:
        o = reach[base]
        where = f"distances {2 ** o}-{2 ** (o + 1) - 1}" if o is not None else f"no octave up to {far}"
        print(f"base {base:g}: first octave whose mean bound is below {QUARTER:g} x {start:g} = {QUARTER * start:.3f}: "
              f"{where}")
    last = slice(far // 2, far)
    for base in BASES:
        tail = bound[base][last]
        print(f"base {base:g}: over distances {far // 2}-{far - 1} the bound ranges from {tail.min().item():.2f} to "
              f"{tail.max().item():.2f} (mean {tail.mean().item():.2f}): it oscillates, it does not fall monotonically")
    return reach


def the_bound_holds(d: int, far: int, draws: int) -> dict:
    """The largest |score| / bound over random (q, k), per base."""
    checked = torch.cat([torch.arange(0, 256), torch.randint(256, far, (256,))])
    ratios = {base: worst_ratio(d, base, checked, draws) for base in BASES}
    print(f"largest |score| / bound over {draws} random (q, k) at {len(checked)} distances: "
          + ", ".join(f"base {b:g}: {r:.3f}" for b, r in ratios.items()))
    return ratios


def the_slowest_pair_keeps_its_score(d: int, far: int) -> float:
    """The bound bounds, it does not force: the score of q = k in the slowest pair at distance far - 1."""
    cos, sin = precompute_freqs_cis(d, far, 1e6)
    # q = k = the unit vector of the slowest pair's first dimension (rotate-half: dimension d/2 - 1)
    e = torch.zeros(1, 1, 1, d)
    e[..., d // 2 - 1] = 1.0
    e_far, _ = apply_rotary_pos_emb(e, e, cos[far - 1:], sin[far - 1:])  # the query at distance far - 1
    slow_score = (e_far * e).sum().item()  # the key at 0
    print(f"q = k in the slowest pair only (base 1e6): score at distance {far - 1} = {slow_score:.4f} x its value at 0")
    print()
    return slow_score


def claim_decay(exp, curves: Curves, reach: dict, ratios: dict, slow_score: float, far: int) -> None:
    start = curves.start
    exp.claim(all(abs(curves.bound[b][0].item() - start) < 1e-9 for b in BASES)
              and all(curves.means[b][-1] < curves.means[b][0] / 3 for b in BASES),
              f"the bound starts at (d/2 + 1)/2 = {start:g} and its octave mean falls more than threefold by distance "
              f"{far // 2}-{far - 1} ({curves.means[1e4][0]:.2f} -> {curves.means[1e4][-1]:.2f} for 1e4, "
              f"{curves.means[1e6][0]:.2f} -> {curves.means[1e6][-1]:.2f} for 1e6)")
    exp.claim(all(m6 >= m4 for m4, m6 in zip(curves.means[1e4], curves.means[1e6])),
              "in every octave of distance the bound's mean is at least as high with base 1e6 as with 1e4")
    exp.claim(reach[1e4] is not None and (reach[1e6] is None or reach[1e6] - reach[1e4] >= 2),
              f"base 1e6 decays at least 4 times more slowly: its mean bound drops below a quarter of the start "
              f"{'at ' + str(2 ** reach[1e6]) if reach[1e6] is not None else 'beyond ' + str(far)}, "
              f"base 1e4's at {2 ** reach[1e4] if reach[1e4] is not None else None}")
    exp.claim(max(ratios.values()) <= 1 + 1e-4,
              f"the bound holds for every random q, k tried (largest |score| / bound {max(ratios.values()):.3f})")
    exp.claim(slow_score > 0.99,
              f"it bounds, it does not force: q and k in the slowest pair keep {100 * slow_score:.1f}% of their score "
              f"at distance {far - 1}")



def draw_bound(exp, curves: Curves, d: int, far: int) -> None:
    start, octaves = curves.start, curves.octaves
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    ax = axes[0]
    shown = torch.arange(1, far)
    for base, color in zip(BASES, ("tab:red", "tab:blue")):
        ax.semilogx(shown, curves.bound[base][1:], color=color, lw=0.5, alpha=0.35)
        centres = [2 ** o * 1.5 for o in range(octaves)]
        ax.semilogx(centres, curves.means[base], "o-", color=color, label=f"base {base:g}: octave means")
    ax.axhline(QUARTER * start, ls=":", color="gray", label=f"a quarter of the start ({QUARTER * start:.3f})")
    ax.set(title=f"RoFormer's bound (1/{d // 2}) sum_j |S_j|, head_dim {d}", xlabel="distance m - n",
           ylabel="relative upper bound", ylim=(0, start * 1.05))
    ax.legend(fontsize=8)
    ax = axes[1]
    for base, color in zip(BASES, ("tab:red", "tab:blue")):
        ax.semilogx(shown, mean_cosine(shown, d, base), color=color, lw=0.5, alpha=0.35)
        ax.semilogx(centres, curves.cosine[base], "o-", color=color, label=f"base {base:g}: octave means")
    ax.axhline(0, color="black", lw=0.5)
    ax.set(title="score of a key equal to its query, relative to distance 0\n(mean of cos(r theta_i))",
           xlabel="distance m - n", ylabel="score / score at 0")
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "bound")


if __name__ == "__main__":
    raise SystemExit(main())
