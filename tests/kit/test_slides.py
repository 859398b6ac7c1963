"""`make slides M=NN`: a reveal.js deck of a notebook that loads nothing from the network, a
section per heading and a step per cell."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from labkit.course.slides import remote_urls, slide_types, write_slides

ROOT = Path(__file__).resolve().parents[2]


def test_headings_open_sections_and_every_other_cell_is_a_step():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("## Part two\ntext"),
        nbformat.v4.new_markdown_cell("### A detail"),
        nbformat.v4.new_code_cell("def f():\n    return 1", metadata={"jupyter": {"source_hidden": True}}),
    ])
    deck = slide_types(notebook)
    assert [c.metadata.slideshow["slide_type"] for c in deck.cells] == [
        "slide", "subslide", "slide", "subslide", "subslide"]
    assert "source_hidden" not in deck.cells[4].metadata["jupyter"], "a hidden solution is shown as its own step"
    assert "slideshow" not in notebook.cells[0].metadata, "the notebook itself is not changed"


def test_remote_urls_counts_loads_not_links():
    html = ('<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="http://a/b.css">'
            '<a href="https://arxiv.org/abs/1706.03762">paper</a><script src="assets/local.js"></script>')
    assert remote_urls(html) == ["https://cdn.example/x.js", "http://a/b.css"]


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    path = write_slides(ROOT / "notebooks" / "01_attention_basics.ipynb", out, ROOT)
    return out, path, path.read_text()


def test_the_deck_is_offline_and_its_assets_exist(deck):
    out, path, html = deck
    assert path.name == "01_attention_basics.slides.html"
    assert remote_urls(html) == [], "the slides must load nothing from the network"
    local = re.findall(r"""<(?:script|link)\b[^>]*(?:src|href)="([^"?]+)""", html)
    assert {"assets/reveal.js/dist/reveal.js", "assets/reveal.js/dist/reveal.css",
            "assets/mathjax/MathJax.js"} <= set(local)
    for relative in local:
        assert (out / relative).is_file(), f"the deck loads {relative}, which is missing"


def test_the_deck_has_a_section_per_heading_and_keeps_the_outputs(deck):
    _, _, html = deck
    cells = nbformat.read(ROOT / "notebooks" / "01_attention_basics.ipynb", as_version=4).cells
    headings = sum(1 for i, c in enumerate(cells)
                   if i == 0 or (c.cell_type == "markdown" and re.match(r"^\s*#{1,2}\s", c.source)))
    # reveal.js nests: one outer <section> per slide holding one inner <section> per step
    assert html.count("<section") == headings + len(cells)
    assert "data:image/png;base64" in html, "stored figures are in the deck"
    assert "Reveal.initialize" in html and "require(" not in html
