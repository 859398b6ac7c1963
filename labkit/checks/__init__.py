"""check(): tell the learner whether an exercise is right, and if not, why and what to re-check.

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
3. The next cell checks it against a reference, on a few inputs, and holds nothing else:

       check("01/attention_weights", attention_weights, references.attention_weights,
             cases=[(torch.randn(3, 4), torch.randn(5, 4)), (torch.randn(1, 8), torch.randn(1, 8))])

   The first argument is the check's key: the module's number and a slug naming an entry of
   `modules/01_attention_basics/checks.json`, which holds what the check says besides its
   verdict (labkit/checks/texts.py): the `explain` sentence said on success, the `hint` said on
   failure, and a hint for each kind of mistake the check can tell apart. They are kept there, not
   in the cell, because the check cell stays in the learner's copy and an explanation often
   states the fix. The check prints one line, `✓ attention_weights: right. Each row is ...`, or
   says what is wrong, the likely mistake and what to re-check:
   `✗ attention_weights: not yet — for case 1 of 2, inputs (float32 [3, 4], float32 [5, 4]): it
   has shape [5, 3], expected [3, 5]. Likely: it is the right result with its axes in another
   order (...). Hint: Which axis of the scores holds the keys? ...`.

What a check says, and what it never says. The learner must do the thinking, so a failing check
names the kind of thing that is wrong and never prints the expected value:

- structure, which is not the answer: the type, a tensor's shape and kind of dtype, a list's
  length, a dict's keys, where NaN or inf appear that should not (or the other way round);
- for a tensor of values: how many entries differ, where the first (integers, booleans) or the
  largest (floats) difference is, and how large it is, but not the expected entry;
- for a value answer (a number, a bool, a string, an item of a list, a 0-d tensor): only that it
  is not right, with the learner's own value. No expected value, no difference, no ratio: any of
  them turns two guesses into the answer;
- the likely mistake, where the answer's structure shows one (labkit/checks/diagnosis.py: the
  right result transposed, negated, scaled, shifted by one, in another order, a mask the wrong
  way round, an input handed back), named without its fix;
- the check's hint: what to re-check (the idea, the section, the module), never the answer.

Inputs and answers are described by type and size (`float32 [2, 5]`, `MiniMindForCausalLM
(25,600 parameters)`, `list of 3 tensors`), never by their repr (labkit/checks/describe.py).

The answer book (`make answers`) holds the worked solutions; a check never stands in for it.

Every line is said in the learner's language (labkit.i18n: a Chinese notebook's kernel speaks
Chinese): labkit's own words through `tr("template {field}")`, and the check's texts through their
catalog, translations/zh-CN/checks/NN_slug.md. A translation says the same things, so it gives no
more away than the English.

Pass the learner's function and `cases`, not the function's result: check() runs the function
itself, so an exercise not filled in yet (NotImplementedError) or one that raises reports a line
instead of stopping the notebook. Each case's inputs are copied before each call, so a function
that changes its inputs in place cannot change what the reference sees. For a value with nothing
to run, pass the value: `check("10/my_attention", report.passed, True)`.

A first argument that is not a key ("NN/slug") is a name shown as written, with no hint and no
explanation: a check of the learner's own (`check("my sum", total, 10)`).

Every answer gets a verdict, whatever it is: tensors of any dtype and layout (sparse, quantized,
nested, on the meta device, views, subclasses), numpy arrays, numbers of any size, NaN against NaN,
models, functions, and lists and dicts of these (labkit/checks/compare.py).

Strict mode: with the environment variable ATTENTION_LAB_STRICT_CHECKS=1, a failing check still
prints its line and then raises ExerciseCheckFailed. The test suite runs every notebook with its
solutions in strict mode, so a solution that stops passing fails the suite instead of printing a
quiet cross in a stored output.

A mistake in the use of check() itself (cases without a function, a list of expected outputs of
the wrong length, a negative tolerance, a key with no texts, a reference that returns a tensor
with no values) is the notebook author's, not the learner's: it raises TypeError or ValueError
(CheckUsageError, CheckTextError) at once, naming the argument and the fix.
"""

from __future__ import annotations

import copy
import numbers
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from labkit.i18n import phrase, tr
from labkit.sentences import join_sentences

from . import describe
from .compare import CheckUsageError, compare
from .diagnosis import KINDS, likely_mistake
from .texts import CheckTextError, CheckTexts, is_key, texts_for

__all__ = ["CheckResult", "CheckTextError", "CheckUsageError", "ExerciseCheckFailed", "STRICT_ENV", "check"]

STRICT_ENV = "ATTENTION_LAB_STRICT_CHECKS"
NOT_FILLED_IN = phrase("the exercise is not filled in yet (it raises NotImplementedError)")


class ExerciseCheckFailed(AssertionError):
    """A check failed in strict mode (ATTENTION_LAB_STRICT_CHECKS=1); the message is the check's line."""


class CheckResult:
    """What check() found: `passed`, the exercise's `name` as shown, its `key` (or None for a check
    of the learner's own), the likely `mistake` (a kind of labkit.checks.diagnosis.KINDS, or None)
    and the `message` it printed.

    True when passed, so `assert check(...)` and `if check(...)` read naturally. Its repr is the
    message. As a notebook cell's last value it shows nothing more, since check() has already
    printed the message in that cell; shown in a later cell, it shows the message.
    """

    __slots__ = ("passed", "name", "key", "mistake", "message", "_printed_in")

    def __init__(self, passed: bool, name: str, message: str, key: str | None = None, mistake: str | None = None):
        self.passed = bool(passed)
        self.name = name
        self.key = key
        self.mistake = mistake
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
) -> CheckResult:
    """Compare the learner's answer with the expected one; print one line saying right or why not.

    name: the check's key, "NN/slug", naming its texts in modules/NN_slug/checks.json (its name
        as shown, the explanation said on success, the hints said on failure); any other text is
        a name shown as written, with no texts (a check of the learner's own).
    got: the learner's value; or, with `cases`, the learner's function.
    expected: the right value; or, with `cases`, a reference function or a list of the right
        outputs, one per case.
    cases: inputs to run both functions on. A tuple is the positional arguments (`()` for none);
        anything else is the one argument. The first case that differs is reported.
    atol, rtol: floating-point values match when |got - expected| <= atol + rtol * |expected|
        (as in torch.allclose). Integers, bools and strings must match exactly.

    Returns a CheckResult (true when passed). In strict mode (ATTENTION_LAB_STRICT_CHECKS=1) a
    failure raises ExerciseCheckFailed after printing.
    """
    _check_arguments(name, got, expected, atol, rtol, cases)
    atol, rtol = float(atol), float(rtol)
    try:
        texts = texts_for(name) if is_key(name) else None
    except CheckTextError as error:  # said where the author called, like every misuse of check()
        raise CheckTextError(f"check({name!r}, ...): {error}") from None
    if cases is None:
        failure = _failure(got, expected, (), atol, rtol)
    else:
        failure = _run_cases(got, expected, list(cases), atol, rtol)
    message = _message(texts, name, failure)
    result = CheckResult(failure is None, texts.name if texts else name, message, texts.key if texts else None,
                         failure.mistake if isinstance(failure, _Failure) else None)
    print(message)
    result._printed_in = _cell_number()
    if not result.passed and os.environ.get(STRICT_ENV) == "1":
        raise ExerciseCheckFailed(message)
    return result


def _message(texts: CheckTexts | None, name: str, failure: Any) -> str:
    """The line check() prints. The name and the texts are the course's: their catalog translates
    them (a learner's own name is shown as written)."""
    shown_name = tr(texts.name if texts else name)
    if failure is None:
        message = tr("✓ {name}: right.", name=shown_name)
        return join_sentences(message, tr(texts.explain).strip()) if texts and texts.explain else message
    if failure is _NOT_FILLED:  # nothing to diagnose yet: no hint either
        return tr("✗ {name}: not yet — {reason}", name=shown_name, reason=tr(NOT_FILLED_IN))
    message = tr("✗ {name}: not yet — {reason}", name=shown_name, reason=failure.reason)
    specific = texts.hint_for(failure.mistake) if texts else None
    if specific:  # the check's own words for this mistake: they name it
        return message + tr(". Hint: {hint}", hint=tr(specific).strip())
    if failure.mistake:
        message += tr(". Likely: it is {what}", what=tr(KINDS[failure.mistake]))
    if texts:
        message += tr(". Hint: {hint}", hint=tr(texts.hint).strip())
    return message


# ------------------------------------------------------------------- the author's use of check


def _check_arguments(name, got, expected, atol, rtol, cases) -> None:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"check(name=...) must be a non-empty string naming the exercise (its key, 'NN/slug'), "
                        f"got {describe.short(repr(name))}.")
    for label, tolerance in (("atol", atol), ("rtol", rtol)):
        if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):  # numpy's numbers too
            raise TypeError(f"check({label}=...) must be a number, got {type(tolerance).__name__}.")
        value = tolerance if isinstance(tolerance, int) else float(tolerance)  # an int compared exactly
        if not 0 <= value <= sys.float_info.max:  # NaN, inf and ints too large for a float fail it
            raise ValueError(f"check({label}=...) must be a finite number >= 0, got {tolerance}.")
    if cases is None:
        if _is_function(expected):
            raise TypeError(
                f"check(expected=...) is a function ({describe.function_name(expected)}) but no cases were "
                f"given: pass cases=[...] to run it on, or pass the expected value.")
        return  # a function as `got` is the learner's answer: a verdict says it is one
    if isinstance(cases, (str, bytes)) or not isinstance(cases, Sequence):
        raise TypeError(f"check(cases=...) must be a list of inputs, got {type(cases).__name__}.")
    if len(cases) == 0:
        raise ValueError("check(cases=...) is empty: give at least one input to run the function on.")
    if not callable(got) or isinstance(got, torch.Tensor):
        raise TypeError(
            f"check(cases=...) was given, so got must be the learner's function, but it is "
            f"{describe.value(got)}.")
    if _is_function(expected):
        return
    if not isinstance(expected, (list, tuple)):
        raise TypeError(
            f"check(cases=...) was given, so expected must be a reference function or a list of "
            f"expected outputs (one per case), but it is {describe.value(expected)}.")
    if len(expected) != len(cases):
        raise ValueError(
            f"check(expected=...) lists {len(expected)} outputs but there are {len(cases)} cases: "
            f"give one expected output per case.")


def _is_function(value: Any) -> bool:
    """A function to run, as opposed to a value that happens to be callable (a tensor, a model)."""
    return callable(value) and not isinstance(value, (torch.Tensor, torch.nn.Module, type))


# ------------------------------------------------------------------------------ running cases


@dataclass(frozen=True)
class _Failure:
    reason: str  # what differs, a phrase that follows "not yet — "
    mistake: str | None  # the likely kind of mistake (diagnosis.KINDS), if one shows


# What _run_cases returns for an exercise not filled in yet (check() words it, and gives no hint).
_NOT_FILLED = object()


def _failure(answer: Any, want: Any, args: tuple, atol: float, rtol: float, where: str = "") -> _Failure | None:
    """None when the answer matches; else what differs and the likely mistake. `where` names the
    case, said before the reason."""
    reason = compare(answer, want, atol, rtol)
    if reason is None:
        return None
    if where:
        reason = tr("{case}: {reason}", case=where, reason=reason)
    return _Failure(reason, likely_mistake(answer, want, args, atol, rtol))


def _run_cases(function: Callable, expected: Any, cases: list[Any], atol: float, rtol: float) -> Any:
    """None when the function matches on every case; else a _Failure for the first case that
    differs (or _NOT_FILLED)."""
    for number, case in enumerate(cases, start=1):
        args = case if isinstance(case, tuple) else (case,)
        where = tr("for case {number} of {count}, {inputs}", number=number, count=len(cases),
                   inputs=describe.inputs(args))
        if _is_function(expected):
            try:
                want = expected(*_fresh_copy(args))
            except Exception as error:  # the reference is the author's: a failure there is theirs
                raise RuntimeError(
                    f"the reference function {describe.function_name(expected)} failed on case {number} of "
                    f"{len(cases)} ({describe.inputs(args)}): {type(error).__name__}: {error}") from error
        else:
            want = expected[number - 1]
        try:
            answer = function(*_fresh_copy(args))
        except NotImplementedError:
            return _NOT_FILLED
        except Exception as error:
            return _Failure(tr("{case}: your code raised {error}", case=where, error=describe.error_text(error)),
                            None)
        failure = _failure(answer, want, args, atol, rtol, where)
        if failure is not None:
            return failure
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
