"""MiniMind's YaRN keeps the pairs that turn many times within the trained 2048 positions, divides
the frequency of those that turn less than once by 16, and ramps between; past the trained length
it keeps every slow pair's angles within the range training saw, as position interpolation does,
without dividing the fast pairs' angle between neighbouring positions by 16, as interpolation does.

Pair i of a head turns 2048 theta_i / (2 pi) times over the 2048 positions MiniMind trains on
(its wavelength is 2 pi / theta_i positions). YaRN (arXiv 2309.00071) with MiniMind's settings,
minimind_ref.MINIMIND_YARN (factor 16, original_max_position_embeddings 2048, beta_fast 32,
beta_slow 1, attention_factor 1.0), keeps the frequency of pairs that turn more than beta_fast
times, divides by the factor the frequency of pairs that turn fewer than beta_slow times, and
blends the two in between with a ramp that is linear in the pair index (minimind_ref.rope.yarn_ramp).
This script prints that table for head_dim 64, checks it against the cos/sin table the model
builds with `MiniMindConfig(inference_rope_scaling=True)`, and compares, over the 16 x 2048 = 32768
positions YaRN is meant for:
- plain RoPE: the slow pairs reach angles up to 16 times larger than any seen in training;
- position interpolation (arXiv 2306.15595): every frequency divided by 16; every angle within
  range, but neighbouring positions 16 times closer in every pair, the fast ones included;
- YaRN: slow pairs as interpolation, fast pairs as trained.
It also measures the "neighbour contrast" 1 - mean_i cos(theta_i), how much a key equal to the
query loses one position away, and the score of a random q, k against the distance.

Why it matters: a model only knows the angles it was trained on. Plain RoPE past 2048 hands the
slow pairs phases it never saw; interpolation blurs the local order that fast pairs carry; YaRN
changes only what has to change. MiniMind's table, once longer than 2048, uses the YaRN
frequencies at every position, short prompts included.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, float_in, int_in, print_table
from labkit.i18n import phrase
from minimind_ref import MINIMIND_YARN, MiniMindConfig, MiniMindModel, apply_rotary_pos_emb
from minimind_ref.rope import rope_inverse_frequencies, yarn_inverse_frequencies, yarn_ramp

SEEN = 1.001  # an angle more than 0.1% beyond the largest one training produced counts as unseen


def add_arguments(parser):
    parser.add_argument("--head-dim", type=int_in(8, 512), default=64, help="head size, even (default 64, MiniMind's)")
    parser.add_argument("--base", type=float_in(1.0, 1e12, low_open=True), default=1e6,
                        help="rope_theta, above 1 (default 1e6, MiniMind's)")


def check_arguments(args):
    d = args.head_dim
    if d % 2:
        return f"--head-dim must be even, got {d}"
    # the comparison needs pairs of all three kinds: kept as they are, on the ramp, divided by the factor
    ramp = yarn_ramp(d, args.base, dict(MINIMIND_YARN)).double()
    if not (bool((ramp == 0).any()) and bool((ramp == 1).any()) and bool(((ramp > 0) & (ramp < 1)).any())):
        return (f"--base {args.base:g} with --head-dim {d} leaves YaRN no pair to keep, to ramp or to divide; "
                f"try a base from 1e3 to 1e8")
    return None


def methods(dim: int, base: float, scaling: dict) -> dict[str, torch.Tensor]:
    """Each method's theta_i, float64. [dim/2] each"""
    plain = rope_inverse_frequencies(dim, base).double()
    return {phrase("plain RoPE"): plain,
            phrase("position interpolation"): plain / scaling["factor"],
            "YaRN": yarn_inverse_frequencies(dim, base, scaling).double()}


def score_curve(q: torch.Tensor, k: torch.Tensor, theta: torch.Tensor, distances: torch.Tensor) -> torch.Tensor:
    """<RoPE(q, r), RoPE(k, 0)> for a head whose pair i turns at theta_i, in float64 (rotate-half
    pairs: dimensions i and i + D/2). [R]"""
    half = theta.shape[0]
    qc = torch.complex(q[:half].double(), q[half:].double())
    kc = torch.complex(k[:half].double(), k[half:].double())
    angles = distances.double()[:, None] * theta[None, :]
    return (qc * kc.conj() * torch.polar(torch.ones_like(angles), angles)).real.sum(-1)


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    d, base, scaling = exp.args.head_dim, exp.args.base, dict(MINIMIND_YARN)
    theta = methods(d, base, scaling)
    pairs = sort_pairs(d, base, scaling, theta)
    print_pair_table(d, base, scaling, theta, pairs)
    cos, sin, table_error = model_table(d, base, theta)
    reach = angles_past_trained_length(d, scaling, theta, pairs)
    curves, stretched, curve_error = score_curves(d, scaling, theta, cos, sin)
    claim_yarn(exp, scaling, theta, pairs, table_error, reach, stretched, curve_error)
    draw_ramp(exp, d, base, scaling, theta, pairs)
    draw_past_trained_length(exp, scaling, theta, pairs, curves)
    return exp.finish()


def sort_pairs(d: int, base: float, scaling: dict, theta: dict) -> dict:
    """Each pair's ramp, turns over the trained length and wavelength, and which pairs YaRN keeps,
    divides by the factor, or blends."""
    plain = theta["plain RoPE"]
    ramp = yarn_ramp(d, base, scaling).double()
    turns = scaling["original_max_position_embeddings"] * plain / (2 * math.pi)  # turns over the trained length
    return {"ramp": ramp, "turns": turns, "wavelength": 2 * math.pi / plain,
            "kept": [i for i in range(d // 2) if ramp[i] == 0],
            "divided": [i for i in range(d // 2) if ramp[i] == 1],
            "blended": [i for i in range(d // 2) if 0 < ramp[i] < 1]}


def print_pair_table(d: int, base: float, scaling: dict, theta: dict, pairs: dict) -> None:
    plain, trained, factor = theta["plain RoPE"], scaling["original_max_position_embeddings"], scaling["factor"]
    kept, divided, blended = pairs["kept"], pairs["divided"], pairs["blended"]
    print(f"head_dim {d}, base {base:g}, YaRN: factor {factor}, trained on {trained} positions, "
          f"beta_fast {scaling['beta_fast']}, beta_slow {scaling['beta_slow']}, "
          f"attention_factor {scaling['attention_factor']}")
    rows = []
    for i in range(d // 2):
        kind = phrase("kept") if i in kept else phrase("divided") if i in divided else phrase("ramp")
        rows.append([i, plain[i].item(), pairs["wavelength"][i].item(), pairs["turns"][i].item(),
                     pairs["ramp"][i].item(), (theta["YaRN"][i] / plain[i]).item(), kind])
    print_table(["pair", "theta_i", "wavelength", f"turns in {trained}", "ramp", "YaRN theta / theta", ""],
                rows, ["d", ".3g", ".4g", ".3g", ".3f", ".4f", ""])
    print(f"kept: pairs {kept[0]}-{kept[-1]} ({len(kept)}), ramp: {blended[0]}-{blended[-1]} ({len(blended)}), "
          f"divided by {factor}: {divided[0]}-{divided[-1]} ({len(divided)})")


def model_table(d: int, base: float, theta: dict) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The model's own cos/sin table, MiniMindConfig(inference_rope_scaling=True) built as MiniMind
    builds it, and how far its frequencies are from YaRN's (relative)."""
    config = MiniMindConfig(hidden_size=d, num_attention_heads=1, num_key_value_heads=1, num_hidden_layers=1,
                            vocab_size=8, rope_theta=base, inference_rope_scaling=True)
    model = MiniMindModel(config)
    cos, sin = model.freqs_cos, model.freqs_sin  # [32768, D]
    table_theta = torch.atan2(sin[1, :d // 2].double(), cos[1, :d // 2].double())  # the angle at position 1
    table_error = ((table_theta - theta["YaRN"]).abs() / theta["YaRN"]).max().item()
    print(f"the model's table ({config.max_position_embeddings} positions, rope_scaling = MINIMIND_YARN): "
          f"frequencies equal YaRN's to {table_error:.1e} (relative)")
    print()
    return cos, sin, table_error


def angles_past_trained_length(d: int, scaling: dict, theta: dict, pairs: dict) -> dict:
    """The largest angle each pair reaches within `extended` positions, over the largest one it
    reached in training (positions 0 .. trained - 1), and each method's resolution."""
    plain, trained, factor = theta["plain RoPE"], scaling["original_max_position_embeddings"], scaling["factor"]
    extended = trained * factor
    slow = [i for i in range(d // 2) if pairs["turns"][i] < 1]  # pairs that never completed a turn in training
    train_max = (trained - 1) * plain
    rows, unseen, worst, contrast, first_step = [], {}, {}, {}, {}
    for name, th in theta.items():
        ratio = (extended - 1) * th / train_max  # [d/2]
        unseen[name] = [i for i in slow if ratio[i] > SEEN]
        worst[name] = ratio[slow].max().item()
        contrast[name] = (1 - torch.cos(th)).mean().item()  # a key equal to the query, one position away
        first_step[name] = th[0].item()
        rows.append([name, len(unseen[name]), worst[name], first_step[name], contrast[name],
                     contrast[name] / contrast["plain RoPE"]])
    print(f"over {extended} positions ({factor} x the trained {trained}); {len(slow)} pairs turned less than once "
          f"in training:")
    print_table(["method", "slow pairs with unseen angles", "largest angle / trained largest",
                 "pair 0: angle per position", "neighbour contrast", "vs plain"],
                rows, ["", "d", ".4f", ".4f", ".2e", ".3f"])
    within = (trained - 1) * (plain - theta["YaRN"]).abs()  # [d/2]: change of the angle at position trained - 1
    changed = int(within.argmax())
    print(f"within the trained range the YaRN table differs from plain RoPE too: up to {within.max().item():.1f} rad "
          f"at position {trained - 1} (pair {changed}), {100 * (plain - theta['YaRN'])[changed].item():.2f} rad at "
          f"position 100")
    return {"slow": slow, "unseen": unseen, "worst": worst, "contrast": contrast,
            "first_step": first_step}


def score_curves(d: int, scaling: dict, theta: dict, cos: torch.Tensor, sin: torch.Tensor):
    """One random q, k: the score against the distance under each method; how far interpolation's
    curve is from plain RoPE's stretched, and the YaRN curve from minimind_ref's RoPE on the model's
    table (both relative to the score's size)."""
    factor, trained = scaling["factor"], scaling["original_max_position_embeddings"]
    extended = trained * factor
    q, k = torch.randn(d), torch.randn(d)
    distances = torch.arange(extended)
    curves = {name: score_curve(q, k, th, distances) for name, th in theta.items()}
    # interpolation is plain RoPE at distance / factor: its curve at factor * j is plain's at j
    stretched = (curves["position interpolation"][::factor] - curves["plain RoPE"][:trained]).abs().max().item()
    size = curves["plain RoPE"].abs().max().item()
    # rotate-half check that the curve helper agrees with minimind_ref's RoPE on the model's table
    q_all = q.expand(extended, d)[None, None]
    q_rot, _ = apply_rotary_pos_emb(q_all, q_all, cos, sin)
    curve_error = ((q_rot[0, 0] @ k).double() - curves["YaRN"]).abs().max().item() / size
    print(f"random q, k: the interpolated score at distance {factor} j equals plain RoPE's at j "
          f"(largest difference {stretched / size:.1e} of the score's size); the YaRN curve from the model's table "
          f"equals its formula to {curve_error:.1e}")
    print()
    return curves, stretched / size, curve_error


def claim_yarn(exp, scaling, theta, pairs, table_error, reach, stretched, curve_error) -> None:
    plain, trained, factor = theta["plain RoPE"], scaling["original_max_position_embeddings"], scaling["factor"]
    extended = trained * factor
    kept, divided, blended, turns = pairs["kept"], pairs["divided"], pairs["blended"], pairs["turns"]
    unseen, worst, contrast, first_step = reach["unseen"], reach["worst"], reach["contrast"], reach["first_step"]
    exp.claim(all(turns[i] >= scaling["beta_fast"] for i in kept) and all(turns[i] <= scaling["beta_slow"]
                                                                           for i in divided)
              and torch.equal(theta["YaRN"][kept], plain[kept]) and bool(torch.allclose(
                  theta["YaRN"][divided], plain[divided] / factor, rtol=1e-6)),
              f"YaRN keeps pairs {kept[0]}-{kept[-1]} (each turns >= {scaling['beta_fast']} times in {trained} "
              f"positions), divides pairs {divided[0]}-{divided[-1]} by {factor} (each turns <= "
              f"{scaling['beta_slow']} time) and ramps pairs {blended[0]}-{blended[-1]}")
    exp.claim(table_error < 1e-5,
              f"MiniMindConfig(inference_rope_scaling=True) builds exactly this table (error {table_error:.1e})")
    exp.claim(len(unseen["plain RoPE"]) == len(reach["slow"]) and worst["plain RoPE"] > factor * 0.99,
              f"plain RoPE over {extended} positions takes all {len(reach['slow'])} slow pairs past any angle seen "
              f"in training, up to {worst['plain RoPE']:.2f} times the largest")
    exp.claim(not unseen["position interpolation"] and not unseen["YaRN"],
              f"interpolation and YaRN keep every slow pair within the trained angles (largest ratio "
              f"{worst['YaRN']:.4f})")
    exp.claim(first_step["YaRN"] == first_step["plain RoPE"]
              and contrast["YaRN"] > 0.95 * contrast["plain RoPE"] > 10 * contrast["position interpolation"],
              f"YaRN keeps the fast pairs' resolution (pair 0 turns {first_step['YaRN']:.3f} rad per position, "
              f"neighbour contrast {100 * contrast['YaRN'] / contrast['plain RoPE']:.1f}% of plain RoPE's); "
              f"interpolation cuts it to {first_step['position interpolation']:.4f} rad and "
              f"{100 * contrast['position interpolation'] / contrast['plain RoPE']:.2f}%")
    exp.claim(stretched < 1e-9 and curve_error < 1e-3,
              "position interpolation is plain RoPE with the distance divided by the factor (same score curve, "
              "stretched)")


def draw_ramp(exp, d, base, scaling, theta, pairs) -> None:
    plain, trained, factor = theta["plain RoPE"], scaling["original_max_position_embeddings"], scaling["factor"]
    wavelength, ramp = pairs["wavelength"], pairs["ramp"]
    colors = {"kept": "tab:green", "ramp": "tab:orange", "divided": "tab:purple"}
    kinds = ["kept" if i in pairs["kept"] else "divided" if i in pairs["divided"] else "ramp" for i in range(d // 2)]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    ax = axes[0]
    ax.semilogy(range(d // 2), wavelength, color="gray", lw=0.8)
    for kind, color in colors.items():
        idx = [i for i in range(d // 2) if kinds[i] == kind]
        ax.semilogy(idx, wavelength[idx], "o", color=color, label=kind)
    ax.axhline(trained, ls="--", color="black", lw=1, label=f"trained length {trained} (1 turn)")
    ax.axhline(trained / scaling["beta_fast"], ls=":", color="black", lw=1,
               label=f"{trained} / beta_fast = {trained // scaling['beta_fast']} ({scaling['beta_fast']} turns)")
    ax.set(title=f"wavelength 2 pi / theta_i of each pair (head_dim {d}, base {base:g})", xlabel="pair i",
           ylabel="positions per turn")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot(range(d // 2), ramp, "o-", color="tab:orange", label="ramp (0 keep, 1 divide)")
    ax.plot(range(d // 2), (theta["YaRN"] / plain), "s-", color="tab:blue", label="YaRN theta_i / theta_i")
    ax.axhline(1 / factor, ls=":", color="gray", label=f"1 / factor = 1/{factor}")
    ax.set(title="YaRN's ramp, per pair", xlabel="pair i", ylim=(-0.05, 1.05))
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "ramp")


def draw_past_trained_length(exp, scaling, theta, pairs, curves) -> None:
    trained = scaling["original_max_position_embeddings"]
    extended = trained * scaling["factor"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    ax = axes[0]
    pair_index = range(len(pairs["ramp"]))
    ax.semilogy(pair_index, (trained - 1) * theta["plain RoPE"], "k-", lw=2.5, alpha=0.4,
                label=f"training: positions < {trained}")
    for name, th in theta.items():
        ax.semilogy(pair_index, (extended - 1) * th, "o-", ms=3, lw=1, label=f"{name}: positions < {extended}")
    ax.axhline(2 * math.pi, ls=":", color="gray", label="2 pi: one full turn")
    ax.set(title="largest angle each pair reaches (rad)\nabove 2 pi every phase occurs; below, only those reached",
           xlabel="pair i", ylabel="angle (rad)")
    ax.legend(fontsize=8)
    ax = axes[1]
    near = 48
    for name in theta:
        ax.plot(range(near), curves[name][:near], "o-", ms=3, label=name)
    ax.set(title="score of one random q, k over the first 48 distances:\ninterpolation blurs neighbours, YaRN keeps "
                 "plain RoPE's detail", xlabel="distance m - n", ylabel="score")
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "past_trained_length")


if __name__ == "__main__":
    raise SystemExit(main())
