"""With one projection for queries and keys (W_q = W_k) the score matrix is symmetric and nearly
every token gives its highest score to itself; separate projections break both, leaving the
diagonal the row maximum only about as often as chance (1 in T).

Tie the projections and the query and key of token i are the same vector q_i, so the score
s_ij = q_i . q_j / sqrt(d) equals s_ji, and the diagonal s_ii = |q_i|^2 / sqrt(d) is a squared
length. Cauchy-Schwarz then bounds every other score: s_ij <= |q_i| |q_j| / sqrt(d)
<= max(s_ii, s_jj), so of any two tokens, at least one scores itself at least as high as the
other. In d = 64 dimensions the diagonal wins by far: |q_i|^2 grows like d, q_i . q_j only like
sqrt(d). This script builds minimind_ref's `Attention` layer (multi-head, so that k_proj has
q_proj's shape and can share its weight), runs random tokens through it with separate and with
tied projections, with RoPE off and on, and measures how symmetric the scores are and how often
a token's largest weight falls on itself.

Why it matters: a symmetric score cannot say "the verb looks for its subject" without also
saying "the subject looks for the verb" just as strongly, and a token that mostly sees itself
gathers nothing from the others. Rotating queries and keys by position (RoPE) does not help: it
rotates a token's query and key alike, so with W_q = W_k they stay equal. Experiment 3 shows
what tied projections then cannot learn.
"""

from __future__ import annotations

import torch

from labkit import EPS32, Experiment, attention_scores, int_in, print_table, show_heatmaps
from labkit.i18n import phrase
from minimind_ref import Attention, MiniMindConfig, precompute_freqs_cis

TIED_SELF_FRACTION = 0.9  # tied: the diagonal must win at least 90% of the rows (it wins ~100%)
CHANCE_FACTOR = 3  # separate: the diagonal may win at most 3x as often as chance, 1/T
ASYMMETRIC = 0.1  # separate: |S - S^T| must reach 10% of the largest score


def add_arguments(parser):
    parser.add_argument("--tokens", type=int_in(4, 512), default=16, help="sequence length T (default 16)")
    parser.add_argument("--batch", type=int_in(1, 256), default=16, help="random sequences measured (default 16)")
    parser.add_argument("--hidden", type=int_in(2, 2048), default=512,
                        help="hidden size C, MiniMind2-Small's 512 (default)")
    parser.add_argument("--heads", type=int_in(1, 64), default=8,
                        help="attention heads, dividing C; also the KV heads, so that W_k can equal W_q (default 8)")


MAX_SCORES = 2 ** 25  # B x H x T x T scores: 128 MiB a tensor, and the layer's weights, the scores and
# the bound are held together for two layers


def check_arguments(args):
    if args.hidden % args.heads or (args.hidden // args.heads) % 2:
        return (f"--hidden must split into --heads heads of even size (RoPE rotates pairs); "
                f"got hidden={args.hidden}, heads={args.heads}")
    scores = args.batch * args.heads * args.tokens ** 2
    if scores > MAX_SCORES:
        return (f"--batch x --heads x --tokens^2 (the scores of one layer) must be at most {MAX_SCORES}, "
                f"got {args.batch} x {args.heads} x {args.tokens}^2 = {scores}")
    return None


def build_layers(config: MiniMindConfig) -> dict:
    """A freshly initialised minimind_ref Attention layer, and a copy whose k_proj shares q_proj's
    weight (the same Parameter: W_k = W_q, exactly)."""
    separate = Attention(config).eval()
    tied = Attention(config).eval()
    tied.load_state_dict(separate.state_dict())
    tied.k_proj.weight = tied.q_proj.weight
    return {"separate": separate, "tied": tied}


def rope_tables(setting: str, tokens: int, head_dim: int, base: float):
    """(cos, sin) for T positions: RoPE's angles, or angle 0 everywhere (positions switched off)."""
    if setting == "rope":
        return precompute_freqs_cis(head_dim, tokens, rope_base=base)  # [T, D] each
    return torch.ones(tokens, head_dim), torch.zeros(tokens, head_dim)


def scores_of(layer: Attention, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The layer's scores q . k / sqrt(D) before the softmax. x: [B, T, C] -> [B, H, T, T].
    (Attention returns only the weights; the symmetry is a property of the scores.)"""
    return attention_scores(layer, x, cos, sin)


def measure(layer: Attention, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> dict:
    batch, tokens, _ = x.shape
    everything = torch.ones(1, 1, tokens, tokens, dtype=torch.bool)  # no mask: every row sees all T keys
    with torch.no_grad():
        _, weights = layer(x, (cos, sin), attn_mask=everything, output_attentions=True)  # [B, H, T, T]
        scores = scores_of(layer, x, cos, sin)
    diagonal = torch.diagonal(scores, dim1=-2, dim2=-1)  # [B, H, T]
    # Cauchy-Schwarz for a Gram matrix: s_ij <= max(s_ii, s_jj); positive values break it
    bound = torch.maximum(diagonal[..., :, None], diagonal[..., None, :])  # [B, H, T, T]
    top_self = weights.argmax(-1) == torch.arange(tokens)  # [B, H, T]: is the row's largest weight its own?
    # the token with the longest q (largest s_ii) in each sequence and head
    longest = diagonal.argmax(-1, keepdim=True)  # [B, H, 1]
    scale = scores.abs().max().item()
    return {
        "weights": weights,
        "scores": scores,
        "softmax_matches": (torch.softmax(scores, -1) - weights).abs().max().item(),
        "asymmetry": (scores - scores.transpose(-2, -1)).abs().max().item() / scale,
        "self_top": top_self.float().mean().item(),
        "self_weight": torch.diagonal(weights, dim1=-2, dim2=-1).mean().item(),
        "longest_self_top": top_self.gather(-1, longest).float().mean().item(),
        "cs_excess": (scores - bound).max().item() / scale,
    }


SETTINGS = [  # (projections, positions) -> a label for the table
    ("separate", "none"), ("tied", "none"), ("separate", "rope"), ("tied", "rope")]


LABELS = {("separate", "none"): phrase("separate W_q, W_k"), ("tied", "none"): phrase("tied W_k = W_q"),
          ("separate", "rope"): phrase("separate W_q, W_k, RoPE"), ("tied", "rope"): phrase("tied W_k = W_q, RoPE")}


def label(projections: str, positions: str) -> str:
    return LABELS[projections, positions]


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    # Tiny tensors: one thread is faster than two, since handing each small operation between
    # threads costs more than its arithmetic (and far more on a busy machine).
    torch.set_num_threads(1)

    config = MiniMindConfig(hidden_size=args.hidden, num_attention_heads=args.heads,
                            num_key_value_heads=args.heads, num_hidden_layers=1, vocab_size=16)
    layers = build_layers(config)
    x = torch.randn(args.batch, args.tokens, args.hidden)  # [B, T, C]: random unit-variance tokens
    rows_measured = args.batch * args.heads * args.tokens
    print(f"{args.batch} sequences x {config.num_attention_heads} heads x T = {args.tokens} tokens = "
          f"{rows_measured} rows of weights; C = {args.hidden}, head_dim D = {config.head_dim}")
    tied = layers["tied"]
    print(f"tied layer: k_proj.weight is q_proj.weight: {tied.k_proj.weight is tied.q_proj.weight}")
    print()
    results = measure_every_setting(layers, x, config, args.tokens)
    claim_tied(exp, results, config.head_dim, args.tokens)
    draw_scores_and_weights(exp, results, args.tokens)
    return exp.finish()


def measure_every_setting(layers: dict, x, config, tokens: int) -> dict:
    """Tied and separate projections, with and without RoPE: symmetry, self-attention, the bound."""
    chance = 1 / tokens
    results, rows = {}, []
    for projections, positions in SETTINGS:
        cos, sin = rope_tables(positions, tokens, config.head_dim, config.rope_theta)
        r = measure(layers[projections], x, cos, sin)
        results[projections, positions] = r
        rows.append([label(projections, positions), r["asymmetry"], r["self_top"], r["self_weight"],
                     r["longest_self_top"], r["cs_excess"]])
    print_table(["projections", "|S - S^T| / |S|", "self is top", "weight on self", "longest q: self top",
                 "max(s_ij - max(s_ii, s_jj)) / |S|"],
                rows, ["", ".1e", ".3f", ".3f", ".3f", ".1e"])
    print()
    print(f"self is top: the fraction of rows whose largest weight is on the token itself (chance: 1/T = "
          f"{chance:.3f});\nlongest q: the same, for the token with the longest query in each sequence and head;")
    print("last column: how far a score goes past the Cauchy-Schwarz bound max(s_ii, s_jj) (<= 0: never).")
    check = max(r["softmax_matches"] for r in results.values())
    print(f"softmax of the scores computed here reproduces the layer's weights: max difference {check:.1e}")
    print()
    return results


def claim_tied(exp, results: dict, head_dim: int, tokens: int) -> None:
    chance = 1 / tokens
    # Rounding: a score sums D products, and RoPE adds a few operations per coordinate.
    tolerance = 4 * head_dim * EPS32
    for positions in ("none", "rope"):
        r = results["tied", positions]
        where = "with RoPE" if positions == "rope" else "without positions"
        exp.claim(r["asymmetry"] <= tolerance and r["cs_excess"] <= tolerance,
                  f"tied, {where}: the scores are symmetric (|S - S^T| = {r['asymmetry']:.1e} of the largest "
                  f"score) and never exceed max(s_ii, s_jj) (excess {r['cs_excess']:.1e}; rounding tolerance "
                  f"{tolerance:.1e})")
        exp.claim(r["self_top"] >= TIED_SELF_FRACTION and r["longest_self_top"] == 1.0,
                  f"tied, {where}: {100 * r['self_top']:.1f}% of the tokens give their largest weight to "
                  f"themselves (must be >= {100 * TIED_SELF_FRACTION:.0f}%), and the token with the longest "
                  f"query always does ({100 * r['longest_self_top']:.0f}%)")
    r = results["separate", "none"]
    exp.claim(r["asymmetry"] >= ASYMMETRIC,
              f"separate: the scores are not symmetric (|S - S^T| = {r['asymmetry']:.2f} of the largest score, "
              f"must be >= {ASYMMETRIC})")
    worst = max(results["separate", p]["self_top"] for p in ("none", "rope"))
    exp.claim(worst <= CHANCE_FACTOR * chance,
              f"separate: the diagonal is the row maximum in at most {100 * worst:.1f}% of the rows, near "
              f"chance 1/T = {100 * chance:.1f}% (must be <= {CHANCE_FACTOR} x chance)")



def draw_scores_and_weights(exp, results: dict, tokens: int) -> None:
    labels = [f"t{i}" for i in range(tokens)]
    show = [("separate", "none"), ("tied", "none"), ("tied", "rope")]
    titles = [label(*s) for s in show]
    annotate = tokens <= 8
    maps = torch.stack([results[s]["scores"][0, 0] for s in show])  # [3, T, T]
    limit = maps.abs().max().item()  # a diverging scale centred on 0: red positive, blue negative
    fig = show_heatmaps(maps, x_labels=labels, titles=titles, annotate=annotate, cmap="RdBu_r",
                        vmin=-limit, vmax=limit,
                        suptitle="Scores q_i . k_j / sqrt(D), sequence 0, head 0: tied projections give a "
                                 "symmetric matrix\nwith the largest entries on the diagonal")
    exp.save(fig, "scores")
    fig = show_heatmaps(torch.stack([results[s]["weights"][0, 0] for s in show]), x_labels=labels,
                        titles=titles, annotate=annotate,
                        suptitle="Weights, sequence 0, head 0: with W_k = W_q each token looks mostly at itself")
    exp.save(fig, "weights")


if __name__ == "__main__":
    raise SystemExit(main())
