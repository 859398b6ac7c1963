"""-inf, -1e9 and torch.finfo(dtype).min hide a key equally well while its row has a visible key,
and fail differently when a row has none: -inf gives NaN, a finite fill spreads the whole row over
keys it must not see, -1e9 is -inf in float16, and two finfo.min masks added overflow to -inf.

A mask hides key j from query i by replacing score s_ij (or adding to it) with a very negative
number before the softmax. This script measures, in float32, float16 and bfloat16, what each of
three common fills becomes in the dtype; the largest weight a hidden key gets in rows that keep a
visible key (many random rows); what the softmax returns for a row whose keys are all hidden; what
adding two masks (a causal and a padding mask, each with the fill) gives; and below which score
finfo.min + score itself overflows to -inf. It ends with what minimind_ref's attention and torch's
fused kernel do with a bool mask on a left-padded causal batch, where such empty rows occur.

Why it matters: an empty row is normal (the pad queries of a left-padded batch see nothing under
a causal + padding mask). NaN there is not contained: the next layer multiplies it by a weight of
0, and 0 x NaN = NaN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from labkit import Experiment, float_in, int_in, print_table, show_heatmaps
from labkit.i18n import phrase
from minimind_ref import combined_mask, scaled_dot_product_attention

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16}
FILLS = ("-inf", "-1e9", "finfo.min")


def add_arguments(parser):
    parser.add_argument("--rows", type=int_in(1, 200_000), default=2000,
                        help="random rows with at least one visible key, per dtype and fill (default 2000)")
    parser.add_argument("--keys", type=int_in(2, 4096), default=8, help="keys per row (default 8)")
    parser.add_argument("--spread", type=float_in(0.0, 1e4, low_open=True), default=8.0,
                        help="standard deviation of the random scores (default 8)")


MAX_SCORES = 2 ** 23  # --rows x --keys float64 scores (64 MiB), copied for every dtype and fill


def check_arguments(args):
    if args.rows * args.keys > MAX_SCORES:
        return (f"--rows x --keys must be at most {MAX_SCORES}, got {args.rows} x {args.keys} = "
                f"{args.rows * args.keys}")
    return None


def fill_value(name: str, dtype: torch.dtype) -> float:
    return {"-inf": -math.inf, "-1e9": -1e9, "finfo.min": torch.finfo(dtype).min}[name]


def as_dtype(value: float, dtype: torch.dtype) -> torch.Tensor:
    """The number a fill becomes once it is stored in `dtype` (a conversion rounds, never raises)."""
    return torch.tensor(value, dtype=torch.float64).to(dtype)  # 0-d


def hide(scores: torch.Tensor, visible: torch.Tensor, fill: torch.Tensor) -> torch.Tensor:
    """Scores with the hidden ones replaced by the fill, in the scores' dtype."""
    return torch.where(visible, scores, fill)


def masked_fill_works(name: str, dtype: torch.dtype) -> str:
    """Does scores.masked_fill(hidden, fill) accept the fill as a Python number?"""
    try:
        torch.zeros(2, dtype=dtype).masked_fill(torch.tensor([True, False]), fill_value(name, dtype))
        return "ok"
    except RuntimeError as error:
        return "RuntimeError: overflow" if "overflow" in str(error) else f"RuntimeError: {error}"


def describe_row(weights: torch.Tensor) -> str:
    """A softmax row in a few words: NaN, an even spread, or the weights themselves."""
    w = weights.double()
    if torch.isnan(w).any():
        return "NaN"
    n = w.numel()
    if torch.allclose(w, torch.full_like(w, 1 / n), atol=1e-3):
        return phrase(f"even, 1/{n} each")
    return "[" + ", ".join(f"{v:.2g}" for v in w.tolist()) + "]"


def overflow_threshold(dtype: torch.dtype) -> tuple[float, float]:
    """(measured, predicted): the score s closest to 0 for which finfo.min + s rounds to -inf.

    Predicted: half the gap between finfo.max and the number below it (round to nearest). For
    16-bit dtypes the measurement tries every negative number of the dtype; for float32 it checks
    the predicted value and its neighbour towards 0."""
    info = torch.finfo(dtype)
    if dtype in BITS:  # the number just below max: its bit pattern is one less
        below_max = (torch.tensor(info.max, dtype=dtype).view(BITS[dtype]) - 1).view(dtype).item()
    else:
        below_max = torch.nextafter(torch.tensor(info.max, dtype=dtype), torch.tensor(0.0, dtype=dtype)).item()
    predicted = -(info.max - below_max) / 2
    lowest = torch.tensor(info.min, dtype=dtype)
    if dtype in BITS:
        patterns = torch.arange(-(2 ** 15), 0, dtype=torch.int32).to(BITS[dtype])  # sign bit set
        s = patterns.view(dtype)
        s = s[torch.isfinite(s) & (s < 0)]
        overflows = torch.isneginf(lowest + s)
        measured = s[overflows].max().item()
    else:
        s = torch.tensor(predicted, dtype=dtype)
        towards_zero = torch.nextafter(s, torch.tensor(0.0, dtype=dtype))
        ok = bool(torch.isneginf(lowest + s)) and bool(torch.isfinite(lowest + towards_zero))
        measured = s.item() if ok else math.nan
    return measured, predicted


def left_padded_example(generator: torch.Generator):
    """A left-padded batch of one: 2 pads then 3 tokens; q, k, v [1, 1, 5, 4]; mask [1, 1, 5, 5]."""
    attention_mask = torch.tensor([[0, 0, 1, 1, 1]])
    mask = combined_mask(attention_mask, 5, 5)  # causal & padding: pad queries see nothing
    q, k, v = (torch.randn(1, 1, 5, 4, generator=generator) for _ in range(3))
    return q, k, v, mask


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    generator = torch.Generator().manual_seed(args.seed)
    print(f"torch {torch.__version__}; softmax computed in the dtype itself, rows of {args.keys} keys")
    print()
    results = every_fill_in_every_dtype(generator, args.rows, args.keys, args.spread)
    thresholds = where_a_sum_overflows()
    maps, ours_ok, torch_ok = empty_rows_in_attention(generator)
    claim_fills(exp, results, thresholds, ours_ok, torch_ok, args.rows)
    draw_weights(exp, maps)
    return exp.finish()


def every_fill_in_every_dtype(generator, row_count: int, keys: int, spread: float) -> dict:
    """Each fill in each dtype: as stored, through masked_fill, on random rows with a visible key,
    on a row with every key hidden, and with two masks added."""
    rows, results = [], {}
    scores64 = torch.randn(row_count, keys, generator=generator, dtype=torch.float64) * spread
    visible = torch.rand(row_count, keys, generator=generator) < 0.5
    visible[torch.arange(row_count), torch.randint(0, keys, (row_count,), generator=generator)] = True
    for dtype_name, dtype in DTYPES.items():
        scores = scores64.to(dtype)
        for name in FILLS:
            fill = as_dtype(fill_value(name, dtype), dtype)
            weights = torch.softmax(hide(scores, visible, fill), dim=-1)
            leak = weights.masked_fill(visible, 0).sum(-1).max().item()  # weight on hidden keys
            nan_rows = int(torch.isnan(weights).any(-1).sum())
            empty = torch.softmax(torch.full((keys,), fill.item(), dtype=dtype), dim=-1)
            twice = fill + fill  # a causal and a padding mask, both hiding the key, added
            empty_twice = torch.softmax(torch.full((keys,), twice.item(), dtype=dtype), dim=-1)
            results[dtype_name, name] = dict(stored=fill.item(), leak=leak, nan_rows=nan_rows,
                                             empty=describe_row(empty), twice=twice.item(),
                                             empty_twice=describe_row(empty_twice),
                                             masked_fill=masked_fill_works(name, dtype))
            r = results[dtype_name, name]
            rows.append([dtype_name, name, f"{r['stored']:.6g}", r["masked_fill"], r["leak"], r["nan_rows"],
                         r["empty"], f"{r['twice']:.4g}", r["empty_twice"]])
    print_table(["dtype", "fill", "stored as", "masked_fill(fill)", "max hidden weight", "NaN rows",
                 "all keys hidden", "fill + fill", "all hidden, two masks"],
                rows, ["", "", "", "", ".1e", "", "", "", ""])
    print()
    print(f"'max hidden weight' and 'NaN rows': over {row_count} random rows with at least one visible key.")
    print()
    return results


def where_a_sum_overflows() -> dict:
    """finfo.min + s: from which s on it overflows to -inf, measured and predicted, per dtype."""
    thresholds = {name: overflow_threshold(dtype) for name, dtype in DTYPES.items()}
    print("finfo.min + s overflows to -inf once s <= threshold (one mask added to a negative score):")
    print()
    print_table(["dtype", "finfo.min", "measured threshold", "predicted: -(max - next below) / 2"],
                [[n, torch.finfo(DTYPES[n]).min, m, p] for n, (m, p) in thresholds.items()],
                ["", ".5g", ".5g", ".5g"])
    example = torch.tensor([3.0, -20.0, 1.0, -30.0], dtype=torch.float16)
    added = example + torch.finfo(torch.float16).min
    print()
    print(f"float16, every key hidden by adding finfo.min to the scores {example.tolist()}: "
          f"{added.tolist()} -> softmax {describe_row(torch.softmax(added, dim=-1))}")
    print()
    return thresholds


def empty_rows_in_attention(generator):
    """What the course's attention and torch's kernel do where empty rows really occur."""
    maps, ours_ok, torch_ok = [], {}, {}
    q32, k32, v32, mask = left_padded_example(generator)  # the same numbers, rounded to each dtype
    for dtype_name, dtype in DTYPES.items():
        q, k, v = q32.to(dtype), k32.to(dtype), v32.to(dtype)
        empty = ~mask.any(-1)  # [1, 1, 5]: the two pad queries
        out, weights = scaled_dot_product_attention(q, k, v, attn_mask=mask, return_weights=True)
        fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        expected_real = scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
        tol = 50 * torch.finfo(dtype).eps
        ours_ok[dtype_name] = (bool(torch.isfinite(out).all()) and not out[empty].any()
                               and torch.allclose(out.double()[~empty], expected_real[~empty], atol=tol))
        torch_ok[dtype_name] = bool(torch.isfinite(fused).all()) and not fused[empty].any()
        scores = (q @ k.transpose(-2, -1)).float() / 2  # [1, 1, 5, 5], head_dim 4
        for name in FILLS:
            fill = as_dtype(fill_value(name, dtype), dtype)
            maps.append(torch.softmax(hide(scores.to(dtype), mask, fill), dim=-1)[0, 0])
    print("Left-padded batch (2 pads, 3 tokens), causal + padding bool mask, pad queries see no key:")
    print_table(["dtype", "minimind_ref: finite, pad rows 0, real rows right", "torch SDPA: finite, pad rows 0"],
                [[n, ours_ok[n], torch_ok[n]] for n in DTYPES], ["", "", ""])
    print()
    return maps, ours_ok, torch_ok


def claim_fills(exp, results: dict, thresholds: dict, ours_ok: dict, torch_ok: dict, row_count: int) -> None:
    r = results
    exp.claim(all(r[key]["leak"] == 0.0 and r[key]["nan_rows"] == 0 for key in r),
              f"while a row keeps a visible key, every fill in every dtype gives the hidden keys exactly 0 weight "
              f"({row_count} random rows each; -1e9 does not 'leak' there)")
    exp.claim(all(r[d, "-inf"]["empty"] == "NaN" for d in DTYPES),
              "a row with every key at -inf softmaxes to NaN in float32, float16 and bfloat16 (0 / 0)")
    exp.claim(all(r[d, "finfo.min"]["empty"].startswith("even") for d in DTYPES)
              and r["float32", "-1e9"]["empty"].startswith("even")
              and r["bfloat16", "-1e9"]["empty"].startswith("even"),
              "with a finite fill, that row has no NaN but spreads all its weight evenly over keys it must not see")
    exp.claim(math.isinf(r["float16", "-1e9"]["stored"]) and r["float16", "-1e9"]["empty"] == "NaN"
              and r["float16", "-1e9"]["masked_fill"].startswith("RuntimeError"),
              f"-1e9 does not exist in float16 (largest {torch.finfo(torch.float16).max:g}): stored, it is -inf "
              f"(so its empty rows are NaN), and masked_fill refuses it with an overflow error")
    exp.claim(all(math.isinf(r[d, "finfo.min"]["twice"]) and r[d, "finfo.min"]["empty_twice"] == "NaN" for d in DTYPES),
              "finfo.min + finfo.min overflows to -inf in every dtype: two added finfo.min masks bring the NaN back")
    f16_measured, f16_predicted = thresholds["float16"]
    exp.claim(all(m == p for m, p in thresholds.values()),
              f"finfo.min + s overflows to -inf from s = -(max - next below)/2 on, as predicted, in every dtype; "
              f"in float16 that is only s <= {f16_measured:g}")
    exp.claim(all(ours_ok.values()),
              "minimind_ref's attention (bool mask, finfo.min fill, softmax in float32, empty rows zeroed) "
              "gives finite outputs, 0 for the pad queries and the float64 result for the real ones, "
              "in all three dtypes")
    exp.claim(all(torch_ok.values()),
              f"torch {torch.__version__.split('+')[0]}'s fused SDPA, given the same bool mask, also returns 0 for the "
              f"pad queries, in all three dtypes (its math path zeroes rows whose scores are all -inf; versions of "
              f"2023 returned NaN, pytorch issue 103963)")



def draw_weights(exp, maps: list) -> None:
    grid = torch.stack(maps).reshape(len(DTYPES), len(FILLS), 5, 5)
    titles = [f"{d}, fill {f}" for d in DTYPES for f in FILLS]
    fig = show_heatmaps(grid, x_labels=[phrase("pad"), phrase("pad"), "a", "b", "c"], titles=titles, annotate=True,
                        suptitle="causal + padding mask on a left-padded row: pad queries (rows 0-1) see no key; "
                                 "NaN is blank")
    exp.save(fig, "weights")


if __name__ == "__main__":
    raise SystemExit(main())
