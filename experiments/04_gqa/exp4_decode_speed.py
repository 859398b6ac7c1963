"""Fewer key/value heads make the KV cache exactly H / H_kv times smaller, and at long contexts they
make each decoding step faster, because a step must read the whole cache; at short contexts the
weights dominate what a step reads and the gain is small. The gain needs attention that reads the
shared heads in place: repeating them with repeat_kv at every step throws it away.

Generating one token with a KV cache runs the model on that token alone: every weight is read once,
and every layer's attention reads all cached keys and values. On a CPU (and on a GPU at batch 1)
such a step is limited by memory traffic more than by arithmetic, so its time follows the bytes it
reads: the weights (about 100 MB for MiniMind in float32) plus the cache, which grows with the
context and shrinks with H_kv.

This script builds MiniMind's default model (8 layers, 8 query heads of size 64) as MHA (8 KV
heads), GQA (2, MiniMind's own) and MQA (1), fills a KV cache of S positions for each with random
keys and values (decoding does the same work whatever they hold, and this skips the long prefill),
and times single-token decoding steps, interleaved so that every variant sees the same machine
load, through minimind_ref's fused attention (torch SDPA with enable_gqa) and through its explicit
attention (repeat_kv, then matrix products). It reports medians and ratios within this one run.

Timings on a shared CPU are noisy: the claims about speed have wide margins, and the numbers will
differ on your machine. The cache sizes are exact.
"""

from __future__ import annotations

import os
import statistics

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, int_in, int_list, print_table, time_call
from labkit.i18n import phrase

MIB = 2 ** 20
VARIANTS = {"MHA": 8, "GQA": 2, "MQA": 1}  # name -> key/value heads
PATHS = ("fused", "explicit")


def add_arguments(parser):
    # at S = 16384 the three variants' caches hold 768 MiB (MHA 512, GQA 128, MQA 64); S + 2 reps + 2
    # stays below MiniMind's max_position_embeddings, 32768
    parser.add_argument("--lengths", type=int_list(1, 16384), default="256,1024,4096",
                        help="cached positions S to time, comma-separated (default 256,1024,4096)")
    parser.add_argument("--reps", type=int_in(1, 100), default=7, help="timed steps per variant and length (default 7)")
    parser.add_argument("--threads", type=int_in(1, os.cpu_count() or 1), default=1,
                        help="CPU threads for torch (default 1: a step at batch 1 is memory-bound, and one thread "
                             "times more steadily on a shared machine)")


# The speed claims read the longest cache: below 4096 positions the weights dominate what a step reads,
# and the gain of reading the shared heads in place is within timing noise (1.1x measured at S = 1).
LONGEST_TIMED = 4096


def check_arguments(args):
    if max(args.lengths) < LONGEST_TIMED:
        return (f"--lengths must reach {LONGEST_TIMED} cached positions (the speed claims are read at the longest; "
                f"shorter caches are dominated by the weights), got {max(args.lengths)}")
    return None


def use_fused_attention(model: mm.MiniMindForCausalLM, fused: bool) -> None:
    """Switch every attention layer between torch's fused SDPA and minimind_ref's explicit path."""
    for layer in model.model.layers:
        layer.self_attn.use_fused = fused


def filled_cache(model: mm.MiniMindForCausalLM, length: int, room: int) -> mm.KVCache:
    """A KV cache holding `length` positions of random keys and values in every layer, with room
    for `room` more (so it never reallocates while we time)."""
    config = model.config
    cache = mm.KVCache(config, batch_size=1, capacity=length + room)
    for layer in range(config.num_hidden_layers):
        keys = torch.randn(1, config.num_key_value_heads, length, config.head_dim)  # [B, H_kv, S, D]
        cache.update(layer, keys, torch.randn_like(keys))
    return cache


def weight_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


@torch.inference_mode()
def time_steps(models, caches, reps):
    """Median seconds of one decoding step per (variant, path), interleaved: each round times every
    pair once, starting at a different pair each round."""
    token = torch.tensor([[7]])
    pairs = [(name, path) for path in PATHS for name in models]
    seconds = {pair: [] for pair in pairs}
    for name, path in pairs:  # warm-up: the first call of a shape may allocate and plan
        use_fused_attention(models[name], path == "fused")
        models[name](token, past_key_values=caches[name])
    for round_ in range(reps):
        for name, path in pairs[round_ % len(pairs):] + pairs[:round_ % len(pairs)]:
            model = models[name]
            use_fused_attention(model, path == "fused")
            seconds[(name, path)].append(time_call(lambda: model(token, past_key_values=caches[name])))
    for model in models.values():
        use_fused_attention(model, True)
    return {pair: statistics.median(times) for pair, times in seconds.items()}


def plot(lengths, medians, cache_mib, weights_mib):
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    for name in VARIANTS:
        left.plot(lengths, [cache_mib[(name, s)] for s in lengths], "o-", label=name)
    left.axhline(weights_mib["GQA"], color="k", ls=":", label="MiniMind's weights (GQA)")
    left.set(xscale="log", yscale="log", xlabel="cached positions S", ylabel="MiB (float32)",
             title="KV cache of one sequence")
    left.legend(fontsize=8)
    for name, color in zip(VARIANTS, ("tab:blue", "tab:orange", "tab:green")):
        for path, style in (("fused", "o-"), ("explicit", "x--")):
            label = phrase(f"{name}, fused") if path == "fused" else phrase(f"{name}, explicit")
            right.plot(lengths, [1e3 * medians[s][(name, path)] for s in lengths], style, color=color,
                       label=label)
    right.set(xscale="log", xlabel="cached positions S", ylabel="ms per token (median)",
              title="One decoding step on this CPU")
    right.legend(fontsize=8, ncol=2)
    for ax in (left, right):
        ax.set_xticks(lengths, [str(s) for s in lengths])
        ax.minorticks_off()
    fig.tight_layout()
    return fig


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    lengths = sorted(set(args.lengths))
    torch.set_num_threads(args.threads)
    models = {name: mm.MiniMindForCausalLM(mm.MiniMindConfig(num_key_value_heads=kv)).eval()
              for name, kv in VARIANTS.items()}
    config = models["GQA"].config
    weights_mib = {name: weight_bytes(m) / MIB for name, m in models.items()}
    print(f"MiniMind default: {config.num_hidden_layers} layers, {config.num_attention_heads} query heads of size "
          f"{config.head_dim}; weights {weights_mib['MHA']:.0f} MiB (MHA), {weights_mib['GQA']:.0f} MiB (GQA), "
          f"{weights_mib['MQA']:.0f} MiB (MQA), float32; {torch.get_num_threads()} CPU thread(s).")
    print()
    medians, cache_mib, exact = time_decoding(models, lengths, weights_mib, args.reps)
    claim_decoding(exp, lengths, medians, cache_mib, exact, weights_mib)
    exp.save(plot(lengths, medians, cache_mib, weights_mib), "decode")
    return exp.finish()


def time_decoding(models: dict, lengths: list[int], weights_mib: dict, reps: int):
    """At each cache length, each variant's cache size and the median time of a one-token step,
    through the fused kernel and the explicit path."""
    config = models["GQA"].config
    medians, cache_mib, exact = {}, {}, []
    rows = []
    room = len(PATHS) * (reps + 1) + 1
    for length in lengths:
        caches = {name: filled_cache(m, length, room) for name, m in models.items()}
        for name, m in models.items():
            per_token = 2 * config.num_hidden_layers * m.config.num_key_value_heads * config.head_dim * 4
            exact.append(caches[name].nbytes() == length * per_token)
            cache_mib[(name, length)] = caches[name].nbytes() / MIB
        medians[length] = time_steps(models, caches, reps)
        step = medians[length]
        # the bytes a step reads at least: the weights and the cache
        reads = {name: weights_mib[name] + cache_mib[(name, length)] for name in models}
        rows.append([length] + [cache_mib[(n, length)] for n in models]
                    + [1e3 * step[(n, "fused")] for n in models] + [1e3 * step[(n, "explicit")] for n in models]
                    + [reads["MHA"] / reads["GQA"], step[("MHA", "fused")] / step[("GQA", "fused")]])
        del caches

    names = list(models)
    print_table(["S"] + [phrase(f"{n} cache MiB") for n in names] + [phrase(f"{n} fused ms") for n in names]
                + [phrase(f"{n} explicit ms") for n in names]
                + [phrase("MHA/GQA bytes read"), phrase("MHA/GQA time (fused)")],
                rows, ["d"] + [".1f"] * 3 + [".1f"] * 6 + [".2f", ".2f"])
    print()
    print("ms: median of the timed steps of one token (the cache grows by a token per step). 'bytes read': "
          "weights + cache, the least a step must read; its ratio is what a purely memory-bound step would gain.")
    print()
    return medians, cache_mib, exact


def claim_decoding(exp, lengths: list[int], medians: dict, cache_mib: dict, exact: list, weights_mib: dict) -> None:
    gqa_ratio = VARIANTS["MHA"] // VARIANTS["GQA"]
    exp.claim(all(exact) and all(cache_mib[("MHA", s)] == gqa_ratio * cache_mib[("GQA", s)]
                                 == VARIANTS["MHA"] * cache_mib[("MQA", s)] for s in lengths),
              f"every cache holds exactly S x 2 x layers x H_kv x D x 4 bytes: MHA {gqa_ratio}x GQA's and "
              f"{VARIANTS['MHA']}x MQA's (at S = {lengths[-1]}: {cache_mib[('MHA', lengths[-1])]:.0f}, "
              f"{cache_mib[('GQA', lengths[-1])]:.0f} and {cache_mib[('MQA', lengths[-1])]:.0f} MiB)")
    longest = medians[lengths[-1]]
    fused_gain = longest[("MHA", "fused")] / longest[("GQA", "fused")]
    if lengths[-1] >= LONGEST_TIMED:
        exp.claim(fused_gain > 1.05,
                  f"at S = {lengths[-1]}, where MHA's cache is "
                  f"{cache_mib[('MHA', lengths[-1])] / weights_mib['MHA']:.1f}x its weights, "
                  f"a fused GQA step is faster than an MHA step: {fused_gain:.2f}x (must be more than 1.05x)")
    copy_cost = longest[("GQA", "explicit")] / longest[("GQA", "fused")]
    exp.claim(copy_cost > 1.3,
              f"at S = {lengths[-1]}, GQA through repeat_kv (explicit path) takes {copy_cost:.1f}x as long as "
              f"through the fused kernel (must be more than 1.3x): repeating the cache to {gqa_ratio}x its size "
              f"at every layer of every step costs more than it saved")



if __name__ == "__main__":
    raise SystemExit(main())
