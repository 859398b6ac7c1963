"""flash_attention's backward pass recomputes the attention weights from q, k and the saved
log-sum-exp instead of storing them: it gives autograd's gradients, keeps O(T) numbers for the
backward pass instead of O(T^2), and pays for it with one extra matrix product per tile, about 1/6
more matrix-multiply FLOPs over forward and backward.

Autograd through explicit attention saves, for the backward pass, the [B, H, T, S] weights (and
more). flash_attention saves q, k, v, the output and one log-sum-exp per row, lse = m + log(l);
in the backward pass each tile's weights come back as P = exp(scale * q k^T - lse). The script
measures three things for non-causal attention with B=1, H=8, D=64 in float32:
- the gradients dq, dk, dv of both, for the same upstream gradient;
- the bytes autograd keeps for the backward pass (torch.autograd.graph.saved_tensors_hooks);
- the matrix-multiply FLOPs of forward + backward (torch.utils.flop_counter.FlopCounterMode).
Explicit attention does 2 products forward (Q K^T, P V) and 4 backward (dV, dP, dQ, dK);
flash_attention does the same plus Q K^T again in the backward: 7 instead of 6. (Its score product
is one column wider, q . k - m in one go, which adds 1/(3D) more.) FlashAttention's paper reports
the same trade on a GPU: more FLOPs, fewer memory accesses, a faster run (Fig. 2).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from torch.utils.flop_counter import FlopCounterMode

import minimind_ref as mm
from labkit import Experiment, int_in, print_table
from minimind_ref.variants import flash_attention

HEADS, HEAD_DIM = 8, 64
PATHS = {
    "explicit": lambda q, k, v: mm.scaled_dot_product_attention(q, k, v),
    "flash_attention": lambda q, k, v: flash_attention(q, k, v),
}


def add_arguments(parser):
    # explicit attention keeps [8, T, T] tensors for the backward pass (128 MiB each at T = 2048), and
    # flash_attention's backward runs in Python tiles: time grows as T^2
    parser.add_argument("--lengths", type=int_in(8, 2048), nargs="+", default=[128, 256, 512, 1024],
                        help=f"{MIN_LENGTHS} to {MAX_LENGTHS} increasing sequence lengths T = S, from 8 to 2048 "
                             f"(default 128 256 512 1024)")


MIN_LENGTHS, MAX_LENGTHS = 2, 8


def check_arguments(args):
    lengths = args.lengths
    if not MIN_LENGTHS <= len(lengths) <= MAX_LENGTHS or any(b <= a for a, b in zip(lengths, lengths[1:])):
        return (f"--lengths must be {MIN_LENGTHS} to {MAX_LENGTHS} lengths, each larger than the one before, "
                f"e.g. 128 256 512; got {' '.join(map(str, lengths))}")
    return None


def saved_bytes(path, q, k, v) -> int:
    """Bytes of the distinct tensors autograd keeps for the backward pass of one forward call."""
    saved = {}

    def pack(t):
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        PATHS[path](q, k, v)
    return sum(saved.values())


def forward_backward(path, q, k, v, grad):
    out = PATHS[path](q, k, v)
    return torch.autograd.grad(out, (q, k, v), grad)


def baddbmm_flops(self_shape, a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of out += a @ b for batched a [B, M, K], b [B, K, N]: 2 B M N K (as for bmm)."""
    batch, m, inner = a_shape
    return 2 * batch * m * b_shape[-1] * inner


def gradients_and_flops(path, q, k, v, grad):
    """dq, dk, dv and the matrix-multiply FLOPs of forward + backward. FlopCounterMode knows bmm
    and baddbmm, not the in-place acc.baddbmm_ that flash_attention accumulates with: taught here."""
    with FlopCounterMode(display=False, custom_mapping={torch.ops.aten.baddbmm_: baddbmm_flops}) as counter:
        grads = forward_backward(path, q, k, v, grad)
    return grads, counter.get_total_flops()


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    lengths = exp.args.lengths
    mib = 2 ** 20
    rows, saved, grad_errors, flop_ratios = [], {p: [] for p in PATHS}, [], []
    for length in lengths:
        q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, requires_grad=True) for _ in range(3))
        grad = torch.randn(1, HEADS, length, HEAD_DIM)
        grads, flops = {}, {}
        for p in PATHS:
            grads[p], flops[p] = gradients_and_flops(p, q, k, v, grad)
        grad_errors.append(max((a - b).abs().max().item() for a, b in zip(grads["explicit"], grads["flash_attention"])))
        for p in PATHS:
            saved[p].append(saved_bytes(p, q, k, v))
        flop_ratios.append(flops["flash_attention"] / flops["explicit"])
        rows.append([length, saved["explicit"][-1] / mib, saved["flash_attention"][-1] / mib,
                     flops["explicit"] / 1e9, flops["flash_attention"] / 1e9, flop_ratios[-1], grad_errors[-1]])
    print(f"Attention forward + backward, no mask, B=1, H={HEADS}, D={HEAD_DIM}, float32:")
    print_table(["T = S", "explicit saves MiB", "flash saves MiB", "explicit GFLOP", "flash GFLOP",
                 "FLOP ratio", "max |grad diff|"], rows, ["d", ".2f", ".2f", ".3f", ".3f", ".4f", ".1e"])
    predicted = 7 / 6 + 1 / (3 * HEAD_DIM)  # 7 products instead of 6, the score product 1 column wider
    print(f"\nPredicted FLOP ratio: 7/6 + 1/(3D) = {predicted:.4f}. The paper's Fig. 2 (GPT-2 medium on an "
          f"A100): 66.6 -> 75.2 GFLOPs, x{75.2 / 66.6:.3f}, with HBM traffic 40.3 -> 4.4 GB "
          f"and runtime 41.7 -> 7.3 ms.")

    exp.claim(max(grad_errors) <= 1e-4,
              f"the recomputing backward pass gives autograd's gradients through explicit attention "
              f"(max difference {max(grad_errors):.1e} <= 1e-4)")
    weights = [HEADS * t * t * 4 for t in lengths]  # one [1, H, T, T] float32 tensor
    flash_expected = [(4 * t * HEAD_DIM + t) * HEADS * 4 for t in lengths]  # q, k, v, out [1, H, T, D]; lse [1, H, T]
    exp.claim(saved["flash_attention"] == flash_expected and all(e >= w for e, w in zip(saved["explicit"], weights)),
              f"flash_attention keeps exactly q, k, v, the output and lse for the backward pass, O(T); explicit "
              f"attention keeps at least the [H, T, T] weights, O(T^2): at T = {lengths[-1]}, "
              f"{saved['flash_attention'][-1] / mib:.2f} MiB against {saved['explicit'][-1] / mib:.1f} MiB")
    exp.claim(all(abs(r - predicted) <= 0.01 for r in flop_ratios),
              f"recomputation costs {100 * (flop_ratios[-1] - 1):.1f}% more matrix-multiply FLOPs over forward "
              f"+ backward, as predicted ({100 * (predicted - 1):.1f}%)")

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for p, style in (("explicit", "o-"), ("flash_attention", "s-")):
        axes[0].loglog(lengths, [b / mib for b in saved[p]], style, label=p, base=2)
    axes[0].set_xlabel("sequence length T = S")
    axes[0].set_ylabel("MiB kept for the backward pass")
    axes[0].set_title("What autograd keeps")
    axes[0].legend()
    axes[1].bar(["explicit", "flash_attention"], [1.0, flop_ratios[-1]], color=["C0", "C1"])
    axes[1].set_ylabel(f"matmul FLOPs, relative (T = {lengths[-1]})")
    axes[1].set_title("What recomputation costs: one more product")
    fig.tight_layout()
    exp.save(fig, "saved_and_flops")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
