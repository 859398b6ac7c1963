"""repeat_kv's expand is free but its reshape copies: the repeated keys take n_rep times the bytes
of the cached ones. torch's fused attention with enable_gqa=True reads the shared heads in place and
allocates nothing that size; its math fallback copies them all the same.

With H query heads and H_kv key/value heads, each KV head serves n_rep = H / H_kv query heads.
minimind_ref's `repeat_kv` lines the shapes up in two steps: `x[:, :, None].expand(...)` makes a
view [B, H_kv, n_rep, S, D] whose new axis has stride 0 (every repeat points at the same bytes),
and `.reshape(B, H, S, D)` merges the KV-head and repeat axes. No strides can describe that merge
over the original storage, so reshape silently copies: n_rep times the bytes of the cache, for
keys and again for values, at every layer and every decoding step. One exception: with a single
KV head (MQA) the merge is over an axis of size 1 and the reshape stays a view.

This script looks at the storage (data pointers, strides, bytes) and, with torch's profiler,
counts every byte that attention for one decoding query allocates, over a range of cache lengths:
repeat_kv followed by torch's fused scaled_dot_product_attention; torch's fused attention with
enable_gqa=True (the kernel torch picks on this machine); the same call forced onto the math backend;
and minimind_ref's explicit attention, which calls repeat_kv.

Why it matters: GQA exists to make the cache smaller. Repeating it back to full size at every step
gives back the memory traffic it saved (exp4_decode_speed measures the cost). Whether a fused call
avoids the copy depends on the kernel that runs, so measure it rather than assume it.
"""

from __future__ import annotations

import contextlib
import os
import sys

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import minimind_ref as mm
from labkit import Experiment, int_in, print_table
from labkit.i18n import phrase

MIB = 2 ** 20


def add_arguments(parser):
    # GQA needs two KV heads at least, so H >= 2 H_kv >= 4; one KV head (MQA), where repeat_kv copies
    # nothing, is shown by every run beside the GQA claims
    parser.add_argument("--heads", type=int_in(4, 128), default=8, help="query heads H (default 8, as MiniMind)")
    parser.add_argument("--kv-heads", type=int_in(2, 64), default=2,
                        help="key/value heads H_kv, dividing H, at least 2 (default 2, as MiniMind; "
                             "one KV head, MQA, is shown by every run)")
    parser.add_argument("--head-dim", type=int_in(1, 512), default=64, help="head size D (default 64, as MiniMind)")
    parser.add_argument("--tokens", type=int_in(1, 65536), default=1024,
                        help="cached positions S for the storage tables (default 1024)")
    parser.add_argument("--max-tokens", type=int_in(1024, 65536), default=8192,
                        help="longest cache in the sweep, which doubles from 128; at least 1024 (default 8192)")


MAX_REPEATED = 2 ** 26  # H x S x D numbers in the repeated keys (and again the values): 256 MiB each


def check_arguments(args):
    if args.heads % args.kv_heads or args.kv_heads == args.heads:
        return (f"--heads must be a multiple of --kv-heads and larger than it (GQA), got heads={args.heads}, "
                f"kv-heads={args.kv_heads}")
    repeated = args.heads * max(args.tokens, args.max_tokens) * args.head_dim
    if repeated > MAX_REPEATED:
        return (f"--heads x max(--tokens, --max-tokens) x --head-dim (the repeated keys) must be at most "
                f"{MAX_REPEATED}, got {args.heads} x {max(args.tokens, args.max_tokens)} x {args.head_dim} "
                f"= {repeated}")
    return None


# ------------------------------------------------------------------------------ measuring bytes


@contextlib.contextmanager
def quiet_stderr():
    """Silence file descriptor 2 for a moment: torch's profiler writes two timestamped log lines
    straight to it, below Python, at every start and stop."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def allocations(fn) -> list[tuple[str, int]]:
    """Every CPU memory block that fn() allocates, as (the top-level torch op that asked for it,
    bytes), in order. torch's profiler records each allocation; frees are not subtracted."""
    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    blocks = []
    for event in prof.events():
        if event.self_cpu_memory_usage > 0:
            top = event
            while top.cpu_parent is not None:
                top = top.cpu_parent
            blocks.append((top.name, event.self_cpu_memory_usage))
    return blocks


def total(blocks) -> int:
    return sum(size for _, size in blocks)


def largest(blocks) -> int:
    return max((size for _, size in blocks), default=0)


def storage(t: torch.Tensor) -> tuple[int, int]:
    """(address, bytes) of the memory block behind a tensor, shared by all its views."""
    return t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()


# ------------------------------------------------------------------------------ the four ways


def attention_ways(q, k, v, n_rep):
    """Attention of the queries [B, H, 1, D] over a cache k, v [B, H_kv, S, D], four ways."""
    def repeat_then_fused():
        return F.scaled_dot_product_attention(q, mm.repeat_kv(k, n_rep), mm.repeat_kv(v, n_rep))

    def fused_enable_gqa():
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    def math_enable_gqa():
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    def explicit_minimind():
        return mm.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    return {phrase("repeat_kv + fused SDPA"): repeat_then_fused,
            phrase("fused SDPA, enable_gqa=True"): fused_enable_gqa,
            phrase("math SDPA, enable_gqa=True"): math_enable_gqa,
            phrase("minimind_ref explicit"): explicit_minimind}


def plot(lengths, sweep, kv_bytes):
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    styles = ["o-", "s-", "^--", "x:"]
    for (name, sizes), style in zip(sweep.items(), styles):
        ax.loglog(lengths, [max(s, 1) / MIB for s in sizes], style, label=name)
    ax.loglog(lengths, [b / MIB for b in kv_bytes], "k-", lw=3, alpha=0.25, label="the cached K and V themselves")
    ax.set(xlabel="cached positions S", ylabel="MiB allocated by one call",
           title="Bytes allocated by attention for one decoding query, GQA cache")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------ main


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    n_rep = args.heads // args.kv_heads
    k = torch.randn(1, args.kv_heads, args.tokens, args.head_dim)  # [B, H_kv, S, D]: the cached keys of one layer
    steps = the_two_steps_of_repeat_kv(k, args.heads, n_rep)
    mqa = one_kv_head(k, args.heads)
    lengths, sweep, kv_bytes, fused_largest, chosen = attention_as_the_cache_grows(
        args.heads, args.kv_heads, args.head_dim, args.max_tokens, n_rep)
    claim_memory(exp, k, n_rep, steps, mqa, lengths, sweep, kv_bytes, fused_largest, chosen)
    exp.save(plot(lengths, sweep, kv_bytes), "bytes")
    return exp.finish()


def the_two_steps_of_repeat_kv(k: torch.Tensor, heads: int, n_rep: int) -> dict:
    """The two steps of repeat_kv, one at a time: expand (a view), then reshape (a copy)."""
    _, kv_heads, tokens, head_dim = k.shape
    expanded = k[:, :, None].expand(1, kv_heads, n_rep, tokens, head_dim)  # [B, H_kv, n_rep, S, D]
    repeated = mm.repeat_kv(k, n_rep)  # [B, H, S, D]
    expand_blocks = allocations(lambda: k[:, :, None].expand(1, kv_heads, n_rep, tokens, head_dim))
    repeat_blocks = allocations(lambda: mm.repeat_kv(k, n_rep))
    rows = []
    for name, t, blocks in ((phrase("k (the cache)"), k, []), (phrase("expand (a view)"), expanded, expand_blocks),
                            ("repeat_kv = expand + reshape", repeated, repeat_blocks)):
        address, nbytes = storage(t)
        same = phrase("yes") if address == storage(k)[0] else phrase("no")
        rows.append([name, str(tuple(t.shape)), str(t.stride()), same, nbytes, total(blocks)])
    print(f"H = {heads} query heads, H_kv = {kv_heads} KV heads (n_rep = {n_rep}), "
          f"S = {tokens}, D = {head_dim}, float32")
    print()
    print_table(["tensor", "shape", "strides", "same storage as k", "storage bytes", "bytes allocated"],
                rows, ["", "", "", "", ",d", ",d"])
    print()

    k_bytes = k.nbytes
    return {"expand_is_view": storage(expanded) == storage(k) and expanded.stride()[2] == 0
            and total(expand_blocks) == 0,
            "expand_strides": expanded.stride(),
            "repeat_copies": storage(repeated)[0] != storage(k)[0] and storage(repeated)[1] == n_rep * k_bytes
            and total(repeat_blocks) == n_rep * k_bytes and torch.equal(repeated, k.repeat_interleave(n_rep, dim=1))}


def one_kv_head(k: torch.Tensor, heads: int) -> dict:
    """MQA: one KV head. The merged axes are (1, n_rep): a view after all."""
    k1 = k[:, :1].contiguous()  # [B, 1, S, D]
    mqa = mm.repeat_kv(k1, heads)
    mqa_blocks = allocations(lambda: mm.repeat_kv(k1, heads))
    mqa_is_view = storage(mqa)[0] == storage(k1)[0]
    print(f"MQA (1 KV head): repeat_kv gives shape {tuple(mqa.shape)}, strides {mqa.stride()}, same storage: "
          f"{mqa_is_view}, bytes allocated: {total(mqa_blocks)}")
    print()
    return {"is_view": mqa_is_view and mqa.stride()[1] == 0 and total(mqa_blocks) == 0, "strides": mqa.stride()}


def attention_as_the_cache_grows(heads: int, kv_heads: int, head_dim: int, max_tokens: int, n_rep: int):
    """What attention for one decoding query allocates, as the cache grows, each way of computing it."""
    lengths = [128 * 2 ** i for i in range((max_tokens // 128).bit_length())]
    sweep = {name: [] for name in attention_ways(None, None, None, n_rep)}
    fused_largest, kv_bytes, table, chosen = [], [], [], None
    for length in lengths:
        q = torch.randn(1, heads, 1, head_dim)  # [B, H, 1, D]: one new token
        kc = torch.randn(1, kv_heads, length, head_dim)  # [B, H_kv, S, D]
        vc = torch.randn_like(kc)
        chosen = SDPBackend(torch._fused_sdp_choice(q, kc, vc, enable_gqa=True)).name  # the kernel torch picks
        kv_bytes.append(kc.nbytes + vc.nbytes)
        for name, fn in attention_ways(q, kc, vc, n_rep).items():
            fn()  # once before measuring: a first call may set up buffers of its own
            blocks = allocations(fn)
            sweep[name].append(total(blocks))
            if name == "fused SDPA, enable_gqa=True":
                fused_largest.append(largest(blocks))
        table.append([length, kv_bytes[-1]] + [sweep[name][-1] for name in sweep])
    print(f"Bytes allocated by attention for one query over S cached positions, every block counted "
          f"(torch picks {chosen} for the fused call on this machine):")
    print()
    print_table(["S", "K + V bytes", "repeat_kv + fused", "fused, enable_gqa", "math, enable_gqa",
                 "minimind_ref explicit"], table, [",d"] * 6)
    print()
    return lengths, sweep, kv_bytes, fused_largest, chosen


def claim_memory(exp, k, n_rep: int, steps: dict, mqa: dict, lengths, sweep, kv_bytes, fused_largest, chosen) -> None:
    k_bytes = k.nbytes
    exp.claim(steps["expand_is_view"],
              f"expand is a view: the same storage as k ({k_bytes:,} bytes), stride 0 on the repeat axis "
              f"{steps['expand_strides']}, 0 bytes allocated")
    exp.claim(steps["repeat_copies"],
              f"the reshape copies: repeat_kv allocates a new storage of n_rep x {k_bytes:,} = "
              f"{n_rep * k_bytes:,} bytes, holding each KV head {n_rep} times")
    exp.claim(mqa["is_view"],
              f"with one KV head (MQA) the reshape is a view: stride 0 on the head axis {mqa['strides']}, "
              f"0 bytes allocated")
    fused, repeat = sweep["fused SDPA, enable_gqa=True"], sweep["repeat_kv + fused SDPA"]
    extra = [r - f for r, f in zip(repeat, fused)]
    exp.claim(all(e == n_rep * b for e, b in zip(extra, kv_bytes)),
              f"repeat_kv before the fused call costs exactly n_rep x the K and V bytes more than enable_gqa=True, "
              f"at every S from {lengths[0]} to {lengths[-1]} (at S = {lengths[-1]}: {extra[-1] / MIB:g} MiB more)")
    exp.claim(fused[-1] == fused[-2] and fused[-1] < kv_bytes[-1] / 10,
              f"the fused call with enable_gqa=True ({chosen}) never materialises the repeated heads: it allocates "
              f"the same {fused[-1]:,} bytes at S = {lengths[-2]} and {lengths[-1]} (the output and a work buffer "
              f"that does not grow with S; largest block {max(fused_largest):,} bytes), less than a tenth of the "
              f"{kv_bytes[-1]:,} bytes of K and V")
    math = sweep["math SDPA, enable_gqa=True"]
    exp.claim(all(m >= n_rep * b for m, b in zip(math, kv_bytes)),
              "forced onto the math backend, the same enable_gqa=True call allocates at least n_rep x the K and V "
              "bytes at every S: enable_gqa alone does not promise that nothing is copied")


if __name__ == "__main__":
    raise SystemExit(main())
