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
    that says in how many digits two results agree, whatever their scale."""
    return ((actual - expected).abs().max() / expected.abs().max()).item()
