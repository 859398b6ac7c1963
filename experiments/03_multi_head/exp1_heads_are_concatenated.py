"""Multi-head attention is H independent single-head attentions side by side: run each head alone
on its own slice of the projection weights, concatenate the H outputs, apply o_proj, and you get
minimind_ref's Attention layer exactly (to float32 rounding).

A multi-head layer with H heads of width D projects x [B, T, C] once to queries, keys and values
of width H*D and splits each into H slices of D features. Head h uses only rows h*D .. (h+1)*D - 1
of W_q, W_k and W_v: its own small attention, with its own scores and its own softmax. The H
outputs are concatenated back to width H*D and o_proj mixes them into C features. Because o_proj
is linear, that last step is also a sum: o_proj(concat) = sum over h of W_o[:, slice h] @ head_h,
each head writing its own contribution into the output. This script builds MiniMind's Attention
layer as MHA (num_key_value_heads = num_attention_heads) for several head counts, copies its
weights into a plain Python loop over heads (with RoPE applied per head), and measures the largest
difference from the layer's output and attention weights, and from the sum of per-head
contributions.

Why it matters: the heads never talk to each other inside attention; they meet only in o_proj.
That is what lets each head learn its own pattern (experiment 3), and what lets us switch one
head off by zeroing its slice before o_proj.
"""

from __future__ import annotations

import torch

from labkit import EPS32, Experiment, int_in, print_table, random_attention, relative_error, show_heatmaps
from minimind_ref import (
    Attention,
    MiniMindConfig,
    apply_rotary_pos_emb,
    precompute_freqs_cis,
    scaled_dot_product_attention,
)

HEAD_COUNTS = (1, 2, 4, 8)
BROKEN = 1e-2  # the control must miss by at least 1% of the output, far above any rounding


def add_arguments(parser):
    parser.add_argument("--hidden", type=int_in(2, 2048), default=64,
                        help="hidden size C; the heads split it as C = H * D (default 64)")
    parser.add_argument("--tokens", type=int_in(2, 1024), default=6, help="sequence length T (default 6)")
    parser.add_argument("--batch", type=int_in(1, 64), default=2, help="sequences in the batch (default 2)")
    parser.add_argument("--figure-heads", type=int, choices=HEAD_COUNTS, default=4,
                        help="head count whose attention maps the figure shows (default 4)")


MAX_WEIGHTS = 2 ** 25  # B x H x T x T attention weights at the most heads: 128 MiB a tensor


def check_arguments(args):
    counts = [h for h in HEAD_COUNTS if args.hidden % h == 0 and (args.hidden // h) % 2 == 0]
    if args.figure_heads not in counts:
        return (f"--figure-heads must be one of {counts} (head counts that split --hidden {args.hidden} into "
                f"heads of even width, for RoPE), got {args.figure_heads}")
    weights = args.batch * max(HEAD_COUNTS) * args.tokens ** 2
    if weights > MAX_WEIGHTS:
        return (f"--batch x --tokens^2 must be at most {MAX_WEIGHTS // max(HEAD_COUNTS)} (attention weights of "
                f"{max(HEAD_COUNTS)} heads), got {args.batch} x {args.tokens}^2 = {args.batch * args.tokens ** 2}")
    return None


def build_mha(hidden: int, heads: int, tokens: int) -> Attention:
    """MiniMind's attention layer as multi-head attention (one key/value head per query head),
    with random projections of variance 1 / fan_in so that the attention maps are not near-uniform."""
    config = MiniMindConfig(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=heads,
                            num_hidden_layers=1, vocab_size=16, max_position_embeddings=tokens)
    return random_attention(config)


def one_head(x, w_q, w_k, w_v, cos, sin):
    """Single-head causal attention with RoPE. x [B, T, C]; w_* [D, C] (this head's rows of the
    projections). Returns (output [B, T, D], weights [B, T, T])."""
    q, k, v = x @ w_q.T, x @ w_k.T, x @ w_v.T  # [B, T, D] each
    q, k = apply_rotary_pos_emb(q[:, None], k[:, None], cos, sin)  # [B, 1, T, D]: a batch of one head
    out, weights = scaled_dot_product_attention(q, k, v[:, None], is_causal=True, return_weights=True)
    return out[:, 0], weights[:, 0]


def heads_in_a_loop(layer: Attention, x, cos, sin, key_shift: int = 0):
    """The layer recomputed one head at a time from its own weights. Returns (output of o_proj on
    the concatenated heads [B, T, C], the same as a sum of per-head contributions [B, T, C],
    weights [B, H, T, T]). key_shift=1 is a deliberate mistake, the control: head h takes its keys
    from head h + 1's rows of W_k."""
    d, heads = layer.head_dim, layer.num_heads
    outputs, weights, contributions = [], [], []
    for h in range(heads):
        rows = slice(h * d, (h + 1) * d)  # head h owns these rows of W_q, W_k, W_v ...
        key_head = (h + key_shift) % heads
        key_rows = slice(key_head * d, (key_head + 1) * d)
        out, w = one_head(x, layer.q_proj.weight[rows], layer.k_proj.weight[key_rows],
                          layer.v_proj.weight[rows], cos, sin)
        outputs.append(out)
        weights.append(w)
        # ... and these columns of W_o: its own contribution to the layer's output
        contributions.append(out @ layer.o_proj.weight[:, rows].T)  # [B, T, C]
    concatenated = torch.cat(outputs, dim=-1)  # [B, T, H*D]: head 0's features, then head 1's, ...
    return layer.o_proj(concatenated), torch.stack(contributions).sum(0), torch.stack(weights, dim=1)


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    counts = [h for h in HEAD_COUNTS if args.hidden % h == 0 and (args.hidden // h) % 2 == 0]

    x = torch.randn(args.batch, args.tokens, args.hidden)  # [B, T, C]
    # float32 sums of at most max(C, T) products: allow that many roundings, relative to the output
    tolerance = max(args.hidden, args.tokens) * EPS32
    rows, worst, figure_maps, control = [], 0.0, None, []
    for heads in counts:
        layer = build_mha(args.hidden, heads, args.tokens)
        cos, sin = precompute_freqs_cis(layer.head_dim, args.tokens, rope_base=1e6)  # [T, D] each
        with torch.no_grad():
            # the explicit path (it returns the weights) and the default fused path (torch's SDPA)
            expected, expected_weights = layer(x, (cos, sin), output_attentions=True)  # [B, T, C], [B, H, T, T]
            fused, _ = layer(x, (cos, sin))
            looped, summed, looped_weights = heads_in_a_loop(layer, x, cos, sin)
            mismatched = heads_in_a_loop(layer, x, cos, sin, key_shift=1)[0] if heads > 1 else None
        errors = (relative_error(looped, expected), relative_error(looped, fused), relative_error(summed, expected),
                  (looped_weights - expected_weights).abs().max().item())
        worst = max(worst, *errors)
        if mismatched is not None:
            control.append(relative_error(mismatched, expected))
        rows.append([heads, layer.head_dim, *errors, f"{control[-1]:.0%}" if mismatched is not None else "-"])
        if heads == args.figure_heads:
            figure_maps = (expected_weights[0], looped_weights[0])
    print(f"C = {args.hidden}, T = {args.tokens}, batch {args.batch}; every layer MHA with RoPE and the causal mask")
    print()
    print_table(["heads H", "width D", "|loop - layer| / |layer|", "same, fused path",
                 "|sum of heads - layer| / |layer|", "|weights - layer's|", "control: keys of head h+1"], rows,
                ["", "", ".1e", ".1e", ".1e", ".1e", ""])
    print()
    print(f"|.| is the largest entry. Rounding tolerance: max(C, T) x float32 eps = {tolerance:.1e}.")
    print()

    exp.claim(worst <= tolerance,
              f"for H in {counts}, running each head alone on its slice of W_q, W_k, W_v, concatenating and "
              f"applying o_proj reproduces minimind_ref's Attention (outputs and weights, explicit and fused paths) "
              f"to float32 rounding "
              f"(largest error {worst:.1e} <= {tolerance:.1e}), and so does the sum of the heads' separate "
              f"contributions W_o[:, slice h] @ head_h")

    exp.claim(min(control) > BROKEN,
              f"the comparison is sensitive: pairing each head's queries with the next head's keys misses the "
              f"layer's output by at least {min(control):.0%} of its size (must be more than {BROKEN:.0%})")

    layer_maps, loop_maps = figure_maps
    fig = show_heatmaps(torch.stack([layer_maps, loop_maps]),
                        titles=[[f"layer, head {h}" for h in range(args.figure_heads)],
                                [f"loop, head {h}" for h in range(args.figure_heads)]],
                        suptitle=f"{args.figure_heads} heads: Attention's weights (top) "
                                 f"and the per-head loop's (bottom)")
    exp.save(fig, "heads")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
