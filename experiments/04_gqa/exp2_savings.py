"""What sharing key/value heads saves, counted on the model and computed from the closed forms, and
the two agree: attention parameters per layer 2 C H D + 2 C H_kv D, and KV-cache bytes per token
2 x layers x H_kv x D x bytes per number, for MHA, GQA and MQA.

MiniMind's default configuration has hidden size C = 512, 8 layers and H = 8 query heads of size
D = 64 sharing H_kv = 2 key/value heads. The query and output projections do not depend on H_kv; the
key and value projections are C x (H_kv D) each, so they shrink with H_kv, and so does everything
the cache stores: one key and one value vector per KV head, per layer, per token.

This script builds minimind_ref's model for every H_kv that divides H (8 = MHA, 4, 2 = MiniMind,
1 = MQA), counts the parameters of one attention layer and of the whole model, runs a forward pass
with use_cache=True in float32 and in bfloat16, and divides `KVCache.nbytes()` by the number of
tokens. Each count is checked against its closed form.

Why it matters: at long contexts the cache, not the weights, fills the memory and is what each
decoding step must read. The table's last columns show where the cache of each variant outgrows the
model's own weights.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, int_in, print_table
from labkit.i18n import phrase

MIB = 2 ** 20
NAMES = {1: "MQA"}
# --preset: MiniMind2-Small (the course's default), MiniMind2 (upstream's 104M: 16 layers, 768 wide, 2 KV
# heads of 96) or MiniMind-3 (768 wide, 4 KV heads of 96)
PRESETS = {"minimind2-small": ("MiniMind2-Small", mm.MiniMindConfig),
           "minimind2": ("MiniMind2", mm.MiniMindConfig.minimind2),
           "minimind3": ("MiniMind-3", mm.MiniMindConfig.minimind3)}


def add_arguments(parser):
    # eight forward passes of MiniMind's default model (four variants, two dtypes) over --tokens
    parser.add_argument("--tokens", type=int_in(1, 1024), default=16,
                        help="tokens in the forward pass that fills the cache (default 16)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="minimind2-small",
                        help="the model whose variants are counted: minimind2-small (default, 26M), "
                             "minimind2 (104M) or minimind3")
    parser.add_argument("--context", type=int_in(1, 2 ** 20), default=32768,
                        help="context length for the cache-size column and the figure (default 32768, "
                             "MiniMind's max_position_embeddings)")


def variant_name(config: mm.MiniMindConfig) -> str:
    if config.num_key_value_heads == config.num_attention_heads:
        return "MHA"
    return NAMES.get(config.num_key_value_heads, f"GQA-{config.num_key_value_heads}")


def attention_params_closed_form(config: mm.MiniMindConfig) -> int:
    """q_proj and o_proj: C x (H D) each; k_proj and v_proj: C x (H_kv D) each; no biases; and with
    q/k norm (MiniMind-3) the two norms' gains, D each."""
    c, d = config.hidden_size, config.head_dim
    norms = 2 * d if config.qk_norm else 0
    return 2 * c * config.num_attention_heads * d + 2 * c * config.num_key_value_heads * d + norms


def cache_bytes_per_token_closed_form(config: mm.MiniMindConfig, dtype: torch.dtype) -> int:
    """K and V, for every layer and every KV head, D numbers each."""
    element = torch.tensor([], dtype=dtype).element_size()
    return 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * element


@torch.no_grad()
def measured_cache_bytes_per_token(model: mm.MiniMindForCausalLM, tokens: int, dtype: torch.dtype) -> float:
    """Fill a cache with a forward pass of `tokens` tokens in `dtype`; its bytes per token."""
    model = model.to(dtype)
    ids = torch.randint(0, model.config.vocab_size, (1, tokens))
    cache = model(ids, use_cache=True).past_key_values
    return cache.nbytes() / tokens


def plot(rows, context, weight_bytes_bf16, weights_label):
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    lengths = torch.linspace(0, context, 65)
    for row in rows:
        left.plot(lengths, lengths * row["cache_bf16"] / MIB, label=f"{row['name']} (H_kv = {row['kv']})")
    left.axhline(weight_bytes_bf16 / MIB, color="k", ls=":", label=weights_label)
    left.set(xlabel="context length (tokens)", ylabel="MiB, bfloat16, batch 1",
             title="KV cache of one sequence vs its length")
    left.legend(fontsize=8)
    names = [row["name"] for row in rows]
    qo = [row["attn_model"] - row["kv_params"] for row in rows]
    kv = [row["kv_params"] for row in rows]
    right.bar(names, qo, label="q_proj + o_proj")
    right.bar(names, kv, bottom=qo, label="k_proj + v_proj")
    right.set(ylabel="parameters", title="Attention parameters per layer")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    label, make_config = PRESETS[args.preset]
    default = make_config()
    heads = default.num_attention_heads
    print(f"{label}: hidden {default.hidden_size}, {default.num_hidden_layers} layers, {heads} query "
          f"heads of size {default.head_dim}, {default.num_key_value_heads} KV heads.")
    print()

    rows = []
    for kv in sorted((d for d in range(1, heads + 1) if heads % d == 0), reverse=True):
        config = default.replace(num_key_value_heads=kv)
        model = mm.MiniMindForCausalLM(config).eval()
        attention = model.model.layers[0].self_attn
        row = {"name": variant_name(config), "kv": kv, "config": config,
               "attn_model": sum(p.numel() for p in attention.parameters()),
               "attn_formula": attention_params_closed_form(config),
               "kv_params": attention.k_proj.weight.numel() + attention.v_proj.weight.numel(),
               "total": sum(p.numel() for p in model.parameters())}
        for key, dtype in (("32", torch.float32), ("bf16", torch.bfloat16)):
            row[f"cache_{key}"] = measured_cache_bytes_per_token(model, args.tokens, dtype)
            row[f"cache_{key}_formula"] = cache_bytes_per_token_closed_form(config, dtype)
        row["weights_bf16"] = row["total"] * 2
        rows.append(row)
        del model

    print_table(
        ["variant", "H_kv", "attn params/layer", "closed form", "model params", "cache B/token fp32",
         "closed form", "bf16", "closed form", f"cache at {args.context} (bf16)", "cache > weights from"],
        [[r["name"], r["kv"], r["attn_model"], r["attn_formula"], r["total"], r["cache_32"], r["cache_32_formula"],
          r["cache_bf16"], r["cache_bf16_formula"], f"{args.context * r['cache_bf16'] / MIB:,.0f} MiB",
          f"{r['weights_bf16'] / r['cache_bf16']:,.0f} tokens"] for r in rows],
        ["", "d", ",d", ",d", ",d", ",.0f", ",d", ",.0f", ",d", "", ""])
    print()
    print(f"Cache bytes per token = KVCache.nbytes() after a forward pass of {args.tokens} tokens, divided by "
          f"{args.tokens}. 'cache > weights from': the context at which one sequence's cache holds more bytes "
          f"than the model's weights (both bfloat16).")
    print()

    by_name = {r["name"]: r for r in rows}
    mha, gqa = by_name["MHA"], next(r for r in rows if r["kv"] == default.num_key_value_heads)
    counted = ", ".join(f"{r['name']} {r['attn_model']:,}" for r in rows)
    exp.claim(all(r["attn_model"] == r["attn_formula"] for r in rows),
              "the attention parameters per layer counted on the model equal 2 C H D + 2 C H_kv D (+ 2 D of q/k "
              f"norm gains in MiniMind-3) for every H_kv: {counted}")
    saved = mha["attn_model"] - gqa["attn_model"]
    exp.claim(saved == 2 * default.hidden_size * (heads - default.num_key_value_heads) * default.head_dim
              and mha["total"] - gqa["total"] == default.num_hidden_layers * saved,
              f"{label}'s GQA saves {saved:,} parameters per layer over MHA ({100 * saved / mha['attn_model']:.1f}% "
              f"of its attention), {default.num_hidden_layers * saved:,} over the {default.num_hidden_layers} layers "
              f"(models of {mha['total']:,} and {gqa['total']:,} parameters)")
    per_token = ", ".join(f"{r['name']} {r['cache_bf16']:,.0f}" for r in rows)
    exp.claim(all(r["cache_32"] == r["cache_32_formula"] and r["cache_bf16"] == r["cache_bf16_formula"] for r in rows),
              "KVCache.nbytes() per token equals 2 x layers x H_kv x D x bytes for every H_kv, in float32 and "
              f"bfloat16: {per_token} bytes (bf16)")
    exp.claim(all(mha["cache_32"] / r["cache_32"] == heads / r["kv"] for r in rows),
              f"the cache shrinks by exactly H / H_kv: {label}'s {default.num_key_value_heads} KV heads store "
              f"{mha['cache_32'] / gqa['cache_32']:g}x less than MHA, one KV head (MQA) {heads}x less")

    weights_label = phrase(f"{label}'s weights ({gqa['name']})")
    exp.save(plot(rows, args.context, gqa["weights_bf16"], weights_label), "savings")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
