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
def test_check_agrees_with_the_key_and_refuses_every_wrong_key(quiz, question):
    try:
        outcome = run_check(question, EXTRA)
    except CheckFailed as error:
        pytest.fail(f"quizzes/{quiz.module}.json: {error}")
    assert not disagreements(question, outcome), f"quizzes/{quiz.module}.json: " + "\n".join(
        disagreements(question, outcome))
    accepted = [wrong.answer for wrong in wrong_keys(question) if not disagreements(wrong, outcome)]
    assert not accepted, (f"quizzes/{quiz.module}.json, '{question.id}': the check also agrees with the "
                          f"wrong answer{'s' if len(accepted) > 1 else ''} {accepted}, so it does not decide them")


def wrong_keys(question) -> list:
    """The question with every key its check must refuse. Numeric: a number far outside the
    tolerance, on either side. Single: the key moved to each other choice. Multiple: each single
    choice's membership flipped (a right one left out, a false one added), for every choice the
    check decides; a choice it records as undecidable ("unchecked") is skipped, with its reason."""
    if question.type == "numeric":
        off = 2 * max(question.tolerance, question.check.within or 0) + abs(question.answer) + 1
        return [dataclasses.replace(question, answer=question.answer + sign * off) for sign in (1, -1)]
    if question.type == "single":
        return [dataclasses.replace(question, answer=other) for other in range(len(question.choices))
                if other != question.answer]
    undecided = {index for index, _ in question.check.unchecked}
    return [dataclasses.replace(question, answer=tuple(sorted(set(question.answer) ^ {index})))
            for index in range(len(question.choices)) if index not in undecided]


def test_every_choice_of_a_multiple_choice_check_is_decided_or_says_why_not():
    """The validator holds each file to it; this counts it over the course, and the wrong keys the
    test above tries."""
    for quiz, question in CHECKED:
        if question.type == "multiple":
            decided = {index for index, _ in question.check.choices}
            undecided = {index for index, _ in question.check.unchecked}
            assert decided | undecided == set(range(len(question.choices))) and not decided & undecided, (
                f"{quiz.module} '{question.id}'")
    tried = sum(len(wrong_keys(question)) for _, question in CHECKED)
    assert tried > 3 * len(CHECKED), f"{tried} wrong keys for {len(CHECKED)} checked questions"


@pytest.mark.parametrize(("module", "qid", "false_choice"), [
    ("07_kv_cache", "gqa-what-is-cached", 2), ("09_reading_heads", "induction-needs", 2),
    ("09_reading_heads", "induction-needs", 3), ("09_reading_heads", "score-facts", 3)])
def test_a_false_choice_added_to_the_key_is_refused(module, qid, false_choice):
    """The three questions whose checks once let a false choice join the key unseen (issue 35)."""
    question = next(q for quiz in QUIZZES if quiz.module == module for q in quiz.questions if q.id == qid)
    assert false_choice not in question.answer
    widened = dataclasses.replace(question, answer=tuple(sorted({*question.answer, false_choice})))
    assert disagreements(widened, run_check(question, EXTRA))


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
                hidden += [reason for _, reason in question.check.unchecked]
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
