"""minimind_ref.flash_attention gives torch's SDPA output to 1e-5 without ever creating the T x S
score matrix: the memory it needs grows linearly with the sequence, explicit attention's
quadratically.

For causal attention with B=1, H=8, D=64 in float32 and T = S from 256 up, the script runs
explicit attention (minimind_ref.scaled_dot_product_attention), flash_attention and torch's SDPA,
and records every tensor each one creates while it runs (labkit.memory's
TensorMemory, a TorchDispatchMode that sees each torch op's outputs): the peak of their total size
while alive at once, and the largest single tensor. The inputs q, k, v are not counted; the output
is. Explicit attention creates several [H, T, T] tensors (scores, masked scores, weights), so its
peak quadruples when T doubles. flash_attention creates one score tile of fixed size plus tensors
of size O(T): its peak at most doubles. SDPA does all its work inside one C++ kernel, whose scratch
buffers this tracker cannot see (only its output shows); `make bench` measures all three as the
operating system sees them.

Why it matters: at T = 8192 one float32 score matrix of MiniMind2-Small's 8 heads is 2 GiB per layer and
per sequence, and training keeps it for the backward pass; FlashAttention never builds it.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import minimind_ref as mm
from labkit import Experiment, TensorMemory, int_in, print_table
from labkit.i18n import phrase
from minimind_ref.variants import flash_attention

HEADS, HEAD_DIM = 8, 64
CONTENDERS = {
    "explicit": lambda q, k, v: mm.scaled_dot_product_attention(q, k, v, is_causal=True),
    "flash_attention": lambda q, k, v: flash_attention(q, k, v, is_causal=True),
    "torch SDPA": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
}


def add_arguments(parser):
    # explicit attention holds several [8, T, T] float32 tensors: 512 MiB each at T = 4096
    parser.add_argument("--lengths", type=int_in(16, 4096), nargs="+", default=[256, 512, 1024, 2048],
                        help="sequence lengths T = S, from 16 to 4096, each twice the one before "
                             "(default 256 512 1024 2048)")


def check_arguments(args):
    lengths = args.lengths
    if len(lengths) < 2 or any(b != 2 * a for a, b in zip(lengths, lengths[1:])):
        return (f"--lengths must be at least two lengths, each twice the one before, e.g. 256 512 1024; "
                f"got {' '.join(map(str, lengths))}")
    return None


def measure(name, q, k, v):
    with TensorMemory() as memory:
        out = CONTENDERS[name](q, k, v)
    return out, memory.peak, memory.largest


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    lengths = exp.args.lengths
    mib = 2 ** 20
    peaks = {name: [] for name in CONTENDERS}
    largest = {name: [] for name in CONTENDERS}
    errors, rows = [], []
    for length in lengths:
        q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM) for _ in range(3))
        outs = {}
        for name in CONTENDERS:
            outs[name], peak, big = measure(name, q, k, v)
            peaks[name].append(peak)
            largest[name].append(big)
        errors.append(max((outs[n] - outs["torch SDPA"]).abs().max().item() for n in ("explicit", "flash_attention")))
        score_matrix = HEADS * length * length * 4
        rows.append([length, score_matrix / mib, peaks["explicit"][-1] / mib, largest["explicit"][-1] / mib,
                     peaks["flash_attention"][-1] / mib, largest["flash_attention"][-1] / mib,
                     peaks["torch SDPA"][-1] / mib, errors[-1]])
    print(f"Causal attention, B=1, H={HEADS}, D={HEAD_DIM}, float32. MiB of tensors created during one call "
          f"(output included, inputs not):")
    print_table(["T = S", "[H,T,T] matrix", "explicit peak", "its largest", "flash peak", "its largest",
                 "SDPA (output only)", "max |diff| vs SDPA"],
                rows, ["d", ".1f", ".1f", ".1f", ".2f", ".2f", ".2f", ".1e"])

    growth = {name: [b / a for a, b in zip(p, p[1:])] for name, p in peaks.items()}
    print("\nGrowth of the peak when T doubles:")
    for name in ("explicit", "flash_attention"):
        print(f"  {name:16s} " + "  ".join(f"x{g:.2f}" for g in growth[name]))
    last = lengths[-1]

    exp.claim(max(errors) <= 1e-5,
              f"flash_attention (and explicit attention) give SDPA's output at every T "
              f"(max diff {max(errors):.1e} <= 1e-5)")
    exp.claim(largest["explicit"][-1] >= HEADS * last * last * 4
              and largest["flash_attention"][-1] * 8 <= HEADS * last * last * 4,
              f"at T = {last}, explicit attention creates the whole [H, T, T] score matrix "
              f"({HEADS * last * last * 4 / mib:.0f} MiB); the largest tensor flash_attention creates is "
              f"{largest['flash_attention'][-1] / mib:.2f} MiB, less than 1/8 of it")
    exp.claim(growth["explicit"][-1] >= 3.5 and max(growth["flash_attention"]) <= 2.05,
              f"explicit attention's peak grows quadratically (x{growth['explicit'][-1]:.2f} for the last doubling "
              f"of T, at least x3.5), flash_attention's at most linearly "
              f"(at most x{max(growth['flash_attention']):.2f} per doubling, at most x2.05)")

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, style in (("explicit", "o-"), ("flash_attention", "s-"), ("torch SDPA", "^:")):
        label = phrase("torch SDPA (output only: its buffers are inside C++)") if name == "torch SDPA" else name
        ax.loglog(lengths, [p / mib for p in peaks[name]], style, label=label, base=2)
    ax.loglog(lengths, [HEADS * t * t * 4 / mib for t in lengths], "k--", label="one [H, T, T] float32 matrix", base=2)
    ax.set_xlabel("sequence length T = S")
    ax.set_ylabel("peak MiB of tensors created")
    ax.set_title("Memory of one causal attention call (B=1, H=8, D=64)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "peak_memory")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
