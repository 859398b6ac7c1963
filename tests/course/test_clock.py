"""The clock (labkit/course/clock.py) counts what its rule says, on notebooks made for the test.

The stated times themselves are bound facts (tests/facts/00_clock.py, run by test_facts.py): this
file checks the rule that computes them."""

from __future__ import annotations

import json

import nbformat
import pytest

from labkit.course.clock import clock, course_clock, route_totals


def _write(tmp_path, cells, questions=0):
    nb = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "05_masking.ipynb"
    nbformat.write(nb, path)
    quiz = tmp_path / "05_masking.json"
    quiz.write_text(json.dumps({"module": "05", "title": "t", "questions": [{}] * questions}))
    return path, quiz


def _md(words, *tags):
    return nbformat.v4.new_markdown_cell(" ".join(["word"] * words), metadata={"tags": list(tags)})


def _code(*tags):
    return nbformat.v4.new_code_cell("x = 1", metadata={"tags": list(tags)})


def test_the_rule_on_a_notebook_with_every_kind_of_cell(tmp_path):
    cells = [_md(260), _code(), _code("predict"), _code(), _code("solution", "find-the-bug"), _code(),
             _code("solution"), _code(),
             _md(130, "deep-dive"), _code("deep-dive"), _code("deep-dive", "predict"), _code("deep-dive"),
             _code("deep-dive", "solution"), _code("deep-dive")]
    c = clock(*_write(tmp_path, cells, questions=10))
    # core: 260 words, 7 code cells, 1 predict, 1 find-the-bug
    assert c.express == pytest.approx(260 / 130 + 0.5 * 7 + 1 + 8)
    # all: 390 words, 12 code cells, 2 predict, 1 find-the-bug, 2 exercises, 10 questions
    assert c.full == pytest.approx(390 / 130 + 0.5 * 12 + 2 + 8 + 8 * 2 + 10)


def test_fact_markers_are_not_words(tmp_path):
    cell = nbformat.v4.new_markdown_cell("caches <!-- fact: x -->12,288<!-- /fact --> bytes")
    assert clock(*_write(tmp_path, [cell])).core_words == 3


def test_a_module_without_a_quiz_has_no_quiz_minutes(tmp_path):
    path, quiz = _write(tmp_path, [_md(130)])
    quiz.unlink()
    assert clock(path, quiz).full == pytest.approx(1)


def test_the_course_has_a_clock_for_every_notebook_and_the_routes_add_up():
    clocks = course_clock()
    assert {f"{n:02d}" for n in range(11)} <= set(clocks)
    totals = route_totals(clocks)
    assert totals["express 01-08"] == pytest.approx(sum(clocks[f"{n:02d}"].express for n in range(1, 9)))
    assert all(c.express <= c.full for c in clocks.values())
