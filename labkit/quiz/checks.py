"""Running the quizzes' checks: the code in a question's "check" that decides its answer.

A quiz states facts about the course's code: a count, a shape, what a call returns or refuses.
Each question that code can decide carries the code that decides it (quizzes/README.md, "Checks"),
and tests/course/test_quiz_checks.py runs them all here, so a change to minimind_ref or torch that
makes a keyed answer false fails a test naming the question.

Only the tests run checks: `load_quiz` and every front end leave them alone, and no learner sees
them. Each runs in a fresh namespace holding the names below, with torch's random state seeded
(and the caller's restored after), so a check cannot lean on another's leftovers:

    mm           minimind_ref            torch, F     torch and torch.nn.functional
    labkit       the course kit          math         the standard module
    raises       raises(fn, match="") is True when fn() raises an Exception whose message holds match
    error_text   error_text(fn) is the message of the Exception fn() raises ("" if none)
    mentions     mentions(text, number, decimals=None) is True when text states the number, written
                 as 1,048,576, 1{,}048{,}576 (LaTeX) or 1048576, or rounded to `decimals`
    question, explanation, choices   the question's own texts, so that a check can require a
                 computed number or a quoted message to appear in them
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from labkit.quiz.model import Question, Quiz, format_number, letter


def raises(fn: Callable[[], Any], match: str = "") -> bool:
    """Whether calling fn raises an Exception whose message contains `match`."""
    return match in error_text(fn) if _raised(fn) else False


def error_text(fn: Callable[[], Any]) -> str:
    """The message of the Exception that fn() raises; "" when it returns."""
    error = _raised(fn)
    return str(error) if error is not None else ""


def mentions(text: str, number: float, decimals: int | None = None) -> bool:
    """Whether `text` states `number`: a whole number with or without thousands separators (plain
    or LaTeX's {,}), else rounded to `decimals` decimals. Digits around it must not continue it."""
    import re

    if decimals is None and float(number).is_integer():
        grouped = f"{int(number):,}"
        forms = {grouped, grouped.replace(",", "{,}"), grouped.replace(",", "")}
    else:
        forms = {f"{number:.{decimals if decimals is not None else 6}f}"}
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d]|\.\d)", text) for form in forms)


def _raised(fn: Callable[[], Any]) -> Exception | None:
    try:
        fn()
    except Exception as error:  # the check asks whether it raises: any Exception is an answer
        return error
    return None


def namespace(question: Question, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The names a check of `question` sees (see the module docstring), and `extra`'s."""
    import torch
    import torch.nn.functional as F

    import labkit
    import minimind_ref

    return {"mm": minimind_ref, "torch": torch, "F": F, "labkit": labkit, "math": math,
            "raises": raises, "error_text": error_text, "mentions": mentions, "question": question.question,
            "explanation": question.explanation, "choices": question.choices, **(extra or {})}


class CheckFailed(Exception):
    """A check whose code raised: the message names the question and the error."""


def run_check(question: Question, extra: dict[str, Any] | None = None) -> float | dict[int, Any]:
    """Run the question's check (it must have one) and return what it computed: the value of a
    numeric question, or {choice index: the result of its expression} for a choice question.
    A check that raises is a CheckFailed naming the question. `extra` adds names to the
    check's namespace (the tests add `experiment`, which loads an experiment script)."""
    import torch

    check = question.check
    scope = namespace(question, extra)
    try:
        with torch.random.fork_rng(devices=[]):  # seeded, and the caller's random state left alone
            torch.manual_seed(0)
            exec(compile(check.code, f"<check of {question.id}>", "exec"), scope)
            if question.type == "numeric":
                return eval(compile(check.value, f"<value of {question.id}>", "eval"), scope)
            return {index: eval(compile(expression, f"<choice {letter(index)} of {question.id}>",
                                        "eval"), scope)
                    for index, expression in check.choices}
    except Exception as error:  # a check that cannot run is a failed check, named
        raise CheckFailed(f"'{question.id}': the check raised {type(error).__name__}: {error}") from error


def disagreements(question: Question, outcome: float | dict[int, Any]) -> list[str]:
    """Where a check's outcome (from run_check) disagrees with the quiz's key: [] when it agrees.
    Kept apart from running, so that a test can also hold the same outcome against a wrong key."""
    where = f"'{question.id}'"
    if question.type == "numeric":
        return _numeric_problems(question, outcome, where)
    problems = []
    keyed = {question.answer} if question.type == "single" else set(question.answer)
    expressions = dict(question.check.choices)
    for index, holds in outcome.items():
        if not isinstance(holds, bool):
            problems.append(f"{where}: the check of choice {letter(index)} gave "
                            f"{type(holds).__name__} {holds!r}, not True or False; wrap it in "
                            f"bool(...) or use .item().")
        elif holds != (index in keyed):
            role = "keyed as right" if index in keyed else "keyed as wrong"
            problems.append(f"{where}: choice {letter(index)} ({question.choices[index]!r}) is "
                            f"{role}, but its check `{expressions[index]}` is {holds}.")
    return problems


def check_question(question: Question, extra: dict[str, Any] | None = None) -> list[str]:
    """Run the question's check and say where it disagrees with the quiz: [] when it agrees (or
    the question has no check). Each problem names the question and what was computed."""
    if question.check is None:
        return []
    try:
        return disagreements(question, run_check(question, extra))
    except CheckFailed as error:
        return [str(error)]


def _numeric_problems(question: Question, value: Any, where: str) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return [f"{where}: the check's value is {type(value).__name__} {value!r}, not a number; "
                f"use .item() or int(...)."]
    allowed = max(question.tolerance, question.check.within or 0)
    difference = abs(value - question.answer)
    if difference <= allowed or math.isclose(difference, allowed, rel_tol=1e-9):
        return []
    bar = f"within {format_number(allowed)}" if allowed else "exactly"
    return [f"{where}: the quiz's answer is {format_number(question.answer)}, the check computes "
            f"{value!r}, and they must agree {bar}."]


def check_quiz(quiz: Quiz, extra: dict[str, Any] | None = None) -> list[str]:
    """Every check of the quiz, run: the problems found, each naming its question."""
    return [f"{quiz.module}, {problem}" for question in quiz.questions
            for problem in check_question(question, extra)]
