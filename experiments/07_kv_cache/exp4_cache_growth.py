"""Growing a KV cache with torch.cat copies the whole cache at every step: b x n(n+1)/2 bytes to
cache n tokens of b bytes each. Writing into preallocated storage writes only the new token,
b x n in all; growing the storage by doubling adds fewer than 2 b x n bytes of copies.

`torch.cat([cache, new])` cannot append in place: it allocates a new tensor and copies the old
cache and the new token into it, so step t writes t tokens' worth of bytes. minimind_ref's
`KVCache` allocates [B, H_kv, capacity, D] once and writes each new token into its slot; when the
capacity runs out it doubles, copying what it holds (capacities c, 2c, 4c, ...: the copies add up
to less than the final length). This script runs the three strategies for n one-token steps and
counts the bytes each writes *exactly*, by intercepting every tensor operation torch executes
(a `TorchDispatchMode` that adds up the bytes of every tensor an operation creates or modifies:
the output of `cat`, the slice a `copy_` writes), and compares the counts with the closed forms.
It then times the steps, as an illustration.

Why it matters: the quadratic copying is invisible for short sequences and dominates for long
ones. MiniMind's own upstream model code grows its cache with torch.cat; labkit's naive class
(NaiveConcatCache) does the same, as a baseline, and is not meant for use.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import BytesWritten, Experiment, NaiveConcatCache, int_in, print_table, time_call
from labkit.i18n import phrase

MIN_STEP_SLOWDOWN = 2.0  # concat vs preallocated, time per step over the last 10% of steps
MIN_TIMED_BYTES = 8 * 2**20  # below a final cache of 8 MiB, Python overhead can hide the copying


def add_arguments(parser):
    parser.add_argument("--steps", type=int_in(16, 2048), default=512, help="one-token cache updates, n (default 512)")
    parser.add_argument("--batch", type=int_in(1, 64), default=4, help="sequences cached together (default 4)")
    parser.add_argument("--initial", type=int_in(1, 2048), default=16,
                        help="starting capacity of the doubling cache, at most --steps (default 16)")


# the naive cache copies its whole self at every step: n^2 / 2 token steps of 8 KiB per sequence;
# n^2 x batch = 2**24 copies 64 GiB in all, 16 times the defaults
MAX_COPIED = 2 ** 24


def check_arguments(args):
    if args.initial > args.steps:
        return f"--initial must be at most --steps, got {args.initial} and {args.steps}"
    if args.steps ** 2 * args.batch > MAX_COPIED:
        return (f"--steps^2 x --batch must be at most {MAX_COPIED}, got {args.steps}^2 x {args.batch} = "
                f"{args.steps ** 2 * args.batch}")
    return None


def make_caches(config, batch: int, steps: int, initial: int):
    return {  # the names are shown in tables and the legend (phrase: translated in Chinese)
        phrase("torch.cat (naive)"): NaiveConcatCache(config, batch_size=batch),
        phrase("preallocated"): mm.KVCache(config, batch_size=batch, capacity=steps),
        phrase("doubling"): mm.KVCache(config, batch_size=batch, capacity=initial),
    }


def append_step(cache, step) -> None:
    """One token step: every layer's new keys and values, [B, H_kv, 1, D] each, into the cache."""
    for layer, (k, v) in enumerate(step):
        cache.update(layer, k, v)


def new_tokens(config, batch: int, steps: int, seed: int):
    """The keys and values that each step appends: [B, H_kv, 1, D] per layer."""
    g = torch.Generator().manual_seed(seed)
    shape = (batch, config.num_key_value_heads, 1, config.head_dim)
    return [[(torch.randn(shape, generator=g), torch.randn(shape, generator=g))
             for _ in range(config.num_hidden_layers)] for _ in range(steps)]


def doubling_copies(steps: int, initial: int) -> int:
    """Positions a doubling cache copies while growing from `initial` to hold `steps` tokens
    (one token at a time): at each growth, everything it holds, which is its old capacity."""
    copied, capacity = 0, initial
    while capacity < steps:
        copied += capacity
        capacity *= 2
    return copied


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    torch.set_num_threads(1)
    config = mm.MiniMindConfig(max_position_embeddings=max(2048, args.steps))  # MiniMind2-Small's cache shape
    n = args.steps
    # bytes per token step: K and V, every layer, every sequence of the batch
    b = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4 * args.batch
    tokens = new_tokens(config, args.batch, n, args.seed)
    print(f"MiniMind2-Small's cache shape (8 layers, 2 KV heads, head_dim 64, float32), batch {args.batch}: "
          f"b = {b:,} bytes per step; n = {n} one-token steps")
    print()
    counted, cumulative, closed = count_bytes_written(config, tokens, b, args.batch, args.initial)
    claim_bytes(exp, counted, closed, n)
    seconds = time_each_step(exp, config, tokens, b, args.batch, args.initial)
    draw_copying(exp, cumulative, seconds, n)
    return exp.finish()


def count_bytes_written(config, tokens: list, b: int, batch: int, initial: int):
    """Bytes written, counted operation by operation, for each strategy, against the closed forms."""
    n = len(tokens)
    counted, cumulative = {}, {}
    for name, cache in make_caches(config, batch, n, initial).items():
        running, curve = 0, []
        allocations = 0
        for step in tokens:
            with BytesWritten() as counter:
                append_step(cache, step)
            running += counter.bytes
            allocations += counter.allocations
            curve.append(running)
        final_keys = cache.keys[0] if isinstance(cache, NaiveConcatCache) else cache.layer(0)[0]
        assert torch.equal(final_keys, torch.cat([s[0][0] for s in tokens], dim=2)), "a cache lost a token"
        counted[name] = (running, allocations)
        cumulative[name] = curve
    closed = {
        "torch.cat (naive)": b * n * (n + 1) // 2,
        "preallocated": b * n,
        "doubling": b * n + b * doubling_copies(n, initial),
    }
    rows = [[name, closed[name], counted[name][0], counted[name][0] / (b * n), counted[name][1]] for name in closed]
    print_table(["strategy", "closed form (bytes)", "counted (bytes)", "x the tokens' own bytes", "allocations"],
                rows, ["", ",", ",", ".2f", ""])
    print(f"closed forms: b n(n+1)/2, b n, and b n + b (c + 2c + ... below n) with c = {initial}")
    print()
    return counted, cumulative, closed


def claim_bytes(exp, counted: dict, closed: dict, n: int) -> None:
    exp.claim(all(counted[name][0] == closed[name] for name in closed),
              "the bytes written, counted operation by operation, equal the closed forms for all three strategies")
    exp.claim(2 * counted["torch.cat (naive)"][0] == (n + 1) * counted["preallocated"][0],
              f"torch.cat writes (n + 1) / 2 = {(n + 1) / 2:g} times more bytes than the preallocated cache")
    exp.claim(counted["doubling"][0] < 3 * counted["preallocated"][0],
              f"doubling writes less than 3 times what preallocation does "
              f"({counted['doubling'][0] / counted['preallocated'][0]:.2f}x): linear in n, like preallocation")



def time_each_step(exp, config, tokens: list, b: int, batch: int, initial: int) -> dict:
    """Time per step, as an illustration (the counts are the exact statement); a claim only where the
    cache is large enough for the copying to outweigh Python's overhead."""
    n = len(tokens)
    seconds = {}
    for name, cache in make_caches(config, batch, n, initial).items():
        seconds[name] = [time_call(lambda: append_step(cache, step)) for step in tokens]
    tail = max(1, n // 10)
    medians = {name: float(torch.tensor(s[-tail:]).median()) for name, s in seconds.items()}
    rows = [[name, 1e6 * medians[name], 1e3 * sum(seconds[name])] for name in seconds]
    print(f"Time on this machine (median over the last {tail} steps, and total):")
    print_table(["strategy", "us per step at the end", "ms in total"], rows, ["", ".0f", ".1f"])
    print()
    slowdown = medians["torch.cat (naive)"] / medians["preallocated"]
    if n * b >= MIN_TIMED_BYTES:
        exp.claim(slowdown >= MIN_STEP_SLOWDOWN,
                  f"near the end, a torch.cat step takes {slowdown:.1f}x as long as a preallocated write "
                  f"(must be at least {MIN_STEP_SLOWDOWN:.0f}x)")
    else:
        print(f"(a cache of {n * b:,} bytes is too small for the copying to outweigh the Python overhead of a "
              f"step: no timing claim below {MIN_TIMED_BYTES:,} bytes)")
    return seconds


def draw_copying(exp, cumulative: dict, seconds: dict, n: int) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    steps = range(1, n + 1)
    for name, curve in cumulative.items():
        axes[0].semilogy(steps, [c / 2**20 for c in curve], label=name)
        axes[1].semilogy(steps, [1e6 * s for s in seconds[name]], ".", ms=2, label=name)
    axes[0].set(title="bytes written into the cache so far", xlabel="tokens cached", ylabel="MiB (log scale)")
    axes[1].set(title="time per step (this machine)", xlabel="tokens cached", ylabel="microseconds")
    for ax in axes:
        ax.legend(fontsize=8)
    exp.save(fig, "copying")


if __name__ == "__main__":
    raise SystemExit(main())
