"""Permuting the tokens permutes attention's output in the same way: self-attention without
positions and without a mask has no notion of order. A causal mask or RoPE positions break this.

For an input x of T token vectors and a permutation P of its rows, attention without positions
gives Attention(P x) = P Attention(x), and its weights become P W P^T: the same numbers, with rows
and columns shuffled alike, because every query is compared with every key by content alone. This
script runs minimind_ref's `Attention` layer with random weights on random tokens three ways:
with no positions (RoPE switched off: cos = 1, sin = 0) and nothing masked; with the causal mask;
and with RoPE. It measures how far Attention(P x) is from P Attention(x), relative to the size of
the output.

Why it matters: "the cat sat" and "sat the cat" would look the same to bare attention. Order has
to come from somewhere else: a mask that hides the future, or positions (module 06).
"""

from __future__ import annotations

import torch

from labkit import EPS32, Experiment, int_in, print_table, random_attention, relative_error, show_heatmaps
from minimind_ref import Attention, MiniMindConfig, precompute_freqs_cis

BROKEN = 1e-2  # "not equivariant": an error of at least 1% of the output, far above any rounding


def add_arguments(parser):
    # the weights are [H, T, T] per forward pass: 64 heads of 512 x 512 is 64 MiB
    parser.add_argument("--tokens", type=int_in(2, 512), default=6, help="sequence length T (default 6)")
    parser.add_argument("--hidden", type=int_in(2, 2048), default=32, help="hidden size C (default 32)")
    parser.add_argument("--heads", type=int_in(1, 64), default=1,
                        help="attention heads, dividing C; the figure shows head 0 (default 1)")


def check_arguments(args):
    if args.hidden % args.heads or (args.hidden // args.heads) % 2:
        return (f"--hidden must split into --heads heads of even size (RoPE rotates pairs); "
                f"got hidden={args.hidden}, heads={args.heads}")
    return None


def random_derangement(n: int) -> torch.Tensor:
    """A random permutation that moves every token (so no token keeps its place by luck)."""
    while True:
        perm = torch.randperm(n)
        if not bool((perm == torch.arange(n)).any()):
            return perm


def run(layer: Attention, x: torch.Tensor, setting: str, rope_base: float):
    """One forward pass. x: [T, C]. Returns (output [T, C], weights [H, T, T])."""
    tokens = x.shape[0]
    head_dim = layer.head_dim
    if setting == "rope":
        cos, sin = precompute_freqs_cis(head_dim, tokens, rope_base=rope_base)  # [T, D] each
    else:  # a rotation by angle 0 at every position: positions switched off
        cos, sin = torch.ones(tokens, head_dim), torch.zeros(tokens, head_dim)
    # Attention's attn_mask=None means plain causal; an all-True mask hides nothing.
    mask = None if setting == "causal" else torch.ones(1, 1, tokens, tokens, dtype=torch.bool)
    with torch.no_grad():
        out, weights = layer(x[None], (cos, sin), attn_mask=mask, output_attentions=True)
    return out[0], weights[0]  # [T, C], [H, T, T]


SETTINGS = {  # name -> what a learner reads
    "none": "no positions, no mask",
    "causal": "causal mask",
    "rope": "RoPE positions",
}


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args

    config = MiniMindConfig(hidden_size=args.hidden, num_attention_heads=args.heads,
                            num_key_value_heads=args.heads, num_hidden_layers=1, vocab_size=16)
    layer = random_attention(config)  # projections N(0, 1/C): attention maps far from uniform
    x = torch.randn(args.tokens, args.hidden)  # [T, C]: T tokens, no positions in them
    perm = random_derangement(args.tokens)  # P x = x[perm]: row i of P x is token perm[i]
    labels = [f"t{i}" for i in range(args.tokens)]
    permuted_labels = [labels[i] for i in perm.tolist()]
    # Reordering sums of at most max(C, T) products can move a float32 result by about that many
    # roundings, relative to the size of the numbers summed.
    tolerance = max(args.hidden, args.tokens) * EPS32

    print(f"T = {args.tokens} tokens, C = {args.hidden}, {args.heads} head(s) of size {layer.head_dim}")
    print(f"original order: {' '.join(labels)}")
    print(f"permuted order: {' '.join(permuted_labels)}")
    print()
    errors, maps = permute_in_every_setting(layer, x, perm, config.rope_theta, tolerance)
    claim_equivariance(exp, errors, tolerance)
    draw_weights(exp, maps, labels, permuted_labels)
    return exp.finish()


def permute_in_every_setting(layer, x, perm, rope_theta: float, tolerance: float):
    """Attention(P x) against P Attention(x), and W(P x) against P W(x) P^T, without positions or
    mask, with the causal mask, and with RoPE."""
    rows, errors, maps = [], {}, {}
    for setting, description in SETTINGS.items():
        out, weights = run(layer, x, setting, rope_theta)  # [T, C], [H, T, T]
        out_p, weights_p = run(layer, x[perm], setting, rope_theta)
        # compare Attention(P x) with P Attention(x), and W(P x) with P W(x) P^T
        out_error = relative_error(out_p, out[perm])
        weight_error = (weights_p - weights[:, perm][:, :, perm]).abs().max().item()
        errors[setting] = (out_error, weight_error)
        maps[setting] = (weights[0], weights_p[0])
        equivariant = max(out_error, weight_error) <= tolerance
        rows.append([description, out_error, weight_error, "yes" if equivariant else "no"])
    print_table(["setting", "|A(Px) - P A(x)| / |A(x)|", "|W(Px) - P W P^T|", "equivariant"],
                rows, ["", ".1e", ".1e", ""])
    print()
    print(f"|.| is the largest entry. Rounding tolerance: max(C, T) x float32 eps = {tolerance:.1e}.")
    print()
    return errors, maps


def claim_equivariance(exp, errors: dict, tolerance: float) -> None:
    e = errors["none"]
    exp.claim(max(e) <= tolerance,
              f"without positions or mask, Attention(P x) = P Attention(x) and W(P x) = P W P^T to float32 "
              f"precision (errors {e[0]:.1e} and {e[1]:.1e}, tolerance {tolerance:.1e})")
    e = errors["causal"]
    exp.claim(e[0] > BROKEN,
              f"with the causal mask, permuting the tokens changes what each sees: the output is off by "
              f"{100 * e[0]:.0f}% of its size (must be more than {100 * BROKEN:.0f}%)")
    e = errors["rope"]
    exp.claim(e[0] > BROKEN,
              f"with RoPE, attention depends on order: the output is off by {100 * e[0]:.0f}% of its size "
              f"(must be more than {100 * BROKEN:.0f}%)")



def draw_weights(exp, maps: dict, labels: list[str], permuted_labels: list[str]) -> None:
    grid = torch.stack([torch.stack(maps[s]) for s in SETTINGS])  # [3 settings, 2 orders, T, T]
    titles = [[f"{SETTINGS[s]}: x", f"{SETTINGS[s]}: P x"] for s in SETTINGS]
    fig = show_heatmaps(grid, x_labels=labels, titles=titles, annotate=len(labels) <= 10,
                        suptitle="Head 0 weights for x and for its permutation P x:\n"
                                 "without positions or mask, the same numbers, shuffled")
    # The right-hand maps are of the permuted input: label their rows and columns with its order
    # (at the ticks show_heatmaps chose, which thins them out for long sequences).
    for ax in fig.axes[:grid.shape[0] * grid.shape[1]][1::2]:
        ticks = [int(t) for t in ax.get_xticks() if 0 <= t < len(labels)]
        ax.set_xticks(ticks, [permuted_labels[t] for t in ticks])
        ax.set_yticks(ticks, [permuted_labels[t] for t in ticks])
        ax.tick_params(labelleft=True)
    exp.save(fig, "weights")


if __name__ == "__main__":
    raise SystemExit(main())
