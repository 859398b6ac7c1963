"""check(): tell the learner whether an exercise is right, and if not, why.

How an exercise is laid out in a notebook of this course:

1. A markdown cell states the task: what to write, its inputs and outputs with their shapes.
2. A code cell defines the learner's function, with the worked solution between two marker
   lines. The cell carries the tag "solution" in its metadata and is collapsed
   (`"jupyter": {"source_hidden": true}`), so a reader sees the task before the answer:

       def attention_weights(q, k):                    # q [T, D], k [S, D] -> [T, S]
           ### BEGIN SOLUTION
           scores = q @ k.T / q.shape[-1] ** 0.5
           return scores.softmax(dim=-1)
           ### END SOLUTION

   The learner's copy (workspace/, labkit/course/student.py) replaces everything between the
   markers with `raise NotImplementedError`.
3. The next cell checks it against a reference, on a few inputs:

       check("attention weights", attention_weights, reference_weights,
             cases=[(torch.randn(3, 4), torch.randn(5, 4)), (torch.randn(1, 8), torch.randn(1, 8))],
             explain="Each row is a probability distribution over the keys.")

   which prints one line, `✓ attention weights: right. Each row is ...`, or says what is wrong:
   `✗ attention weights: not yet — for case 1 of 2, inputs (shape [3, 4], shape [5, 4]): it has
   shape [5, 3], expected [3, 5] (the transpose: are the dimensions in the right order?)`.

What a check says, and what it never says. The learner must do the thinking, so a failing check
names the kind of thing that is wrong and never prints the expected value:

- structure, which is not the answer: the type, a tensor's shape and kind of dtype, a list's
  length, a dict's keys, where NaN or inf appear that should not (or the other way round);
- for a tensor of values: how many entries differ, where the first (integers, booleans) or the
  largest (floats) difference is, and how large it is, but not the expected entry;
- for a value answer (a number, a bool, a string, an item of a list, a 0-d tensor): only that it
  is not right, with the learner's own value and the author's `hint=` (say what to re-check,
  never the answer). No expected value, no difference, no ratio: any of them turns two guesses
  into the answer.

The answer book (`make answers`) holds the worked solutions; a check never stands in for it.

Every line is said in the learner's language (labkit.i18n: a Chinese notebook's kernel speaks
Chinese): labkit's own words through `tr("template {field}")`, and the notebook's texts (the name,
`explain=`, `hint=`) through its catalog. A translation says the same things, so it gives no more
away than the English.

Pass the learner's function and `cases`, not the function's result: check() runs the function
itself, so an exercise not filled in yet (NotImplementedError) or one that raises reports a line
instead of stopping the notebook. Each case's inputs are copied before each call, so a function
that changes its inputs in place cannot change what the reference sees. For a value with nothing
to run, pass the value: `check("parameter count", n_params, 4096)`.

Strict mode: with the environment variable ATTENTION_LAB_STRICT_CHECKS=1, a failing check still
prints its line and then raises ExerciseCheckFailed. The test suite runs every notebook with its
solutions in strict mode, so a solution that stops passing fails the suite instead of printing a
quiet cross in a stored output.

A mistake in the use of check() itself (cases without a function, a list of expected outputs of
the wrong length, a negative tolerance) is the notebook author's, not the learner's: it raises
TypeError or ValueError at once, naming the argument.
"""

from __future__ import annotations

import copy
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .i18n import phrase, tr
from .numerics import distance, outside_tolerance
from .sentences import join_sentences

__all__ = ["CheckResult", "ExerciseCheckFailed", "STRICT_ENV", "check"]

STRICT_ENV = "ATTENTION_LAB_STRICT_CHECKS"

# How many characters of a value or an error message a line shows.
_SHORT = 80
NOT_FILLED_IN = phrase("the exercise is not filled in yet (it raises NotImplementedError)")


class ExerciseCheckFailed(AssertionError):
    """A check failed in strict mode (ATTENTION_LAB_STRICT_CHECKS=1); the message is the check's line."""


class CheckResult:
    """What check() found: `passed`, the exercise's `name`, and the `message` it printed.

    True when passed, so `assert check(...)` and `if check(...)` read naturally. Its repr is the
    message. As a notebook cell's last value it shows nothing more, since check() has already
    printed the message in that cell; shown in a later cell, it shows the message.
    """

    __slots__ = ("passed", "name", "message", "_printed_in")

    def __init__(self, passed: bool, name: str, message: str):
        self.passed = bool(passed)
        self.name = name
        self.message = message
        self._printed_in: int | None = None  # the IPython cell whose output holds the message

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.message)

    def _ipython_display_(self) -> None:
        if self._printed_in is not None and self._printed_in == _cell_number():
            return  # already printed by check() in this very cell: once is enough
        print(self.message)


def _cell_number() -> int | None:
    """The number of the IPython cell running now, or None outside IPython."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "execution_count", None)


def check(
    name: str,
    got: Any,
    expected: Any,
    *,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    cases: Sequence[Any] | None = None,
    explain: str | None = None,
    hint: str | None = None,
) -> CheckResult:
    """Compare the learner's answer with the expected one; print one line saying right or why not.

    name: the exercise, as the learner knows it ("causal mask").
    got: the learner's value; or, with `cases`, the learner's function.
    expected: the right value; or, with `cases`, a reference function or a list of the right
        outputs, one per case.
    cases: inputs to run both functions on. A tuple is the positional arguments (`()` for none);
        anything else is the one argument. The first case that differs is reported.
    atol, rtol: floating-point values match when |got - expected| <= atol + rtol * |expected|
        (as in torch.allclose). Integers, bools and strings must match exactly.
    explain: a sentence said on success: why the result matters.
    hint: a sentence said on failure (not for an exercise not filled in yet): what to re-check,
        without the answer ("Count the keys each query may see.").

    Compares tensors (type, shape, dtype kind, NaN/inf, values), numpy arrays, Python numbers,
    bools, strings and None, and lists, tuples and dicts item by item.

    Returns a CheckResult (true when passed). In strict mode (ATTENTION_LAB_STRICT_CHECKS=1) a
    failure raises ExerciseCheckFailed after printing.
    """
    _check_arguments(name, got, expected, atol, rtol, cases, explain, hint)
    if cases is None:
        reason = _compare(got, expected, atol, rtol)
    else:
        reason = _run_cases(got, expected, list(cases), atol, rtol)
    # The name, explain and hint are the notebook's own texts: its catalog translates them.
    shown_name = tr(name)
    if reason is None:
        message = tr("✓ {name}: right.", name=shown_name)
        if explain and explain.strip():
            message = join_sentences(message, tr(explain).strip())
    else:
        filled_in = reason is not _NOT_FILLED
        message = tr("✗ {name}: not yet — {reason}", name=shown_name,
                     reason=reason if filled_in else tr(NOT_FILLED_IN))
        if hint and hint.strip() and filled_in:
            message += tr(". Hint: {hint}", hint=tr(hint).strip())
    result = CheckResult(reason is None, name, message)
    print(message)
    result._printed_in = _cell_number()
    if not result.passed and os.environ.get(STRICT_ENV) == "1":
        raise ExerciseCheckFailed(message)
    return result


# ------------------------------------------------------------------- the author's use of check


def _check_arguments(name, got, expected, atol, rtol, cases, explain, hint) -> None:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"check(name=...) must be a non-empty string naming the exercise, got {name!r}.")
    for label, tolerance in (("atol", atol), ("rtol", rtol)):
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
            raise TypeError(f"check({label}=...) must be a number, got {type(tolerance).__name__}.")
        if not tolerance >= 0 or math.isinf(tolerance):  # `not >=` also catches NaN
            raise ValueError(f"check({label}=...) must be a finite number >= 0, got {tolerance}.")
    for label, sentence in (("explain", explain), ("hint", hint)):
        if sentence is not None and not isinstance(sentence, str):
            raise TypeError(f"check({label}=...) must be a sentence (a string), got {type(sentence).__name__}.")
    if cases is None:
        if callable(got) and not isinstance(got, torch.Tensor):
            raise TypeError(
                f"check(got=...) is a function ({_function_name(got)}) but no cases were given: pass "
                f"cases=[...] to run it (cases=[()] to call it with no arguments), or pass its result.")
        if callable(expected) and not isinstance(expected, torch.Tensor):
            raise TypeError(
                f"check(expected=...) is a function ({_function_name(expected)}) but no cases were "
                f"given: pass cases=[...] to run it on, or pass the expected value.")
        return
    if isinstance(cases, (str, bytes)) or not isinstance(cases, Sequence):
        raise TypeError(f"check(cases=...) must be a list of inputs, got {type(cases).__name__}.")
    if len(cases) == 0:
        raise ValueError("check(cases=...) is empty: give at least one input to run the function on.")
    if not callable(got) or isinstance(got, torch.Tensor):
        raise TypeError(
            f"check(cases=...) was given, so got must be the learner's function, but it is "
            f"{_describe(got)}.")
    if callable(expected) and not isinstance(expected, torch.Tensor):
        return
    if not isinstance(expected, (list, tuple)):
        raise TypeError(
            f"check(cases=...) was given, so expected must be a reference function or a list of "
            f"expected outputs (one per case), but it is {_describe(expected)}.")
    if len(expected) != len(cases):
        raise ValueError(
            f"check(expected=...) lists {len(expected)} outputs but there are {len(cases)} cases: "
            f"give one expected output per case.")


def _function_name(function: Callable) -> str:
    return getattr(function, "__name__", type(function).__name__)


# ------------------------------------------------------------------------------ running cases


# What _run_cases returns for an exercise not filled in yet (check() words it, and gives no hint).
_NOT_FILLED = object()


def _run_cases(function: Callable, expected: Any, cases: list[Any], atol: float, rtol: float) -> Any:
    """None when the function matches on every case; else why not, for the first case that differs
    (or _NOT_FILLED)."""
    for index, case in enumerate(cases):
        args = case if isinstance(case, tuple) else (case,)
        if callable(expected):
            try:
                want = expected(*_fresh_copy(args))
            except Exception as error:  # the reference is the author's: a failure there is theirs
                raise RuntimeError(
                    f"the reference function {_function_name(expected)} failed on case {index + 1} of "
                    f"{len(cases)} ({_describe_inputs(args)}): {type(error).__name__}: {error}") from error
        else:
            want = expected[index]
        try:
            answer = function(*_fresh_copy(args))
        except NotImplementedError:
            return _NOT_FILLED
        except Exception as error:
            return tr("for case {number} of {count}, {inputs}: your code raised {error}", number=index + 1,
                      count=len(cases), inputs=_describe_inputs(args), error=_error_text(error))
        reason = _compare(answer, want, atol, rtol)
        if reason is not None:
            return tr("for case {number} of {count}, {inputs}: {reason}", number=index + 1, count=len(cases),
                      inputs=_describe_inputs(args), reason=reason)
    return None


def _fresh_copy(value: Any) -> Any:
    """A copy of the inputs for one call: tensors and arrays cloned (requires_grad kept), lists,
    tuples and dicts rebuilt, other objects deep-copied when they can be (else shared)."""
    if isinstance(value, torch.Tensor):
        clone = value.detach().clone()
        return clone.requires_grad_(True) if value.requires_grad else clone
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_fresh_copy(item) for item in value)
    if isinstance(value, list):
        return [_fresh_copy(item) for item in value]
    if isinstance(value, dict):
        return {key: _fresh_copy(item) for key, item in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def _describe_inputs(args: tuple[Any, ...]) -> str:
    if len(args) == 0:
        return tr("no inputs")
    if len(args) == 1:
        return tr("input {value}", value=_brief(args[0]))
    return tr("inputs ({listed})", listed=", ".join(_brief(arg) for arg in args))


def _brief(value: Any) -> str:
    """An input in a few words: a tensor by its shape, a number by itself."""
    if isinstance(value, torch.Tensor) or _is_ndarray(value):
        return tr("shape {shape}", shape=_shape(value.shape))
    if isinstance(value, (list, tuple)):
        return tr("{type} of {count}", type=type(value).__name__, count=len(value))
    return _short(repr(value))


def _error_text(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {_short(text[0])}" if text else type(error).__name__


# -------------------------------------------------------------------------------- comparing


def _compare(got: Any, expected: Any, atol: float, rtol: float, path: str = "") -> str | None:
    """None when got matches expected; else the reason, a phrase that follows "not yet — ". `path`
    is where an item sits in the containers around it ("[2]", "[1]['k']"), said before its reason."""
    got, expected = _plain_scalar(got), _plain_scalar(expected)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(got) != len(expected):
            return _at(path, tr("it has {items}, expected {expected}", items=_items(len(got)),
                                expected=len(expected)))
        for index, (got_item, expected_item) in enumerate(zip(got, expected)):
            reason = _compare(got_item, expected_item, atol, rtol, f"{path}[{index}]")
            if reason is not None:
                return reason
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        missing = [key for key in expected if key not in got]
        extra = [key for key in got if key not in expected]
        if missing or extra:
            if missing and extra:
                reason = tr("it lacks the keys {missing} and has extra keys {extra}", missing=missing, extra=extra)
            elif missing:
                reason = tr("it lacks the keys {missing}", missing=missing)
            else:
                reason = tr("it has extra keys {extra}", extra=extra)
            return _at(path, reason)
        for key, expected_item in expected.items():
            reason = _compare(got[key], expected_item, atol, rtol, f"{path}[{key!r}]")
            if reason is not None:
                return reason
        return None
    return _at(path, _compare_values(got, expected, atol, rtol))


def _compare_values(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """_compare for everything but a pair of lists or a pair of dicts."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return _type_mismatch(got, expected)
        return _compare_arrays(got, expected, atol, rtol)
    if _is_ndarray(expected):
        if not _is_ndarray(got):
            return _type_mismatch(got, expected)
        return _compare_arrays(got, expected, atol, rtol)
    if expected is None:
        return None if got is None else tr("it is {value}, not right", value=_describe(got))
    if isinstance(expected, bool):
        if not isinstance(got, bool):
            return _type_mismatch(got, expected)
        return None if got == expected else _wrong_value(got)
    if isinstance(expected, int):
        if isinstance(got, bool) or not isinstance(got, int):
            return _type_mismatch(got, expected)
        return None if got == expected else _wrong_value(got)
    if isinstance(expected, float):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return _type_mismatch(got, expected)
        return _compare_floats(float(got), expected, atol, rtol)
    if isinstance(expected, str):
        if not isinstance(got, str):
            return _type_mismatch(got, expected)
        return None if got == expected else _wrong_value(got)
    if isinstance(expected, (list, tuple, dict)):
        return _type_mismatch(got, expected)  # a pair of lists or of dicts is _compare's
    try:
        same = bool(got == expected)
    except Exception as error:
        return tr("it cannot be compared with the expected {kind} ({error})", kind=_kind_of(expected),
                  error=_error_text(error))
    return None if same else _wrong_value(got)


def _wrong_value(got: Any) -> str:
    """A value answer that is wrong: the learner's own value, and that it is not right (module
    docstring: never the expected value)."""
    return tr("it is {value}: not right", value=_short(repr(got)) if not isinstance(got, float) else _num(got))


def _at(path: str, reason: str | None) -> str | None:
    """Say where an item is before its reason: "item [2]: ...", "item [1][0]: ..."."""
    if reason is None or not path:
        return reason
    return tr("item {path}: {reason}", path=path, reason=reason)


def _compare_floats(got: float, expected: float, atol: float, rtol: float) -> str | None:
    if not outside_tolerance(torch.tensor(got, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                             atol, rtol).item():
        return None
    return _wrong_value(got)


def _compare_arrays(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """Two tensors, or two numpy arrays: shape, then kind of dtype, then NaN/inf, then values. The
    values: where they differ and by how much, never the expected entry (module docstring)."""
    if tuple(got.shape) != tuple(expected.shape):
        return tr("it has shape {shape}, expected {expected}{hint}", shape=_shape(got.shape),
                  expected=_shape(expected.shape), hint=_shape_hint(got.shape, expected.shape))
    got_kind, expected_kind = _kind(got), _kind(expected)
    if got_kind != expected_kind:
        return tr("its dtype is {dtype} ({kind}), expected {expected_kind} like {expected_dtype}", dtype=_dtype(got),
                  kind=tr(got_kind), expected_kind=tr(expected_kind), expected_dtype=_dtype(expected))
    a, b = _to_numpy(got), _to_numpy(expected)
    np = _numpy()
    if expected_kind in ("floating point", "complex"):
        reason = _nonfinite_mismatch(a, b)
        if reason is not None:
            return reason
        # NaN and inf sit where expected has the same, as just checked: what is left is values
        bad = outside_tolerance(a, b, atol, rtol).numpy()
        if not bad.any():
            return None
        if a.ndim == 0:
            return _wrong_value(a.item())
        diff = distance(a, b).numpy()
        worst = np.unravel_index(np.argmax(np.where(bad, diff, -1.0)), diff.shape)
        return tr("{bad} of {size} values are outside the tolerance; the largest difference, {difference}, is at "
                  "{index}", bad=int(bad.sum()), size=bad.size, difference=_num(diff[worst].item()),
                  index=_index(worst))
    bad = a != b
    if not bad.any():
        return None
    if a.ndim == 0:
        return _wrong_value(a.item())
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    if expected_kind == "integer":
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        return tr("it differs at {bad} of {size} positions, the first at {index}; the largest difference is "
                  "{difference}", bad=int(bad.sum()), size=bad.size, index=_index(first),
                  difference=int(diff.max()))
    return tr("it differs at {bad} of {size} positions, the first at {index}", bad=int(bad.sum()), size=bad.size,
              index=_index(first))


def _special_values(array: Any) -> dict:
    """Where an array holds NaN, inf and -inf (for complex numbers: NaN and inf in either part)."""
    np = _numpy()
    if np.iscomplexobj(array):
        return {"NaN": np.isnan(array), "inf": np.isinf(array)}
    return {"NaN": np.isnan(array), "inf": np.isposinf(array), "-inf": np.isneginf(array)}


def _nonfinite_mismatch(a: Any, b: Any) -> str | None:
    """Where got has NaN or inf and expected has not the same there, or the other way round."""
    np = _numpy()
    got_special, expected_special = _special_values(a), _special_values(b)
    for label, got_has in got_special.items():
        expected_has = expected_special[label]
        extra = got_has & ~expected_has
        if extra.any():
            where = np.argwhere(extra)
            first = tuple(int(i) for i in where[0]) if a.ndim else ()
            text = tr("it contains {value} at {positions}", value=label, positions=_positions(len(where)))
            if a.ndim:
                text += tr(", e.g. {index}", index=_index(first))
            if label == "NaN":
                text += tr(" (NaN comes from 0/0, inf - inf, or a softmax over a row that is all -inf)")
            return text
        missing = expected_has & ~got_has
        if missing.any():
            where = np.argwhere(missing)
            first = tuple(int(i) for i in where[0]) if a.ndim else ()
            if not a.ndim:
                return _wrong_value(a.item())
            return tr("expected {value} at {positions}, e.g. {index}, where it has {got}", value=label,
                      positions=_positions(len(where)), index=_index(first), got=_num(a[first].item()))
    return None


# ------------------------------------------------------------------------------- describing


def _plain_scalar(value: Any) -> Any:
    """A numpy scalar (np.float32(0.5), np.int64(3), np.bool_(True)) as the Python number it is."""
    module = type(value).__module__
    if module == "numpy" and hasattr(value, "item") and getattr(value, "ndim", None) == 0 and not _is_ndarray(value):
        return value.item()
    return value


def _is_ndarray(value: Any) -> bool:
    np = sys.modules.get("numpy")  # no numpy loaded means this cannot be an array
    return np is not None and isinstance(value, np.ndarray)


def _numpy():
    import numpy

    return numpy


def _to_numpy(array: Any) -> Any:
    """A tensor or array as a numpy array for comparing (float64 for floats, complex128 for complex)."""
    np = _numpy()
    if isinstance(array, torch.Tensor):
        array = array.detach().cpu()
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


# The kinds of dtype, which must match; shown to the learner through tr().
_FLOATING, _INTEGER, _BOOLEAN = phrase("floating point"), phrase("integer"), phrase("boolean")
_COMPLEX, _TEXT = phrase("complex"), phrase("text")


def _kind(array: Any) -> str:
    """The kind of a dtype, which must match: floating point, integer, boolean, complex, text."""
    if isinstance(array, torch.Tensor):
        if array.dtype == torch.bool:
            return _BOOLEAN
        if array.is_complex():
            return _COMPLEX
        return _FLOATING if array.is_floating_point() else _INTEGER
    return {"b": _BOOLEAN, "i": _INTEGER, "u": _INTEGER, "f": _FLOATING, "c": _COMPLEX,
            "U": _TEXT, "S": _TEXT}.get(array.dtype.kind, f"dtype {array.dtype}")


def _dtype(array: Any) -> str:
    return str(array.dtype) if isinstance(array, torch.Tensor) else f"numpy {array.dtype}"


def _describe(value: Any) -> str:
    """What a value is, in a few words: 'a torch.Tensor of shape [3, 4]', 'a float (0.5)'."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return tr("a 0-d torch.Tensor ({value})", value=_num(value.item()))
        return tr("a torch.Tensor of shape {shape}", shape=_shape(value.shape))
    if _is_ndarray(value):
        return tr("a numpy array of shape {shape}", shape=_shape(value.shape))
    if isinstance(value, bool):
        return tr("a bool ({value})", value=value)
    if isinstance(value, int):
        return tr("an int ({value})", value=value)
    if isinstance(value, float):
        return tr("a float ({value})", value=_num(value))
    if isinstance(value, str):
        return tr("a str ({value})", value=_short(repr(value)))
    if isinstance(value, (list, tuple)):
        return tr("a {type} of {items}", type=type(value).__name__, items=_items(len(value)))
    if isinstance(value, dict):
        return tr("a dict with {entries}", entries=_keys(len(value)))
    if callable(value):
        return tr("a function ({name})", name=_function_name(value))
    return tr("a {type}", type=type(value).__name__)


def _kind_of(value: Any) -> str:
    """What a value is, by its type and structure only, never by its value (for the expected
    value): 'an int', 'a torch.Tensor of shape [3, 4]', 'a list of 2 items'."""
    if isinstance(value, bool):
        return tr("a bool")
    if isinstance(value, int):
        return tr("an int")
    if isinstance(value, float):
        return tr("a float")
    if isinstance(value, str):
        return tr("a str")
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        return tr("a 0-d torch.Tensor")
    return _describe(value)


def _type_mismatch(got: Any, expected: Any) -> str:
    """'it is X, expected a Y', with the usual fix when there is one; the expected value's kind,
    never its value."""
    text = tr("it is {value}, expected {kind}", value=_describe(got), kind=_kind_of(expected))
    hint = ""
    if got is None:
        hint = tr("did the function forget to return its result?")
    elif isinstance(expected, torch.Tensor) and _is_ndarray(got):
        hint = tr("torch.from_numpy turns an array into a tensor")
    elif _is_ndarray(expected) and isinstance(got, torch.Tensor):
        hint = tr(".numpy() turns a tensor into an array")
    elif isinstance(expected, (bool, int, float)) and isinstance(got, torch.Tensor) and got.numel() == 1:
        hint = tr(".item() turns a one-element tensor into a Python number")
    elif isinstance(expected, int) and not isinstance(expected, bool) and isinstance(got, float) and got.is_integer():
        hint = tr("use // or int() for a whole number")
    return tr("{text} ({hint})", text=text, hint=hint) if hint else text


def _shape(shape: Any) -> str:
    return "[" + ", ".join(str(int(n)) for n in shape) + "]"


def _shape_hint(got: Any, expected: Any) -> str:
    got, expected = tuple(got), tuple(expected)
    if len(got) == len(expected) >= 2 and got == expected[::-1] or (
            len(got) == len(expected) >= 2 and got[:-2] == expected[:-2] and got[-2:] == expected[-2:][::-1]):
        return tr(" (the transpose: are the dimensions in the right order?)")
    if tuple(n for n in got if n != 1) == tuple(n for n in expected if n != 1):
        return tr(" (a dimension of size 1 too many or too few: unsqueeze/squeeze, or keepdim?)")
    return ""


def _index(index: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _num(value: Any) -> str:
    """A number to read: 4 significant digits for floats, exact for the rest."""
    if isinstance(value, complex):
        return f"{value:.4g}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value.is_integer() and abs(value) < 1e15:
            return repr(value)  # 1024.0, not 1024: a float that looks like an int is still a float
        return format(value, ".4g")
    return repr(value)


def _items(n: int) -> str:
    return tr("1 item") if n == 1 else tr("{count} items", count=n)


def _keys(n: int) -> str:
    return tr("1 key") if n == 1 else tr("{count} keys", count=n)


def _positions(n: int) -> str:
    return tr("1 position") if n == 1 else tr("{count} positions", count=n)


def _short(text: str) -> str:
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."
