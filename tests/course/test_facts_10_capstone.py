"""Module 10's tables are labkit.grader's data (whose stages tests/kit/test_grader.py holds to what
the grader does), each step is taught where the grader says, and the quiz says how many mistakes
stage 10 alone misses (its other numbers are bound by each question's `check`). The prose's numbers
are bound facts (tests/facts/10_capstone.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from facts import FACTS, WORDS

from labkit.grader import BY_KEY, CATALOGUE, LADDER, STAGE, stage_number
from labkit.quiz import load_quiz

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "10_capstone" / "README.md").read_text()
TAUGHT_IN_THE_CAPSTONE = {"whole_model", "backward"}  # stages whose step module 10 itself teaches


def table(heading_row: str) -> list[list[str]]:
    """The rows of the guide's Markdown table whose header starts with `heading_row`."""
    block = GUIDE.split(heading_row, 1)[1].split("\n\n", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in block.splitlines()[2:]]


@pytest.fixture(scope="module")
def quiz():
    return {q.id: " ".join(q.explanation.split()) for q in load_quiz(ROOT / "quizzes" / "10_capstone.json").questions}


def test_guide_ladder_table_is_the_ladder():
    rows = table("| Stage | Title |")
    assert [(int(r[0]), r[1], r[3]) for r in rows] == [(stage_number(s), s.title, s.module[:2]) for s in LADDER]


def test_guide_catalogue_table_is_the_catalogue():
    rows = table("| Mistake | Caught at stage |")
    assert [(r[0], int(r[1]), r[2]) for r in rows] == [
        (m.title, stage_number(STAGE[m.stage]), m.module[:2]) for m in CATALOGUE]


def test_each_step_is_taught_where_the_grader_says():
    """The capstone assembles; it teaches no step of its own. Every stage and catalogued mistake but
    the whole model names the module that teaches its step, and that module's guide covers it
    (issue 25, correction 7: q/k norm is taught in module 02, not 10)."""
    for item in (*LADDER, *CATALOGUE):
        stage = item.key if item in LADDER else item.stage
        if stage in TAUGHT_IN_THE_CAPSTONE:
            continue
        assert item.module != "10_capstone", (f"{item.title}: name the module that teaches its step, not the "
                                              f"capstone (or add stage {stage!r} to TAUGHT_IN_THE_CAPSTONE)")
        assert (ROOT / "modules" / item.module / "README.md").is_file(), item.module
    for item in (STAGE["qk_norm"], BY_KEY["qk_norm_skipped"], BY_KEY["qk_norm_after_rope"]):
        guide = (ROOT / "modules" / item.module / "README.md").read_text()
        assert re.search(r"q/k (RMS)?norm|QK-?Norm", guide, re.IGNORECASE), f"{item.module} does not teach q/k norm"


def test_quiz_stage10_misses_are_the_measured_ones(quiz):
    """The quiz's count of mistakes stage 10 alone misses is the guide's fact (exp2's measurement):
    too slow for the question's own check (its `unchecked` says so)."""
    missed = FACTS["stage10_alone_misses"].compute()
    word = {value: name for name, value in WORDS.items() if name not in ("once", "twice")}[missed]
    assert re.search(rf"\b{word} missed\b", quiz["end-only-misses"]), f"the quiz should say {word} are missed"
