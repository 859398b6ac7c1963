"""Attention dropout zeroes attention weights after the softmax and scales the survivors by
1/(1 - p), so each row sums to 1 only on average; in eval it is the identity, and a kernel can
redraw the same mask from a seed instead of storing it for the backward pass.

Where it sits: `minimind_ref.scaled_dot_product_attention(..., dropout_p=p)` computes the weights,
drops them, then multiplies by V (MiniMind's `Attention` passes `config.dropout` in training and 0
in eval). This script checks, on one layer's shapes:
- every weight is either 0 or its undropped value times 1/(1 - p), and the output is exactly the
  dropped weights times V;
- a row's sum is 1 only in expectation: across many draws the sums of the row that sees every key
  scatter around 1 (their mean within 5 standard errors of 1; a row of weights w has variance
  p/(1 - p) sum w^2, so the first row, one key, sums to 0 or 1/(1 - p)); a sum of exactly 1 is no likelier than its
  neighbours (under 1% of rows, by chance), and a row none of whose weights was dropped sums to
  1/(1 - p), as often as (1 - p)^(its visible keys);
- in eval mode a MiniMind layer built with dropout gives the same output as one without;
- the mask is a function of the random generator's state: the same seed redraws the same mask,
  so a backward pass that regenerates it from the seed gets autograd's gradients. That is how
  FlashAttention keeps dropout without an [T, S] mask in memory: it saves the generator state R
  and regenerates the mask tile by tile in the backward pass (arXiv 2205.14135, Appendix B,
  Algorithm 2); torch's fused CUDA kernels likewise pass a seed and an offset. On a CPU torch's
  SDPA with dropout takes its math path and keeps more for the backward pass: the script prints
  how much.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import minimind_ref as mm
from labkit import Experiment, float_in, int_in, print_table
from labkit.i18n import phrase

HEADS, HEAD_DIM = 4, 16


def add_arguments(parser):
    parser.add_argument("--p", type=float_in(0.01, 0.9), default=0.2,
                        help="dropout probability, 0.01 to 0.9 (default 0.2)")
    parser.add_argument("--tokens", type=int_in(8, 512), default=64, help="T = S, tokens (default 64)")
    parser.add_argument("--draws", type=int_in(100, 2000), default=400,
                        help="dropout masks drawn for the row-sum statistics (default 400)")


def attention(q, k, v, p, seed):
    """minimind_ref's explicit attention with dropout p, its weights too, from a seeded generator."""
    torch.manual_seed(seed)
    return mm.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p, return_weights=True)


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    p, tokens, seed = exp.args.p, exp.args.tokens, exp.args.seed
    q, k, v = (torch.randn(1, HEADS, tokens, HEAD_DIM) for _ in range(3))
    plain, plain_weights = mm.scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
    what_it_does_to_one_weight(exp, q, k, v, plain_weights, p, seed)
    last_row = rows_sum_to_one_on_average(exp, q, k, v, plain_weights, p, seed, exp.args.draws)
    the_identity_in_eval(exp, p, tokens)
    qg, kg, vg = the_mask_from_a_seed(exp, q, k, v, plain_weights, p, tokens)
    what_sdpa_keeps_for_backward(q, qg, kg, vg, p)
    draw_row_sums(exp, last_row, p, exp.args.draws)
    return exp.finish()


def what_it_does_to_one_weight(exp, q, k, v, plain_weights, p: float, seed: int) -> None:
    """Where dropout sits and what it does to one weight."""
    out, weights = attention(q, k, v, p, seed=seed)
    kept = weights != 0
    survivors_scaled = torch.allclose(weights[kept], plain_weights[kept] / (1 - p), rtol=1e-6, atol=0)
    visible = plain_weights > 0
    dropped_share = 1 - kept[visible].float().mean().item()
    exp.claim(survivors_scaled and torch.allclose(out, weights @ v, atol=1e-6),
              f"each weight is dropped (0) or kept and multiplied by 1/(1 - p) = {1 / (1 - p):.4g}, and the "
              f"output is the dropped weights times V (share dropped: {dropped_share:.3f}, p = {p})")



def rows_sum_to_one_on_average(exp, q, k, v, plain_weights, p: float, seed: int, draws: int) -> torch.Tensor:
    """Rows sum to 1 only on average; returns the last row's sums, one per draw and head."""
    tokens = q.shape[-2]
    sums = torch.stack([attention(q, k, v, p, seed=seed + 1 + i)[1].sum(-1)
                        for i in range(draws)])  # [draws, 1, H, T]
    last_row, first_row = sums[..., -1].flatten(), sums[..., 0].flatten()
    mean, spread = last_row.mean().item(), last_row.std().item()
    # each draw's row sum has variance p/(1 - p) * sum_j w_j^2 (w: the undropped weights of that row)
    variance = (p / (1 - p) * plain_weights[..., -1, :].pow(2).sum(-1)).mean().item()
    standard_error = math.sqrt(variance / last_row.numel())
    exactly_one = (sums - 1).abs().lt(1e-6).float().mean().item()
    all_kept = (sums - 1 / (1 - p)).abs().lt(1e-5).float().mean().item()
    # a row sums to 1/(1 - p) when none of its weights was dropped: query i sees i + 1 keys
    expected = ((1 - p) ** torch.arange(1, tokens + 1, dtype=torch.float64)).mean().item()
    expected_error = math.sqrt(expected * (1 - expected) / sums.numel())
    rows = [[phrase("first (1 key)"), first_row.mean().item(), first_row.std().item()],
            [phrase(f"last ({tokens} keys)"), mean, spread]]
    print_table(["row", "mean sum over draws", "std of the sum"], rows, ["", ".4f", ".4f"])
    print(f"rows (every draw, head and query) whose weights sum to 1 within 1e-6: {exactly_one:.4f}; to "
          f"1/(1 - p): {all_kept:.4f}; chance that none of a row's weights is dropped: {expected:.4f}")
    print()
    nothing_dropped_as_predicted = abs(all_kept - expected) < 5 * expected_error + 1e-9
    exp.claim(abs(mean - 1) < 5 * standard_error and exactly_one < 0.01 and nothing_dropped_as_predicted,
              f"row sums scatter around 1 (last row: mean {mean:.4f}, within 5 standard errors of 1; std "
              f"{spread:.3f}, expected {math.sqrt(variance):.3f}); {exactly_one:.4f} of the rows sum to 1, "
              f"and a row with nothing dropped sums to 1/(1 - p) ({all_kept:.3f} of the rows, "
              f"expected {expected:.3f})")
    return last_row


def the_identity_in_eval(exp, p: float, tokens: int) -> None:
    """A layer built with dropout, in eval mode, equals one built without."""
    config = mm.MiniMindConfig(hidden_size=HEADS * HEAD_DIM, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                               num_hidden_layers=1, vocab_size=8, dropout=p)
    with_dropout = mm.MiniMindForCausalLM(config).eval()
    without = mm.MiniMindForCausalLM(config.replace(dropout=0.0)).eval()
    without.load_state_dict(with_dropout.state_dict())
    ids = torch.randint(0, 8, (2, tokens))
    with torch.no_grad():
        eval_equal = torch.equal(with_dropout(ids).logits, without(ids).logits)
        with_dropout.train()
        train_differs = not torch.allclose(with_dropout(ids).logits, without(ids).logits)
    exp.claim(eval_equal and train_differs,
              f"in eval a model built with dropout {p} gives exactly the logits of one built without it "
              f"(in training they differ)")



def the_mask_from_a_seed(exp, q, k, v, plain_weights, p: float, tokens: int):
    """Regenerate the mask from its seed instead of storing it; returns the inputs that carry grads."""
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    out_g, _ = attention(qg, kg, vg, p, seed=123)
    upstream = torch.randn_like(out_g)
    out_g.backward(upstream)
    # the backward by hand, the mask redrawn from the same seed (its weights are dropped ones)
    _, redrawn = attention(q, k, v, p, seed=123)
    mask = (redrawn != 0).to(q.dtype) / (1 - p)
    grad_v = (plain_weights * mask).transpose(-2, -1) @ upstream
    d_weights = (upstream @ v.transpose(-2, -1)) * mask  # through the dropout
    d_scores = plain_weights * (d_weights - (d_weights * plain_weights).sum(-1, keepdim=True))
    grad_q = d_scores @ k / math.sqrt(HEAD_DIM)
    regenerated = torch.allclose(grad_v, vg.grad, atol=1e-5) and torch.allclose(grad_q, qg.grad, atol=1e-5)
    mask_bytes = redrawn.numel()  # one byte per weight as a bool mask
    exp.claim(regenerated,
              f"the same seed redraws the same mask: the backward pass rebuilt from it gives autograd's "
              f"dq and dv, keeping a seed (8 bytes) instead of a {mask_bytes:,}-byte bool mask "
              f"(B x H x T x S = 1 x {HEADS} x {tokens} x {tokens})")
    return qg, kg, vg


def what_sdpa_keeps_for_backward(q, qg, kg, vg, p: float) -> None:
    """What torch's SDPA keeps on this machine for the backward pass, with and without dropout."""
    stored = {}
    for name, drop in (("no dropout", 0.0), (f"dropout {p}", p)):
        kept_bytes = []

        def pack(t, kept_bytes=kept_bytes):
            kept_bytes.append(t.untyped_storage().nbytes())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            F.scaled_dot_product_attention(qg, kg, vg, is_causal=True, dropout_p=drop)
        stored[name] = sum(kept_bytes)
    print(f"torch's SDPA on {q.device.type}: bytes saved for the backward pass, "
          f"no dropout {stored['no dropout']:,}, dropout {p} {stored[f'dropout {p}']:,}")
    print()



def draw_row_sums(exp, last_row: torch.Tensor, p: float, draws: int) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.hist(last_row.numpy(), bins=40, color="tab:blue")
    ax.axvline(1.0, color="black", ls="--", label="1: the sum without dropout")
    ax.set(title=f"sum of the last row's weights after dropout p = {p}, {draws} draws x {HEADS} heads",
           xlabel="row sum", ylabel="count")
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "row_sums")


if __name__ == "__main__":
    raise SystemExit(main())
