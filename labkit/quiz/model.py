"""The quiz data model and grading: what every front end needs, and all it needs.

A `Quiz` of `Question`s (built by format.parse_quiz, which validates them), `Question.grade`
with its `Feedback`, `Tries` (the rule every front end follows), `Score`, and `parse_response`,
which turns what a learner typed into a response to grade. The notebook widget and the terminal
runner both grade here, so a question is marked, and its feedback worded, the same everywhere.

The rule, `Tries`: a first wrong answer is told it is not right, without the answer, and gets the
question's hint; the right answer and the explanation come with a right answer or a second wrong
one. The score counts first tries only, so an answer sent again after it was shown never counts.
Standard library only.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_NUMBER = re.compile(
    r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:_\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NUMBER_ADVICE = ("Type a number, such as 42, -3, 0.125, 1e-5 or 25,829,888 "
                  "(a point for decimals; commas only between groups of three digits)")


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: `message` starts with "Right!" or "Not quite". When `revealed`
    (as from `Question.grade`), it gives the right answer and ends with the question's explanation
    on its own line; when not (a first wrong try, from `Tries`), it gives neither."""

    correct: bool
    message: str
    revealed: bool = True


@dataclass(frozen=True)
class Check:
    """Code that decides a question against the course's code (quizzes/README.md, "Checks"), for
    the tests to run (labkit/quiz/checks.py); no front end shows it, and loading a quiz never runs it.

    `code`: statements run first ("" for none). Numeric: `value` is an expression whose result must
    equal the answer within the tolerance, or within `within` for a sampled statistic. Choice
    questions: `choices` pairs a choice index with an expression that is True exactly when that
    choice is a true statement, so it must be True for a keyed choice and False for the others.
    """

    code: str = ""
    value: str | None = None
    within: float | None = None
    choices: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Question:
    """One question, as validated by `parse_quiz` (build questions through it, not by hand).

    `answer` is a choice index (single), a sorted tuple of indices (multiple) or a number
    (numeric); `choices` is empty for numeric questions, `tolerance` and `unit` are None for the
    others. `check` (code that decides the question) and `unchecked` (why no code can) are for the
    course's tests: they are left out of the repr, and no front end shows them.
    """

    id: str
    type: str
    question: str
    answer: int | tuple[int, ...] | float
    explanation: str
    choices: tuple[str, ...] = ()
    tolerance: float | None = None
    unit: str | None = None
    hint: str | None = None
    check: Check | None = field(default=None, repr=False, compare=False)
    unchecked: str | None = field(default=None, repr=False, compare=False)

    def grade(self, response: Any) -> Feedback:
        """Mark a response: a choice index (single), an iterable of indices (multiple: right only
        with all and only the right ones), or a number (numeric: right within the tolerance).

        A response of the wrong kind, or an index that is not a choice, is a ValueError: the front
        ends turn typed text into responses with `parse_response`, which explains a bad one.
        """
        if self.type == "single":
            chosen = self._index(response)
            head = "Right!" if chosen == self.answer else f"Not quite: you chose {letter(chosen)}."
            return Feedback(chosen == self.answer, f"{head} {self.answer_text()}\n{self.explanation}")
        if self.type == "multiple":
            if isinstance(response, (str, bytes)) or not hasattr(response, "__iter__"):
                raise ValueError(f"Question '{self.id}' takes a list of choice indices, such as "
                                 f"[0, 2]; got {response!r}.")
            chosen = {self._index(item) for item in response}
            missed = sorted(set(self.answer) - chosen)
            wrong = sorted(chosen - set(self.answer))
            notes = []
            if missed:
                notes.append(f"you missed {_letters(missed)}")
            if wrong:
                notes.append(f"{_letters(wrong)} {'is' if len(wrong) == 1 else 'are'} not right")
            head = f"Not quite: {', and '.join(notes)}." if notes else "Right!"
            return Feedback(not notes, f"{head} {self.answer_text()}\n{self.explanation}")
        if isinstance(response, bool) or not isinstance(response, numbers.Real) or not _finite(response):
            raise ValueError(f"Question '{self.id}' takes a finite number; got {response!r}.")
        correct = self.accepts(response)
        head = "Right!" if correct else f"Not quite: you answered {format_number(response)}."
        return Feedback(correct, f"{head} {self.answer_text()}\n{self.explanation}")

    def accepts(self, value: float) -> bool:
        """|value - answer| <= tolerance. A value on the boundary counts even when binary floats
        put the difference a hair above it (0.4 - 0.3 > 0.1): the learner typed the boundary."""
        difference = abs(value - self.answer)
        return difference <= self.tolerance or math.isclose(difference, self.tolerance, rel_tol=1e-9)

    def answer_text(self) -> str:
        """The right answer as a sentence: "The answer is B: ...", "The answers are A and C.",
        "The answer is 786,432 parameters." (with the tolerance when it is not 0)."""
        if self.type == "single":
            return f"The answer is {letter(self.answer)}: {self.choices[self.answer]}"
        if self.type == "multiple":
            return f"The answers are {_letters(self.answer)}."
        text = format_number(self.answer) + (f" {self.unit}" if self.unit else "")
        if self.tolerance:
            text += f" (anything within ±{format_number(self.tolerance)} counts)"
        return f"The answer is {text}."

    def _index(self, response: Any) -> int:
        if (isinstance(response, bool) or not isinstance(response, numbers.Integral)
                or not 0 <= response < len(self.choices)):
            raise ValueError(f"Question '{self.id}' takes choice indices from 0 to "
                             f"{len(self.choices) - 1}; got {response!r}.")
        return int(response)


NOT_RIGHT = "Not quite: that is not right yet."
TRY_AGAIN = "Try once more; a second wrong answer shows the right one."
SEEN = "(You have seen the answer: this try does not change your score.)"


class Tries:
    """One question's tries, under the course's rule (module docstring): `submit(response)` gives
    the Feedback to show; `first_right` is None until the first try, then whether it was right."""

    def __init__(self, question: Question):
        self.question = question
        self.count = 0
        self.first_right: bool | None = None
        self.revealed = False

    def submit(self, response: Any) -> Feedback:
        """Grade a response (ValueError for one of the wrong kind, counting nothing) and say what
        the rule allows: the answer only after a right try or a second wrong one."""
        full = self.question.grade(response)
        if self.revealed:
            return Feedback(full.correct, full.message.replace("\n", f" {SEEN}\n", 1))
        self.count += 1
        if self.first_right is None:
            self.first_right = full.correct
        if full.correct or self.count >= 2:
            self.revealed = True
            return full
        hint = f"\nHint: {self.question.hint}" if self.question.hint else ""
        return Feedback(False, f"{NOT_RIGHT} {TRY_AGAIN}{hint}", revealed=False)


@dataclass(frozen=True)
class Quiz:
    """A module's quiz: `module` is its NN_slug, `questions` a tuple of `Question`."""

    module: str
    title: str
    questions: tuple[Question, ...]
    description: str | None = None


@dataclass(frozen=True)
class Score:
    """How a quiz went: `right` (on the first try) of `total`, with `answered` (tried at least once)
    and `skipped` counted; the rest were not reached (the learner quit)."""

    right: int
    answered: int
    total: int
    skipped: int = 0

    @property
    def not_reached(self) -> int:
        return self.total - self.answered - self.skipped

    def __str__(self) -> str:
        """"Score: 3 of 11 right on the first try, 5 answered", as the widget shows it."""
        return f"Score: {self.right} of {self.total} right on the first try, {self.answered} answered"


def letter(index: int) -> str:
    """The label of choice `index`: 0 -> "A"."""
    return chr(ord("A") + index)


def _finite(value: float) -> bool:
    """math.isfinite, but False (not OverflowError) for an int too large to be a float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _letters(indices: Sequence[int]) -> str:
    """"A", "A and C", "A, C and D"."""
    labels = [letter(i) for i in indices]
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def format_number(value: float) -> str:
    """A number as a learner reads it: whole numbers with thousands separators (786,432), others
    in Python's shortest exact form (0.125, 1e-05)."""
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if float(value).is_integer() and abs(value) < 1e16:
        return f"{int(value):,}"
    return repr(float(value))


# ---------------------------------------------------------------------------------------------
# Typed answers
# ---------------------------------------------------------------------------------------------

def parse_response(question: Question, text: str) -> int | tuple[int, ...] | float:
    """What a learner typed, as a response for `Question.grade`: one letter for single ("b" or
    "B"), letters for multiple ("A,C", "a c", "AC"), a number for numeric ("1e-5", "-3",
    "25_829_888", "25,829,888", optionally followed by the question's unit).

    Anything else is a ValueError whose message says what to type.
    """
    given = text.strip()
    if question.type == "numeric":
        return _parse_number(question, given)
    count = len(question.choices)
    span = "A or B" if count == 2 else f"A to {letter(count - 1)}"
    if question.type == "single":
        if re.fullmatch(r"[A-Za-z]", given) and ord(given.upper()) - ord("A") < count:
            return ord(given.upper()) - ord("A")
        if re.fullmatch(r"\d+", given):
            raise ValueError(f"Type the letter of your choice, {span}, not its number.")
        if re.fullmatch(r"[A-Za-z]", given):
            raise ValueError(f"There is no choice {given.upper()}: type one letter, {span}.")
        raise ValueError(f"Type one letter, {span}.")
    labels = re.sub(r"[\s,;]+", "", given).upper()
    every = "A and B" if count == 2 else f"A to {letter(count - 1)}"
    if labels and re.fullmatch(r"[A-Z]+", labels):
        out_of_range = sorted({c for c in labels if ord(c) - ord("A") >= count})
        if not out_of_range:
            return tuple(sorted({ord(c) - ord("A") for c in labels}))
        raise ValueError(f"There is no choice {', '.join(out_of_range)}: the choices are {every}.")
    raise ValueError(f"Type the letters of every answer that applies, such as A,C "
                     f"(the choices are {every}).")


def _parse_number(question: Question, given: str) -> int | float:
    text = given.replace("\u2212", "-")  # a minus sign pasted from typeset text
    unit = question.unit
    if unit and text.lower().endswith(unit.lower()) and text[: -len(unit)].strip():
        text = text[: -len(unit)].strip()
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{_NUMBER_ADVICE}." if not given else f"{_NUMBER_ADVICE}; got '{given}'.")
    plain = text.replace(",", "").replace("_", "")
    if not math.isfinite(float(plain)):
        raise ValueError(f"{given} is too large; type a finite number.")
    return int(plain) if re.fullmatch(r"[+-]?\d+", plain) else float(plain)

