"""Multi-head latent attention (MLA) caches d_c + d_R numbers per token and layer, whatever the number
of heads: on DeepSeek-V2's sizes 576, 1/57 of what multi-head attention caches and as much as GQA
with 2.25 groups; and attention computed over that latent directly (W_UK and W_UV absorbed) gives
the same output as decompressing it, which works only because RoPE is kept out of the compressed keys.

MLA (DeepSeek-V2, arXiv 2405.04434) is the other way to shrink the KV cache. GQA and MQA cache fewer
key/value heads; MLA caches one low-rank latent per token, c = W_DKV h (d_c numbers), plus one small
rotated key k_R = RoPE(W_KR h) (d_R numbers) shared by all heads, and rebuilds every head's key
W_UK c and value W_UV c from it. Per token and layer: MHA caches 2 n_h d_h numbers, GQA with n_g
groups 2 n_g d_h, MQA 2 d_h, MLA d_c + d_R.

This script:
- builds the table for DeepSeek-V2's attention sizes (the paper's section 3.1: n_h = 128 heads of
  d_h = 128, d_c = 512, d_R = 64, 60 layers) and for MiniMind2-Small's (8 heads of 64; its MLA twin uses
  DeepSeek's ratios d_c = 4 d_h and d_R = d_h / 2), and measures every entry on real cache tensors:
  minimind_ref's `KVCache` for MHA, GQA and MQA, and the `LatentCache` that a full-size
  `MultiHeadLatentAttention` layer fills;
- runs that DeepSeek-V2-sized layer both ways, naive (decompress to full keys and values) and
  absorbed (attend over the latent), over a prompt and then token by token with the cache;
- shows why the rotary part must be decoupled: rotate the full keys instead, and W_UK folded into
  the query gives the scores without the rotation between query and key, wrong everywhere except
  where the two share a position.

Why it matters: MLA does not give the smallest cache (MQA's is smaller), but a cache the size of
GQA's with a couple of groups while every head keeps its own keys and values, rebuilt from the
latent. How much it saves against MHA, 2 n_h d_h / (d_c + d_R), grows with the number of heads: with
DeepSeek's ratios it is n_h / 2.25, 57 times for DeepSeek-V2's 128 heads, only 3.6 for MiniMind's 8,
where its own GQA-2 caches less.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, int_in, int_list, print_table
from labkit.figures import plain_number
from labkit.i18n import phrase
from minimind_ref.variants.mla import (
    DEEPSEEK_V2,
    LatentCache,
    MLAConfig,
    MultiHeadLatentAttention,
    absorb_query,
    rotate_from,
)

F32 = torch.float32


def add_arguments(parser):
    parser.add_argument("--tokens", type=int_in(1, 256), default=16,
                        help="prompt length for the naive-vs-absorbed comparison (default 16)")
    parser.add_argument("--steps", type=int_in(0, 64), default=4,
                        help="tokens decoded one at a time with the latent cache after the prompt (default 4)")
    parser.add_argument("--groups", type=int_list(2, DEEPSEEK_V2.num_attention_heads), default="8,2",
                        help="GQA group counts shown for DeepSeek-V2's 128 heads, comma-separated (default 8,2)")


def check_arguments(args):
    heads = DEEPSEEK_V2.num_attention_heads
    if any(heads % g for g in args.groups):
        return f"--groups must divide DeepSeek-V2's {heads} heads, got {','.join(map(str, args.groups))}"
    return None


# ----------------------------------------------------------------------------- cache sizes


def kv_closed_form(kv_heads: int, head_dim: int) -> int:
    """Numbers per token and layer that MHA / GQA / MQA cache: a key and a value per KV head."""
    return 2 * kv_heads * head_dim


def measured_kv_bytes(heads: int, kv_heads: int, head_dim: int, tokens: int = 4) -> float:
    """Bytes per token and layer of minimind_ref's KVCache (float32) holding `tokens` positions."""
    config = mm.MiniMindConfig(hidden_size=heads * head_dim, num_hidden_layers=1, num_attention_heads=heads,
                               num_key_value_heads=kv_heads, head_dim=head_dim)
    cache = mm.KVCache(config, batch_size=1, capacity=tokens)
    keys = torch.zeros(1, kv_heads, tokens, head_dim, dtype=F32)
    cache.update(0, keys, keys.clone())
    return cache.nbytes() / tokens


def latent_bytes_per_token(cache: LatentCache) -> float:
    """Bytes per token and layer of a filled LatentCache."""
    return cache.nbytes() / (cache.batch_size * len(cache) * len(cache.rows))


@torch.no_grad()
def prompt_cache(layer: MultiHeadLatentAttention, x: torch.Tensor) -> tuple[torch.Tensor, LatentCache]:
    """Run a prompt x [B, T, C] through `layer` (absorbed) with a fresh one-layer LatentCache."""
    cache = LatentCache(layer.config.replace(num_hidden_layers=1), batch_size=x.shape[0])
    return layer(x, cache=cache, absorbed=True), cache


def cache_rows(name, heads, head_dim, kv_variants, mla_config, mla_bytes):
    """One row per variant: closed-form numbers, measured bytes (float32), ratio to MHA."""
    rows = []
    for label, kv_heads in kv_variants:
        rows.append({"model": name, "variant": label, "numbers": kv_closed_form(kv_heads, head_dim),
                     "bytes": measured_kv_bytes(heads, kv_heads, head_dim)})
    rows.append({"model": name, "variant": "MLA", "numbers": mla_config.cache_elements_per_token(),
                 "bytes": mla_bytes})
    for row in rows:
        row["vs_mha"] = rows[0]["numbers"] / row["numbers"]
    return rows


# ----------------------------------------------------------------------- why decoupled RoPE


@torch.no_grad()
def rope_through_the_latent(layer: MultiHeadLatentAttention, x: torch.Tensor) -> dict:
    """Scores [B, H, T, T] computed with and without decompressing, for MLA's decoupled layout and
    for a layout that rotates the whole (nope) keys instead. Returns relative errors."""
    cfg = layer.config
    q_nope, q_rope = layer.queries(x)                      # [B, H, T, d_h], [B, H, T, d_R]
    c_kv, k_rope = layer.latents(x)                        # [B, T, d_c], [B, 1, T, d_R]
    q_rope, k_rope = layer.rotate(q_rope, k_rope, 0)
    w_uk, _ = layer.up_weights()                           # [H, d_h, d_c]
    k_nope = (c_kv[:, None] @ w_uk.transpose(-2, -1))      # [B, H, T, d_h]: W_UK c for every head

    # MLA's layout: rotation only on the shared k_R; W_UK folds into the query exactly.
    full = torch.cat([q_nope, q_rope], -1) @ torch.cat([k_nope, k_rope.expand_as(q_rope)], -1).transpose(-2, -1)
    absorbed = (torch.cat([absorb_query(q_nope, w_uk), q_rope], -1)
                @ torch.cat([c_kv[:, None], k_rope], -1).transpose(-2, -1))

    # The rejected layout: rotate the whole keys, R_j W_UK c_j, and the queries, R_t q_t. The true
    # score q_t^T R_(j-t) W_UK c_j has a rotation between the query and W_UK that depends on the
    # distance; W_UK folded into the query once skips it, so the fold is right only where j = t.
    q_rot, k_rot = rotate_from(q_nope, k_nope, 0, cfg.rope_theta)  # [B, H, T, d_h] each, rotated
    true_scores = q_rot @ k_rot.transpose(-2, -1)
    folded = absorb_query(q_nope, w_uk) @ c_kv[:, None].transpose(-2, -1)
    diagonal = torch.eye(x.shape[1], dtype=torch.bool)

    def rel(a, b):
        return ((a - b).norm() / b.norm()).item()

    return {"decoupled": rel(absorbed, full), "rotated_keys": rel(folded, true_scores),
            "rotated_keys_diagonal": rel(folded[..., diagonal], true_scores[..., diagonal]),
            "rotated_keys_off_diagonal": rel(folded[..., ~diagonal], true_scores[..., ~diagonal])}


# ----------------------------------------------------------------------------------- figure


def plot(tables, rope):
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4), gridspec_kw={"width_ratios": [3, 2.2, 2.4]})
    for ax, rows in zip(axes[:2], tables):
        names = [r["variant"] for r in rows]
        colors = ["tab:red" if n == "MLA" else "tab:blue" for n in names]
        bars = ax.bar(names, [r["numbers"] for r in rows], color=colors)
        for bar, row in zip(bars, rows):
            ax.annotate(f"{row['numbers']:,}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)
        # A log axis only where the sizes span more than a factor of 20 (it starts at 1, so that
        # bar heights compare): over MiniMind2-Small's factor of 8 it made MQA's bar look 20 times smaller.
        numbers = [r["numbers"] for r in rows]
        if max(numbers) > 20 * min(numbers):
            ax.set_yscale("log")
            ax.set_ylim(1, max(numbers) * 3)
        ax.set(ylabel="numbers cached per token per layer", title=f"KV cache: {rows[0]['model']}")
    labels = ["decoupled RoPE\n(MLA)", "RoPE on full keys,\nother positions", "RoPE on full keys,\nsame position"]
    values = [rope["decoupled"], rope["rotated_keys_off_diagonal"], rope["rotated_keys_diagonal"]]
    bars = axes[2].bar(labels, [max(v, 1e-9) for v in values], color=["tab:green", "tab:red", "tab:gray"])
    for bar, value in zip(bars, values):
        axes[2].annotate(plain_number(value), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                         ha="center", va="bottom", fontsize=8)
    axes[2].tick_params(axis="x", labelsize=8)
    axes[2].set_yscale("log")
    axes[2].set(ylabel="relative error of the scores", title="Absorbing W_UK into the query")
    fig.tight_layout()
    return fig


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    deepseek, minimind_mla = the_layers()
    run = naive_and_absorbed(deepseek, minimind_mla, args.tokens, args.steps)
    tables = cache_table(run["deepseek_bytes"], run["minimind_bytes"], args.groups)
    agreement = compare_the_paths(run, args.steps)
    rope = rope_through_the_latent(deepseek, run["x"][:, :args.tokens])
    print_rope_table(rope)
    claim_mla(exp, tables, agreement, rope)
    exp.save(plot(tables, rope), "cache")
    return exp.finish()


def the_layers():
    """DeepSeek-V2's attention sizes in full, and MLA at MiniMind2-Small's sizes."""
    v2 = DEEPSEEK_V2
    deepseek = MultiHeadLatentAttention(v2).eval()                       # about 149M parameters, float32
    minimind_cfg = mm.MiniMindConfig()
    minimind_mla = MultiHeadLatentAttention(MLAConfig()).eval()          # hidden 512, 8 heads of 64
    print(f"DeepSeek-V2 (arXiv 2405.04434, section 3.1): {v2.num_hidden_layers} layers, hidden {v2.hidden_size}, "
          f"n_h = {v2.num_attention_heads} heads of d_h = {v2.qk_nope_head_dim}, d_c = {v2.kv_lora_rank}, "
          f"d_R = {v2.qk_rope_head_dim}, d_c' = {v2.q_lora_rank}; its MLA layer has "
          f"{sum(p.numel() for p in deepseek.parameters()):,} parameters.")
    print(f"MiniMind2-Small (MiniMindConfig): {minimind_cfg.num_hidden_layers} layers, "
          f"{minimind_cfg.num_attention_heads} heads of {minimind_cfg.head_dim}, "
          f"{minimind_cfg.num_key_value_heads} KV heads; its MLA twin: "
          f"d_c = {MLAConfig().kv_lora_rank}, d_R = {MLAConfig().qk_rope_head_dim}.")
    print()
    return deepseek, minimind_mla


def naive_and_absorbed(deepseek, minimind_mla, tokens: int, steps: int) -> dict:
    """Naive vs absorbed on the DeepSeek-V2-sized layer: the prompt fills a latent cache, then
    single tokens follow through it; the whole sequence at once, both ways, is the reference."""
    v2 = DEEPSEEK_V2
    x = torch.randn(2, tokens + steps, v2.hidden_size)
    with torch.no_grad():
        full_naive = deepseek(x)                                          # [B, T, C]
        full_absorbed = deepseek(x, absorbed=True)
        prompt_out, cache = prompt_cache(deepseek, x[:, :tokens])
        deepseek_bytes = latent_bytes_per_token(cache)                    # measured before the steps
        parts = [prompt_out] + [deepseek(x[:, t:t + 1], cache=cache, absorbed=True)
                                for t in range(tokens, x.shape[1])]
        stepped = torch.cat(parts, dim=1)
        minimind_bytes = latent_bytes_per_token(
            prompt_cache(minimind_mla, torch.randn(1, 4, MLAConfig().hidden_size))[1])

    return {"x": x, "full_naive": full_naive, "full_absorbed": full_absorbed, "stepped": stepped, "cache": cache,
            "deepseek_bytes": deepseek_bytes, "minimind_bytes": minimind_bytes}


def cache_table(deepseek_bytes: int, minimind_bytes: int, groups: list[int]) -> list:
    """The cache table, measured on cache tensors (float32: 4 bytes per number)."""
    v2, minimind_cfg = DEEPSEEK_V2, mm.MiniMindConfig()
    heads, d_h = v2.num_attention_heads, v2.qk_nope_head_dim
    deepseek_variants = [("MHA", heads)] + [(f"GQA-{g}", g) for g in groups] + [("MQA", 1)]
    mm_heads, mm_d = minimind_cfg.num_attention_heads, minimind_cfg.head_dim
    minimind_variants = [("MHA", mm_heads),
                         (f"GQA-{minimind_cfg.num_key_value_heads}", minimind_cfg.num_key_value_heads), ("MQA", 1)]
    tables = [cache_rows(phrase("DeepSeek-V2 sizes"), heads, d_h, deepseek_variants, v2, deepseek_bytes),
              cache_rows(phrase("MiniMind2-Small sizes"), mm_heads, mm_d, minimind_variants, MLAConfig(),
                         minimind_bytes)]
    layers = {"DeepSeek-V2 sizes": v2.num_hidden_layers, "MiniMind2-Small sizes": minimind_cfg.num_hidden_layers}
    print_table(["sizes", "variant", "numbers/token/layer", "measured bytes (fp32)", "MHA / this",
                 "KiB/token, all layers, bf16"],
                [[r["model"], r["variant"], r["numbers"], r["bytes"], r["vs_mha"],
                  r["numbers"] * 2 * layers[r["model"]] / 1024] for t in tables for r in t],
                ["", "", ",d", ",.0f", ".2f", ",.2f"])
    print("Closed forms: MHA 2 n_h d_h, GQA-g 2 g d_h, MQA 2 d_h, MLA d_c + d_R. Measured: KVCache.nbytes() or "
          "LatentCache.nbytes() per token for one layer, in float32 (the MLA rows: the cache the layer itself "
          "filled with a prompt). Last column: numbers x 2 bytes x layers.")
    print()
    return tables


def compare_the_paths(run: dict, steps: int) -> dict:
    """How far the absorbed path, and the steps through the latent cache, are from the naive path."""
    v2, x, cache = DEEPSEEK_V2, run["x"], run["cache"]
    full_naive, full_absorbed, stepped = run["full_naive"], run["full_absorbed"], run["stepped"]
    heads, d_h = v2.num_attention_heads, v2.qk_nope_head_dim
    scale = full_naive.abs().max().item()
    naive_vs_absorbed = (full_absorbed - full_naive).abs().max().item() / scale
    stepped_vs_full = (stepped - full_naive).abs().max().item() / scale
    print(f"DeepSeek-V2-sized layer, float32, batch 2, {x.shape[1]} tokens: largest output {scale:.3f}; "
          f"absorbed vs naive differ by at most {naive_vs_absorbed:.1e} of it, the prompt then {steps} "
          f"single-token steps through the latent cache vs the whole sequence at once by {stepped_vs_full:.1e}.")
    print(f"The absorbed path attends over {cache.rows[0].shape[-1]} cached numbers per token; the naive one "
          f"rebuilds {heads} x ({d_h} + {v2.qk_rope_head_dim}) key and {heads} x {v2.v_head_dim} value numbers "
          f"per token at every step.")
    print()
    return {"naive_vs_absorbed": naive_vs_absorbed, "stepped_vs_full": stepped_vs_full}


def print_rope_table(rope: dict) -> None:
    """Why the rotary part is decoupled: folding W_UK into the query, with and without it."""
    print_table(["layout", "fold W_UK into the query: relative error of the scores"],
                [[phrase("decoupled RoPE (MLA)"), f"{rope['decoupled']:.1e}"],
                 [phrase("RoPE on the full keys, all query-key pairs"), f"{rope['rotated_keys']:.2f}"],
                 ["  " + phrase("pairs at different positions"), f"{rope['rotated_keys_off_diagonal']:.2f}"],
                 ["  " + phrase("pairs at the same position (no rotation between)"),
                  f"{rope['rotated_keys_diagonal']:.1e}"]])
    print()


def claim_mla(exp, tables: list, agreement: dict, rope: dict) -> None:
    v2, minimind_cfg = DEEPSEEK_V2, mm.MiniMindConfig()
    heads, d_h, mm_heads = v2.num_attention_heads, v2.qk_nope_head_dim, minimind_cfg.num_attention_heads
    naive_vs_absorbed, stepped_vs_full = agreement["naive_vs_absorbed"], agreement["stepped_vs_full"]
    by = {(r["model"], r["variant"]): r for t in tables for r in t}
    exp.claim(all(r["bytes"] == 4 * r["numbers"] for t in tables for r in t),
              "every cache's measured bytes per token and layer equal its closed form x 4 bytes (float32): "
              + ", ".join(f"{r['variant']} {r['bytes']:,.0f}" for r in tables[0]) + " on DeepSeek-V2's sizes")
    mla, mha = by[("DeepSeek-V2 sizes", "MLA")], by[("DeepSeek-V2 sizes", "MHA")]
    equivalent_groups = mla["numbers"] / kv_closed_form(1, d_h)
    exp.claim(mla["numbers"] == v2.kv_lora_rank + v2.qk_rope_head_dim and equivalent_groups == 2.25,
              f"on DeepSeek-V2's sizes MLA caches d_c + d_R = {mla['numbers']} numbers per token and layer, "
              f"{mha['numbers'] / mla['numbers']:.1f}x less than MHA's {mha['numbers']:,}: as much as GQA with "
              f"{equivalent_groups:g} groups (more than GQA-2, less than GQA-3; MQA's {kv_closed_form(1, d_h)} is "
              f"smaller still)")
    ratios = [(t[0]["model"], t[-1]["vs_mha"], n) for t, n in zip(tables, (heads, mm_heads))]
    exp.claim(all(abs(ratio - n / 2.25) < 1e-9 for _, ratio, n in ratios)
              and by[("MiniMind2-Small sizes", "MLA")]["numbers"] > by[("MiniMind2-Small sizes", "GQA-2")]["numbers"],
              "with DeepSeek's ratios (d_c = 4 d_h, d_R = d_h / 2) MLA saves n_h / 2.25 against MHA: "
              + ", ".join(f"{ratio:.2f}x at {name}" for name, ratio, _ in ratios)
              + "; at MiniMind's 8 heads it caches more than MiniMind's own GQA-2")
    exp.claim(naive_vs_absorbed < 1e-5 and stepped_vs_full < 1e-5,
              f"attending over the latent (W_UK folded into the query, W_UV applied after) gives the decompressed "
              f"output, with the whole sequence ({naive_vs_absorbed:.1e}) and step by step through the cache "
              f"({stepped_vs_full:.1e}, relative to the largest output)")
    exp.claim(rope["decoupled"] < 1e-5 and rope["rotated_keys_off_diagonal"] > 0.1
              and rope["rotated_keys_diagonal"] < 1e-5,
              f"with decoupled RoPE the absorbed scores are exact ({rope['decoupled']:.1e}); "
              f"with RoPE on the full keys, "
              f"folding W_UK into the query is wrong (relative error {rope['rotated_keys_off_diagonal']:.2f} between "
              f"different positions), right only where query and key share a position")



if __name__ == "__main__":
    raise SystemExit(main())
