"""The online softmax, fed a row of scores one tile at a time, gives the softmax-weighted average
of the values exactly, for every tile size, even for scores far beyond where exp overflows.

The online softmax keeps three numbers per row while it reads the scores tile by tile: the running
maximum m, the running sum l = sum exp(s - m) and the unnormalised output acc = sum exp(s - m) v.
When a tile's maximum is larger than m, it multiplies l and acc by exp(m_old - m_new) before
adding the tile. At the end out = acc / l. Nothing is approximated: the rescaling only moves the
common factor exp(-m) around. This script checks it on one query row of S keys against the
softmax computed in float64, for tile sizes from 1 to S, in three regimes: ordinary scores
(standard normal), scores spread over +-1e4, and scores that all sit near 100 (where exp itself
is inf in float32, so the formula without the maximum fails). It runs the loop written out below
and minimind_ref.flash_attention with the same tile size as its key tile.

Why it matters: this is the whole trick that lets FlashAttention never hold a row of T x S scores.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, int_in, print_table
from labkit.i18n import phrase
from minimind_ref.variants import flash_attention


def add_arguments(parser):
    # tiles of 1, 2, 3 and 7 keys make flash_attention loop over the row in Python, about S steps
    parser.add_argument("--keys", type=int_in(2, 20_000), default=1000, help="scores in the row, S (default 1000)")
    parser.add_argument("--dim", type=int_in(1, 1024), default=16, help="width of each value vector (default 16)")


def online_softmax(scores: torch.Tensor, values: torch.Tensor, tile: int):
    """softmax(scores) @ values, reading `tile` scores at a time. scores: [S]; values: [S, D].
    Returns the output [D] and the history of (m, l) after each tile."""
    m = torch.tensor(-math.inf)  # running maximum
    l = torch.tensor(0.0)  # running sum of exp(score - m)
    acc = torch.zeros(values.shape[1])  # running sum of exp(score - m) * value
    history = []
    for start in range(0, scores.shape[0], tile):
        s, v = scores[start:start + tile], values[start:start + tile]
        m_new = torch.maximum(m, s.max())
        shrink = torch.exp(m - m_new)  # exp(-inf) = 0 on the first tile
        p = torch.exp(s - m_new)  # every exponent <= 0: no overflow
        l = l * shrink + p.sum()
        acc = acc * shrink + p @ v
        m = m_new
        history.append((m.item(), l.item()))
    return acc / l, history


def regimes(keys: int):
    """Three rows of scores: ordinary, spread over +-1e4, all near 100."""
    return {  # the names are shown (phrase: translated in Chinese)
        phrase("normal"): torch.randn(keys),
        phrase("spread 1e4"): (torch.rand(keys) * 2 - 1) * 1e4,
        phrase("all near 100"): 100 + torch.randn(keys),
    }


def flash_row(scores: torch.Tensor, values: torch.Tensor, tile: int) -> torch.Tensor:
    """The same row through minimind_ref.flash_attention: one query q = (1, 0, ...) against keys
    whose first coordinate is the score, so that q . k * scale = score with scale = 1."""
    keys = torch.zeros(scores.shape[0], values.shape[1])
    keys[:, 0] = scores
    query = torch.zeros(1, values.shape[1])
    query[0, 0] = 1.0
    out = flash_attention(query[None, None], keys[None, None], values[None, None], scale=1.0,
                          block_q=1, block_k=tile)
    return out[0, 0, 0]


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    keys, dim = exp.args.keys, exp.args.dim
    values = torch.randn(keys, dim)
    # tile sizes from 1 to S (a tile longer than the row would be the whole row again)
    tiles = sorted({tile for tile in (1, 2, 3, 7, 16, 64, 128, keys // 3, keys) if 1 <= tile <= keys})
    drawn = min(64, keys)  # the tile size whose running max and sum the figure draws
    # the course's float32 tolerance, 1e-5, relative to the size of the values being averaged
    tolerance = 1e-5 * values.abs().max().item()

    rows, errors_by_regime, histories, naive_broken = [], {}, {}, {}
    for name, scores in regimes(keys).items():
        exact = torch.softmax(scores.double(), dim=0) @ values.double()  # float64 reference
        naive = torch.exp(scores) / torch.exp(scores).sum()  # no maximum subtracted
        naive_broken[name] = not bool(torch.isfinite(naive @ values).all())
        errors = []
        for tile in tiles:
            out, history = online_softmax(scores, values, tile)
            flash = flash_row(scores, values, tile)
            errors.append(max((out.double() - exact).abs().max().item(), (flash.double() - exact).abs().max().item()))
            if tile == drawn:
                histories[name] = history
        errors_by_regime[name] = errors
        rows.append([name, f"{scores.min().item():.3g} .. {scores.max().item():.3g}",
                     "inf/NaN" if naive_broken[name] else phrase("finite"), max(errors)])
    print(f"One row of S = {keys} scores, values of width {dim}; tile sizes {tiles}.")
    print_table(["scores", "range", "naive exp(s)/sum", "worst error, any tile"], rows, ["", "", "", ".1e"])
    print(f"\nError: the larger of the loop's and flash_attention's max |out - exact| over every tile size, "
          f"against softmax in float64. Tolerance 1e-5 x max|v| = {tolerance:.1e}.")

    worst = max(max(errors) for errors in errors_by_regime.values())
    exp.claim(worst <= tolerance,
              f"online softmax equals softmax @ V for every tile size from 1 to {keys}, in every regime "
              f"(worst error {worst:.1e} <= {tolerance:.1e})")
    exp.claim(naive_broken["all near 100"] and not naive_broken["normal"],
              "without the running maximum, exp(s) overflows to inf for scores near 100 (float32 stops "
              f"at {math.log(torch.finfo(torch.float32).max):.1f}); the online form does not")

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    name = "normal"
    m_hist = [m for m, _ in histories[name]]
    l_hist = [l for _, l in histories[name]]
    axes[0].step(range(1, len(m_hist) + 1), m_hist, where="post", label="running max m")
    axes[0].set_xlabel(f"tiles of {drawn} scores read")
    axes[0].set_ylabel("m")
    twin = axes[0].twinx()
    twin.step(range(1, len(l_hist) + 1), l_hist, where="post", color="C1", label="running sum l")
    twin.set_ylabel("l = sum exp(s - m)", color="C1")
    axes[0].set_title(f"{name} scores: when m grows, l is scaled down by exp(m_old - m_new)", fontsize=10)
    for regime, errors in errors_by_regime.items():
        axes[1].plot(tiles, [max(e, 1e-12) for e in errors], "o-", label=regime)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("tile size")
    axes[1].axhline(tolerance, color="k", linestyle=":", label="tolerance")
    axes[1].set_yscale("log")
    axes[1].set_title("max |online - exact| (float32 vs float64)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "running_max")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
