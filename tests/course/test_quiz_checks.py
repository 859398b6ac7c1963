"""Every quiz question that code can decide is decided by code: its "check" (quizzes/README.md,
"Checks") is run against minimind_ref, labkit and torch, and must agree with the keyed answer.

A changed behaviour (an error where there was an output, a renamed dtype in torch's message, a
count) fails here, naming the question. Each check must also be able to fail: the outcome it
computed is held against a wrong key too. The rest say, in "unchecked", why no code can decide them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from experiment_scripts import load_experiment

from labkit.quiz import load_quiz, quiz_text, run_terminal_quiz
from labkit.quiz.checks import CheckFailed, disagreements, run_check

ROOT = Path(__file__).resolve().parents[2]
QUIZZES = [load_quiz(path) for path in sorted((ROOT / "quizzes").glob("*.json"))]
QUESTIONS = [(quiz, question) for quiz in QUIZZES for question in quiz.questions]
CHECKED = [pair for pair in QUESTIONS if pair[1].check is not None]
EXTRA = {"experiment": load_experiment}


@pytest.mark.parametrize(("quiz", "question"), CHECKED, ids=lambda x: getattr(x, "id", None) or x.module)
def test_check_agrees_with_the_key_and_could_disagree(quiz, question):
    try:
        outcome = run_check(question, EXTRA)
    except CheckFailed as error:
        pytest.fail(f"quizzes/{quiz.module}.json: {error}")
    assert not disagreements(question, outcome), f"quizzes/{quiz.module}.json: " + "\n".join(
        disagreements(question, outcome))
    wrong = _wrong_key(question)
    assert disagreements(wrong, outcome), (
        f"quizzes/{quiz.module}.json, '{question.id}': the check also agrees with the wrong answer "
        f"{wrong.answer!r}, so it decides nothing")


def _wrong_key(question):
    """The question with a key its check must refuse: a number far outside the tolerance, the
    right choice moved to another, or one checked choice's membership flipped."""
    if question.type == "numeric":
        off = 2 * max(question.tolerance, question.check.within or 0) + abs(question.answer) + 1
        return dataclasses.replace(question, answer=question.answer + off)
    if question.type == "single":
        return dataclasses.replace(question, answer=(question.answer + 1) % len(question.choices))
    flipped = set(question.answer) ^ {question.check.choices[0][0]}
    return dataclasses.replace(question, answer=tuple(sorted(flipped)))


def test_every_question_is_checked_or_says_why_not():
    silent = [f"{quiz.module} '{q.id}'" for quiz, q in QUESTIONS if q.check is None and q.unchecked is None]
    assert not silent, (f"give each question a \"check\" that decides it, or \"unchecked\" with the reason "
                        f"no code can: {', '.join(silent)}")


def test_most_questions_are_checked():
    """The share is the course's promise (quizzes/README.md): a quiz is mostly claims that run."""
    assert len(CHECKED) / len(QUESTIONS) >= 0.85, f"{len(CHECKED)} of {len(QUESTIONS)} questions checked"


def test_no_front_end_shows_a_check():
    """Checks are for the tests: the stored text, the terminal, the widget and the slides never show
    them."""
    import nbformat

    from labkit.course.slide_deck import deck_notebook
    from labkit.quiz.widget import quiz_widget

    def quiz_slides(quiz) -> list:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"show_quiz({quiz.module!r})")])
        return deck_notebook(notebook, ROOT / "notebooks" / "quiz.ipynb", ROOT / "outputs" / "slides").cells

    def widget_texts(widget) -> list[str]:
        texts = [str(getattr(widget, name, "")) for name in ("value", "description", "placeholder", "options")]
        return texts + [text for child in getattr(widget, "children", ()) for text in widget_texts(child)]

    for quiz in QUIZZES:
        printed: list[str] = []
        run_terminal_quiz(quiz, input_fn=lambda prompt: "s", print_fn=lambda *a: printed.append(" ".join(map(str, a))))
        shown = "\n".join([quiz_text(quiz), *printed, *(cell.source for cell in quiz_slides(quiz)),
                           *widget_texts(quiz_widget(quiz))])
        for question in quiz.questions:
            hidden = [question.unchecked] if question.unchecked else []
            if question.check is not None:
                hidden += question.check.code.splitlines()
                hidden += [question.check.value] if question.check.value else []
                hidden += [expression for _, expression in question.check.choices]
            own = "\n".join([question.question, question.explanation, question.hint or "", *question.choices])
            leaked = [text for text in hidden
                      if len(text.strip()) > 12 and text.strip() in shown and text.strip() not in own]
            assert not leaked, f"{quiz.module} '{question.id}' shows its check: {leaked[:2]}"
        assert "check=" not in repr(quiz.questions[0]), "a question's repr leaves its check out"


def test_the_readme_examples_checks_agree_too():
    """quizzes/README.md teaches the format with checks; they run like the quizzes' own."""
    import json
    import re

    from labkit.quiz import parse_quiz
    from labkit.quiz.checks import check_question

    text = (ROOT / "quizzes" / "README.md").read_text(encoding="utf-8")
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, flags=re.S)]
    questions = [q for block in blocks for q in block.get("questions", [block])]
    checked = [q for q in parse_quiz({"module": "x", "title": "x", "questions": questions}).questions if q.check]
    assert checked and not [problem for q in checked for problem in check_question(q, EXTRA)]
