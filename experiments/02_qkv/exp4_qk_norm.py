"""MiniMind-3's per-head RMSNorm on queries and keys bounds every attention score by
sqrt(head_dim) times the largest gains, whatever the size of the input; without it (the MiniMind2
series) the scores grow with the square of the input's scale and the softmax saturates.

RMSNorm divides a head's query (and key) by sqrt(mean(x^2) + eps), so the normalised vector has
length at most sqrt(D) before the gain g multiplies it (close to sqrt(D), less for a vector near
zero); RoPE is a rotation and keeps that length. Cauchy-Schwarz then bounds the score of any query
and key:

    |q . k| / sqrt(D)  <=  max|g_q| sqrt(D) * max|g_k| sqrt(D) / sqrt(D)  =  max|g_q| max|g_k| sqrt(D)

which is sqrt(96) = 9.80 for MiniMind-3's heads of 96 with unit gains. This script builds one
attention layer at MiniMind-3's sizes (`MiniMindConfig.minimind3()`: 768 wide, 8 heads over 4 KV
heads of 96) with q/k norm and the same layer without it (the MiniMind2 series' layout), projections drawn
from N(0, 1 / fan_in), the norm gains from U(0.5, 1.5); it feeds them the same random tokens
multiplied by each of `--scales` and measures the largest score and the weight each row puts on
its top key. Papers: QKNorm (Henry et al., arXiv 2010.04245) normalised queries and keys
against softmax saturation; ViT-22B (Dehghani et al., arXiv 2302.05442) applied LayerNorm to them
to stop attention logits from growing until training diverged; Qwen3 (arXiv 2505.09388) uses it
in place of Qwen2's QKV bias, and MiniMind-3 follows Qwen3's layout.

Why it matters: weights that grow during training make unnormalised scores grow quadratically,
every softmax row collapses to one key (and in float16 the product can overflow). In the MiniMind2 series
the layer's input is RMS-normalised by the block's pre-norm, so only the weights can grow; scaling the
input here stands in for that growth.
With q/k norm the score range is fixed by the gains, which the model learns deliberately.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, attention_scores, int_in, int_list, print_table, random_attention
from labkit.i18n import phrase


def add_arguments(parser):
    parser.add_argument("--tokens", type=int_in(2, 256), default=32, help="sequence length T (default 32)")
    parser.add_argument("--scales", type=int_list(1, 1000), default="1,10,100",
                        help="factors the input is multiplied by, increasing (default 1,10,100)")


def check_arguments(args):
    if len(args.scales) < 2 or args.scales != sorted(set(args.scales)):
        return f"--scales must list at least two increasing factors, got {args.scales}"
    return None


def layers():
    """The same projections with and without q/k norm, at MiniMind-3's sizes."""
    config = mm.MiniMindConfig.minimind3()
    normed = random_attention(config)
    with torch.no_grad():
        normed.q_norm.weight.uniform_(0.5, 1.5)
        normed.k_norm.weight.uniform_(0.5, 1.5)
    plain = mm.Attention(config.replace(qk_norm=False)).eval()
    plain.load_state_dict({k: v for k, v in normed.state_dict().items() if "norm" not in k})
    return config, {phrase("MiniMind2 layout (no q/k norm)"): plain, "MiniMind-3 (q/k RMSNorm)": normed}


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    config, models = layers()
    d, tokens = config.head_dim, exp.args.tokens
    normed = models["MiniMind-3 (q/k RMSNorm)"]
    bound = normed.q_norm.weight.abs().max().item() * normed.k_norm.weight.abs().max().item() * math.sqrt(d)
    cos, sin = mm.precompute_freqs_cis(d, tokens, rope_base=config.rope_theta)
    x = torch.randn(1, tokens, config.hidden_size)
    causal = mm.causal_mask(tokens, tokens)

    largest, top_weight = {}, {}
    rows = []
    with torch.no_grad():
        for name, layer in models.items():
            for scale in exp.args.scales:
                scores = attention_scores(layer, x * scale, cos, sin)  # [1, H, T, T]
                weights = torch.softmax(scores.masked_fill(~causal, -math.inf), dim=-1)
                largest[name, scale] = scores.masked_fill(~causal, 0).abs().max().item()
                top_weight[name, scale] = weights[..., 1:, :].amax(-1).mean().item()  # rows with a choice
                rows.append([name, scale, largest[name, scale], top_weight[name, scale]])
    print(f"One attention layer at MiniMind-3's sizes (head_dim {d}), {tokens} random tokens times each scale:")
    print_table(["layer", "input x", "largest |score|", "mean top weight"], rows, ["", "", ".4g", ".3f"])
    print(f"bound with q/k norm: max|g_q| max|g_k| sqrt({d}) = {bound:.3f} "
          f"(sqrt({d}) = {math.sqrt(d):.3f} with unit gains)")
    print()

    plain_name, normed_name = list(models)
    low, high = exp.args.scales[0], exp.args.scales[-1]
    growth = largest[plain_name, high] / largest[plain_name, low]
    exp.claim(abs(growth / (high / low) ** 2 - 1) < 1e-3,
              f"without q/k norm the largest score grows with the square of the input's scale: x{high / low:.4g} "
              f"input, x{growth:.4g} score (expected {(high / low) ** 2:.4g})")
    normed_values = [largest[normed_name, s] for s in exp.args.scales]
    exp.claim(max(normed_values) <= bound and max(normed_values) / min(normed_values) - 1 < 1e-3,
              f"with q/k norm the largest score stays {normed_values[0]:.3f} at every scale, below the bound "
              f"{bound:.3f}")
    steady = max(abs(top_weight[normed_name, s] / top_weight[normed_name, low] - 1) for s in exp.args.scales)
    rises = top_weight[plain_name, high] > top_weight[plain_name, low] or top_weight[plain_name, low] > 0.999
    exp.claim(rises and steady < 1e-3,
              f"the softmax follows: without the norm each row's top weight rises from "
              f"{top_weight[plain_name, low]:.3f} (x{low}) to {top_weight[plain_name, high]:.3f} (x{high}), towards "
              f"one key (or sits there already); with it the rows keep {top_weight[normed_name, low]:.3f} at "
              f"every scale")

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for name in models:
        ax.loglog(exp.args.scales, [largest[name, s] for s in exp.args.scales], "o-", label=name)
    ax.axhline(bound, ls="--", color="gray", label="bound with q/k norm")
    ax.set(title="largest attention score against the input's scale", xlabel="input multiplied by",
           ylabel="largest |q . k| / sqrt(D)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "scores")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
