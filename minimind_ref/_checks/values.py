"""Checks of single values, shared by every kind of input: one wording for each rule."""

from __future__ import annotations

import math
import numbers

import torch


def is_int(value) -> bool:
    """A true integer: bool is refused (True is 1 to Python, never a size to a reader)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def require_int(where: str, name: str, value, low: int | None = None, high: int | None = None,
                error: type[Exception] = ValueError) -> None:
    """`value` is an int in [low, high] (either bound may be None)."""
    if not is_int(value) or (low is not None and value < low) or (high is not None and value > high):
        what = {(1, None): "a positive integer", (0, None): "a non-negative integer"}.get(
            (low, high), f"an integer in {_range(low, high)}")
        got = repr(value) if is_real(value) or isinstance(value, bool) else f"{type(value).__name__} {value!r}"
        raise error(f"{where}{name} must be {what}, got {got}.")


def require_real(where: str, name: str, value, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, error: type[Exception] = ValueError) -> None:
    """`value` is a finite real number within the bounds (open or closed)."""
    if not is_real(value):
        raise error(f"{where}{name} must be a number, got {type(value).__name__} {value!r}.")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if not math.isfinite(value) or too_low or too_high:
        opening = "(" if low_open or low is None else "["
        closing = ")" if high_open or high is None else "]"
        interval = f"{opening}{_bound(low, '-inf')}, {_bound(high, 'inf')}{closing}"
        raise error(f"{where}{name} must be a finite number in {interval}, got {value!r}.")


def require_bool(where: str, name: str, value, error: type[Exception] = ValueError) -> None:
    if not isinstance(value, bool):
        raise error(f"{where}{name} must be True or False, got {type(value).__name__} {value!r}.")


def require_tensor(where: str, name: str, value, dims: int | None = None, layout: str = "") -> None:
    """A torch.Tensor, with `dims` dimensions when given (`layout` names them, for the message)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{where}{name} must be a torch.Tensor{' ' + layout if layout else ''}, "
                        f"got {type(value).__name__}.")
    if dims is not None and value.dim() != dims:
        raise ValueError(f"{where}{name} must be {dims}-D {layout}, got shape {tuple(value.shape)}.")


def _bound(value, default: str) -> str:
    return default if value is None else repr(value)


def _range(low, high) -> str:
    return f"[{_bound(low, '-inf')}, {_bound(high, 'inf')}]"
