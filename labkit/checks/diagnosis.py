"""Why a wrong answer may be wrong: the kinds of mistake check() can tell apart from the answer alone.

When a check fails, compare() has said what differs (a shape, NaN, which entries). This module
looks at how the learner's result relates to the right one: is it the right result with two axes
swapped, with True and False swapped, times one constant, moved by one position, in another order,
or one of the inputs handed back? Each kind (KINDS) is one transformation that, applied to the right
result, gives the learner's, within the check's tolerance. check() names the kind it finds, in the
check's own words where its texts have them (`mistakes` in modules/NN_slug/checks.json), so the
learner knows what to re-check; it never names the transformation's parameters (a factor, an
offset, which axes), which together with the learner's own result would give the answer away.

Only structured answers are read this way: a tensor or array of at least MIN_VALUES entries, or a
list, tuple or dict of them. A single number has no structure to read, and any relation to the
right number (a factor, a difference) is the answer in two guesses. Two kinds say nothing of any
value and are read on answers of every size: a shape that differs (axes in another order, an axis
of size 1 too many) and NaN or inf where the right result is finite.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

from labkit.i18n import phrase
from labkit.numerics import outside_tolerance

from . import describe
from .compare import compare, plain

__all__ = ["KINDS", "likely_mistake"]

# kind -> what the learner's result looks like, said after "Likely: it is ...". The kinds are the
# keys a check's texts may give a hint for (modules/NN_slug/checks.json, "mistakes"), tried in
# this order: the first that fits is named.
KINDS: dict[str, str] = {
    "transposed": phrase("the right result with its axes in another order (a transpose or a view too many or "
                         "too few?)"),
    "size_one_axis": phrase("the right values with an axis of size 1 too many or too few"),
    "not_finite": phrase("NaN or inf where the right result is finite"),
    "input_returned": phrase("one of its inputs, handed back unchanged"),
    "zeros": phrase("all zeros, where the right result is not"),
    "complement": phrase("the right mask with True and False swapped"),
    "negated": phrase("the right result with the opposite sign"),
    "scaled": phrase("the right result times one constant factor"),
    "shifted": phrase("the right result moved by one position along one axis"),
    "permuted": phrase("the right pieces in the wrong order"),
    "rearranged": phrase("exactly the right numbers, in the wrong places"),
}
MIN_VALUES = 4  # fewer entries than this: a value answer, read by no kind
MAX_VALUES = 1 << 20  # more than this: too costly to try every kind on, on a learner's laptop
MAX_SLICES = 64  # the most slices along one axis matched one by one (permuted)


def likely_mistake(got: Any, expected: Any, inputs: tuple = (), atol: float = 1e-6,
                   rtol: float = 1e-5) -> str | None:
    """The first kind of KINDS that explains why `got` is not `expected`, or None."""
    got, expected = describe.plain_scalar(got), describe.plain_scalar(expected)
    if isinstance(got, (list, tuple)) and isinstance(expected, (list, tuple)) and len(got) == len(expected):
        wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if compare(g, e, atol, rtol) is not None]
        # results in the wrong order; numbers in the wrong order would be the answer itself
        if len(wrong) >= 2 and all(_values(item) is not None for item in expected) and \
                _matched(list(got), list(expected), lambda a, b: compare(a, b, atol, rtol) is None):
            return "permuted"
        return next((kind for i in wrong if (kind := likely_mistake(got[i], expected[i], inputs, atol, rtol))), None)
    if isinstance(got, dict) and isinstance(expected, dict) and got.keys() == expected.keys():
        return next((kind for key in expected if compare(got[key], expected[key], atol, rtol) is not None
                     and (kind := likely_mistake(got[key], expected[key], inputs, atol, rtol))), None)
    if isinstance(got, torch.Tensor) != isinstance(expected, torch.Tensor):
        return None  # a tensor for an array or the other way round: compare() says so, and how to convert
    g, e = _values(got), _values(expected)
    if g is None or e is None:
        return None
    if g.shape != e.shape:
        return _shape_kind(g, e)
    if describe.kind(got) != describe.kind(expected):
        return None  # compare() said so: a dtype, not a mistake in the values
    if e.dtype != torch.bool and (~torch.isfinite(g) & torch.isfinite(e)).any():
        return "not_finite"  # where, not what: no value of the answer follows from it
    if e.numel() < MIN_VALUES or e.numel() > MAX_VALUES:
        return None

    def close(a: torch.Tensor, b: torch.Tensor, scale: float = 1.0) -> bool:
        return a.shape == b.shape and not outside_tolerance(a, b, atol * scale, rtol).any().item()

    if close(g, e):
        return None  # the values are right: what differs is not a mistake of this kind

    if e.dtype == torch.bool and torch.equal(g, ~e):
        return "complement"
    if any(close(g, x) for x in map(_values, _tensors(inputs)) if x is not None and x.dtype == g.dtype):
        return "input_returned"
    if e.dtype != torch.bool and not g.any() and e.any():
        return "zeros"
    if any(close(g, e.permute(order)) for order in _axis_orders(e) if e.permute(order).shape == g.shape):
        return "transposed"
    floating = describe.kind(expected) == describe.FLOATING  # a factor or a sign means nothing for ids
    if floating and torch.isfinite(e).all() and e.abs().max() > 0:
        if close(g, -e):
            return "negated"
        factor = ((g * e).sum() / (e * e).sum()).item()
        if abs(factor - 1) > 1e-3 and factor != 0 and close(g, factor * e, abs(factor)):
            return "scaled"
    if _shifted(g, e, close):
        return "shifted"
    if any(_matched(list(g.unbind(axis)), list(e.unbind(axis)), close) for axis in range(g.dim())
           if 2 <= g.shape[axis] <= MAX_SLICES):
        return "permuted"
    if floating and e.unique().numel() * 2 >= e.numel() and \
            close(g.flatten().sort().values, e.flatten().sort().values):
        return "rearranged"
    return None


def _values(thing: Any) -> torch.Tensor | None:
    """A tensor or array as a plain tensor to reason about: bool stays bool, numbers become float64;
    None for what holds no readable numbers (a meta or nested tensor, text, complex numbers)."""
    if describe.is_ndarray(thing):
        if thing.dtype.kind not in "biuf":
            return None
        thing = torch.from_numpy(thing.astype(bool if thing.dtype.kind == "b" else "float64"))
    if not isinstance(thing, torch.Tensor) or thing.is_meta or thing.is_nested or thing.is_complex():
        return None
    thing = plain(thing)
    return thing if thing.dtype == torch.bool else thing.to(torch.float64)


def _tensors(inputs: tuple) -> list:
    """The tensors and arrays among a case's inputs, one level into lists and tuples."""
    found = []
    for item in inputs:
        if isinstance(item, (list, tuple)):
            found += [x for x in item if isinstance(x, torch.Tensor) or describe.is_ndarray(x)]
        elif isinstance(item, torch.Tensor) or describe.is_ndarray(item):
            found.append(item)
    return found


def _axis_orders(e: torch.Tensor) -> list[tuple[int, ...]]:
    """Every order of the axes but the identity (at most 5 axes: 119 orders)."""
    if not 2 <= e.dim() <= 5:
        return []
    identity = tuple(range(e.dim()))
    return [order for order in itertools.permutations(identity) if order != identity]


def _shape_kind(g: torch.Tensor, e: torch.Tensor) -> str | None:
    """A shape that differs: the axes in another order, or an axis of size 1 too many or too few."""
    if g.dim() == e.dim() >= 2 and sorted(g.shape) == sorted(e.shape):
        return "transposed"
    if [n for n in g.shape if n != 1] == [n for n in e.shape if n != 1]:
        return "size_one_axis"
    return None


def _shifted(g: torch.Tensor, e: torch.Tensor, close) -> bool:
    """g is e moved by one position along an axis (where the move changes e at all)."""
    for axis in range(g.dim()):
        n = g.shape[axis]
        if n < 3:
            continue
        head, tail = e.narrow(axis, 0, n - 1), e.narrow(axis, 1, n - 1)
        if close(head, tail):
            continue  # e does not change along this axis: a move would look like anything
        if close(g.narrow(axis, 1, n - 1), head) or close(g.narrow(axis, 0, n - 1), tail):
            return True
    return False


def _matched(got: list, expected: list, same) -> bool:
    """Whether `got` is `expected` in another order: each item of `got` matched to its own item of
    `expected` (equal items may stand for one another), and not each to the one in its place."""
    if len(got) != len(expected) or len(got) > MAX_SLICES:
        return False
    free = list(range(len(expected)))
    moved = False
    for i, item in enumerate(got):
        j = next((j for j in free if same(item, expected[j])), None)
        if j is None:
            return False
        free.remove(j)
        moved = moved or not same(item, expected[i])
    return moved
