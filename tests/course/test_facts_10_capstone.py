"""Numbers and tables written in module 10's prose (guide, notebook text, quiz explanations) are the
ones code computes: the ladder and the catalogue from labkit.grader's data (whose stages
tests/kit/test_grader.py holds to what the grader does), the rest measured here."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from labkit.grader import BY_KEY, CATALOGUE, LADDER, STAGE, grade, stage_number
from labkit.grader.compare import first_difference
from labkit.grader.ladder import BASE, TOLERANCE, model_episodes, run_model, stage_inputs
from labkit.quiz import load_quiz

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "10_capstone" / "README.md").read_text()
GUIDE_FLAT = " ".join(GUIDE.split())
WORDS = {2: "two", 3: "three", 10: "ten", 11: "eleven"}


def table(heading_row: str) -> list[list[str]]:
    """The rows of the guide's Markdown table whose header starts with `heading_row`."""
    block = GUIDE.split(heading_row, 1)[1].split("\n\n", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in block.splitlines()[2:]]


@pytest.fixture(scope="module")
def markdown() -> str:
    cells = nbformat.read(ROOT / "notebooks" / "10_capstone.ipynb", as_version=4).cells
    return " ".join(" ".join(cell.source for cell in cells if cell.cell_type == "markdown").split())


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


WHOLE = stage_number(STAGE["whole_model"]) - 1  # its index: the stages before it are the cheap ones


def test_guide_ladder_table_is_the_ladder():
    rows = table("| Stage | Title |")
    assert [(int(r[0]), r[1], r[3]) for r in rows] == [(stage_number(s), s.title, s.module[:2]) for s in LADDER]


def test_guide_catalogue_table_is_the_catalogue():
    rows = table("| Mistake | Caught at stage |")
    assert [(r[0], int(r[1]), r[2]) for r in rows] == [
        (m.title, stage_number(STAGE[m.stage]), m.module[:2]) for m in CATALOGUE]


def test_guide_sizes_and_tolerances():
    config = mm.MiniMindConfig(**BASE)
    assert f"{len(CATALOGUE)} known mistakes" in GUIDE_FLAT
    assert f"The grader runs {WORDS[len(LADDER)]} stages" in GUIDE_FLAT
    assert f"(hidden {config.hidden_size}, {WORDS[config.num_hidden_layers]} layers)" in GUIDE_FLAT
    layer = mm.Attention(config.replace(qk_norm=True))
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (4, 2, 16)
    assert f"{sum(p.numel() for p in layer.parameters()):,} parameters" in GUIDE_FLAT
    for dtype, words in ((torch.float32, "in float32"), (torch.float16, "in float16")):
        atol, rtol = TOLERANCE[dtype]
        exponent = round(torch.log10(torch.tensor(atol)).item())
        assert atol == rtol and f"$10^{{{exponent}}} + 10^{{{exponent}}}|\\text{{expected}}|$ {words}" in GUIDE_FLAT
    assert f"largest magnitude is {int(torch.finfo(torch.float16).max)}" in GUIDE_FLAT


def test_guide_stage_inputs():
    """Stage 7: a prefill of 5 then three one-token steps; stage 8: steps of 3 and 2 after a cache."""
    sizes = {key: [call.x.shape[1] for call in stage_inputs(STAGE[key])[1][0].calls]
             for key in ("prefill_decode", "multi_token_step")}
    assert sizes == {"prefill_decode": [5, 1, 1, 1], "multi_token_step": [4, 3, 2]}
    assert "a prefill of 5 tokens, then three one-token steps" in GUIDE_FLAT
    assert "steps of 3 and 2 tokens after a cache" in GUIDE_FLAT


def test_guide_claims_of_the_ladder_order(ladder_order):
    flops, missed = ladder_order
    assert max(flops[:WHOLE]) < flops[WHOLE] / 10
    assert "Each of stages 1 to 9 costs under a tenth of the floating-point operations of stage 10" in GUIDE_FLAT
    assert len(missed) == 2 and "stage 10 misses two of the mistakes outright" in GUIDE_FLAT
    assert set(missed) == {BY_KEY["minus_billion_fp16"].title, BY_KEY["no_mask_after_cache"].title}


def test_notebook_prose_numbers(markdown, ladder_order):
    assert f"climbs a ladder of {WORDS[len(LADDER)]} stages" in markdown
    config = mm.MiniMindConfig(**BASE)
    assert f"(hidden {config.hidden_size}, {WORDS[config.num_hidden_layers]} layers)" in markdown
    assert "`q_proj` maps 64 to 4 x 16, `k_proj` and `v_proj` map 64 to 2 x 16" in markdown
    assert config.num_attention_heads * config.head_dim == 64 and config.num_key_value_heads * config.head_dim == 32
    tiled = grade(BY_KEY["repeat_tiled"].plant, quiet=True).difference
    assert tiled.where["head"] == 1 and "stage 3 fails, at head 1" in markdown
    top_left = grade(BY_KEY["top_left_causal"].plant, quiet=True).difference
    query = top_left.where["query"]
    keys = int(mm.causal_mask(1, query + 1).sum())
    assert top_left.actual == pytest.approx(1.0)
    assert f"the query at position {query} sees key 0 only (weight 1 where the reference spreads its weight over " \
           f"six keys)" in markdown and keys == 6
    assert f"float16, whose largest magnitude is {int(torch.finfo(torch.float16).max)}" in markdown
    assert "Here is what the grader says about three of them" in markdown
    flops, missed = ladder_order
    assert "every stage before the whole model costs under a tenth of it" in markdown
    assert max(flops[:WHOLE]) < flops[WHOLE] / 10
    assert "It would also miss two of the forward mistakes outright" in markdown and len(missed) == 2
    assert "(within 1e-4)" in markdown and TOLERANCE[torch.float32][0] == 1e-4


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
