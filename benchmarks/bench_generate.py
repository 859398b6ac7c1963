"""Greedy decoding speed: minimind_ref against transformers, and what the KV cache is for.

Raw tokens per second are printed, but they are not the targets: at one token per step, most of
the time goes to streaming the weights of every linear layer from memory, and how fast that runs is
the machine's (its memory and its BLAS library), the same for any program that runs the model. On
one AMD EPYC, for example, MKL's matrix-vector products stream the 103 MB of weights at about 8
GB/s, so the linear layers take 11 of the 13 ms per token for both generators, and the ratio of
tokens per second says little about the code. The targets compare what the code controls, each
measured in the same run (2 CPU threads, the default MiniMind2-Small config with random weights, a
16-token prompt and 256 new tokens):
  1. time per token beyond the linear layers' weight streaming: minimind_ref's at most 0.85x
     transformers' (LlamaForCausalLM.generate with the same weights), the ratio taken within each
     round of interleaved runs and its median over the rounds;
  2. Python-level calls per token (functions entered, C functions called from Python), a count that
     no machine or load changes: minimind_ref's at most 0.55x transformers';
  3. what the cache is for: the time of one more token grows with the context far more slowly with
     the cache (one new token attends to the stored keys) than without it (the whole context runs
     through the model again): recomputation's slope at least 20x the cache's, both slopes taken
     between two context lengths. The raw speed-up at 256 new tokens is printed beside it.
The generators must also produce the same tokens, with the cache and without: a fast wrong answer
does not count.

    python benchmarks/bench_generate.py            # the real measurement (about three minutes)
    python benchmarks/bench_generate.py --quick    # a tiny smoke run, targets not checked
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch
from harness import Target, fix_threads, interleaved_medians, interleaved_times, python_calls, report

import minimind_ref as mm
from labkit import time_call
from minimind_ref.oracles import hf_twin

DECODE_STEPS = 8  # new tokens timed after each context length, for the per-token slopes


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds of the cached contenders")
    parser.add_argument("--contexts", type=int, nargs=2, default=(64, 512), metavar=("SHORT", "LONG"),
                        help="the two context lengths between which the per-token slopes are taken")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="tiny model and few tokens: checks that the benchmark runs, not the targets")
    args = parser.parse_args(argv)
    short, long = args.contexts
    limit = mm.MiniMindConfig().max_position_embeddings - DECODE_STEPS
    if not 1 <= short < long <= limit:
        parser.error(f"--contexts needs 1 <= SHORT < LONG <= {limit} (MiniMind2-Small's positions, less the "
                     f"{DECODE_STEPS} decoding steps timed after them), got {short} {long}")
    return args


@torch.inference_mode()
def seconds_per_token(model: mm.MiniMindForCausalLM, context: torch.Tensor, steps: int, use_cache: bool) -> float:
    """Seconds to produce one more token after `context` [1, L]: with the cache, one token through
    the model with L positions already stored (filled before the clock starts); without it, all L
    tokens through the model again, as generate(use_cache=False) does at every step."""
    token = context[:, -1:]
    if use_cache:
        cache = mm.KVCache(model.config, 1, capacity=context.shape[1] + steps)  # room for every step
        model(context, past_key_values=cache, use_cache=True)

        def run():
            for _ in range(steps):
                model(token, past_key_values=cache, use_cache=True)
    else:
        def run():
            for _ in range(steps):
                model(context)
    return time_call(run) / steps


def per_token_by_context(model, contexts, steps: int, rounds: int, seed: int) -> dict[tuple[str, int], float]:
    """Median seconds per new token, with and without the cache, at each context length; every
    round measures each (mode, length) once, in turn."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, max(contexts)), generator=generator)
    times: dict[tuple[str, int], list[float]] = {(mode, L): [] for L in contexts for mode in ("cache", "recompute")}
    for _ in range(rounds):
        for mode, length in times:
            times[(mode, length)].append(seconds_per_token(model, ids[:, :length], steps, mode == "cache"))
    return {key: statistics.median(values) for key, values in times.items()}


def main(argv=None) -> int:
    args = parse_args(argv)
    fix_threads(args.threads)
    torch.manual_seed(args.seed)
    steps = DECODE_STEPS
    if args.quick:
        config = mm.MiniMindConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=128, max_position_embeddings=256)
        args.new_tokens, args.prompt_tokens, args.rounds, args.contexts, steps = 16, 4, 1, (8, 32), 2
    else:
        config = mm.MiniMindConfig()
    short, long = args.contexts
    model = mm.MiniMindForCausalLM(config).eval()
    twin = hf_twin(model)
    prompt = torch.randint(0, config.vocab_size, (1, args.prompt_tokens))
    n = args.new_tokens

    def ours(use_cache=True):
        return model.generate(prompt, n, use_cache=use_cache)

    def transformers_generate():
        with torch.inference_mode():
            return twin.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                 eos_token_id=None, pad_token_id=0)

    # correctness first (and warm-up): the same greedy tokens
    if not torch.equal(ours(), transformers_generate()):
        print("minimind_ref and transformers generated different tokens: the speed comparison is void.")
        return 1
    if not torch.equal(ours(), ours(use_cache=False)):
        print("Cached and uncached generation differ: the cache is wrong.")
        return 1

    # The matrix-vector products of n decoding steps alone: every linear layer once per token.
    # Both generators must do this work, and at one token per step it is bound by how fast the
    # weights stream from memory; what each spends beyond it is its own overhead.
    linears = [module for module in model.modules() if isinstance(module, torch.nn.Linear)]
    one_token = {size: torch.randn(1, 1, size) for size in {layer.in_features for layer in linears}}

    def weight_streaming():
        with torch.inference_mode():
            for _ in range(n):
                for layer in linears:
                    layer(one_token[layer.in_features])

    rounds = interleaved_times({"minimind_ref (cache)": ours, "transformers": transformers_generate,
                                "linear layers only": weight_streaming}, args.rounds)
    cached = {name: statistics.median(times) for name, times in rounds.items()}
    uncached = interleaved_medians({"minimind_ref (no cache)": lambda: ours(use_cache=False)},
                                   1 if args.quick else 2)
    seconds = {**cached, **uncached}
    by_context = per_token_by_context(model, (short, long), steps, 1 if args.quick else 5, args.seed)

    print(f"Greedy generation, {config.num_hidden_layers} layers x hidden {config.hidden_size}, "
          f"prompt {args.prompt_tokens} + {n} new tokens, {args.threads} threads, median of rounds:")
    for name in ("minimind_ref (cache)", "transformers", "minimind_ref (no cache)"):
        print(f"  {name:26s} {n / seconds[name]:8.1f} tokens/s  ({seconds[name]:.2f} s)")
    print("Raw tokens per second are not a target: they are set mostly by how fast this machine streams the "
          "weights (its memory and BLAS), which every program running the model pays alike.")
    streaming = seconds["linear layers only"] / n * 1e3
    weight_mb = sum(layer.weight.nbytes for layer in linears) / 1e6
    print(f"Per new token, the linear layers alone ({weight_mb:.0f} MB of weights) take "
          f"{streaming:.2f} ms; beyond them")
    for name in ("minimind_ref (cache)", "transformers"):
        per_token = seconds[name] / n * 1e3
        print(f"  {name:26s} spends {per_token - streaming:5.2f} ms of its {per_token:.2f} ms")
    # The target's ratio is taken within each round, where all three ran under the same load, and
    # then the median over rounds: the time beyond the linear layers is a small difference of two
    # large times, and medians taken apart let one disturbed round of either move it by a third.
    overhead_ratio = statistics.median(
        (ours_s - linear_s) / (theirs_s - linear_s)
        for ours_s, theirs_s, linear_s in zip(rounds["minimind_ref (cache)"], rounds["transformers"],
                                              rounds["linear layers only"]))
    # Calls into Python functions and into C from Python, per token: a count that machine load cannot
    # blur, and the part of the overhead that an eager implementation controls.
    print("Python-level calls per new token (functions entered, C functions called from Python):")
    calls = {name: python_calls(fn) / n for name, fn in (("minimind_ref (cache)", ours),
                                                          ("transformers", transformers_generate))}
    for name, count in calls.items():
        print(f"  {name:26s} {count:8.0f}")

    print(f"One more token after a context of {short} and of {long} tokens (ms, median of rounds):")
    slopes = {}
    for mode in ("cache", "recompute"):
        at_short, at_long = by_context[(mode, short)] * 1e3, by_context[(mode, long)] * 1e3
        slopes[mode] = (at_long - at_short) / (long - short) * 100  # ms per 100 tokens of context
        print(f"  {'with the cache' if mode == 'cache' else 'recomputing':15s} {at_short:8.2f} -> {at_long:8.2f}"
              f"  ({slopes[mode]:+.3f} ms per 100 tokens of context)")
    # A cache whose step time did not grow measurably (noise can even make the slope negative)
    # is held at the timer's floor, a microsecond per 100 tokens, so the ratio stays a number.
    slope_ratio = slopes["recompute"] / max(slopes["cache"], 1e-3)
    print(f"Raw speed-up of the cache at {n} new tokens: "
          f"{seconds['minimind_ref (no cache)'] / seconds['minimind_ref (cache)']:.2f}x "
          f"(not a target: it depends on this machine's matrix-vector against matrix-matrix speed)")
    if args.quick:
        print("(--quick: sizes far too small for these figures to mean anything; targets not checked)")
    targets = [
        Target("time beyond weight streaming, minimind_ref / transformers (median of the rounds' ratios)",
               overhead_ratio, at_most=0.85),
        Target("Python-level calls per token, minimind_ref / transformers",
               calls["minimind_ref (cache)"] / calls["transformers"], at_most=0.55),
        Target("per-token time's growth with context, recomputing / cache", slope_ratio, at_least=20.0),
    ]
    return report(targets, check=not args.quick)


if __name__ == "__main__":
    sys.exit(main())
