"""Without a cache, the cost of each new token grows with the length of the sequence and the total
cost of generating n tokens grows about like n^2; with a KV cache, each new token costs about the
same (plus a small attention term that grows with the context) and the total grows about like n.

The cost is counted two ways. FLOPs: a closed form over the model's matrix products (2 FLOPs per
multiply-add), checked against torch's own FLOP counter (`torch.utils.flop_counter.FlopCounterMode`)
on minimind_ref's explicit attention path. Without a cache, the step that predicts token L+1 runs
all L tokens through the model: L x (projections + MLP) + an L x L attention. With a cache it runs
one token: 1 x (projections + MLP) + one query against L keys. Time: the same two greedy decoding
loops of a small MiniMind (`MiniMindForCausalLM.forward` with and without `past_key_values`), each
step timed. FLOPs are exact and printed; timings depend on the machine and only illustrate, so
their claims compare ratios measured in the same run, with wide margins.

Why it matters: the cache turns generation from quadratic into (nearly) linear work. "Nearly",
because the cached step still reads every cached key and value: its attention term grows with the
context, and for long contexts it is what dominates (for MiniMind2 past a few thousand tokens).
"""

from __future__ import annotations

import math
import sys
import time

import matplotlib.pyplot as plt
import torch
from torch.utils.flop_counter import FlopCounterMode

import minimind_ref as mm
from labkit.experiment import Experiment, print_table

MIN_STEP_SPEEDUP = 3.0  # time per step near the end, no cache / cache (the FLOP ratio is ~100x there)
MIN_EXPONENT_GAP = 0.3  # total-time growth exponent, no cache minus cache (FLOPs: about 2 vs 1)


def add_arguments(parser):
    parser.add_argument("--tokens", type=int, default=192, help="tokens to generate, n (default 192)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs of each loop; each step keeps its fastest time (default 3)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden size of the timed model (default 128)")


# --------------------------------------------------------------------------------- FLOPs


def forward_flops(config: mm.MiniMindConfig, new_tokens: int, cached_tokens: int = 0,
                  logits_positions: int = 1, batch: int = 1) -> int:
    """FLOPs of the matrix products of one forward: `new_tokens` tokens go in while the cache holds
    `cached_tokens`; logits are computed for the last `logits_positions` (generate keeps 1).

    Per token and layer: q, k, v, o projections and the three SwiGLU matrices. Attention per layer:
    each of the H query heads scores every key (q . k) and averages the values (weights @ V), two
    products of D multiply-adds per (query, key) pair. The explicit path computes the masked
    entries too (a dense T x S score matrix), so every pair counts. Norms, RoPE and softmax are
    O(T x C) and left out."""
    c, h, h_kv, d = config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim
    per_token = 2 * c * (h * d + 2 * h_kv * d) + 2 * h * d * c + 3 * 2 * c * config.intermediate_size
    keys = cached_tokens + new_tokens
    attention = 2 * 2 * h * d * new_tokens * keys
    per_layer = new_tokens * per_token + attention
    return batch * (config.num_hidden_layers * per_layer + 2 * c * config.vocab_size * logits_positions)


def counted_flops(model: mm.MiniMindForCausalLM, new_tokens: int, cached_tokens: int, batch: int = 1) -> int:
    """The same, counted by torch on a real forward (explicit attention path, so that the
    attention products are plain matmuls torch can count)."""
    vocab = model.config.vocab_size
    with torch.no_grad():
        cache = None
        if cached_tokens:
            cache = model(torch.randint(0, vocab, (batch, cached_tokens)), use_cache=True).past_key_values
        counter = FlopCounterMode(display=False)
        with counter:
            model(torch.randint(0, vocab, (batch, new_tokens)), past_key_values=cache, logits_to_keep=1)
    return counter.get_total_flops()


def step_flops(config, prompt: int, n: int, cached: bool) -> list[int]:
    """FLOPs of each of the n steps of greedy generation after a `prompt`-token prompt. Step i
    predicts the token at position prompt + i from the prompt + i tokens before it."""
    flops = []
    for i in range(n):
        length = prompt + i  # tokens before the one being predicted
        if not cached:
            flops.append(forward_flops(config, length))
        elif i == 0:
            flops.append(forward_flops(config, prompt))  # the prefill
        else:
            flops.append(forward_flops(config, 1, cached_tokens=length - 1))
    return flops


def attention_flops_per_key(config: mm.MiniMindConfig) -> int:
    """What one more cached token adds to a cached step: every layer's H heads score it and
    average its value (2 products of head_dim multiply-adds each)."""
    return config.num_hidden_layers * 2 * 2 * config.num_attention_heads * config.head_dim


def cached_step_rest(config: mm.MiniMindConfig) -> int:
    """A cached step's FLOPs apart from attention: projections, MLP and the one row of logits."""
    return forward_flops(config, 1, 0) - attention_flops_per_key(config)


def attention_crossover(config: mm.MiniMindConfig) -> float:
    """Keys (cached tokens + the new one) at which a cached step's attention costs as much as all
    the rest of it."""
    return cached_step_rest(config) / attention_flops_per_key(config)


# ---------------------------------------------------------------------------------- time


@torch.no_grad()
def time_steps(model, prompt: torch.Tensor, n: int, cached: bool, repeats: int) -> list[float]:
    """Seconds per step of greedy generation (the fastest of `repeats` runs, step by step)."""
    best = [math.inf] * n
    for _ in range(repeats):
        sequence, cache = prompt, None
        step_input = prompt
        for i in range(n):
            start = time.perf_counter()
            if cached:
                out = model(step_input, past_key_values=cache, use_cache=True, logits_to_keep=1)
                cache = out.past_key_values
            else:
                out = model(sequence, logits_to_keep=1)
            next_token = out.logits[:, -1].argmax(dim=-1, keepdim=True)
            best[i] = min(best[i], time.perf_counter() - start)
            sequence = torch.cat([sequence, next_token], dim=1)
            step_input = next_token
    return best


def growth_exponent(lengths: list[int], totals: list[float]) -> float:
    """Least-squares slope of log(total) against log(n): 1 for linear growth, 2 for quadratic."""
    x = torch.tensor(lengths, dtype=torch.float64).log()
    y = torch.tensor(totals, dtype=torch.float64).log()
    x, y = x - x.mean(), y - y.mean()
    return float((x * y).sum() / (x * x).sum())


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    if args.tokens < 16 or args.repeats < 1 or args.hidden < 16 or args.hidden % 8:
        print("--tokens must be at least 16, --repeats at least 1, --hidden a multiple of 8 (>= 16).",
              file=sys.stderr)
        return 2
    torch.set_num_threads(1)  # one thread: less noise from a shared machine, same FLOPs

    # 1. The closed form against torch's FLOP counter.
    check_config = mm.MiniMindConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, vocab_size=128, flash_attn=False)
    check_model = mm.MiniMindForCausalLM(check_config).eval()
    cases = [(7, 0, 1), (1, 6, 1), (1, 40, 1), (3, 9, 2)]  # (new, cached, batch)
    rows, formula_matches = [], True
    for new, cached, batch in cases:
        formula = forward_flops(check_config, new, cached, batch=batch)
        counted = counted_flops(check_model, new, cached, batch)
        formula_matches &= formula == counted
        rows.append([new, cached, batch, formula, counted])
    print("FLOPs of one forward (hidden 64, 2 layers, 4 heads, 2 KV heads): closed form vs torch's counter")
    print_table(["new tokens", "cached", "batch", "closed form", "FlopCounterMode"], rows, ["", "", "", ",", ","])
    print()
    exp.claim(formula_matches, "the closed-form FLOP count equals torch's FlopCounterMode on every case")

    # 2. FLOPs per step and in total, for the model that is timed below.
    config = mm.MiniMindConfig(hidden_size=args.hidden, num_hidden_layers=4, num_attention_heads=8,
                               num_key_value_heads=2, vocab_size=256,
                               max_position_embeddings=max(512, 2 * args.tokens))
    n, prompt_len = args.tokens, 1
    flops = {cached: step_flops(config, prompt_len, n, cached) for cached in (False, True)}
    lengths = [n // 8, n // 4, n // 2, n]
    flop_totals = {cached: [sum(flops[cached][:m]) for m in lengths] for cached in (False, True)}
    flop_exponents = {cached: growth_exponent(lengths, flop_totals[cached]) for cached in (False, True)}

    default = mm.MiniMindConfig()
    print(f"MiniMind2's default sizes: a cached step costs {cached_step_rest(default):,} FLOPs plus "
          f"{attention_flops_per_key(default):,} per key it attends to;")
    print(f"attention is half of the step at {attention_crossover(default):,.0f} keys.")
    print()

    # 3. Time, step by step.
    torch.manual_seed(args.seed)
    model = mm.MiniMindForCausalLM(config).eval()
    prompt = torch.randint(0, config.vocab_size, (1, prompt_len))
    seconds = {cached: time_steps(model, prompt, n, cached, args.repeats) for cached in (False, True)}
    time_totals = {cached: [sum(seconds[cached][:m]) for m in lengths] for cached in (False, True)}
    time_exponents = {cached: growth_exponent(lengths, time_totals[cached]) for cached in (False, True)}

    print(f"Timed model: hidden {args.hidden}, 4 layers, 8 heads, 2 KV heads, vocabulary 256; "
          f"prompt {prompt_len} token, n = {n}")
    rows = []
    for m in lengths:
        i = m - 1
        rows.append([m, flops[False][i], flops[True][i], flops[False][i] / flops[True][i],
                     1e3 * seconds[False][i], 1e3 * seconds[True][i], seconds[False][i] / seconds[True][i]])
    print_table(["position", "FLOPs no cache", "FLOPs cache", "ratio", "ms no cache", "ms cache", "ratio"],
                rows, ["", ",", ",", ".1f", ".2f", ".2f", ".1f"])
    print()
    rows = []
    for j, m in enumerate(lengths):
        rows.append([m, flop_totals[False][j], flop_totals[True][j], 1e3 * time_totals[False][j],
                     1e3 * time_totals[True][j]])
    print("Total cost of generating n tokens")
    print_table(["n", "FLOPs no cache", "FLOPs cache", "ms no cache", "ms cache"], rows, ["", ",", ",", ".1f", ".1f"])
    print(f"growth exponent (slope of log total vs log n): FLOPs {flop_exponents[False]:.2f} without cache, "
          f"{flop_exponents[True]:.2f} with; time {time_exponents[False]:.2f} without, {time_exponents[True]:.2f} with")
    print()

    exp.claim(flop_exponents[False] >= 1.8 and flop_exponents[True] <= 1.2,
              f"total FLOPs grow about like n^2 without a cache (exponent {flop_exponents[False]:.2f}) and "
              f"about like n with one (exponent {flop_exponents[True]:.2f})")
    tail = max(1, n // 10)
    step_speedup = _median(seconds[False][-tail:]) / _median(seconds[True][-tail:])
    exp.claim(step_speedup >= MIN_STEP_SPEEDUP,
              f"over the last {tail} steps a cached step is {step_speedup:.0f}x faster than recomputing "
              f"(must be at least {MIN_STEP_SPEEDUP:.0f}x; the FLOP ratio there is about "
              f"{flops[False][-1] / flops[True][-1]:.0f}x)")
    gap = time_exponents[False] - time_exponents[True]
    exp.claim(gap >= MIN_EXPONENT_GAP,
              f"total time grows faster without the cache: exponent {time_exponents[False]:.2f} vs "
              f"{time_exponents[True]:.2f} (gap {gap:.2f}, must be at least {MIN_EXPONENT_GAP})")

    positions = list(range(prompt_len, prompt_len + n))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for cached, style, label in ((False, "tab:red", "no cache"), (True, "tab:blue", "KV cache")):
        axes[0].semilogy(positions, flops[cached], color=style, label=label)
        axes[1].semilogy(positions, [1e3 * s for s in seconds[cached]], ".", ms=3, color=style, label=label)
        axes[2].loglog(lengths, [1e3 * t for t in time_totals[cached]], "o-", color=style,
                       label=f"{label}: slope {time_exponents[cached]:.2f}")
    axes[0].set(title="FLOPs per new token", xlabel="tokens before the new one", ylabel="FLOPs")
    axes[1].set(title="time per new token (this machine)", xlabel="tokens before the new one", ylabel="ms")
    axes[2].set(title="total time to generate n tokens", xlabel="n", ylabel="ms")
    axes[2].set_xticks(lengths, [str(m) for m in lengths])
    axes[2].minorticks_off()
    for ax in axes:
        ax.legend(fontsize=8)
    exp.save(fig, "cost")
    return exp.finish()


def _median(values: list[float]) -> float:
    return float(torch.tensor(values).median())


if __name__ == "__main__":
    raise SystemExit(main())
