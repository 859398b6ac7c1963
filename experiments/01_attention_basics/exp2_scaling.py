"""Dividing the scores by sqrt(d_k) keeps softmax attention trainable at every head size: without
it, the variance of q . k grows like d_k, the softmax saturates to a near one-hot row and the
gradient through it vanishes.

For a query and a key with independent unit-variance entries, q . k is a sum of d_k independent
products of variance 1, so Var(q . k) = d_k, and Var(q . k / sqrt(d_k)) = 1. This script draws
many queries, each against S keys, for head sizes d_k = 4, 8, ..., 1024, and runs
minimind_ref.scaled_dot_product_attention with scale=1 (unscaled) and with its default
1/sqrt(d_k) (scaled). It measures the score variance, the entropy of each row of attention
weights (log S when uniform, 0 when one-hot), the largest weight of each row, and, with autograd,
the size of the gradient that flows back through the softmax to the scores it was given.

Why it matters: a saturated softmax hands almost no gradient back, so the queries and keys of a
large unscaled head would barely learn. The mean gradient hides this (a few rows with two nearly
tied scores keep it up); the median, the typical query, shows it.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, int_in, print_table
from minimind_ref import scaled_dot_product_attention

SIGMAS = 5  # a sample mean further than 5 standard errors from its expectation: odds ~1 in 3.5 million
MIN_MAX_DK = 256  # the saturation claims need a large head: unscaled logits with std >= 16
CHUNK_ELEMENTS = 1 << 21  # keys drawn per chunk (queries x keys x d_k), to bound memory at 8 MiB
MAX_DK = 16384  # 16 times the default largest head: the time grows with the sum of the head sizes
MAX_WORK = 2 ** 31  # queries x keys x max d_k; the defaults' is 2**26


def add_arguments(parser):
    parser.add_argument("--min-dk", type=int_in(1, MAX_DK), default=4,
                        help="smallest head size d_k, a power of two (default 4)")
    parser.add_argument("--max-dk", type=int_in(MIN_MAX_DK, MAX_DK), default=1024,
                        help=f"largest head size d_k, a power of two >= {MIN_MAX_DK} (default 1024)")
    parser.add_argument("--keys", type=int_in(2, 1024), default=32, help="keys per query, S (default 32)")
    parser.add_argument("--queries", type=int_in(100, 65536), default=2048,
                        help="independent queries (rows of attention weights) per head size (default 2048)")


def check_arguments(args):
    if any(n & (n - 1) for n in (args.min_dk, args.max_dk)) or args.min_dk > args.max_dk:
        return (f"--min-dk and --max-dk must be powers of two with --min-dk <= --max-dk, "
                f"got {args.min_dk} and {args.max_dk}")
    work = args.queries * args.keys * args.max_dk
    if work > MAX_WORK:
        return (f"--queries x --keys x --max-dk must be at most {MAX_WORK} (2**31, 32 times the defaults' "
                f"work: about a minute), got {args.queries} x {args.keys} x {args.max_dk} = {work}")
    return None


def head_sizes(min_dk: int, max_dk: int) -> list[int]:
    sizes, d = [], min_dk
    while d <= max_dk:
        sizes.append(d)
        d *= 2
    return sizes


def variance_standard_error(d: int, keys: int, queries: int) -> float:
    """Standard error of mean((q . k)^2) / d over `queries` rows of `keys` scores each.

    Given q, the scores of one row are independent N(0, |q|^2), and |q|^2 is chi-squared with d
    degrees of freedom (mean d, variance 2d). Hence E[s^4] = 3 E[|q|^4] = 3 (d^2 + 2d), so
    Var(s^2) = 2 d^2 + 6 d, and two scores of the same row share q: Cov(s1^2, s2^2) = Var(|q|^2)
    = 2d. The mean of one row's s^2 / d then has variance ((2 + 6/d) + 2 (S - 1) / d) / S, and
    rows are independent.
    """
    row_variance = ((2 + 6 / d) + 2 * (keys - 1) / d) / keys
    return math.sqrt(row_variance / queries)


def softmax_gradient_norms(logits: torch.Tensor) -> torch.Tensor:
    """|dL/dlogits| per row for L = sum_j c_j softmax(logits)_j with random upstream c ~ N(0, 1):
    what a row of attention scores receives in the backward pass (c plays the role of V g)."""
    logits = logits.detach().requires_grad_(True)
    weights = torch.softmax(logits, dim=-1)
    upstream = torch.randn_like(weights)
    (weights * upstream).sum().backward()
    return logits.grad.norm(dim=-1)  # [rows]


def measure(d: int, keys: int, queries: int) -> dict:
    """Draw `queries` queries with `keys` keys each, head size d, and measure both scalings."""
    rows_per_chunk = max(1, CHUNK_ELEMENTS // (keys * d))
    sum_sq = 0.0
    stats = {name: {"entropy": [], "max_weight": [], "grad": []} for name in ("unscaled", "scaled")}
    softmax_vs_attention = 0.0
    done = 0
    while done < queries:
        n = min(rows_per_chunk, queries - done)
        q = torch.randn(n, 1, 1, d)  # [B=n, H=1, T=1, D]: one query per batch entry
        k = torch.randn(n, 1, keys, d)  # [B, H, S, D]
        scores = (q @ k.transpose(-2, -1))[:, 0, 0]  # [n, S]: raw q . k, mean 0
        sum_sq += scores.double().pow(2).sum().item()
        for name, scale in (("unscaled", 1.0), ("scaled", 1.0 / math.sqrt(d))):
            # the course's attention; v = k since only the weights are studied here
            _, weights = scaled_dot_product_attention(
                q, k, k, scale=None if name == "scaled" else scale, return_weights=True)
            weights = weights[:, 0, 0]  # [n, S]
            stats[name]["entropy"].append(torch.special.entr(weights).sum(-1))  # -sum p log p, 0 log 0 = 0
            stats[name]["max_weight"].append(weights.max(-1).values)
            stats[name]["grad"].append(softmax_gradient_norms(scores * scale))
            softmax_vs_attention = max(softmax_vs_attention,
                                       (torch.softmax(scores * scale, -1) - weights).abs().max().item())
        done += n
    result = {"variance": sum_sq / (queries * keys), "softmax_vs_attention": softmax_vs_attention}
    for name, columns in stats.items():
        entropy, max_weight, grad = (torch.cat(columns[c]) for c in ("entropy", "max_weight", "grad"))
        result[name] = {"entropy": entropy.mean().item(), "max_weight": max_weight.mean().item(),
                        "grad_median": grad.median().item(), "grad_mean": grad.mean().item()}
    return result


def plot(sizes, results, keys):
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    colors = {"unscaled": "tab:red", "scaled": "tab:blue"}
    labels = {"unscaled": "unscaled  q . k", "scaled": "scaled  q . k / sqrt(d_k)"}

    ax = axes[0]
    ax.loglog(sizes, [r["variance"] for r in results], "o-", color=colors["unscaled"], label=labels["unscaled"])
    ax.loglog(sizes, [r["variance"] / d for r, d in zip(results, sizes)], "s-", color=colors["scaled"],
              label=labels["scaled"])
    ax.loglog(sizes, sizes, ":", color="gray", label="d_k")
    ax.axhline(1.0, ls="--", color="gray", lw=1, label="1")
    ax.set(title="score variance", xlabel="head size d_k", ylabel="Var(score)")
    ax.legend(fontsize=8)

    ax = axes[1]
    for name in ("unscaled", "scaled"):
        ax.semilogx(sizes, [r[name]["entropy"] for r in results], "o-", color=colors[name], label=labels[name])
    ax.axhline(math.log(keys), ls="--", color="gray", lw=1, label=f"log S (uniform over {keys} keys)")
    ax.set(title="mean entropy of a row of weights", xlabel="head size d_k", ylabel="entropy (nats)",
           ylim=(0, None))
    ax.legend(fontsize=8)

    ax = axes[2]
    for name in ("unscaled", "scaled"):
        ax.loglog(sizes, [r[name]["grad_median"] for r in results], "o-", color=colors[name],
                  label=f"{name}: median")
        ax.loglog(sizes, [r[name]["grad_mean"] for r in results], "--", color=colors[name], alpha=0.6,
                  label=f"{name}: mean")
    ax.set(title="gradient reaching the scores", xlabel="head size d_k", ylabel="|dL / d logits| per row")
    ax.legend(fontsize=8)
    for ax in axes:
        ax.set_xticks(sizes, [str(d) for d in sizes], fontsize=7)
        ax.minorticks_off()
    fig.suptitle("Why attention divides by sqrt(d_k)")
    fig.tight_layout()
    return fig


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    sizes = head_sizes(args.min_dk, args.max_dk)
    keys, queries = args.keys, args.queries
    results = [measure(d, keys, queries) for d in sizes]
    errors = [variance_standard_error(d, keys, queries) for d in sizes]
    print_measurements(sizes, results, errors, keys, queries)
    claim_variance(exp, sizes, results, errors)
    claim_saturation(exp, sizes, results, keys)
    claim_gradient(exp, sizes, results)
    exp.save(plot(sizes, results, keys), "variance_entropy_gradient")
    return exp.finish()


def print_measurements(sizes: list[int], results: list[dict], errors: list[float], keys: int, queries: int) -> None:
    print(f"{queries} queries x {keys} keys per head size; q, k entries i.i.d. N(0, 1); "
          f"log S = {math.log(keys):.3f}")
    print()
    rows = []
    for d, r, se in zip(sizes, results, errors):
        u, s = r["unscaled"], r["scaled"]
        rows.append([d, r["variance"], r["variance"] / d, SIGMAS * se,
                     u["entropy"], s["entropy"], u["max_weight"], s["max_weight"],
                     u["grad_median"], s["grad_median"]])
    print_table(
        ["d_k", "Var(q.k)", "Var/d_k", f"+-{SIGMAS} SE", "H unscaled", "H scaled",
         "max w unsc.", "max w sc.", "|grad| unsc.", "|grad| sc."],
        rows, ["d", ".1f", ".3f", ".3f", ".3f", ".3f", ".3f", ".3f", ".2e", ".2e"])
    print()
    print("Var/d_k is also the variance of the scaled scores q.k / sqrt(d_k). H: mean entropy of a row "
          "of weights;\nmax w: mean largest weight; |grad|: median over rows of |dL/d logits| "
          "(the mean is in the figure).")
    print(f"torch.softmax(scale * q.k) reproduces minimind_ref's attention weights: max difference "
          f"{max(r['softmax_vs_attention'] for r in results):.1e}")
    print()



def claim_variance(exp, sizes: list[int], results: list[dict], errors: list[float]) -> None:
    """The variance: exactly d_k in expectation, so the sample must be within a few standard errors."""
    deviations = [abs(r["variance"] / d - 1) / se for d, r, se in zip(sizes, results, errors)]
    exp.claim(max(deviations) <= SIGMAS,
              f"Var(q.k) = d_k and Var(q.k / sqrt(d_k)) = 1 at every d_k from {sizes[0]} to {sizes[-1]}: "
              f"the largest deviation of Var/d_k from 1 is {max(deviations):.1f} standard errors "
              f"(allowed {SIGMAS})")



def claim_saturation(exp, sizes: list[int], results: list[dict], keys: int) -> None:
    """Unscaled logits have std sqrt(d_k) >= 16 at the largest head: the top score typically leads
    the next by several units, so the row is nearly one-hot."""
    log_s = math.log(keys)
    last = results[-1]
    unscaled_h = last["unscaled"]["entropy"]
    exp.claim(unscaled_h < 0.10 * log_s,
              f"unscaled, the softmax saturates: at d_k = {sizes[-1]} the mean entropy is {unscaled_h:.3f} "
              f"nats, {100 * unscaled_h / log_s:.1f}% of log S = {log_s:.3f} (must be < 10%), and the mean "
              f"largest weight is {last['unscaled']['max_weight']:.3f}")
    scaled_h = [r["scaled"]["entropy"] for r in results]
    h_spread = max(abs(h / scaled_h[0] - 1) for h in scaled_h)
    exp.claim(h_spread < 0.05,
              f"scaled, the entropy stays put: {min(scaled_h):.3f} to {max(scaled_h):.3f} nats at every d_k, "
              f"within {100 * h_spread:.1f}% of its d_k = {sizes[0]} value (must be within 5%)")



def claim_gradient(exp, sizes: list[int], results: list[dict]) -> None:
    """The gradient through the softmax: diag(p) - p p^T, which vanishes as p becomes one-hot."""
    first, last = results[0], results[-1]
    g_unscaled = first["unscaled"]["grad_median"] / last["unscaled"]["grad_median"]
    exp.claim(g_unscaled > 10,
              f"unscaled, the gradient vanishes: the median |dL/d logits| falls {g_unscaled:.0f}-fold from "
              f"d_k = {sizes[0]} to d_k = {sizes[-1]} (must fall more than 10-fold)")
    scaled_g = [r["scaled"]["grad_median"] for r in results]
    g_scaled = max(scaled_g) / min(scaled_g)
    exp.claim(g_scaled < 1.25,
              f"scaled, the gradient keeps its size: the median |dL/d logits| stays between "
              f"{min(scaled_g):.3f} and {max(scaled_g):.3f} (a factor {g_scaled:.2f}, must be below 1.25)")



if __name__ == "__main__":
    raise SystemExit(main())
