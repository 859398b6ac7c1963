"""Every quiz file is valid, has the course's mix of questions, and every numeric answer is the
one the code computes (tests/quiz_answers/NN_slug.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from quiz_answers import RECOMPUTED, Estimate

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
def test_every_numeric_answer_is_recomputed(path):
    quiz = load_quiz(path)
    registry = RECOMPUTED.get(quiz.module, {})
    numeric = {q.id: q for q in quiz.questions if q.type == "numeric"}
    assert set(registry) == set(numeric), (
        f"tests/quiz_answers/NN_slug.py must recompute exactly the numeric questions of {path.name}: "
        f"missing {sorted(set(numeric) - set(registry))}, stale {sorted(set(registry) - set(numeric))}")
    for qid, question in numeric.items():
        computed = registry[qid]()
        if isinstance(computed, Estimate):  # a sampled statistic: its own error bar decides
            assert abs(computed.value - question.answer) <= max(question.tolerance, computed.tolerance), (
                f"{path.name}, '{qid}': the quiz says {question.answer}, sampling gives {computed.value:.4g} "
                f"(+/- {computed.tolerance:.2g})")
        else:  # an exact computation: the quiz's own grading must accept it
            assert question.grade(computed).correct, (
                f"{path.name}, '{qid}': the quiz says {question.answer}, the code computes {computed}")
