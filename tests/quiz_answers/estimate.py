"""A sampled answer: a value with the tolerance its own sampling error allows."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    value: float
    tolerance: float
