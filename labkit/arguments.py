"""The kit's checks of the numbers a learner passes to its functions, written once.

A count (a layer, a number of tokens) must be a whole number, a size or a scale a real one; a flag
True or False. Python lets a string, a bool or a float slip into arithmetic (`'3' * 4` is '3333',
`True + 1` is 2, `x[: 2.5]` fails deep inside), so each public function checks its arguments once,
where the learner called it, with these, and a wrong one is named: the function, the argument, the
rule and what it got. Numpy's and Python's numbers are both accepted (numpy registers its scalar
types as `numbers.Integral` and `numbers.Real`), and returned as Python's. Standard library only.

    layer = whole("explore", "layer", layer, low=0, high=num_layers - 1)
    scale = real("show_heatmaps", "vmin", vmin)
"""

from __future__ import annotations

import math
import numbers
import sys

__all__ = ["flag", "real", "shown", "whole"]

_SHOWN = 60  # characters of a wrong value quoted in a message


def shown(value: object) -> str:
    """`value`'s repr, cut short: a message quotes what it got, not a page of it."""
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN - 15]}...{text[-10:]} ({len(text)} characters)"


def _is_bool(value: object) -> bool:
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None:
        return f" of at least {low:g}"
    return f" of at most {high:g}" if high is not None else ""


def whole(where: str, name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int in [low, high]; a bool, a float (even 2.0), a string or None is refused."""
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be a whole number (an int){_range(low, high)}, got "
                        f"{type(value).__name__} {shown(value)}.")
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise ValueError(f"{where}: {name} must be a whole number{_range(low, high)}, got {shown(number)}.")
    return number


def real(where: str, name: str, value: object, low: float | None = None, high: float | None = None,
         low_open: bool = False) -> float:
    """`value` as a finite float in [low, high] (or (low, high] with low_open); NaN, inf, an int too
    large for a float, a bool or a string are refused."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__} {shown(value)}.")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{where}: {name} is too large for a float (at most {sys.float_info.max:.3g}), "
                         f"got {shown(value)}.") from None
    if not math.isfinite(number):
        raise ValueError(f"{where}: {name} must be a finite number, got {number}.")
    below = low is not None and (number <= low if low_open else number < low)
    if below or (high is not None and number > high):
        rule = (f"above {low:g}" + (f" and at most {high:g}" if high is not None else "")) if low_open \
            else _range(low, high).strip()
        raise ValueError(f"{where}: {name} must be a number {rule}, got {shown(number)}.")
    return number


def flag(where: str, name: str, value: object) -> bool:
    """`value` as a bool: True or False (numpy's too), never a string such as "no", which is true."""
    if not _is_bool(value):
        raise TypeError(f"{where}: {name} must be True or False, got {type(value).__name__} {shown(value)}.")
    return bool(value)
