"""A KV cache holds exactly 2 x layers x kv_heads x head_dim x bytes-per-element bytes per token
and per sequence: 8192 bytes per token for MiniMind2-Small in float32. Only the key/value heads are
stored, so grouped-query attention divides the cache by num_heads / kv_heads.

The closed form counts one key and one value vector of head_dim numbers, per KV head and per layer,
for every cached token of every sequence. This script fills real caches and reads back the bytes
their tensors hold: `KVCache.nbytes()` (the cached positions), the sum of the `nbytes` of the
per-layer key/value tensors that attention reads, and `KVCache.allocated_nbytes()` (the storage,
spare capacity included). It does so after a real forward of MiniMind2-Small's default model, for the
same sizes with 8 (MHA), 4, 2 (GQA, MiniMind2-Small's choice) and 1 (MQA) KV heads, in float32,
bfloat16 and float16, and for the attention shapes of a few published models (their config.json
numbers, cited in the module's guide), on an empty KVCache filled with random keys and values.

Why it matters: the cache, not the weights, is what limits batch size and context length when
serving a model. Its size follows from four numbers of the config; sizing it is arithmetic.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, int_in, print_table
from labkit.i18n import phrase

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# Attention shapes of published models, from their config.json on the Hugging Face hub (the
# guide cites the files): layers, query heads, KV heads, head_dim.
PUBLISHED = {
    "Llama 2 7B": dict(layers=32, heads=32, kv_heads=32, head_dim=128),
    "Llama 3 8B": dict(layers=32, heads=32, kv_heads=8, head_dim=128),
    "Mistral 7B v0.1": dict(layers=32, heads=32, kv_heads=8, head_dim=128),
    "MiniMind2-Small": dict(layers=8, heads=8, kv_heads=2, head_dim=64),  # minimind_ref's defaults
}
# Upstream's MiniMind2 (the 104M checkpoint released under that name) and MiniMind-3, from their
# presets, which tests/course/test_upstream_model_table.py holds to upstream's model table
for _name, _config in (("MiniMind2", mm.MiniMindConfig.minimind2()), ("MiniMind-3", mm.MiniMindConfig.minimind3())):
    PUBLISHED[_name] = dict(layers=_config.num_hidden_layers, heads=_config.num_attention_heads,
                            kv_heads=_config.num_key_value_heads, head_dim=_config.head_dim)


def add_arguments(parser):
    parser.add_argument("--prompt", type=int_in(1, 1024), default=5,
                        help="prompt length of the default model's forward (default 5)")
    parser.add_argument("--batch", type=int_in(1, 64), default=2, help="sequences in the batch (default 2)")
    parser.add_argument("--context", type=int_in(1, 2 ** 20), default=4096,
                        help="context length for the published models' table (default 4096)")


MAX_TOKENS = 4096  # --batch x --prompt tokens through MiniMind2-Small's default model (26M parameters)


def check_arguments(args):
    if args.batch * args.prompt > MAX_TOKENS:
        return (f"--batch x --prompt must be at most {MAX_TOKENS}, got {args.batch} x {args.prompt} = "
                f"{args.batch * args.prompt}")
    return None


def cache_bytes(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int, tokens: int = 1, batch: int = 1) -> int:
    """Bytes of a KV cache: a key and a value (2) of head_dim numbers per KV head, per layer, per
    cached token, per sequence."""
    return 2 * layers * kv_heads * head_dim * dtype_bytes * tokens * batch


def formula_for(cache: mm.KVCache, dtype: torch.dtype, tokens: int) -> int:
    return cache_bytes(cache.num_layers, cache.num_kv_heads, cache.head_dim,
                       torch.empty(0, dtype=dtype).element_size(), tokens, cache.batch_size)


def layer_tensor_bytes(cache: mm.KVCache) -> int:
    """What attention actually reads: the nbytes of every layer's key and value tensors."""
    return sum(k.nbytes + v.nbytes for k, v in (cache.layer(i) for i in range(cache.num_layers)))


def fill_random(config: mm.MiniMindConfig, tokens: int, dtype: torch.dtype, batch: int = 1) -> mm.KVCache:
    """An empty KVCache for `config`, filled layer by layer with `tokens` random keys and values."""
    cache = mm.KVCache(config, batch_size=batch, capacity=tokens)
    shape = (batch, config.num_key_value_heads, tokens, config.head_dim)
    for layer in range(config.num_hidden_layers):
        cache.update(layer, torch.randn(shape).to(dtype), torch.randn(shape).to(dtype))
    return cache


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    torch.set_num_threads(1)
    per_token, decoding_matches = default_model_decoding(exp.args.batch, exp.args.prompt)
    by_kv_heads, layouts_match = layouts_and_dtypes()
    published_bytes, published_match = published_models(exp.args.context)
    claim_cache_bytes(exp, decoding_matches and layouts_match and published_match, per_token, by_kv_heads)
    draw_bytes(exp, by_kv_heads, published_bytes)
    return exp.finish()


def default_model_decoding(batch: int, prompt: int) -> tuple[int, bool]:
    """MiniMind2-Small's default model, a real forward, then decoding steps: the closed form's bytes per
    token, and whether the cache's bytes matched it at every step."""
    match = True
    default = mm.MiniMindConfig()
    per_token = cache_bytes(default.num_hidden_layers, default.num_key_value_heads, default.head_dim,
                            torch.finfo(torch.float32).bits // 8)
    print(f"MiniMind2-Small default: {default.num_hidden_layers} layers, {default.num_key_value_heads} KV heads, "
          f"head_dim {default.head_dim}, float32 -> {per_token:,} bytes per token")
    model = mm.MiniMindForCausalLM(default).eval()
    ids = torch.randint(0, default.vocab_size, (batch, prompt))
    rows = []
    with torch.no_grad():
        out = model(ids, use_cache=True)  # forward makes a cache with capacity = prompt length
        cache = out.past_key_values
        for step in range(4):
            tokens = len(cache)
            formula = formula_for(cache, torch.float32, tokens)
            allocated = formula_for(cache, torch.float32, cache.capacity)
            match &= (cache.nbytes() == formula == layer_tensor_bytes(cache)
                          and cache.allocated_nbytes() == allocated)
            rows.append([tokens, formula, cache.nbytes(), layer_tensor_bytes(cache), cache.capacity,
                         cache.allocated_nbytes()])
            next_token = model(ids[:, -1:], past_key_values=cache, use_cache=True).logits[:, -1].argmax(-1)
            ids = torch.cat([ids, next_token[:, None]], dim=1)
    print_table(["cached tokens", "closed form", "nbytes()", "layer tensors", "capacity", "allocated_nbytes()"],
                rows, ["", ",", ",", ",", "", ","])
    print(f"(batch {batch}; the cache that forward() makes has room for the prompt only, so the first")
    print(" decoding step doubles its storage; generate() allocates prompt + new tokens up front)")
    print()
    return per_token, match


def layouts_and_dtypes() -> tuple[dict, bool]:
    """MHA, GQA, MQA at MiniMind2-Small's sizes, in three dtypes: bytes per cached token by dtype and KV
    heads, and whether each matched the closed form."""
    match = True
    rows, by_kv_heads = [], {}
    for kv_heads in (8, 4, 2, 1):
        config = mm.MiniMindConfig(num_key_value_heads=kv_heads, vocab_size=64)
        model = mm.MiniMindForCausalLM(config).eval()
        for name, dtype in DTYPES.items():
            with torch.no_grad():
                cache = model.to(dtype)(torch.randint(0, 64, (1, 16)), use_cache=True).past_key_values
            measured = cache.nbytes() // 16  # per token
            formula = cache_bytes(8, kv_heads, 64, torch.empty(0, dtype=dtype).element_size())
            match &= measured * 16 == cache.nbytes() == layer_tensor_bytes(cache) and measured == formula
            by_kv_heads.setdefault(name, {})[kv_heads] = measured
            kind = {8: "MHA", 1: "MQA"}.get(kv_heads, "GQA")
            layout = phrase(f"{kind}, {kv_heads} KV heads") if kv_heads > 1 else phrase(f"{kind}, 1 KV head")
            rows.append([layout, name, formula, measured, 8 // kv_heads])
    print("Bytes per cached token at MiniMind2-Small's sizes (8 layers, 8 query heads, head_dim 64), measured")
    print("after a 16-token forward of each model:")
    print_table(["layout", "dtype", "closed form", "measured", "query heads per KV head"], rows, ["", "", ",", ",", ""])
    gqa_saving = by_kv_heads["float32"][8] / by_kv_heads["float32"][2]
    print(f"MiniMind2-Small's GQA (2 KV heads) caches {gqa_saving:.0f}x less than MHA with 8 heads would.")
    print()
    return by_kv_heads, match


def published_models(context: int) -> tuple[dict, bool]:
    """Published models' attention shapes, on empty caches filled with random keys and values."""
    match = True
    default = mm.MiniMindConfig()
    assert PUBLISHED["MiniMind2-Small"] == dict(layers=default.num_hidden_layers, heads=default.num_attention_heads,
                                          kv_heads=default.num_key_value_heads, head_dim=default.head_dim)
    rows, published_bytes = [], {}
    for name, shape in PUBLISHED.items():
        config = mm.MiniMindConfig(hidden_size=shape["heads"] * shape["head_dim"], num_hidden_layers=shape["layers"],
                                   num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"],
                                   vocab_size=8, max_position_embeddings=max(context, 8))
        cache = fill_random(config, 4, torch.bfloat16)
        measured = cache.nbytes() // 4
        formula = cache_bytes(shape["layers"], shape["kv_heads"], shape["head_dim"], 2)
        match &= measured == formula
        published_bytes[name] = measured
        rows.append([name, shape["layers"], shape["kv_heads"], shape["head_dim"], measured,
                     measured * context / 2**30])
    print("Published models' attention shapes, 16-bit cache (bfloat16):")
    print_table(["model", "layers", "KV heads", "head_dim", "bytes/token", f"GiB at {context} tokens"],
                rows, ["", "", "", "", ",", ".3f"])
    print()
    return published_bytes, match


def claim_cache_bytes(exp, all_match: bool, per_token: int, by_kv_heads: dict) -> None:
    exp.claim(all_match,
              "for every layout, dtype and model, the bytes the cache tensors hold equal "
              "2 x layers x kv_heads x head_dim x bytes x tokens x batch, and the storage equals the same "
              "with the capacity in place of the tokens")
    exp.claim(per_token == 8192 and by_kv_heads["float32"][2] == per_token,
              f"MiniMind2-Small's default cache takes {per_token:,} bytes per token in float32")
    exp.claim(all(by_kv_heads[name][8] == (8 // k) * by_kv_heads[name][k] for name in DTYPES for k in (4, 2, 1)),
              "the cache shrinks by exactly num_heads / kv_heads: 2x with 4 KV heads, 4x with 2, 8x with 1")



def draw_bytes(exp, by_kv_heads: dict, published_bytes: dict) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), layout="constrained")
    labels = ["MHA 8", "GQA 4", "GQA 2", "MQA 1"]
    for offset, name in zip((-0.27, 0, 0.27), DTYPES):
        axes[0].bar([i + offset for i in range(4)], [by_kv_heads[name][k] for k in (8, 4, 2, 1)], width=0.27,
                    label=name)
    axes[0].set_xticks(range(4), labels)
    axes[0].set(title="MiniMind2-Small sizes: cache bytes per token", xlabel="layout (KV heads)",
                ylabel="bytes per token")
    axes[0].yaxis.set_major_formatter(lambda value, _: f"{value:,.0f}")
    axes[0].legend(fontsize=8)
    # Dots on a log axis, each with its value: a bar on a log axis starts wherever the axis does,
    # so the smallest model's bar had almost no length at all.
    names = list(published_bytes)
    kib = [published_bytes[n] / 1024 for n in names]
    axes[1].scatter(kib, names, s=40, color="tab:purple", zorder=3)
    axes[1].hlines(names, 1, kib, color="tab:purple", lw=1.5)
    for value, name in zip(kib, names):
        axes[1].annotate(f"{value:g} KiB", (value, name), xytext=(6, 0), textcoords="offset points", va="center")
    axes[1].set_xscale("log")
    axes[1].set_xlim(1, max(kib) * 8)
    axes[1].set_ylim(-0.6, len(names) - 0.4)
    axes[1].grid(axis="x", which="major", alpha=0.3)
    axes[1].set(title="published models: 16-bit cache per token (log scale)", xlabel="KiB per token")
    exp.save(fig, "bytes")


if __name__ == "__main__":
    raise SystemExit(main())
