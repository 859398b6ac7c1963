"""How far apart two float results may be, and how far apart they are: defined once for the course.

Two computations of the same mathematical value in float32 (a sum in another order, a product
through another kernel) differ by a few roundings, each at most EPS32 relative to the numbers
involved. So the course's tolerances are written as "so many roundings": `n * EPS32`, with `n`
argued where the tolerance is used (the length of a sum, the number of operations chained).
"""

from __future__ import annotations

import torch

EPS32 = torch.finfo(torch.float32).eps  # 2^-23, about 1.19e-7: one float32 rounding, relative


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest entry-wise difference, relative to the largest entry of `expected`: one number
    that says in how many digits two results agree, whatever their scale. 0.0 for equal tensors
    (zeros included); inf where `expected` is all zeros and `actual` is not."""
    for name, value in (("actual", actual), ("expected", expected)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"relative_error: {name} must be a torch.Tensor, got {type(value).__name__}: "
                            f"torch.as_tensor({name}) makes one.")
        if value.is_meta or value.layout != torch.strided or not value.numel():
            kind = "a meta" if value.is_meta else "a sparse" if value.layout != torch.strided else "an empty"
            raise ValueError(f"relative_error: {name} must be a dense tensor with values, got {kind} tensor of "
                             f"shape {tuple(value.shape)}.")
    if actual.shape != expected.shape:
        raise ValueError(f"relative_error: actual and expected must have one shape (they are compared entry by "
                         f"entry, never broadcast), got {tuple(actual.shape)} and {tuple(expected.shape)}.")
    difference = (actual - expected).abs().max()
    return 0.0 if difference == 0 else (difference / expected.abs().max()).item()


# ------------------------------------------------------------------ the one comparison engine
# check() (an exercise's verdict) and the capstone's grader (labkit/grader/compare.py) decide
# "equal within a tolerance" here, and nowhere else, so a learner's result that one accepts the
# other accepts too. Each phrases what it finds in its own words.


def _wide(values) -> torch.Tensor:
    """A tensor or numpy array of numbers as float64 (complex128 when complex), on the CPU."""
    tensor = values.detach().cpu() if isinstance(values, torch.Tensor) else torch.as_tensor(values)
    return tensor.to(torch.complex128 if tensor.is_complex() else torch.float64)


def outside_tolerance(actual, expected, atol: float, rtol: float) -> torch.Tensor:
    """Where `actual` does not match `expected`, as a bool tensor of their (equal) shape.

    A finite expected value is matched when |actual - expected| <= atol + rtol * |expected|, as in
    torch.allclose; NaN, inf and -inf are matched only by the same value (NaN by NaN). Computed
    in float64, so float16 and float32 inputs are compared without a rounding of their own.
    """
    a, e = _wide(actual), _wide(expected)
    finite = torch.isfinite(e)
    close = finite & torch.isfinite(a) & ((a - e).abs() <= atol + rtol * e.abs())
    same_special = ~finite & ((a == e) | (torch.isnan(a) & torch.isnan(e)))
    return ~(close | same_special)


def distance(actual, expected) -> torch.Tensor:
    """|actual - expected| entry by entry, in float64: 0 where both hold the same NaN or inf,
    inf where only one of them is finite or they hold different ones."""
    a, e = _wide(actual), _wide(expected)
    both_finite = torch.isfinite(a) & torch.isfinite(e)
    same_special = (a == e) | (torch.isnan(a) & torch.isnan(e))
    gap = torch.where(both_finite, (a - e).abs(), torch.full_like(a.real if a.is_complex() else a, float("inf")))
    return torch.where(same_special & ~both_finite, torch.zeros_like(gap), gap)
