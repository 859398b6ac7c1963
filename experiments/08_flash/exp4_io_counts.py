"""Counted line by line, standard attention (the FlashAttention paper's Algorithm 0) reads and
writes Theta(N d + N^2) elements of GPU memory (HBM) and FlashAttention (Algorithm 1)
Theta(N^2 d^2 / M): several times fewer for a head of 64 and 100 KB of on-chip SRAM. At an A100's
rates, standard attention spends longer moving those elements than computing its matrix products,
and so does each of its three steps on its own: even S = Q K^T does fewer FLOPs per byte it moves
than the A100 needs to keep its matrix units busy.

Algorithm 0, one head, N queries and keys of width d: line 1 reads Q and K (2Nd) and writes
S = Q K^T (N^2); line 2 reads S and writes P = softmax(S) (2N^2); line 3 reads P and V (N^2 + Nd)
and writes O (Nd). Total 4Nd + 4N^2. Algorithm 1 with SRAM of M elements sets
B_c = ceil(M / 4d) and B_r = min(B_c, d); each of its T_c = ceil(N / B_c) outer steps loads one
block of K and V (2 B_c d) and then, for every block of rows, reads Q_i, O_i, l_i, m_i and writes
O_i, l_i, m_i: 3Nd + 4N per outer step. Total 2Nd + T_c (3Nd + 4N), which is Theta(N^2 d^2 / M)
(Theorem 2). The paper gives M as "around 100KB" and an A100's SRAM as 192 KB per streaming
multiprocessor; this script counts M in half-precision elements (2 bytes each). The arithmetic:
4 N^2 d matrix-multiply FLOPs for either algorithm (Q K^T and P V), at the 312 TFLOP/s of an A100's
half-precision matrix units (FlashAttention-2 paper, arXiv 2307.08691, section 3.1), against HBM
traffic at 1.5 TB/s (the low end of the 1.5-2.0 TB/s the FlashAttention paper, arXiv 2205.14135,
gives in section 2.1). The softmax runs on the other units, 19.5 TFLOP/s of FP32 (same section of
FlashAttention-2), at about 5 operations per score (max, subtract, exp, sum, divide).

Why it matters: on a GPU, attention is slow because of memory traffic, not arithmetic; that is
what FlashAttention removes. These are counts from the algorithms, not measurements.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from labkit import Experiment, float_in, int_in, print_table
from labkit.roofline import BYTES_PER_ELEMENT, attention_steps, standard_elements

HBM_RANGE_BYTES_PER_S = (1.5e12, 2.0e12)  # A100 HBM: 1.5-2.0 TB/s (FlashAttention paper, section 2.1)
HBM_BYTES_PER_S = HBM_RANGE_BYTES_PER_S[0]  # the counts price at the low end
MATMUL_FLOPS_PER_S = 312e12  # A100 FP16/BF16 matmul (FlashAttention-2 paper, section 3.1)
OTHER_FLOPS_PER_S = 19.5e12  # A100 FP32, everything but matmul: exp, max, sums (same section)
RIDGE = MATMUL_FLOPS_PER_S / HBM_BYTES_PER_S  # FLOPs per byte moved that keep the matrix units busy
LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]  # N of the table of standard against FlashAttention
N_STEPS = 4096  # N of the step-by-step table and of the SRAM sweep


def add_arguments(parser):
    # counts, not tensors: any sizes are cheap; the bounds are where the claims hold. Below d = 16 a
    # block of keys holds the whole sequence at every SRAM size compared, so more SRAM saves nothing;
    # above d = 224 even S = Q K^T does enough FLOPs per byte to keep an A100's matrix units busy.
    parser.add_argument("--head-dim", type=int_in(16, 224), default=64,
                        help="head width d, 16 to 224 (default 64)")
    parser.add_argument("--sram-kb", type=float_in(1.0, 100_000.0), default=100.0,
                        help="on-chip SRAM M in KB of 1024 bytes (default 100)")


# FlashAttention saves several times the traffic when its blocks of keys are long against d: with
# M >= 12 d^2, B_c = M / 4d >= 3d and the count's ratio 4 B_c / 3d is 4 or more for long sequences,
# above 2 from N = 512 (Theorem 2's regime; counted for every allowed d and M). With less SRAM the
# claim that it moves several times fewer elements fails first for the short sequences.
MIN_SRAM_PER_D2 = 12


def check_arguments(args):
    sram, d = int(args.sram_kb * 1024 / BYTES_PER_ELEMENT), args.head_dim
    if sram < MIN_SRAM_PER_D2 * d ** 2:
        least = MIN_SRAM_PER_D2 * d ** 2 * BYTES_PER_ELEMENT / 1024
        return (f"--sram-kb must hold at least {MIN_SRAM_PER_D2} d^2 half-precision elements, where FlashAttention's "
                f"blocks are long enough to save several times the traffic: with --head-dim {d}, at least "
                f"{least:g} KB; got {args.sram_kb:g} KB ({sram / d ** 2:.1f} d^2)")
    return None


def standard_accesses(n: int, d: int) -> int:
    """HBM elements read or written by Algorithm 0: 4Nd + 4N^2 (labkit.roofline counts each line)."""
    return standard_elements(n, n, d)


def standard_steps(n: int, d: int) -> dict[str, tuple[int, int, float]]:
    """Algorithm 0's three lines, each a kernel of its own: (operations, HBM elements read + written,
    the A100's rate for those operations). They add up to standard_accesses."""
    rates = {"S = Q K^T": MATMUL_FLOPS_PER_S, "P = softmax(S)": OTHER_FLOPS_PER_S, "O = P V": MATMUL_FLOPS_PER_S}
    return {line: (operations, elements, rates[line])
            for line, (operations, elements) in attention_steps(n, n, d).items()}


def flops_per_byte(n: int, d: int) -> float:
    """Arithmetic intensity of S = Q K^T, Algorithm 0's first line: FLOPs per byte it moves."""
    operations, elements, _ = standard_steps(n, d)["S = Q K^T"]
    return operations / (elements * BYTES_PER_ELEMENT)


def block_sizes(sram_elements: int, d: int) -> tuple[int, int]:
    """Algorithm 1, line 1: B_c = ceil(M / 4d), B_r = min(ceil(M / 4d), d)."""
    block_c = math.ceil(sram_elements / (4 * d))
    return block_c, min(block_c, d)


def flash_accesses(n: int, d: int, sram_elements: int) -> int:
    """HBM elements read or written by Algorithm 1: 2Nd + T_c (3Nd + 4N)."""
    block_c, _ = block_sizes(sram_elements, d)
    outer_steps = math.ceil(n / block_c)  # T_c
    load_k_v = 2 * n * d  # every block of K and V once
    per_outer_step = 3 * n * d + 4 * n  # read Q, O, l, m; write O, l, m
    return load_k_v + outer_steps * per_outer_step


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    d = exp.args.head_dim
    sram = int(exp.args.sram_kb * 1024 / BYTES_PER_ELEMENT)  # M, in elements
    block_c, block_r = block_sizes(sram, d)
    print(f"d = {d}, M = {exp.args.sram_kb:g} KB = {sram} half-precision elements: B_c = {block_c}, B_r = {block_r}; "
          f"M / d^2 = {sram / d ** 2:.1f}")
    lengths = standard_against_flash(exp, d, sram, block_c)
    step_by_step(exp, d)
    sram_kbs, flash_by_m = more_sram_fewer_passes(exp, d)
    draw_accesses(exp, d, sram, exp.args.sram_kb, lengths, sram_kbs, flash_by_m)
    return exp.finish()


def io_table(d: int, sram: int) -> dict[int, tuple[int, int, float, float, float]]:
    """Per N of LENGTHS: standard and FlashAttention accesses (elements), and on an A100 the seconds
    of the matrix products, of standard attention's traffic and of FlashAttention's."""
    table = {}
    for n in LENGTHS:
        standard, flash = standard_accesses(n, d), flash_accesses(n, d, sram)
        table[n] = (standard, flash, 4 * n * n * d / MATMUL_FLOPS_PER_S,
                    standard * BYTES_PER_ELEMENT / HBM_BYTES_PER_S, flash * BYTES_PER_ELEMENT / HBM_BYTES_PER_S)
    return table


def standard_against_flash(exp, d: int, sram: int, block_c: int) -> list[int]:
    """Each algorithm's HBM accesses, and the times they take on an A100, as N grows."""
    lengths = LENGTHS
    rows, ratios, memory_bound = [], [], []
    for n, (standard, flash, compute_s, standard_s, flash_s) in io_table(d, sram).items():
        ratios.append(standard / flash)
        memory_bound.append(standard_s / compute_s)
        rows.append([n, standard / 1e6, flash / 1e6, standard / flash, compute_s * 1e6, standard_s * 1e6,
                     flash_s * 1e6])
    print_table(["N", "standard (M elem)", "flash (M elem)", "standard / flash", "matmul us", "standard HBM us",
                 "flash HBM us"], rows, ["d", ".2f", ".2f", ".2f", ".2f", ".2f", ".2f"])
    print(f"\nFor large N the ratio tends to 4N^2 / (3Nd N / B_c) = 4 B_c / 3d = {4 * block_c / (3 * d):.2f}. "
          f"The paper measured {40.3 / 4.4:.1f}x fewer bytes (40.3 GB against 4.4 GB, forward and backward, Fig. 2).")
    flash_vs_compute = rows[lengths.index(4096)][6] / rows[lengths.index(4096)][4]
    print(f"By this count FlashAttention's own traffic still takes {flash_vs_compute:.1f}x its matmul time "
          f"at N = 4096: the count charges every one of the T_c passes over Q and O to HBM. "
          f"It is a model, not a measurement.")

    exp.claim(all(r > 2 for r in ratios),
              f"FlashAttention's count is {min(ratios):.1f}x to {max(ratios):.1f}x smaller than standard attention's "
              f"for N from {lengths[0]} to {lengths[-1]}")
    exp.claim(all(m > 1 for m in memory_bound),
              f"standard attention is memory-bound on an A100: moving its elements takes {min(memory_bound):.1f}x "
              f"to {max(memory_bound):.1f}x longer than its matrix products")
    return lengths


def step_by_step(exp, d: int) -> None:
    """The same, step by step: one kernel per line of Algorithm 0, at N = N_STEPS."""
    n = N_STEPS
    step_rows = [[name, operations / rate * 1e6, elements * BYTES_PER_ELEMENT / HBM_BYTES_PER_S * 1e6]
                 for name, (operations, elements, rate) in standard_steps(n, d).items()]
    print(f"\nN = {n}, one kernel per line of Algorithm 0:")
    print_table(["step", "compute us", "HBM traffic us"], step_rows, ["", ".1f", ".1f"])
    exp.claim(all(traffic > compute for _, compute, traffic in step_rows),
              f"each of Algorithm 0's steps moves its data longer than it computes (N = {n}): even S = Q K^T does "
              f"only {flops_per_byte(n, d):.0f} FLOPs per byte it moves, where an A100 needs {RIDGE:.0f}")



def more_sram_fewer_passes(exp, d: int):
    """Theorem 2's 1/M: more SRAM, bigger blocks, fewer passes over Q and O."""
    n = N_STEPS
    sram_kbs = [16, 32, 64, 100, 128, 192]
    flash_by_m = [flash_accesses(n, d, int(kb * 1024 / BYTES_PER_ELEMENT)) for kb in sram_kbs]
    exp.claim(all(b < a for a, b in zip(flash_by_m, flash_by_m[1:])),
              f"the larger the SRAM, the fewer the accesses (N = {n}: {flash_by_m[0] / 1e6:.1f}M elements at "
              f"{sram_kbs[0]} KB, {flash_by_m[-1] / 1e6:.1f}M at {sram_kbs[-1]} KB), as Theta(N^2 d^2 / M) says")
    return sram_kbs, flash_by_m


def draw_accesses(exp, d: int, sram: int, sram_kb: float, lengths: list[int], sram_kbs: list, flash_by_m: list) -> None:
    n = N_STEPS
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    axes[0].loglog(lengths, [standard_accesses(n, d) for n in lengths], "o-", label="standard (Alg. 0)", base=2)
    axes[0].loglog(lengths, [flash_accesses(n, d, sram) for n in lengths], "s-", label="FlashAttention (Alg. 1)",
                   base=2)
    axes[0].set_xlabel("sequence length N")
    axes[0].set_ylabel("HBM elements read + written")
    axes[0].set_title(f"d = {d}, M = {sram_kb:g} KB")
    axes[0].legend()
    axes[1].plot(sram_kbs, [f / 1e6 for f in flash_by_m], "s-", color="C1", label="FlashAttention")
    axes[1].axhline(standard_accesses(n, d) / 1e6, color="C0", linestyle="--", label="standard")
    axes[1].set_xlabel("SRAM M (KB)")
    axes[1].set_ylabel("million elements")
    axes[1].set_title(f"N = {n}: accesses fall as 1/M")
    axes[1].legend()
    fig.tight_layout()
    exp.save(fig, "hbm_accesses")


if __name__ == "__main__":
    raise SystemExit(main())
