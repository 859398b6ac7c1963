"""Every quiz file is valid and has the course's mix of questions. Whether its answers are true is
tests/course/test_quiz_checks.py's job: it runs each question's "check"."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.quiz import load_quiz

ROOT = Path(__file__).resolve().parents[2]
QUIZZES = sorted((ROOT / "quizzes").glob("*.json"))


def test_there_are_quizzes():
    assert QUIZZES


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.stem)
def test_quiz_is_valid_and_mixes_question_types(path):
    quiz = load_quiz(path)
    assert len(quiz.questions) >= 8, f"{path.name}: a quiz has at least 8 questions"
    assert {q.type for q in quiz.questions} == {"single", "multiple", "numeric"}, (
        f"{path.name}: a quiz mixes single-choice, multiple-choice and numeric questions")


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.stem)
def test_every_numeric_answer_is_computed_by_its_check(path):
    """A number code can compute is computed once, by the question's own check, never typed twice."""
    unchecked = [q.id for q in load_quiz(path).questions if q.type == "numeric" and q.check is None]
    assert not unchecked, f"{path.name}: numeric questions without a check: {unchecked}"
