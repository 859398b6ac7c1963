"""FlashAttention in PyTorch: its speed against explicit attention and torch's fused SDPA, and its memory.

What it times is `minimind_ref.variants.flash_attention_fast`: FlashAttention with the tricks that make
it fast in PyTorch. Its readable twin, `flash_attention` (the one notebook 08 teaches), computes the
same numbers (tests/model/test_flash.py holds the two equal) and is not timed here.

Targets (on 2 CPU threads, B=1, H=8, D=64, causal, float32):
  1. flash_attention_fast's forward is at least 5x faster than explicit attention
     (minimind_ref.scaled_dot_product_attention) at T=4096;
  2. it takes at most 1.5x the time of torch.nn.functional.scaled_dot_product_attention at T=4096;
  3. at T=8192 its peak memory above the inputs is at most 1/20 of explicit attention's.
All three must also give the same output (within 1e-5): a fast wrong answer does not count.

Speed: two comparisons, each timed side by side in its own rounds (each round times both once, in
turn) and reported as medians over rounds: flash_attention_fast against explicit attention, and
flash_attention_fast against torch's SDPA (three times as many rounds: the closer race).
Memory: each contender runs alone in a fresh Python process, which allocates q, k and v, warms up
on a tiny input (so that one-time library buffers are not counted), resets the kernel's record of
its peak resident memory (Linux: writing 5 to /proc/self/clear_refs), runs the contender once at
full size and reads the peak (VmHWM in /proc/self/status on Linux, else
`resource.getrusage(...).ru_maxrss`). Peak minus the resident memory before the call is what that
one call needed on top of the inputs: the output and every intermediate buffer, as the operating
system saw them, inside fused C++ kernels too.

Threads: flash_attention is a loop of many torch calls, and each call waits for all of torch's
threads, so OpenMP's wait policy shows in its time and hardly in a single fused kernel's. The
default (a waiting thread spins a while, then sleeps) is the fastest on a quiet machine, where these
numbers should be taken. On a machine busy with other programs, spinning threads take the cores
from the threads with work and the loop slows down many times; there, running with
OMP_WAIT_POLICY=PASSIVE in the environment helps, and on a quiet machine it costs a system call per
wake-up instead. The policy in effect is printed with the results.

    python benchmarks/bench_flash.py            # the real measurement (about a minute)
    python benchmarks/bench_flash.py --quick    # tiny sizes: checks that the benchmark runs
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

import torch
import torch.nn.functional as F
from harness import Target, fix_threads, interleaved_medians, report

import minimind_ref as mm
from minimind_ref.variants import flash_attention_fast

HEADS, HEAD_DIM = 8, 64
CONTENDERS = {
    "explicit": lambda q, k, v: mm.scaled_dot_product_attention(q, k, v, is_causal=True),
    "flash_attention_fast": lambda q, k, v: flash_attention_fast(q, k, v, is_causal=True),
    "torch SDPA": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, default=4096, help="sequence length T for the timings")
    parser.add_argument("--memory-seq", type=int, default=8192, help="sequence length T for the memory")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and one round: checks that the benchmark runs, not the targets")
    parser.add_argument("--peak-memory-of", choices=sorted(CONTENDERS), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def random_qkv(seq_len: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(1, HEADS, seq_len, HEAD_DIM, generator=generator) for _ in range(3)]


def max_rss_bytes() -> int:
    """This process's peak resident memory so far. On Linux, VmHWM from /proc/self/status: unlike
    ru_maxrss, it does not start from the peak of the parent process that started this one."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS reports bytes, Linux KiB


def reset_peak_rss() -> bool:
    """Make the peak resident memory start again from the current one (Linux only)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def measure_peak_memory(name: str, seq_len: int, threads: int, seed: int) -> int:
    """Run in a fresh process: bytes one call of `name` needs above the inputs (see the docstring).
    Without clear_refs (not Linux) the earlier peak, from start-up, may hide part of the call's."""
    fix_threads(threads)
    q, k, v = random_qkv(seq_len, seed)
    CONTENDERS[name](*(t[:, :, :64].contiguous() for t in (q, k, v)))  # warm up the libraries
    reset_peak_rss()
    before = max_rss_bytes()
    out = CONTENDERS[name](q, k, v)
    after = max_rss_bytes()
    del out
    return max(after - before, 0)


def peak_memory_in_fresh_process(name: str, args) -> int:
    command = [sys.executable, __file__, "--peak-memory-of", name, "--memory-seq", str(args.memory_seq),
               "--threads", str(args.threads), "--seed", str(args.seed)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return int(result.stdout.strip().splitlines()[-1])


def machine_load_note(threads: int) -> str | None:
    """Busy machines hurt a many-op Python loop more than one fused kernel: say so when it is busy."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    cores = os.cpu_count() or threads
    if load <= cores:
        return None
    return (f"Note: the machine is busy (load average {load:.1f} on {cores} cores). flash_attention runs "
            f"hundreds of torch calls, each of which waits for all {threads} threads, where SDPA is one "
            f"fused call: when other programs hold the cores, the ratios favour SDPA. Rerun on a quiet machine, "
            f"or with OMP_WAIT_POLICY=PASSIVE in the environment (waiting threads then sleep).")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.peak_memory_of:  # the child process of peak_memory_in_fresh_process
        print(measure_peak_memory(args.peak_memory_of, args.memory_seq, args.threads, args.seed))
        return 0
    if args.quick:
        args.seq, args.memory_seq, args.rounds = 384, 512, 1
    fix_threads(args.threads)
    note = machine_load_note(args.threads)

    # correctness first (and warm-up): the same output from all three
    q, k, v = random_qkv(args.seq, args.seed)
    outputs = {name: fn(q, k, v) for name, fn in CONTENDERS.items()}
    for name in ("explicit", "flash_attention_fast"):
        error = (outputs[name] - outputs["torch SDPA"]).abs().max().item()
        if error > 1e-5:
            print(f"{name} differs from torch SDPA by {error:.1e} at T={args.seq}: the comparison is void.")
            return 1
    del outputs

    # Two side-by-side comparisons, each timed in its own interleaved rounds. Explicit attention
    # writes and frees a 512 MiB score matrix per call, which leaves the caches and the allocator
    # cold for whatever runs next: timed in the same rounds, it slowed flash_attention's next call
    # and scattered flash / SDPA between 1.40x and 1.91x over four runs on one machine.
    def timed(names, rounds):
        return interleaved_medians({name: (lambda fn=CONTENDERS[name]: fn(q, k, v)) for name in names}, rounds)

    against_explicit = timed(("explicit", "flash_attention_fast"), args.rounds)
    against_sdpa = timed(("flash_attention_fast", "torch SDPA"), 3 * args.rounds)
    print(f"Causal attention forward, B=1, H={HEADS}, D={HEAD_DIM}, T={args.seq}, float32, "
          f"{args.threads} threads (OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'default')}), "
          f"medians of interleaved rounds, each pair timed side by side:")
    for label, pair, rounds in (("against explicit attention", against_explicit, args.rounds),
                                ("against torch SDPA", against_sdpa, 3 * args.rounds)):
        print(f"  {label} ({rounds} rounds): "
              + ", ".join(f"{name} {secs * 1e3:.1f} ms" for name, secs in pair.items()))

    peaks = {name: peak_memory_in_fresh_process(name, args) for name in CONTENDERS}
    score_matrix = HEADS * args.memory_seq ** 2 * 4
    output = HEADS * args.memory_seq * HEAD_DIM * 4
    print(f"Peak memory above the inputs at T={args.memory_seq} (peak resident memory, fresh process each; "
          f"one [H, T, T] float32 score matrix is {score_matrix / 2**20:.0f} MiB, "
          f"the output {output / 2**20:.0f} MiB):")
    for name, peak in peaks.items():
        print(f"  {name:16s} {peak / 2**20:9.1f} MiB")

    if note:
        print(note)
    if args.quick:
        print("(--quick: sizes far too small for these figures to mean anything; targets not checked)")
    targets = [
        Target("flash_attention_fast vs explicit attention, speed",
               against_explicit["explicit"] / against_explicit["flash_attention_fast"], at_least=5.0),
        Target("flash_attention_fast time / torch SDPA time",
               against_sdpa["flash_attention_fast"] / against_sdpa["torch SDPA"], at_most=1.5),
        Target("explicit peak memory / flash_attention_fast peak memory",
               peaks["explicit"] / max(peaks["flash_attention_fast"], 1), at_least=20.0),
    ]
    return report(targets, check=not args.quick)


if __name__ == "__main__":
    sys.exit(main())
