"""The clock (labkit/course/clock.py) counts what its rule says, on notebooks made for the test, and
the course's express route fits in its limit.

The stated times themselves are bound facts (tests/facts/00_clock.py, run by test_facts.py): this
file checks the rule that computes them."""

from __future__ import annotations

import json

import nbformat
import pytest

from labkit.course.clock import CAPSTONE, EXPRESS_LIMIT, EXPRESS_MODULES, clock, course_clock, route_totals


def _write(tmp_path, cells, questions=0, deep_dive_questions=0):
    nb = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "05_masking.ipynb"
    nbformat.write(nb, path)
    quiz = tmp_path / "05_masking.json"
    quiz.write_text(json.dumps({"module": "05", "title": "t",
                                "questions": [{}] * questions + [{"deep_dive": True}] * deep_dive_questions}))
    return path, quiz


def _md(words, *tags, text=""):
    return nbformat.v4.new_markdown_cell(" ".join(["word"] * words) + text, metadata={"tags": list(tags)})


def _code(*tags, source="x = 1"):
    return nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)})


def test_the_rule_on_a_notebook_with_every_kind_of_cell(tmp_path):
    cells = [_md(260), _code(), _code("predict"), _code(), _code("solution", "find-the-bug"), _code(),
             _code("solution"), _code(),
             _md(130, "deep-dive"), _code("deep-dive"), _code("deep-dive", "predict"), _code("deep-dive"),
             _code("deep-dive", "solution"), _code("deep-dive")]
    c = clock(*_write(tmp_path, cells, questions=7, deep_dive_questions=3))
    # core: 260 words, 7 code cells, 1 predict, 1 find-the-bug, 1 exercise, 7 questions
    assert c.express == pytest.approx(260 / 130 + 0.5 * 7 + 1 + 8 + 8 + 7)
    # all: 390 words, 12 code cells, 2 predict, 1 find-the-bug, 2 exercises, 10 questions
    assert c.full == pytest.approx(390 / 130 + 0.5 * 12 + 2 + 8 + 8 * 2 + 10)


def test_the_capstone_express_takes_the_blank_page_path(tmp_path):
    """Path A's cells (`steps-path`) are not on the express route; the blank-page layer costs the
    capstone's allowance, on both routes, and is not an exercise."""
    cells = [_md(130), _md(130, "steps-path"), _code("solution", "steps-path"), _code("steps-path"),
             _code("solution", "blank-page"), _code()]
    c = clock(*_write(tmp_path, cells))
    assert c.express == pytest.approx(1 + 0.5 * 2 + CAPSTONE)
    assert c.full == pytest.approx(2 + 0.5 * 4 + 8 + CAPSTONE)
    assert (c.core.exercises, c.core.capstone, c.all.exercises) == (0, 1, 1)


def test_an_experiment_counts_when_a_cell_gives_its_command_not_when_it_names_it(tmp_path):
    cells = [_md(0, text="Run `python experiments/05_masking/exp1_fill_values.py` and read its table."),
             _md(0, text="Then `python -m experiments.05_masking.exp1_fill_values` again: the same script."),
             _md(0, text="Experiment `exp2_causal_alignment` checks it; `make exp M=05` takes it further."),
             _md(0, "deep-dive", text="python experiments/05_masking/exp4_padding_side.py")]
    c = clock(*_write(tmp_path, cells))
    assert (c.core.experiments, c.all.experiments) == (1, 2)
    assert c.express == pytest.approx(c.core.words / 130 + 3) and c.full == pytest.approx(c.all.words / 130 + 6)


def test_fact_markers_are_not_words(tmp_path):
    cell = nbformat.v4.new_markdown_cell("caches <!-- fact: x -->12,288<!-- /fact --> bytes")
    assert clock(*_write(tmp_path, [cell])).core.words == 3


def test_a_module_without_a_quiz_has_no_quiz_minutes(tmp_path):
    path, quiz = _write(tmp_path, [_md(130)])
    quiz.unlink()
    assert clock(path, quiz).full == pytest.approx(1)


def test_the_course_has_a_clock_for_every_notebook_and_the_routes_add_up():
    clocks = course_clock()
    assert {f"{n:02d}" for n in range(11)} <= set(clocks)
    totals = route_totals(clocks)
    assert totals["express"] == pytest.approx(sum(clocks[number].express for number in EXPRESS_MODULES))
    assert EXPRESS_MODULES[-1] == "10", "the express route ends with the capstone"
    # the course promises "from the first dot product to FlashAttention": no module of it is dropped
    assert EXPRESS_MODULES[:-1] == tuple(f"{n:02d}" for n in range(1, 9)), "the express route is modules 01-08"
    assert all(c.express <= c.full for c in clocks.values())


def test_the_express_route_fits_in_six_hours_capstone_included():
    """Issue 34: everything the express route asks (the core's reading, predictions, bugs and quiz
    questions, then the capstone from a blank page) takes at most 6 hours by the rule."""
    clocks = course_clock()
    assert clocks["10"].core.capstone == 1, "notebook 10 has one cell tagged blank-page: the express capstone"
    total = route_totals(clocks)["express"]
    table = ", ".join(f"{number}: {clocks[number].express:.0f}" for number in EXPRESS_MODULES)
    assert total <= EXPRESS_LIMIT, (
        f"the express route takes {total:.0f} minutes, over {EXPRESS_LIMIT} ({table}): move optional "
        "material to a deep dive or shorten the core (CONTRIBUTING.md, 'The clock')")
