"""`make slides M=NN`: what goes on which slide, and a deck that loads nothing from the network.
How the slides look in a browser is tests/kit/test_slides_browser.py's job."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from labkit.course.slide_deck import BODY_LINES, block_lines, deck_notebook, markdown_blocks, solution_source
from labkit.course.slides import remote_urls, write_slides
from labkit.course.student import BEGIN, END, PLACEHOLDER

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "outputs" / "slides"


def kinds(deck):
    return [(cell.metadata.slideshow["slide_type"], cell.source.splitlines()[0] if cell.source else "")
            for cell in deck.cells]


def test_a_heading_anywhere_in_a_cell_starts_a_slide():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\nintro"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("text before\n\n## Part two\nmore\n\n### A detail\n\ndetail text"),
    ])
    deck = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    assert kinds(deck) == [("slide", "# Title"), ("subslide", "x = 1"), ("subslide", "text before"),
                           ("slide", "## Part two"), ("subslide", "### A detail")]
    assert "slideshow" not in notebook.cells[0].metadata, "the notebook itself is not changed"
    assert len({cell.id for cell in deck.cells}) == len(deck.cells)


def test_a_heading_inside_fenced_code_or_a_formula_is_not_a_heading():
    source = "## Real\n\n```python\n# a comment\nx = 1\n\ny = 2\n```\n\n$$\na\n\nb\n$$"
    assert markdown_blocks(source) == ["## Real", "```python\n# a comment\nx = 1\n\ny = 2\n```", "$$\na\n\nb\n$$"]


def test_prose_that_does_not_fit_goes_to_the_speaker_notes_and_a_long_list_continues():
    paragraph = "Words " * 120
    items = "\n".join(f"- item {i} " + "x" * 150 for i in range(12))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"## Topic\n\n{paragraph}\n\n{paragraph}\n\n{paragraph}\n\n{items}")])
    deck = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    slide_kinds = [kind for kind, _ in kinds(deck)]
    assert "notes" in slide_kinds, "long prose is kept for the speaker"
    assert [first for kind, first in kinds(deck) if kind == "subslide"][0] == "#### Topic (continued)"
    for cell in deck.cells:
        if cell.metadata.slideshow["slide_type"] != "notes":
            assert sum(block_lines(b) for b in markdown_blocks(cell.source)) <= BODY_LINES + 0.01
    shown = "".join(cell.source for cell in deck.cells)
    assert shown.count("item") == 12 and shown.count("Words") == 360, "nothing is lost"


def test_an_exercise_is_shown_as_set_and_its_solution_follows_or_is_left_out():
    source = f"def f(x):\n    {BEGIN}\n    return x + 1\n    {END}"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(source, metadata={"tags": ["solution"], "jupyter": {"source_hidden": True}}),
        nbformat.v4.new_code_cell("check(...)")])
    with_solution = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    assert PLACEHOLDER in with_solution.cells[0].source and "x + 1" not in with_solution.cells[0].source
    assert kinds(with_solution)[1:3] == [("subslide", "#### Solution: `f`"), ("-", "def f(x):")]
    assert with_solution.cells[2].source == solution_source(source) == "def f(x):\n    return x + 1"
    without = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT, solutions=False)
    assert "x + 1" not in "".join(cell.source for cell in without.cells)


def test_the_quiz_is_a_slide_per_question_with_its_answer_a_fragment():
    from labkit.quiz.widget import resolve_quiz

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('show_quiz("06")')])
    deck = deck_notebook(notebook, NOTEBOOKS / "06_rope.ipynb", OUT)
    questions = resolve_quiz("06").questions
    slides = [c for c in deck.cells if c.metadata.slideshow["slide_type"] in ("slide", "subslide")]
    assert len(slides) == len(questions)
    for slide, question in zip(slides, questions):
        answer = deck.cells[deck.cells.index(slide) + 1]
        assert question.question in slide.source
        assert answer.metadata.slideshow["slide_type"] == "fragment" and question.answer_text() in answer.source


def test_links_work_from_the_deck_folder_and_widgets_lose_their_live_output():
    widget = nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "interactive(...)"})
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("See [the guide](../modules/06_rope/README.md#ideas), "
                                      "[a paper](https://arxiv.org/abs/2104.09864) and [below](#quiz)."),
        nbformat.v4.new_code_cell("interact(f)", outputs=[widget])])
    deck = deck_notebook(notebook, NOTEBOOKS / "06_rope.ipynb", OUT)
    assert "(../../modules/06_rope/README.md#ideas)" in deck.cells[0].source
    assert "(https://arxiv.org/abs/2104.09864)" in deck.cells[0].source and "(#quiz)" in deck.cells[0].source
    assert (OUT / "../../modules/06_rope/README.md").resolve().is_file()
    assert deck.cells[1].outputs == []


def test_remote_urls_counts_loads_not_links():
    html = ('<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="http://a/b.css">'
            '<a href="https://arxiv.org/abs/1706.03762">paper</a><script src="assets/local.js"></script>')
    assert remote_urls(html) == ["https://cdn.example/x.js", "http://a/b.css"]


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    path = write_slides(NOTEBOOKS / "06_rope.ipynb", out, ROOT)
    return out, path, path.read_text()


def test_the_deck_is_offline_and_its_assets_exist(deck):
    out, path, html = deck
    assert path.name == "06_rope.slides.html"
    assert remote_urls(html) == [], "the slides must load nothing from the network"
    local = re.findall(r"""<(?:script|link)\b[^>]*(?:src|href)="([^"?]+)""", html)
    assert {"assets/reveal.js/dist/reveal.js", "assets/reveal.js/dist/reveal.css",
            "assets/mathjax/tex-svg-full.js"} <= set(local)
    for relative in local:
        assert (out / relative).is_file(), f"the deck loads {relative}, which is missing"
    assert "data:image/png;base64" in html, "stored figures are in the deck"
    assert "Reveal.initialize" in html and "require(" not in html
    assert BEGIN not in html and END not in html, "no solution markers are projected"
