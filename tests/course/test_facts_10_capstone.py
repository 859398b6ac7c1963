"""Module 10's tables are labkit.grader's data (whose stages tests/kit/test_grader.py holds to what
the grader does), each step is taught where the grader says, and the quiz explanations state the
numbers code computes. The prose's numbers are bound facts (tests/facts/10_capstone.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from labkit.grader import BY_KEY, CATALOGUE, LADDER, STAGE, grade, stage_number
from labkit.grader.compare import first_difference
from labkit.grader.ladder import model_episodes, run_model
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


@pytest.fixture(scope="module")
def ladder_order():
    """exp2's measurements: each stage's operation count and what stage 10 alone misses."""
    exp2 = load_experiment("10", "exp2_ladder_order")
    flops = exp2.stage_flops(0)
    episodes, reference = model_episodes(0), run_model(None, 0)
    forward = [m for m in CATALOGUE if m.stage != "backward"]  # stage 10 cannot see a backward mistake
    missed = [m.title for m in forward if first_difference(run_model(m.plant, 0), reference, episodes, None) is None]
    return flops, missed



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


def test_quiz_explanation_numbers(quiz, ladder_order):
    assert "$2 \\times 4096 + 2 \\times 2048 + 2 \\times 16 = 12{,}320$" in quiz["layer-parameters"]
    assert 2 * 64 * 64 + 2 * 64 * 32 + 2 * 16 == 12320
    right = [j for j in range(8) if j // 4 == j % 2]
    assert right == [0, 2, 5, 7] and "$j = 0, 2, 5, 7$" in quiz["tiled-heads-right"]
    assert f"is {int(torch.finfo(torch.float16).max)}" in quiz["float16-max"]
    position = 5
    assert int(mm.causal_mask(3, 8)[0].sum()) == position + 1 and f"It sits at position ${position}$" in \
        quiz["first-query-keys"]
    decoded = grade(BY_KEY["top_left_causal"].plant, quiet=True).difference.where["query"]
    assert f"the first decoded query (position {decoded}) then sees key 0 only" in quiz["top-left-passes-causal"]
    assert "finds exactly these two missed" in quiz["end-only-misses"] and len(ladder_order[1]) == 2
