"""Without a cache, the FLOPs of each new token grow with the length of the sequence and the FLOPs
of generating n tokens grow about like n^2; with a KV cache, each new token costs about the same
(plus a small attention term that grows with the context) and the total grows about like n.

The FLOPs are counted by a closed form over the model's matrix products (2 FLOPs per multiply-add),
itself checked against torch's own FLOP counter (`torch.utils.flop_counter.FlopCounterMode`) on real
forwards of minimind_ref's explicit attention path. Without a cache, the step that predicts token
L+1 runs all L tokens through the model: L x (projections + MLP) + an L x L attention. With a cache
it runs one token: 1 x (projections + MLP) + one query against L keys. The script counts every step
of a greedy generation of n tokens both ways and fits the growth exponent of the total (the slope of
log total against log n: 1 for linear growth, 2 for quadratic). FLOPs are exact, the same on every
machine; experiment exp6_time_per_token times the same two loops on this one.

Why it matters: the cache turns generation from quadratic into (nearly) linear work. "Nearly",
because the cached step still reads every cached key and value: its attention term grows with the
context, and for long contexts it is what dominates (for MiniMind2-Small past a few thousand tokens).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from torch.utils.flop_counter import FlopCounterMode

import minimind_ref as mm
from labkit import Experiment, int_in, print_table
from labkit.figures import readable_ticks

MIN_QUADRATIC = 1.8  # growth exponent of the total FLOPs without a cache must be at least this ...
MAX_LINEAR = 1.2  # ... and with the cache at most this


def add_arguments(parser):
    # FLOPs are counted with a closed form, one Python call per step: no model of this size is built
    parser.add_argument("--tokens", type=int_in(16, 65536), default=192, help="tokens to generate, n (default 192)")
    parser.add_argument("--hidden", type=int_in(16, 16384), default=128,
                        help="hidden size of the counted model, a multiple of 16 (default 128)")


# A cached step costs a fixed part (projections, feed-forward: ~ hidden^2) plus attention over the
# cache (~ hidden x t). While n <= 4 hidden the fixed part leads and the cached total grows like n
# (exponent at most 1.14 at every allowed size); past about 7 hidden it grows like n^2 as well.
MAX_TOKENS_PER_HIDDEN = 4


def check_arguments(args):
    if args.hidden % 16:
        return f"--hidden must be a multiple of 16 (8 heads of an even size, for RoPE), got {args.hidden}"
    if args.tokens > MAX_TOKENS_PER_HIDDEN * args.hidden:
        return (f"--tokens must be at most {MAX_TOKENS_PER_HIDDEN} x --hidden = {MAX_TOKENS_PER_HIDDEN * args.hidden}, "
                f"got {args.tokens}: beyond it attention over the cache outweighs a step's fixed work, and the "
                f"cached total no longer grows like n (raise --hidden, or lower --tokens)")
    return None


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


def counted_model(hidden: int, tokens: int) -> mm.MiniMindConfig:
    """The small MiniMind whose greedy generation of `tokens` tokens this script counts and
    exp6_time_per_token times."""
    return mm.MiniMindConfig(hidden_size=hidden, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                             vocab_size=256, max_position_embeddings=max(512, 2 * tokens))


def flop_growth(config: mm.MiniMindConfig, n: int, prompt_len: int = 1):
    """FLOPs of each step of generating n tokens, with and without the cache, their totals after
    n/8, n/4, n/2 and n tokens, and the growth exponent of each total. Keys: cached or not."""
    flops = {cached: step_flops(config, prompt_len, n, cached) for cached in (False, True)}
    lengths = [n // 8, n // 4, n // 2, n]
    totals = {cached: [sum(flops[cached][:m]) for m in lengths] for cached in (False, True)}
    exponents = {cached: growth_exponent(lengths, totals[cached]) for cached in (False, True)}
    return flops, lengths, totals, exponents


def growth_exponent(lengths: list[int], totals: list[float]) -> float:
    """Least-squares slope of log(total) against log(n): 1 for linear growth, 2 for quadratic
    (exp6_time_per_token fits its measured times with it too)."""
    x = torch.tensor(lengths, dtype=torch.float64).log()
    y = torch.tensor(totals, dtype=torch.float64).log()
    x, y = x - x.mean(), y - y.mean()
    return float((x * y).sum() / (x * x).sum())


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args

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

    # 2. FLOPs per step and in total, for a small MiniMind (the model exp6_time_per_token times).
    config = counted_model(args.hidden, args.tokens)
    n, prompt_len = args.tokens, 1
    flops, lengths, totals, exponents = flop_growth(config, n, prompt_len)

    print(f"Model: hidden {args.hidden}, 4 layers, 8 heads, 2 KV heads, vocabulary 256; "
          f"prompt {prompt_len} token, n = {n}")
    rows = [[m, flops[False][m - 1], flops[True][m - 1], flops[False][m - 1] / flops[True][m - 1]] for m in lengths]
    print_table(["position", "FLOPs no cache", "FLOPs cache", "ratio"], rows, ["", ",", ",", ".1f"])
    print()
    print("Total FLOPs of generating n tokens")
    rows = [[m, totals[False][j], totals[True][j], totals[False][j] / totals[True][j]] for j, m in enumerate(lengths)]
    print_table(["n", "FLOPs no cache", "FLOPs cache", "ratio"], rows, ["", ",", ",", ".1f"])
    print(f"growth exponent (slope of log total vs log n): {exponents[False]:.2f} without the cache, "
          f"{exponents[True]:.2f} with it")
    print()

    # 3. Where attention takes over a cached step, at MiniMind2-Small's sizes.
    default = mm.MiniMindConfig()
    print(f"MiniMind2-Small's default sizes: a cached step costs {cached_step_rest(default):,} FLOPs plus "
          f"{attention_flops_per_key(default):,} per key it attends to;")
    print(f"attention is half of the step at {attention_crossover(default):,.0f} keys.")
    print()

    exp.claim(exponents[False] >= MIN_QUADRATIC and exponents[True] <= MAX_LINEAR,
              f"total FLOPs grow about like n^2 without a cache (exponent {exponents[False]:.2f}, must be at least "
              f"{MIN_QUADRATIC}) and about like n with one (exponent {exponents[True]:.2f}, at most {MAX_LINEAR})")

    positions = list(range(prompt_len, prompt_len + n))
    exp.save(plot_per_token_and_total(positions, flops, lengths, totals, exponents, "FLOPs", "FLOPs"), "flops")
    return exp.finish()


def plot_per_token_and_total(positions, per_token, lengths, totals, exponents, quantity: str, unit: str,
                             style: str = "-"):
    """Two panels, no cache against the cache: the cost of each new token (`per_token[cached]`, one
    value per position) and the total cost of generating n tokens on log-log axes, where the slope
    is the growth exponent. exp6_time_per_token draws its times with it (`style` "." for noisy points)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for cached, color, label in ((False, "tab:red", "no cache"), (True, "tab:blue", "KV cache")):
        axes[0].semilogy(positions, per_token[cached], style, ms=3, color=color, label=label)
        axes[1].loglog(lengths, totals[cached], "o-", color=color, label=f"{label}: slope {exponents[cached]:.2f}")
    axes[0].set(title=f"{quantity} per new token", xlabel="tokens before the new one", ylabel=unit)
    axes[1].set(title=f"total {quantity} to generate n tokens", xlabel="n", ylabel=unit)
    axes[1].set_xticks(lengths, [str(m) for m in lengths])
    axes[1].minorticks_off()
    readable_ticks(fig)  # plain y tick labels: 2, 5, 10 ms, not 2×10⁰ crowding the unit
    for ax in axes:
        ax.grid(which="major", alpha=0.3)
        ax.legend(fontsize=8)
    return fig


if __name__ == "__main__":
    raise SystemExit(main())
