"""Greedy decoding speed: minimind_ref against transformers, and the KV cache's own speed-up.

Claims (issue targets, on 2 CPU threads, default MiniMind2 config with random weights, a 16-token
prompt and 256 new tokens):
  1. minimind_ref.generate with its KV cache reaches at least 1.2x the tokens per second of
     transformers' LlamaForCausalLM.generate with the same weights;
  2. the cache is at least 5x faster than recomputing the whole prefix for every new token.
Both generators must also produce the same tokens: a fast wrong answer does not count.

    python benchmarks/bench_generate.py            # the real measurement (about a minute)
    python benchmarks/bench_generate.py --quick    # a tiny smoke run, targets not checked
"""

from __future__ import annotations

import argparse
import sys

import torch

from harness import Target, fix_threads, interleaved_medians, python_calls, report

import minimind_ref as mm
from minimind_ref.oracles import hf_twin


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds of the cached contenders")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="tiny model and few tokens: checks that the benchmark runs, not the targets")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    fix_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.quick:
        config = mm.MiniMindConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=128, max_position_embeddings=256)
        args.new_tokens, args.prompt_tokens, args.rounds = 16, 4, 1
    else:
        config = mm.MiniMindConfig()
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

    cached = interleaved_medians({"minimind_ref (cache)": ours, "transformers": transformers_generate,
                                  "linear layers only": weight_streaming}, args.rounds)
    uncached = interleaved_medians({"minimind_ref (no cache)": lambda: ours(use_cache=False)},
                                   1 if args.quick else 2)
    seconds = {**cached, **uncached}

    print(f"Greedy generation, {config.num_hidden_layers} layers x hidden {config.hidden_size}, "
          f"prompt {args.prompt_tokens} + {n} new tokens, {args.threads} threads, median of rounds:")
    for name in ("minimind_ref (cache)", "transformers", "minimind_ref (no cache)"):
        print(f"  {name:26s} {n / seconds[name]:8.1f} tokens/s  ({seconds[name]:.2f} s)")
    streaming = seconds["linear layers only"] / n * 1e3
    weight_mb = sum(layer.weight.nbytes for layer in linears) / 1e6
    print(f"Per new token, the linear layers alone ({weight_mb:.0f} MB of weights) take {streaming:.2f} ms; beyond them")
    for name in ("minimind_ref (cache)", "transformers"):
        per_token = seconds[name] / n * 1e3
        print(f"  {name:26s} spends {per_token - streaming:5.2f} ms of its {per_token:.2f} ms")
    # Calls into Python functions and into C from Python, per token: a count that machine load cannot
    # blur, and the part of the overhead that an eager implementation controls.
    print("Python-level calls per new token (functions entered, C functions called from Python):")
    for name, fn in (("minimind_ref (cache)", ours), ("transformers", transformers_generate)):
        print(f"  {name:26s} {python_calls(fn) / n:8.0f}")
    targets = [
        Target("minimind_ref vs transformers generate", seconds["transformers"] / seconds["minimind_ref (cache)"], at_least=1.2),
        Target("KV cache vs recomputing the prefix", seconds["minimind_ref (no cache)"] / seconds["minimind_ref (cache)"], at_least=5.0),
    ]
    return report(targets, check=not args.quick)


if __name__ == "__main__":
    sys.exit(main())
