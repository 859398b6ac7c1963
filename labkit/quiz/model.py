"""The quiz data model and grading: what every front end needs, and all it needs.

A `Quiz` of `Question`s (built by format.parse_quiz, which validates them), `Question.grade`
with its `Feedback`, `Tries` (the rule every front end follows), `Score`, and `parse_response`,
which turns what a learner typed into a response to grade. The notebook widget and the terminal
runner both grade here, so a question is marked, and its feedback worded, the same everywhere.

The rule, `Tries`: a first wrong answer is told it is not right, without the answer, and gets the
question's hint; the right answer and the explanation come with a right answer or a second wrong
one. The score counts first tries only, so an answer sent again after it was shown never counts.
Standard library only.

Every text a learner reads is shown in the current language (labkit.i18n): the framing through
`tr("...")`, and the quiz's own texts (question, choices, hint, explanation, unit) through `tr(text)`
at the moment they are shown, so the Chinese edition grades with this one answer key. `shown(text)`
is that translation, for the front ends.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from labkit.i18n import language, phrase, tr
from labkit.sentences import join_sentences

_NUMBER = re.compile(
    r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:_\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NUMBER_ADVICE = phrase("Type a number, such as 42, -3, 0.125, 1e-5 or 25,829,888 "
                  "(a point for decimals; commas only between groups of three digits)")


def shown(text: str | None) -> str | None:
    """A quiz's own text (title, description, question, choice, hint, explanation, unit) as the
    learner reads it: translated from the quiz's catalog in the current language, else as written."""
    return None if text is None else tr(text)


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
    unchecked: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Question:
    """One question, as validated by `parse_quiz` (build questions through it, not by hand).

    `answer` is a choice index (single), a sorted tuple of indices (multiple) or a number
    (numeric); `choices` is empty for numeric questions, `tolerance` and `unit` are None for the
    others. `check` (code that decides the question) and `unchecked` (why no code can) are for the
    course's tests: they are left out of the repr, and no front end shows them. `deep_dive` marks a
    question on a deep dive's material, which the express route's quiz leaves out (`Quiz.on_route`).
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
    deep_dive: bool = False

    def grade(self, response: Any) -> Feedback:
        """Mark a response: a choice index (single), an iterable of indices (multiple: right only
        with all and only the right ones), or a number (numeric: right within the tolerance).

        A response of the wrong kind, or an index that is not a choice, is a ValueError: the front
        ends turn typed text into responses with `parse_response`, which explains a bad one.
        """
        if self.type == "single":
            chosen = self._index(response)
            head = tr("Right!") if chosen == self.answer else tr("Not quite: you chose {letter}.",
                                                                  letter=letter(chosen))
            return self._revealed(chosen == self.answer, head)
        if self.type == "multiple":
            if isinstance(response, (str, bytes)) or not hasattr(response, "__iter__"):
                raise ValueError(f"Question '{self.id}' takes a list of choice indices, such as "
                                 f"[0, 2]; got {response!r}.")
            chosen = {self._index(item) for item in response}
            missed = sorted(set(self.answer) - chosen)
            wrong = sorted(chosen - set(self.answer))
            clause = None
            if wrong:
                clause = (tr("{letters} is not right", letters=_letters(wrong)) if len(wrong) == 1
                          else tr("{letters} are not right", letters=_letters(wrong)))
            if missed and wrong:
                head = tr("Not quite: you missed {missed}, and {wrong}.", missed=_letters(missed), wrong=clause)
            elif missed:
                head = tr("Not quite: you missed {missed}.", missed=_letters(missed))
            elif wrong:
                head = tr("Not quite: {wrong}.", wrong=clause)
            else:
                head = tr("Right!")
            return self._revealed(not (missed or wrong), head)
        if isinstance(response, bool) or not isinstance(response, numbers.Real) or not _finite(response):
            raise ValueError(f"Question '{self.id}' takes a finite number; got {response!r}.")
        correct = self.accepts(response)
        head = tr("Right!") if correct else tr("Not quite: you answered {number}.", number=format_number(response))
        return self._revealed(correct, head)

    def _revealed(self, correct: bool, head: str) -> Feedback:
        """The verdict, the right answer, and the explanation on its own line."""
        return Feedback(correct, f"{join_sentences(head, self.answer_text())}\n{shown(self.explanation)}")

    def accepts(self, value: float) -> bool:
        """|value - answer| <= tolerance. A value on the boundary counts even when binary floats
        put the difference a hair above it (0.4 - 0.3 > 0.1): the learner typed the boundary."""
        difference = abs(value - self.answer)
        return difference <= self.tolerance or math.isclose(difference, self.tolerance, rel_tol=1e-9)

    def answer_text(self) -> str:
        """The right answer as a sentence: "The answer is B: ...", "The answers are A and C.",
        "The answer is 786,432 parameters." (with the tolerance when it is not 0)."""
        if self.type == "single":
            return tr("The answer is {letter}: {choice}", letter=letter(self.answer),
                      choice=shown(self.choices[self.answer]))
        if self.type == "multiple":
            return tr("The answers are {letters}.", letters=_letters(self.answer))
        text = format_number(self.answer) + (f" {shown(self.unit)}" if self.unit else "")
        if self.tolerance:
            return tr("The answer is {number} (anything within ±{tolerance} counts).", number=text,
                      tolerance=format_number(self.tolerance))
        return tr("The answer is {number}.", number=text)

    def _index(self, response: Any) -> int:
        if (isinstance(response, bool) or not isinstance(response, numbers.Integral)
                or not 0 <= response < len(self.choices)):
            raise ValueError(f"Question '{self.id}' takes choice indices from 0 to "
                             f"{len(self.choices) - 1}; got {response!r}.")
        return int(response)


# The rule's words, shown through tr() in the current language.
NOT_RIGHT = phrase("Not quite: that is not right yet.")
TRY_AGAIN = phrase("Try once more; a second wrong answer shows the right one.")
SEEN = phrase("(You have seen the answer: this try does not change your score.)")


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
            verdict, _, explanation = full.message.partition("\n")
            return Feedback(full.correct, f"{join_sentences(verdict, tr(SEEN))}\n{explanation}")
        self.count += 1
        if self.first_right is None:
            self.first_right = full.correct
        if full.correct or self.count >= 2:
            self.revealed = True
            return full
        hint = "\n" + tr("Hint: {hint}", hint=shown(self.question.hint)) if self.question.hint else ""
        return Feedback(False, join_sentences(tr(NOT_RIGHT), tr(TRY_AGAIN)) + hint, revealed=False)


# The routes through the course (README, "Routes"): the express route reads the core sections only,
# so its quiz leaves out the questions marked `deep_dive`; the full course asks every question.
ROUTES = ("full", "express")


@dataclass(frozen=True)
class Quiz:
    """A module's quiz: `module` is its NN_slug, `questions` a tuple of `Question`."""

    module: str
    title: str
    questions: tuple[Question, ...]
    description: str | None = None

    def on_route(self, route: str) -> Quiz:
        """The quiz a route asks: every question on the full course, the core's alone (those not
        marked `deep_dive`) on the express route. Any other route is a ValueError naming both."""
        if route not in ROUTES:
            raise ValueError(f"route must be {' or '.join(repr(r) for r in ROUTES)}; got {route!r}.")
        if route == "full":
            return self
        return replace(self, questions=tuple(q for q in self.questions if not q.deep_dive))


def route_note(quiz: Quiz, route: str) -> str | None:
    """What a route leaves out of `quiz`, for the front ends to say under its title (None on the
    full course): "Express route: the 8 questions on the core; the 6 on deep dives are left out." """
    asked = quiz.on_route(route)
    if route == "full":
        return None
    left_out = len(quiz.questions) - len(asked.questions)
    if not left_out:
        return tr("Express route: all {count} questions are on the core.", count=len(asked.questions))
    return tr("Express route: the {core} questions on the core; the {deep} on deep dives are left out.",
              core=len(asked.questions), deep=left_out)


def question_heading(question: Question, number: int, total: int) -> str:
    """"Question 3 of 11", and "(deep dive)" after it for a question on a deep dive's material."""
    heading = tr("Question {number} of {total}", number=number, total=total)
    return tr("{heading} (deep dive)", heading=heading) if question.deep_dive else heading


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
        return tr("Score: {right} of {total} right on the first try, {answered} answered", right=self.right,
                  total=self.total, answered=self.answered)


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
    """"A", "A and C", "A, C and D" (in Chinese "A、C 和 D")."""
    labels = [letter(i) for i in indices]
    if len(labels) == 1:
        return labels[0]
    comma = "、" if language() == "zh-CN" else ", "
    return tr("{some} and {last}", some=comma.join(labels[:-1]), last=labels[-1])


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
    span = tr("A or B") if count == 2 else tr("A to {last}", last=letter(count - 1))
    if question.type == "single":
        if re.fullmatch(r"[A-Za-z]", given) and ord(given.upper()) - ord("A") < count:
            return ord(given.upper()) - ord("A")
        if re.fullmatch(r"\d+", given):
            raise ValueError(tr("Type the letter of your choice, {span}, not its number.", span=span))
        if re.fullmatch(r"[A-Za-z]", given):
            raise ValueError(tr("There is no choice {letter}: type one letter, {span}.", letter=given.upper(),
                                span=span))
        raise ValueError(tr("Type one letter, {span}.", span=span))
    labels = re.sub(r"[\s,;，、；]+", "", given).upper()
    every = tr("A and B") if count == 2 else tr("A to {last}", last=letter(count - 1))
    if labels and re.fullmatch(r"[A-Z]+", labels):
        out_of_range = sorted({c for c in labels if ord(c) - ord("A") >= count})
        if not out_of_range:
            return tuple(sorted({ord(c) - ord("A") for c in labels}))
        raise ValueError(tr("There is no choice {letters}: the choices are {every}.",
                            letters=", ".join(out_of_range), every=every))
    raise ValueError(tr("Type the letters of every answer that applies, such as A,C (the choices are {every}).",
                        every=every))


def _parse_number(question: Question, given: str) -> int | float:
    text = given.replace("\u2212", "-")  # a minus sign pasted from typeset text
    for unit in dict.fromkeys((question.unit, shown(question.unit))):  # the unit as written, or as shown
        if unit and text.lower().endswith(unit.lower()) and text[: -len(unit)].strip():
            text = text[: -len(unit)].strip()
            break
    if not _NUMBER.fullmatch(text):
        advice = tr(_NUMBER_ADVICE)
        raise ValueError(tr("{advice}.", advice=advice) if not given
                         else tr("{advice}; got '{given}'.", advice=advice, given=given))
    plain = text.replace(",", "").replace("_", "")
    if not math.isfinite(float(plain)):
        raise ValueError(tr("{given} is too large; type a finite number.", given=given))
    return int(plain) if re.fullmatch(r"[+-]?\d+", plain) else float(plain)

