"""Does the learner's answer match the expected one, and if not, what differs (never the expected
value: the rules are in labkit/checks/__init__.py).

`compare(got, expected, atol, rtol)` is None when they match, else the reason, a phrase that
follows "not yet — ". It gives a verdict on every value a learner can hand in: tensors of every
dtype and layout (sparse ones by their values, quantized ones by the floats they stand for, nested
ones tensor by tensor, a meta tensor as one that holds no values), numpy arrays, Python numbers of
any size, strings, None, models, functions, and lists, tuples and dicts of all of these, item by
item. An expected value that cannot be compared with anything (a meta tensor) is the author's
mistake: CheckUsageError.
"""

from __future__ import annotations

from typing import Any

import torch

from labkit.i18n import tr
from labkit.numerics import distance, outside_tolerance

from . import describe
from .describe import COMPLEX, FLOATING, INTEGER


class CheckUsageError(ValueError):
    """A check that cannot run as written: the author's mistake, not the learner's (a reference
    that returns a meta tensor, a key that names no check text)."""


def compare(got: Any, expected: Any, atol: float, rtol: float, path: str = "") -> str | None:
    """None when got matches expected; else the reason. `path` is where an item sits in the
    containers around it ("[2]", "[1]['k']"), said before its reason."""
    got, expected = describe.plain_scalar(got), describe.plain_scalar(expected)
    if isinstance(expected, torch.Tensor) and expected.is_nested:
        if isinstance(got, torch.Tensor) and got.is_nested:
            return compare(list(got.unbind()), list(expected.unbind()), atol, rtol, path)
        return at(path, type_mismatch(got, expected))
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(got) != len(expected):
            return at(path, tr("it has {items}, expected {expected}", items=describe.items(len(got)),
                               expected=len(expected)))
        for number, (got_item, expected_item) in enumerate(zip(got, expected)):
            reason = compare(got_item, expected_item, atol, rtol, f"{path}[{number}]")
            if reason is not None:
                return reason
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        missing = [key for key in expected if key not in got]
        extra = [key for key in got if key not in expected]
        if missing or extra:
            if missing and extra:
                reason = tr("it lacks the keys {missing} and has extra keys {extra}",
                            missing=describe.key_list(missing), extra=describe.key_list(extra))
            elif missing:
                reason = tr("it lacks the keys {missing}", missing=describe.key_list(missing))
            else:
                reason = tr("it has extra keys {extra}", extra=describe.key_list(extra))
            return at(path, reason)
        for key, expected_item in expected.items():
            reason = compare(got[key], expected_item, atol, rtol, f"{path}[{describe.short(repr(key), 30)}]")
            if reason is not None:
                return reason
        return None
    return at(path, compare_values(got, expected, atol, rtol))


def compare_values(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """compare() for everything but a pair of lists or a pair of dicts."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.is_nested:
            return type_mismatch(got, expected)
        return compare_arrays(got, expected, atol, rtol)
    if describe.is_ndarray(expected):
        if not describe.is_ndarray(got):
            return type_mismatch(got, expected)
        return compare_arrays(got, expected, atol, rtol)
    if expected is None:
        return None if got is None else tr("it is {value}, not right", value=describe.value(got))
    if isinstance(expected, bool):
        if not isinstance(got, bool):
            return type_mismatch(got, expected)
        return None if got == expected else wrong_value(got)
    if isinstance(expected, int):
        if isinstance(got, bool) or not isinstance(got, int):
            return type_mismatch(got, expected)
        return None if got == expected else wrong_value(got)
    if isinstance(expected, float):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return type_mismatch(got, expected)
        return compare_floats(got, expected, atol, rtol)
    if isinstance(expected, str):
        if not isinstance(got, str):
            return type_mismatch(got, expected)
        return None if got == expected else wrong_value(got)
    if isinstance(expected, (list, tuple, dict)):
        return type_mismatch(got, expected)  # a pair of lists or of dicts is compare's
    if isinstance(expected, torch.nn.Module):  # a model is the very object, or another one
        return None if got is expected else wrong_value(got)
    if isinstance(got, (torch.Tensor, torch.nn.Module)) or describe.is_ndarray(got):
        return type_mismatch(got, expected)  # their == is elementwise, or identity: never this answer
    try:
        same = bool(got == expected)
    except Exception as error:
        return tr("it cannot be compared with the expected {kind} ({error})", kind=describe.kind_of(expected),
                  error=describe.error_text(error))
    return None if same else wrong_value(got)


def wrong_value(got: Any) -> str:
    """A value answer that is wrong: the learner's own value, and that it is not right (never the
    expected value). A value that is not small by nature is described, not printed."""
    if isinstance(got, (bool, int, float, complex, str, torch.dtype, torch.device)) or got is None:
        shown = describe.num(got) if isinstance(got, (int, float, complex)) and not isinstance(got, bool) \
            else describe.short(repr(got))
    else:
        shown = describe.value(got)
    return tr("it is {value}: not right", value=shown)


def at(path: str, reason: str | None) -> str | None:
    """Say where an item is before its reason: "item [2]: ...", "item [1][0]: ..."."""
    if reason is None or not path:
        return reason
    return tr("item {path}: {reason}", path=path, reason=reason)


def compare_floats(got: int | float, expected: float, atol: float, rtol: float) -> str | None:
    try:
        wide = torch.tensor(float(got), dtype=torch.float64)
    except OverflowError:  # an int beyond every float: it matches no float, not even inf
        return wrong_value(got)
    if not outside_tolerance(wide, torch.tensor(expected, dtype=torch.float64), atol, rtol).item():
        return None
    return wrong_value(got)


def plain(array: Any) -> Any:
    """A tensor as a plain CPU tensor of its values (numpy arrays as they are): dense, dequantized,
    conjugation resolved, detached, not a subclass. A meta tensor is returned as it is."""
    if not isinstance(array, torch.Tensor) or array.is_meta:
        return array
    array = array.detach()
    if array.layout != torch.strided:
        array = array.to_dense()
    if array.is_quantized:
        array = array.dequantize()
    array = array.cpu().resolve_conj().resolve_neg()
    return array.as_subclass(torch.Tensor) if type(array) is not torch.Tensor else array


def compare_arrays(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """Two tensors, or two numpy arrays: shape, then kind of dtype, then NaN/inf, then values. The
    values: where they differ and by how much, never the expected entry."""
    if isinstance(expected, torch.Tensor) and expected.is_meta:
        raise CheckUsageError("check(expected=...) is a tensor on the meta device (or the reference returns one), "
                              "which holds no values to compare with: compute the reference on the CPU.")
    if tuple(got.shape) != tuple(expected.shape):
        return tr("it has shape {shape}, expected {expected}", shape=describe.shape(got.shape),
                  expected=describe.shape(expected.shape))
    got_kind, expected_kind = describe.kind(got), describe.kind(expected)
    if got_kind != expected_kind:
        return tr("its dtype is {dtype} ({kind}), expected {expected_kind} like {expected_dtype}",
                  dtype=describe.dtype(got), kind=tr(got_kind), expected_kind=tr(expected_kind),
                  expected_dtype=describe.dtype(expected))
    if isinstance(got, torch.Tensor) and got.is_meta:
        return tr("it is {value}: compute it on the CPU", value=describe.value(got))
    a, b = to_numpy(plain(got)), to_numpy(plain(expected))
    np = describe.numpy()
    if expected_kind in (FLOATING, COMPLEX):
        reason = nonfinite_mismatch(a, b)
        if reason is not None:
            return reason
        # NaN and inf sit where expected has the same, as just checked: what is left is values
        bad = outside_tolerance(a, b, atol, rtol).numpy()
        if not bad.any():
            return None
        if a.ndim == 0:
            return wrong_value(a.item())
        diff = distance(a, b).numpy()
        worst = np.unravel_index(np.argmax(np.where(bad, diff, -1.0)), diff.shape)
        return tr("{bad} of {size} values are outside the tolerance; the largest difference, {difference}, is at "
                  "{index}", bad=int(bad.sum()), size=bad.size, difference=describe.num(diff[worst].item()),
                  index=describe.index(worst))
    bad = a != b
    if not bad.any():
        return None
    if a.ndim == 0:
        return wrong_value(a.item())
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    if expected_kind == INTEGER:
        # exactly, in Python ints: float64 would call 2**62 and 2**62 + 1 equal
        difference = max(abs(int(x) - int(y)) for x, y in zip(a[bad].tolist(), b[bad].tolist()))
        return tr("it differs at {bad} of {size} positions, the first at {index}; the largest difference is "
                  "{difference}", bad=int(bad.sum()), size=bad.size, index=describe.index(first),
                  difference=describe.integer(difference))
    return tr("it differs at {bad} of {size} positions, the first at {index}", bad=int(bad.sum()), size=bad.size,
              index=describe.index(first))


def special_values(array: Any) -> dict:
    """Where an array holds NaN, inf and -inf (for complex numbers: NaN and inf in either part)."""
    np = describe.numpy()
    if np.iscomplexobj(array):
        return {"NaN": np.isnan(array), "inf": np.isinf(array)}
    return {"NaN": np.isnan(array), "inf": np.isposinf(array), "-inf": np.isneginf(array)}


def nonfinite_mismatch(a: Any, b: Any) -> str | None:
    """Where got has NaN or inf and expected has not the same there, or the other way round."""
    np = describe.numpy()
    got_special, expected_special = special_values(a), special_values(b)
    for label, got_has in got_special.items():
        expected_has = expected_special[label]
        extra = got_has & ~expected_has
        if extra.any():
            where = np.argwhere(extra)
            first = tuple(int(i) for i in where[0]) if a.ndim else ()
            text = tr("it contains {value} at {positions}", value=label, positions=describe.positions(len(where)))
            if a.ndim:
                text += tr(", e.g. {index}", index=describe.index(first))
            if label == "NaN":
                text += tr(" (NaN comes from 0/0, inf - inf, or a softmax over a row that is all -inf)")
            return text
        missing = expected_has & ~got_has
        if missing.any():
            where = np.argwhere(missing)
            first = tuple(int(i) for i in where[0]) if a.ndim else ()
            if not a.ndim:
                return wrong_value(a.item())
            return tr("expected {value} at {positions}, e.g. {index}, where it has {got}", value=label,
                      positions=describe.positions(len(where)), index=describe.index(first),
                      got=describe.num(a[first].item()))
    return None


def to_numpy(array: Any) -> Any:
    """A plain tensor or an array as a numpy array for comparing (float64 for floats, complex128
    for complex)."""
    np = describe.numpy()
    if isinstance(array, torch.Tensor):
        if array.is_complex():
            return array.to(torch.complex128).numpy()
        if array.is_floating_point():
            return array.to(torch.float64).numpy()
        return array.numpy()
    kind = array.dtype.kind
    if kind == "f":
        return array.astype(np.float64)
    if kind == "c":
        return array.astype(np.complex128)
    return array


def type_mismatch(got: Any, expected: Any) -> str:
    """'it is X, expected a Y', with the usual fix when there is one; the expected value's kind,
    never its value."""
    text = tr("it is {value}, expected {kind}", value=describe.value(got), kind=describe.kind_of(expected))
    hint = ""
    if got is None:
        hint = tr("did the function forget to return its result?")
    elif callable(got) and not isinstance(got, (torch.Tensor, torch.nn.Module, type)):
        hint = tr("a function: call it to get its result")
    elif isinstance(expected, torch.Tensor) and describe.is_ndarray(got):
        hint = tr("torch.from_numpy turns an array into a tensor")
    elif describe.is_ndarray(expected) and isinstance(got, torch.Tensor):
        hint = tr(".numpy() turns a tensor into an array")
    elif isinstance(expected, (bool, int, float)) and isinstance(got, torch.Tensor) and not got.is_nested \
            and not got.is_meta and got.numel() == 1:
        hint = tr(".item() turns a one-element tensor into a Python number")
    elif isinstance(expected, int) and not isinstance(expected, bool) and isinstance(got, float) and got.is_integer():
        hint = tr("use // or int() for a whole number")
    elif isinstance(expected, torch.Tensor) and isinstance(got, (list, tuple)) and got \
            and all(isinstance(item, torch.Tensor) for item in got):
        hint = tr("torch.stack or torch.cat turns a list of tensors into one tensor")
    return tr("{text} ({hint})", text=text, hint=hint) if hint else text
