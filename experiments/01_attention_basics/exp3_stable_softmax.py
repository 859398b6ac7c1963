"""Softmax written naively, exp(x) / sum(exp(x)), overflows once the largest logit passes
ln(largest number of the dtype); subtracting the row's maximum first gives the same weights and
never overflows.

Softmax does not change when the same number is subtracted from every logit, so the stable form
computes exp(x - max(x)): every exponent is then <= 0 and every exp lies in (0, 1]. The naive
form computes exp(x) itself, which is inf once x > ln(finfo.max): 11.09 in float16, 88.72 in
float32 and bfloat16, 709.78 in float64. For each dtype this script finds, by bisection over the
dtype's own numbers, the smallest largest-logit x of the row [x, x - 1, 0] at which the naive form
returns inf or NaN, and compares it with that prediction. It also finds where the naive form
first goes wrong without saying so (the sum overflows first, and every weight comes out 0), shows
the opposite failure (all logits near -1000: every exp underflows to 0, and 0 / 0 = NaN), and
checks the stable form against torch.softmax in float64 on the same inputs, from huge negative
logits to finfo.max / 4.

Why it matters: attention scores are logits. With the naive form, one score above 11.09 in a
float16 model would turn its whole row of attention into NaN. torch.softmax, which minimind_ref's
attention calls, shifts by the maximum, and so does FlashAttention with its running maximum
(module 08).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, float_in, int_in, print_table
from minimind_ref import scaled_dot_product_attention

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
        torch.float64: torch.int64}  # same width: the bit patterns of the dtype's numbers
ROW_LENGTH = 3


def add_arguments(parser):
    parser.add_argument("--points", type=int_in(10, 100_000), default=400,
                        help="logits per dtype on the scan drawn in the figure (default 400)")
    # float16 must still hold LOW - 2: LOW above -finfo(float16).max / 2 = -32752
    parser.add_argument("--low", type=float_in(-32752.0, -1.0, low_open=True, high_open=True), default=-1000.0,
                        help="the logits of the underflow example sit at LOW, LOW - 1, LOW - 2, "
                             "between -32752 and -1 (default -1000)")


# ------------------------------------------------------------------------------ the two forms


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """exp(x) / sum(exp(x)) over the last dimension, computed in x's dtype."""
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def stable_softmax(x: torch.Tensor) -> torch.Tensor:
    """The same after subtracting each row's maximum: exponents <= 0, so exp never overflows and
    the largest term is exactly exp(0) = 1, so the sum is never 0."""
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def reference(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax in float64 of the very same (already rounded) logits."""
    return torch.softmax(x.double(), dim=-1)


def tolerance(dtype: torch.dtype) -> float:
    """How far a correctly computed softmax may be from the exact one. Each weight of a row of n
    passes through n + 2 roundings of at most eps/2 each (the shift, its exp, n - 1 additions,
    the division), so its relative, hence absolute, error is at most (n + 2) eps / 2."""
    return (ROW_LENGTH + 2) * torch.finfo(dtype).eps / 2


def max_error(softmax, rows: torch.Tensor) -> torch.Tensor:
    """Per row: the largest |softmax - reference|, inf where the result is not finite. [rows]"""
    out = softmax(rows).double()
    error = (out - reference(rows)).abs().amax(dim=-1)
    return torch.where(torch.isfinite(out).all(dim=-1), error, torch.full_like(error, math.inf))


def large_rows(x: torch.Tensor) -> torch.Tensor:
    """[x, x - 1, 0] per x, in x's dtype: the largest logit is x. [N, 3]"""
    return torch.stack([x, x - 1, torch.zeros_like(x)], dim=-1)


def low_rows(x: torch.Tensor) -> torch.Tensor:
    """[x, x - 1, x - 2] per x: a whole row of equally negative logits. [N, 3]"""
    return torch.stack([x, x - 1, x - 2], dim=-1)


# ------------------------------------------------------------------------------ bisection


def as_bits(value: float, dtype: torch.dtype) -> int:
    return torch.tensor([value], dtype=dtype).view(BITS[dtype]).item()


def from_bits(bits: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor([bits], dtype=BITS[dtype]).view(dtype)  # [1]


def first_failure(dtype: torch.dtype, fails, below: float, above: float) -> tuple[float, float]:
    """The smallest positive x of `dtype` in (below, above] at which fails(x) holds, found by
    bisection over the bit patterns (for positive floats they are in the same order as the
    numbers, so neighbouring patterns are neighbouring numbers). Returns (x, the step from the
    number just below x to x)."""
    lo, hi = as_bits(below, dtype), as_bits(above, dtype)
    if fails(from_bits(lo, dtype)) or not fails(from_bits(hi, dtype)):
        raise RuntimeError(f"first_failure: no change between {below} and {above} in {dtype}.")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(from_bits(mid, dtype)):
            hi = mid
        else:
            lo = mid
    x = from_bits(hi, dtype).item()
    return x, x - from_bits(lo, dtype).item()


def fmt_row(values: torch.Tensor, digits: int = 3) -> str:
    return "[" + ", ".join(f"{v:.{digits}g}" for v in values.double().tolist()) + "]"


# ------------------------------------------------------------------------------ the figure


def plot(scans):
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    top = 10.0  # where inf and NaN are drawn
    for ax, (name, scan) in zip(axes.ravel(), scans.items()):
        floor = torch.finfo(DTYPES[name]).eps / 1000  # smaller errors (exact zeros too) drawn here
        x = scan["x"].double().numpy()
        for label, errors, style in (("naive", scan["naive"], dict(color="tab:red", lw=1.2)),
                                     ("stable", scan["stable"], dict(color="tab:blue", lw=1.2))):
            finite = torch.isfinite(errors)
            shown = errors.clamp(min=floor).where(finite, torch.full_like(errors, math.nan))
            ax.semilogy(x, shown.numpy(), label=f"{label}: max error", **style)
            if (~finite).any():
                ax.semilogy(x[~finite.numpy()], [top] * int((~finite).sum()), "x", ms=4,
                            color=style["color"], label=f"{label}: inf or NaN (drawn at {top:g})")
        ax.axvline(scan["predicted"], color="black", lw=1, label="predicted: ln(finfo.max)")
        ax.axvline(scan["silent"], color="black", lw=1, ls=":",
                   label="predicted: sum overflows, all weights 0")
        ax.axhline(scan["tolerance"], color="gray", lw=0.8, ls="--", label="tolerance (n + 2) eps / 2")
        ax.set(title=f"{name}: ln(max) = {scan['predicted']:.2f}", ylim=(floor / 3, top * 10),
               xlabel="largest logit x of the row [x, x-1, 0]", ylabel="max |softmax - reference|")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle("Naive vs stable softmax against torch.softmax in float64 (errors below eps/1000 "
                 "drawn at eps/1000)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# ------------------------------------------------------------------------------ main


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    found = {name: measure_dtype(name, dtype, args.points, args.low) for name, dtype in DTYPES.items()}
    print_overflow(found)
    print_underflow(found, args.low)
    attention_error = check_the_course_attention(args.low)
    claim_softmax(exp, found, args.low, attention_error)
    exp.save(plot({name: result["scan"] for name, result in found.items()}), "overflow")
    return exp.finish()


def measure_dtype(name: str, dtype: torch.dtype, points: int, low_logit: float) -> dict:
    """Where the naive softmax fails loudly (inf/NaN) and silently (wrong weights) in one dtype,
    against the predictions; the stable form's worst error over every tested row; and the naive
    form's NaN when every exp underflows, against the prediction."""
    info = torch.finfo(dtype)
    predicted = math.log(info.max)  # exp(x) > finfo.max beyond this x
    silent = predicted - math.log1p(math.exp(-1))  # e^x + e^(x-1) = e^x (1 + 1/e) > finfo.max
    tol = tolerance(dtype)

    def returns_inf_or_nan(x):
        return not bool(torch.isfinite(naive_softmax(large_rows(x))).all())

    def is_wrong(x):
        return bool(max_error(naive_softmax, large_rows(x)).max() > tol)

    measured, step = first_failure(dtype, returns_inf_or_nan, predicted / 2, predicted * 2)
    measured_silent, step_silent = first_failure(dtype, is_wrong, predicted / 2, predicted * 2)
    at = large_rows(torch.tensor([measured], dtype=dtype))
    just_before = large_rows(torch.tensor([measured_silent], dtype=dtype))

    # Every tested logit for the stable form: the scan of the figure, then powers of ten up to
    # finfo.max / 4 (positive for [x, x-1, 0], negative for [x, x-1, x-2]).
    scan_x = torch.linspace(0.0, 1.5 * predicted, points, dtype=torch.float64).to(dtype)
    decades = torch.logspace(0, math.log10(info.max / 4), 60, dtype=torch.float64).to(dtype)
    tested = torch.cat([large_rows(scan_x), large_rows(decades), low_rows(-decades), low_rows(-scan_x)])

    low = low_rows(torch.tensor([low_logit], dtype=dtype))
    smallest = info.smallest_normal * info.eps  # the smallest subnormal number
    # exp(x) rounds to 0 when e^x is below half the smallest subnormal: then 0 / 0 = NaN
    predicted_nan = low.max().item() < math.log(smallest) - math.log(2)
    return {
        "loud": (abs(measured - predicted) <= step, measured, predicted, step),
        "silent": (abs(measured_silent - silent) <= step_silent, measured_silent, silent, step_silent),
        "overflow_row": [name, predicted, measured, step, fmt_row(naive_softmax(at)[0]),
                         fmt_row(stable_softmax(at)[0])],
        "silent_row": [name, silent, measured_silent, fmt_row(naive_softmax(just_before)[0]),
                       fmt_row(reference(just_before)[0])],
        "stable_worst": (max_error(stable_softmax, tested).max().item(), tol, len(tested)),
        "scan": {"x": scan_x, "naive": max_error(naive_softmax, large_rows(scan_x)),
                 "stable": max_error(stable_softmax, large_rows(scan_x)), "predicted": predicted,
                 "silent": silent, "tolerance": tol},
        "underflow_nan": (bool(torch.isnan(naive_softmax(low)).any()) == predicted_nan, predicted_nan,
                          float(max_error(stable_softmax, low).max()) <= tol),
        "underflow_row": [name, fmt_row(low[0], 6), math.log(smallest), fmt_row(naive_softmax(low)[0]),
                          fmt_row(stable_softmax(low)[0]), fmt_row(reference(low)[0])],
    }


def print_overflow(found: dict) -> None:
    print("Overflow: rows [x, x-1, 0]. The naive form returns inf/NaN from x = ln(finfo.max) on; "
          "'step' is the dtype's spacing there.")
    print()
    print_table(["dtype", "predicted ln(max)", "measured", "step", "naive at measured", "stable at measured"],
                [result["overflow_row"] for result in found.values()], ["", ".6f", ".6f", ".2g", "", ""])
    print()
    print("It fails silently a little earlier: e^x + e^(x-1) overflows from x = ln(max) - ln(1 + 1/e), "
          "and every weight becomes 0.")
    print()
    print_table(["dtype", "predicted", "measured", "naive there", "float64 reference"],
                [result["silent_row"] for result in found.values()], ["", ".6f", ".6f", "", ""])
    print()


def print_underflow(found: dict, low_logit: float) -> None:
    print(f"Underflow: all logits near {low_logit:g}. exp rounds to 0 below ln(smallest subnormal / 2), "
          "so the naive form computes 0 / 0.")
    print()
    for name, dtype in DTYPES.items():
        stored = low_rows(torch.tensor([low_logit], dtype=dtype))[0].double()
        intended = torch.tensor([low_logit, low_logit - 1, low_logit - 2], dtype=torch.float64)
        if not torch.equal(stored, intended):
            near = as_bits(abs(low_logit), dtype)
            spacing = from_bits(near + 1, dtype).item() - from_bits(near, dtype).item()
            print(f"({name} cannot store these logits exactly: its numbers near {abs(low_logit):g} are "
                  f"{spacing:g} apart.)\n")
    print_table(["dtype", "logits as stored", "ln(smallest subnormal)", "naive", "stable", "float64 reference"],
                [result["underflow_row"] for result in found.values()], ["", "", ".2f", "", "", ""])
    print()


def check_the_course_attention(low_logit: float) -> float:
    """The course's attention on the same logits as the scores of one query (q = the logits, k = the
    identity, scale 1, so q k^T = the logits). It calls torch.softmax, which shifts by the max."""
    logits = torch.tensor([[1000.0, 999.0, 0.0], [low_logit, low_logit - 1, low_logit - 2]])  # float32
    _, weights = scaled_dot_product_attention(logits[None, :, None, :], torch.eye(3).expand(1, 2, 3, 3),
                                              torch.eye(3).expand(1, 2, 3, 3), scale=1.0, return_weights=True)
    weights = weights[0, :, 0]  # [2 rows, 3]
    attention_error = (weights.double() - reference(logits)).abs().max().item()
    print(f"minimind_ref.scaled_dot_product_attention, float32 scores {fmt_row(logits[0], 6)} and "
          f"{fmt_row(logits[1], 6)}:")
    print(f"  weights {fmt_row(weights[0])} and {fmt_row(weights[1])} (naive float32: "
          f"{fmt_row(naive_softmax(logits[0]))} and {fmt_row(naive_softmax(logits[1]))})")
    print()
    return attention_error


def claim_softmax(exp, found: dict, low_logit: float, attention_error: float) -> None:
    loud_ok = {name: result["loud"] for name, result in found.items()}
    silent_ok = {name: result["silent"] for name, result in found.items()}
    stable_worst = {name: result["stable_worst"] for name, result in found.items()}
    underflow_nan = {name: result["underflow_nan"] for name, result in found.items()}
    exp.claim(all(ok for ok, *_ in loud_ok.values()),
              "the naive softmax first returns inf/NaN at the predicted x = ln(finfo.max), within one step "
              "of the dtype's numbers: " + "; ".join(
                  f"{n} {m:.4f} vs {p:.4f} (step {s:.2g})" for n, (_, m, p, s) in loud_ok.items()))
    exp.claim(all(ok for ok, *_ in silent_ok.values()),
              "before that it is silently wrong, from x = ln(finfo.max) - ln(1 + 1/e) where the sum overflows, "
              "within one step: " + "; ".join(
                  f"{n} {m:.4f} vs {p:.4f}" for n, (_, m, p, _s) in silent_ok.items()))
    exp.claim(all(worst <= tol for worst, tol, *_ in stable_worst.values()),
              "the stable form matches torch.softmax in float64 on every tested row, logits from "
              "-finfo.max/4 to +finfo.max/4: " + "; ".join(
                  f"{n} max error {w:.1e} <= {t:.1e} ({k} rows)" for n, (w, t, k) in stable_worst.items()))
    nan_dtypes = [n for n, (_, predicted_nan, _) in underflow_nan.items() if predicted_nan]
    exp.claim(all(as_predicted and ok for as_predicted, _, ok in underflow_nan.values()),
              f"with all logits near {low_logit:g}, the naive form gives NaN (0 / 0) exactly where every exp "
              f"underflows, x < ln(smallest subnormal / 2): in {', '.join(nan_dtypes) or 'no dtype'}; "
              f"the stable form gives the right weights in all four dtypes")
    exp.claim(attention_error <= tolerance(torch.float32),
              f"minimind_ref's attention, which softmaxes with torch.softmax, gets both float32 rows right "
              f"(max error {attention_error:.1e})")


if __name__ == "__main__":
    raise SystemExit(main())
