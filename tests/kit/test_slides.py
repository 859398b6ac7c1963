"""`make slides M=NN`: what goes on which slide, and a deck that loads nothing from the network.
How the slides look in a browser is tests/kit/test_slides_browser.py's job; what the layout
promises of every real deck, in both languages (no slide ends on a lead-in, no output without its
code or a title that says so, every title says what the slide holds), is held here, where it is
cheap."""

from __future__ import annotations

import ast
import base64
import re
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_cells import run_cells

from labkit.course.slide_deck import (
    ALT_CHARS,
    FIGURE_TEXT_PX,
    MAX_ENLARGE,
    SLIDE_HEIGHT,
    SLIDE_WIDTH,
    block_height,
    code_height,
    deck_notebook,
    figure_alt,
    is_lead_in,
    markdown_blocks,
    solution_source,
    split_code,
    text_width,
    title_height,
)
from labkit.course.slides import NO_ALT, deck_name, remote_urls, write_slides
from labkit.course.student import BEGIN, END, PLACEHOLDER
from labkit.i18n import speaking

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "outputs" / "slides"


def kinds(deck):
    return [(cell.metadata.slideshow["slide_type"], cell.source.splitlines()[0] if cell.source else "")
            for cell in deck.cells]


def slides_of(deck):
    """The deck as slides: each a list of its cells (notes included), split where a slide starts."""
    slides = []
    for cell in deck.cells:
        if cell.metadata.slideshow["slide_type"] in ("slide", "subslide") or not slides:
            slides.append([])
        slides[-1].append(cell)
    return slides


def test_every_slide_is_titled_by_its_section_and_a_heading_anywhere_starts_one():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\nintro"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("text before\n\n## Part two\nmore\n\n### A detail\n\ndetail text"),
    ])
    deck = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    assert kinds(deck) == [("slide", "## Title"), ("-", "x = 1"), ("-", "text before"),
                           ("slide", "## Part two"), ("subslide", "### A detail")]
    assert "slideshow" not in notebook.cells[0].metadata, "the notebook itself is not changed"
    assert len({cell.id for cell in deck.cells}) == len(deck.cells)


def test_fact_markers_are_left_out_of_the_slides():
    """A bound fact's markers are invisible in the notebook, so they take no room on a slide either."""
    marked = "MiniMind-3 caches <!-- fact: cache_bytes -->12,288<!-- /fact --> bytes per token."
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# Title\n\n{marked}")])
    text = "\n".join(cell.source for cell in deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT).cells)
    assert "MiniMind-3 caches 12,288 bytes per token." in text and "<!--" not in text


def test_a_heading_inside_fenced_code_or_a_formula_is_not_a_heading():
    source = "## Real\n\n```python\n# a comment\nx = 1\n\ny = 2\n```\n\n$$\na\n\nb\n$$"
    assert markdown_blocks(source) == ["## Real", "```python\n# a comment\nx = 1\n\ny = 2\n```", "$$\na\n\nb\n$$"]


def slide_height(slide):
    """What slide_deck estimates for a slide: its title and every piece on it."""
    title = slide[0].source.splitlines()[0].lstrip("# ")
    height = title_height(title)
    for cell in slide:
        kind = cell.metadata.slideshow["slide_type"]
        if kind in ("notes", "fragment"):
            continue
        if cell.cell_type == "markdown":
            height += sum(block_height(b) for b in markdown_blocks(cell.source) if not b.startswith("#"))
        elif cell.source:
            height += code_height(cell.source)
    return height


def test_prose_that_does_not_fit_goes_to_the_notes_and_a_long_list_continues_titled():
    paragraph = "Words " * 120
    items = "\n".join(f"- item {i} " + "x" * 150 for i in range(12))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"## Topic\n\n{paragraph}\n\n{paragraph}\n\n{paragraph}\n\n{items}")])
    deck = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    slides = slides_of(deck)
    assert any(cell.metadata.slideshow["slide_type"] == "notes" for cell in deck.cells), "prose kept for the speaker"
    titles = [slide[0].source.splitlines()[0] for slide in slides]
    assert titles == [f"{'##' if k == 1 else '###'} Topic ({k}/{len(slides)})" for k in range(1, len(slides) + 1)]
    for slide in slides:
        assert slide_height(slide) <= SLIDE_HEIGHT + 0.01
    shown = "".join(cell.source for cell in deck.cells)
    assert shown.count("item") == 12 and shown.count("Words") == 360, "nothing is lost"


def test_long_code_is_cut_at_statement_boundaries_and_its_figure_fits_the_slide():
    body = "\n".join(f"    y{i} = x + {i}  # step {i}" for i in range(20))
    source = "\n\n".join(f"def f{n}(x):\n{body}\n    return x" for n in range(3))
    png = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452") + (1600).to_bytes(4, "big")
                           + (1400).to_bytes(4, "big") + b"\0" * 40).decode()
    figure = nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## Code"),
                                               nbformat.v4.new_code_cell(source, outputs=[figure])])
    deck = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    parts = [cell.source for cell in deck.cells if cell.cell_type == "code" and cell.source]
    assert len(parts) > 1 and "\n".join(parts).replace("\n\n", "\n") == source.replace("\n\n", "\n")
    for part in parts:
        ast.parse(part)  # whole functions: cut at the top level, where that fills a slide well
        assert code_height(part) <= SLIDE_HEIGHT
    long_body = f"def g(x):\n{body}\n{body}\n{body}\n    return x"
    inner = split_code(long_body, 400)
    assert len(inner) > 1 and all(code_height(part) <= 400 for part in inner)
    starts = [line.strip() for line in long_body.splitlines()]
    assert all(part.splitlines()[0].strip() in starts for part in inner), "cut where a statement starts"
    (shown,) = [cell for cell in deck.cells if cell.get("outputs")]
    size = shown.outputs[0].metadata["image/png"]
    assert size["width"] <= SLIDE_WIDTH and size["height"] <= SLIDE_HEIGHT and size["width"] / size["height"] == \
        pytest.approx(1600 / 1400, rel=0.01)
    assert shown.metadata["transient"] == {"remove_source": True}, "the figure's slide shows the figure alone"
    assert split_code("x = 1\ny = 2", 10_000) == ["x = 1\ny = 2"]


def test_an_exercise_is_shown_as_set_and_its_solution_follows_or_is_left_out():
    source = f"def f(x):\n    {BEGIN}\n    return x + 1\n    {END}"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("### Exercise 1\n\nWrite f."),
        nbformat.v4.new_code_cell(source, metadata={"tags": ["solution"], "jupyter": {"source_hidden": True}}),
        nbformat.v4.new_code_cell("check(...)")])
    with_solution = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT)
    slides = slides_of(with_solution)
    exercise, solution = slides[0], slides[1]
    assert exercise[0].source.startswith("### Exercise 1 (1/2)\n\nWrite f.") and PLACEHOLDER in exercise[1].source
    assert "x + 1" not in "".join(cell.source for cell in exercise), "the exercise and its prose on one slide"
    assert solution[0].source == "### Exercise 1 (solution)", "titled by the exercise it solves"
    assert solution[0].metadata["slide_kind"] == "solution"
    assert slides[2][0].source == "### Exercise 1 (2/2)", "the check goes on numbering the exercise's slides"
    assert solution[1].source == solution_source(source) == "def f(x):\n    return x + 1"
    without = deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT, solutions=False)
    assert "x + 1" not in "".join(cell.source for cell in without.cells)


def test_the_quiz_is_a_slide_per_question_with_its_answer_a_fragment():
    from labkit.quiz.widget import markup, resolve_quiz

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('show_quiz("06")')])
    deck = deck_notebook(notebook, NOTEBOOKS / "06_rope.ipynb", OUT)
    questions = resolve_quiz("06").questions
    slides = slides_of(deck)
    assert len(slides) == len(questions)
    for number, (slide, question) in enumerate(zip(slides, questions), 1):
        assert slide[0].source.splitlines()[0].endswith(f"Quiz: question {number} of {len(questions)}")
        assert markup(question.question) in slide[0].source, "the quiz widget's own markup"
        answer = slide[1]
        assert answer.metadata.slideshow["slide_type"] == "fragment" and markup(question.answer_text()) in answer.source


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
    assert not [cell for cell in deck.cells if cell.get("outputs")]


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
    assert path.name == "06_rope.slides.html" == deck_name(NOTEBOOKS / "06_rope.ipynb")
    assert deck_name(NOTEBOOKS / "06_rope.ipynb", solutions=False) == "06_rope.no-solutions.slides.html"
    assert remote_urls(html) == [], "the slides must load nothing from the network"
    local = re.findall(r"""<(?:script|link)\b[^>]*(?:src|href)="([^"?]+)""", html)
    assert {"assets/reveal.js/dist/reveal.js", "assets/reveal.js/dist/reveal.css",
            "assets/mathjax/tex-svg-full.js"} <= set(local)
    for relative in local:
        assert (out / relative).is_file(), f"the deck loads {relative}, which is missing"
    assert "data:image/png;base64" in html, "stored figures are in the deck"
    assert "Reveal.initialize" in html and "require(" not in html
    assert BEGIN not in html and END not in html, "no solution markers are projected"


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_the_deck_without_solutions_is_the_full_deck_less_its_solution_slides(notebook):
    """What lets the browser test measure the no-solutions variant on one deck only: every other
    slide is the same, cell for cell."""
    source = nbformat.read(notebook, as_version=4)
    full = slides_of(deck_notebook(source, notebook, OUT))
    without = slides_of(deck_notebook(source, notebook, OUT, solutions=False))

    def content(slides):  # a title's "(2/3)" counts the run of slides it continues, which differs
        return [[(cell.cell_type, re.sub(r"^(#+ .*?) \(\d+/\d+\)$", r"\1", cell.source, flags=re.M))
                 for cell in slide] for slide in slides]

    solution_slides = [s for s in full if s[0].metadata["slide_kind"] == "solution"]
    assert content([s for s in full if s not in solution_slides]) == content(without)
    kept = [s for s in full if s not in solution_slides]
    assert [s[0].source for s in kept] == [s[0].source for s in without], "numbered alike, solutions apart"
    # a long solution continues on a second slide
    assert len(solution_slides) >= sum("solution" in c.metadata.get("tags", []) for c in source.cells)


def test_a_chinese_deck_speaks_chinese():
    """make slides M=NN LANG=zh-CN: the Chinese notebook, with the deck's own titles and the quiz in
    Chinese (one answer key: the English quiz's, shown through its catalog)."""
    from labkit.i18n import speaking
    from labkit.quiz.model import shown
    from labkit.quiz.widget import markup, resolve_quiz

    chinese = NOTEBOOKS / "zh-CN" / "05_masking.ipynb"
    if not chinese.exists():
        pytest.fail("notebooks/zh-CN/05_masking.ipynb is missing: make translations")
    with speaking("zh-CN"):
        deck = deck_notebook(nbformat.read(chinese, as_version=4), chinese, OUT / "zh-CN")
        english = resolve_quiz("05").questions[0].question
        zh_question = markup(shown(english))
    text = "\n".join(cell.source for cell in deck.cells)
    assert "(参考解答)" in text and "测验：第 1 题" in text
    assert zh_question != markup(english) and zh_question in text and markup(english) not in text


# ------------------------------------------------------------------------- quiz text is text, not HTML

HOSTILE = ['<img src=x onerror="alert(1)">', "<script>alert(2)</script>", "<svg onload=alert(3)>",
           "</div><iframe src=javascript:alert(4)>", "[a link](javascript:alert(5))", '![i](x" onerror="alert(6))',
           "<a href='javascript:alert(7)'>x</a>", "&lt;b&gt;", "<!-- x --><style>*{}</style>", "`<b>code</b>`",
           "**<i>bold</i>**", "$x < y$ and $$<img src=x onerror=alert(8)>$$", "<details open ontoggle=alert(9)>"]
# What the deck writes around quiz text, and what markup() makes of `code`, **bold**, *italics* and line breaks.
ALLOWED = {("h2", ("id",)), ("h3", ("id",)), ("div", ("class",)), ("p", ()), ("ul", ()), ("i", ()),
           ("li", ()), ("b", ()), ("em", ()), ("code", ()), ("br", ())}


def quiz_file(tmp_path: Path, texts: list[str]) -> Path:
    import json

    text = "Q " + " ".join(texts)  # a quiz's texts are never empty
    quiz = {"module": "06_rope", "title": text, "description": text, "questions": [
        {"id": "one", "type": "single", "question": text, "choices": [text, text + " (2)"], "answer": 0,
         "explanation": text, "hint": text, "unchecked": "a test of the deck"},
        {"id": "two", "type": "multiple", "question": text, "choices": [text, "x"], "answer": [0, 1],
         "explanation": text * 30, "unchecked": "a test of the deck"},  # too long to fit: a speaker note
        {"id": "three", "type": "numeric", "question": text, "answer": 3, "tolerance": 0, "unit": text,
         "explanation": text, "unchecked": "a test of the deck"}]}
    path = tmp_path / "06_rope.json"
    path.write_text(json.dumps(quiz), encoding="utf-8")
    return path


def rendered_tags(deck) -> list[tuple[str, tuple[str, ...]]]:
    """Every HTML tag in the deck's cells as nbconvert renders their Markdown, with its attributes."""
    from html.parser import HTMLParser

    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "a" and dict(attrs).get("class") == "anchor-link" and dict(attrs)["href"].startswith("#Quiz"):
                return  # the link nbconvert gives each heading
            found.append((tag, tuple(sorted(name for name, _ in attrs))))

    for cell in deck.cells:
        Tags().feed(markdown2html_mistune(cell.source))
    return found


@settings(derandomize=True, database=None, deadline=None, max_examples=25,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(alphabet="<>&\"'=/ `*$[]()!a:\n", max_size=30)),
                      min_size=1, max_size=4))
def test_quiz_text_reaches_the_deck_as_text(tmp_path, texts):
    """Any HTML or Markdown a quiz file can hold is shown as text: the rendered deck holds only the tags
    the deck itself writes, and no attribute a script could hide in."""
    cell = nbformat.v4.new_code_cell(f"show_quiz({str(quiz_file(tmp_path, texts))!r})")
    deck = deck_notebook(nbformat.v4.new_notebook(cells=[cell]), NOTEBOOKS / "06_rope.ipynb", OUT)
    unexpected = [tag for tag in rendered_tags(deck) if tag not in ALLOWED]
    assert not unexpected, f"quiz text became HTML: {unexpected}"


def test_the_reported_onerror_image_is_text_in_the_written_deck(tmp_path):
    """The reported case, end to end: the HTML file `make slides` writes shows the tag as text."""
    quiz = nbformat.v4.new_code_cell(f"show_quiz({str(quiz_file(tmp_path, HOSTILE[:1]))!r})")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Quiz"), quiz])
    source = tmp_path / "06_rope.ipynb"
    nbformat.write(notebook, source)
    html = write_slides(source, tmp_path / "deck", ROOT).read_text(encoding="utf-8")
    assert "onerror" in html and not re.search(r"<img[^>]*onerror", html, re.I)
    assert '&lt;img src=x onerror="alert(1)"&gt;' in html


def test_code_reaches_the_written_deck_as_text(tmp_path):
    """The deck's template writes code as Pygments highlights it, without nbconvert's sanitiser:
    whatever a code cell holds, the file shows it as text, never as a tag."""
    code = nbformat.v4.new_code_cell("html = '<img src=x onerror=\"alert(1)\"><script>alert(2)</script>'")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Code"), code])
    source = tmp_path / "06_rope.ipynb"
    nbformat.write(notebook, source)
    html = write_slides(source, tmp_path / "deck", ROOT).read_text(encoding="utf-8")
    assert not re.search(r"<img[^>]*onerror|<script>alert", html, re.I)
    assert "&lt;img src=x onerror=" in html and "&lt;/script&gt;" in html


def test_the_written_deck_is_nbconverts_page_once_parsed(tmp_path):
    """write_slides adds what nbconvert's HTML exporter adds once its template has rendered the page
    (alt text on images, a tabindex on cells) without parsing the page again: parsed and written out
    by BeautifulSoup, as nbconvert does, it is nbconvert's own page, for a notebook with figures,
    printed outputs, an exercise and its solution."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import SlidesExporter

    from labkit.course.slides import NO_ALT, accessible, deck_resources, exporter_options

    path = NOTEBOOKS / "01_attention_basics.ipynb"
    ours = write_slides(path, tmp_path, ROOT).read_text(encoding="utf-8")
    deck = deck_notebook(nbformat.read(path, as_version=4), path, tmp_path)
    theirs, _ = SlidesExporter(**exporter_options()).from_notebook_node(deck, resources=deck_resources(path))
    assert ours.count("<img ") > 3 and ours.count('tabindex="0"') > 20
    assert BeautifulSoup(ours, features="html.parser").decode() == theirs
    kept = '<img alt="a map" src="x"><div class="jp-Cell-inputWrapper" tabindex="-1">'
    assert accessible(kept) == kept
    assert accessible('<img src="x"/>') == f'<img alt="{NO_ALT}" src="x"/>'


def png_output(width: int, height: int, text_px: float | None = None) -> nbformat.NotebookNode:
    """A PNG output of `width` x `height` pixels (a header is all the deck reads), its smallest
    text recorded as labkit.figures does when a notebook runs."""
    png = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452") + width.to_bytes(4, "big")
                           + height.to_bytes(4, "big") + b"\0" * 40).decode()
    return nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"},
                                  metadata={"image/png": {"text_px": text_px}})


def worded(texts: list[tuple[str, bool]]) -> nbformat.NotebookNode:
    """A figure's PNG output whose recorded texts (labkit/figures.py) are `texts`, (text, tick label?)."""
    output = png_output(400, 300, 12.0)
    output.metadata["image/png"]["texts"] = [{"text": text, "px": 12.0, **({"tick": True} if tick else {})}
                                             for text, tick in texts]
    return output


def test_a_figures_alt_text_says_its_words_once_in_order_without_ticks_or_numbers():
    """What a screen reader reads for a figure: its words as drawn, not its tick labels, nor the
    numbers on a heatmap's cells; a list joined as the deck's language joins one; cut with "…"."""
    output = worded([("0.5", True), ("key", True), ("attention  weights\n(layer 0)", False), ("query", False),
                     ("1.00", False), ("-0.25", False), ("→", False), ("query", False), ("key", False)])
    assert figure_alt(output) == "attention weights (layer 0); query; key"
    with speaking("zh-CN"):
        assert figure_alt(worded([("键", False), ("查询", False)])) == "键；查询"
    assert figure_alt(worded([("1.00", False), ("key", True)])) is None, "no words: nbconvert's alt stays"
    assert figure_alt(png_output(400, 300, 12.0)) is None, "drawn before its texts were recorded"
    long = figure_alt(worded([(f"label number {i}", False) for i in range(40)]))
    assert long.endswith("; …") and ALT_CHARS <= len(long) < ALT_CHARS + 20


def test_a_figures_alt_text_reaches_the_written_deck_as_text(tmp_path):
    """The deck's <img> carries the figure's alt text escaped (a recorded text is never markup),
    and a figure without words keeps nbconvert's."""
    import html

    hostile = worded([('"><script>alert(1)</script>', False), ("query", False)])
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Plot"), nbformat.v4.new_code_cell("plot()", outputs=[hostile]),
        nbformat.v4.new_markdown_cell("## Bare"),
        nbformat.v4.new_code_cell("plot()", outputs=[png_output(300, 200, None)])])
    source = tmp_path / "06_rope.ipynb"
    nbformat.write(notebook, source)
    page = write_slides(source, tmp_path / "deck", ROOT).read_text(encoding="utf-8")
    alts = [html.unescape(alt) for alt in re.findall(r'<img alt="([^"]*)"', page)]
    assert alts == ['"><script>alert(1)</script>; query', NO_ALT]
    assert "<script>alert" not in page


def shown_scale(cell) -> float:
    output = cell.outputs[0]
    head = base64.b64decode(output.data["image/png"][:64])
    return output.metadata["image/png"]["width"] / int.from_bytes(head[16:20], "big")


def test_a_figure_fills_the_room_its_slide_has_and_its_labels_read():
    """Drawn larger than its natural size into the slide's room, up to MAX_ENLARGE; a figure
    whose labels are small is given the room to show them at FIGURE_TEXT_PX; never shrunk below
    its natural size when a slide of its own would hold it."""
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Small"),
        nbformat.v4.new_code_cell("plot()", outputs=[png_output(300, 200, 14.0)]),
        nbformat.v4.new_markdown_cell("## Tall"),
        nbformat.v4.new_code_cell("plot()", outputs=[png_output(600, 400, 14.0)]),
        nbformat.v4.new_markdown_cell("## Labels too small at its own size, and code above it"),
        nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(10)), outputs=[png_output(500, 300, 8.0)]),
    ])
    figures = [cell for cell in deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT).cells if cell.get("outputs")]
    small, tall, labelled = (shown_scale(cell) for cell in figures)
    assert small == pytest.approx(MAX_ENLARGE, abs=0.01), "a small figure grows, up to MAX_ENLARGE"
    room = SLIDE_HEIGHT - title_height("Tall (output, 9/9)") - code_height("plot()") - 22
    assert tall == pytest.approx(room / 400, abs=0.01), "a figure takes the room left below its code"
    assert labelled * 8.0 >= FIGURE_TEXT_PX, "labels enlarged to be read"


def test_a_figure_that_does_not_fit_beside_its_code_gets_a_slide_titled_as_its_output():
    code = "\n".join(f"step_{i} = compute({i})" for i in range(14))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Plot"),
        nbformat.v4.new_code_cell(code, outputs=[png_output(900, 480, 14.0)])])
    slides = slides_of(deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT))
    assert [slide[0].source for slide in slides] == ["## Plot (1/2)", "### Plot (output, 2/2)"]
    assert slides[1][0].metadata["slide_kind"] == "output"
    assert shown_scale(slides[1][1]) >= 1.0, "alone on its slide, at least its natural size"


def test_code_moves_to_the_next_slide_rather_than_leave_its_output_behind():
    prose = "\n\n".join("A paragraph of explanation that takes a line or two of the slide. " * 2 for _ in range(6))
    output = nbformat.v4.new_output("stream", name="stdout", text="".join(f"line {i}\n" for i in range(8)))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"## Topic\n\n{prose}"),
        nbformat.v4.new_code_cell("\n".join(f"print('line', {i})" for i in range(8)), outputs=[output])])
    slides = slides_of(deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT))
    code_slide = [slide for slide in slides if any(cell.cell_type == "code" and cell.source for cell in slide)]
    assert len(code_slide) == 1 and any(cell.get("outputs") for cell in code_slide[0]), "code and output together"


def test_an_output_too_long_for_the_slide_of_its_code_continues_titled_as_output():
    output = nbformat.v4.new_output("stream", name="stdout", text="".join(f"row {i}\n" for i in range(60)))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## Rows"),
                                               nbformat.v4.new_code_cell("show_rows()", outputs=[output])])
    slides = slides_of(deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT))
    assert slides[0][1].source == "show_rows()" and slides[0][2].outputs, "the output starts beside its code"
    assert [slide[0].metadata["slide_kind"] for slide in slides] == ["", "output", "output"][:len(slides)]
    assert all("(output, " in slide[0].source for slide in slides[1:])
    assert "".join(cell.outputs[0].text for slide in slides for cell in slide if cell.get("outputs")) == output.text


def test_a_lead_in_goes_with_what_it_introduces():
    prose = "\n\n".join("Some words about the idea, long enough to fill a line of the slide or so. " * 2
                        for _ in range(7))
    code = "\n".join(f"value_{i} = {i}" for i in range(10))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"## Topic\n\n{prose}\n\nThe values, one per line:"),
        nbformat.v4.new_code_cell(code)])
    slides = slides_of(deck_notebook(notebook, NOTEBOOKS / "x.ipynb", OUT))
    assert len(slides) == 2
    assert not slides[0][-1].source.endswith(":"), "the first slide does not end on the lead-in"
    assert slides[1][0].source.endswith("The values, one per line:") and slides[1][1].source == code
    assert is_lead_in("Every step, with its shape:") and is_lead_in("每一步及其形状：")
    assert not is_lead_in("```python\nx = {1:\n```") and not is_lead_in("A sentence.")


def test_a_wide_character_counts_twice():
    """A Chinese character is about twice as wide as a Latin letter in every font, so the
    estimates count it as two columns: a Chinese paragraph takes more room than its length says."""
    assert text_width("attention") == 9 and text_width("注意力，机制") == 12 and text_width("QK 的积") == 7
    chinese = "注意力" * 60
    assert block_height(chinese) == block_height("a" * 360) > block_height("a" * 180)
    assert title_height("第" * 40) == title_height("x" * 80) > title_height("x" * 40)


DECKS = [(lang, path) for lang in ("en", "zh-CN")
         for path in sorted((NOTEBOOKS if lang == "en" else NOTEBOOKS / lang).glob("*.ipynb"))]


@pytest.mark.parametrize(("lang", "notebook"), DECKS, ids=[f"{lang}-{path.stem}" for lang, path in DECKS])
def test_every_real_deck_keeps_lead_ins_outputs_and_titles_with_what_they_belong_to(lang, notebook):
    """In every deck: no slide ends on a lead-in whose section goes on; every output is on the
    slide of its code, or on a slide titled as output; every title is words (not bare code) and
    unique in the deck, so no two slides of different content share one."""
    with speaking(lang):
        slides = slides_of(deck_notebook(nbformat.read(notebook, as_version=4), notebook, OUT))
    problems, seen = [], {}
    for number, slide in enumerate(slides, 1):
        title = slide[0].source.splitlines()[0].lstrip("# ")
        shown = [cell for cell in slide if cell.metadata.slideshow["slide_type"] != "notes"]
        last = shown[-1]
        continues = number < len(slides) and not slides[number][0].source.startswith("## ")
        if continues and last.cell_type == "markdown" and is_lead_in(markdown_blocks(last.source)[-1]):
            problems.append(f"slide {number} ({title}) ends on a lead-in: {last.source[-60:]!r}")
        orphan = any(cell.get("outputs") and not cell.source for cell in shown) and not any(
            cell.cell_type == "code" and cell.source for cell in shown)
        if orphan and slide[0].metadata["slide_kind"] != "output":
            problems.append(f"slide {number} ({title}) shows an output without its code or a title saying so")
        if not re.search(r"[^\W\d_]{2,}|[\u4e00-\u9fff]", re.sub(r"`[^`]*`|\([^)]*\)$", "", title)):
            problems.append(f"slide {number}: the title {title!r} says nothing but code")
        if title in seen:
            problems.append(f"slides {seen[title]} and {number} share the title {title!r}")
        seen.setdefault(title, number)
    assert not problems, "\n".join(problems)


def test_a_figure_carries_its_smallest_text_when_a_notebook_draws_it(tmp_path):
    """labkit.figures.record_text_sizes: the size of the smallest text matplotlib drew, in the
    PNG's own pixels, in the output's metadata (9 pt at 100 dpi is 12.5 px); None without text."""
    figure = ("import matplotlib.pyplot as plt\n"
              "fig, ax = plt.subplots(figsize=(3, 2), dpi=100)\n"
              "ax.plot([0, 1]); ax.set_title('big', fontsize=20); ax.tick_params(labelsize={size})")
    cells = run_cells(["from labkit.figures import show_figures_inline\nshow_figures_inline();",
                       figure.format(size=9),
                       "fig, ax = plt.subplots(dpi=100); ax.axis('off'); ax.plot([0, 1]);"], tmp_path)
    (labelled,), (bare,) = cells[1].outputs, cells[2].outputs
    assert labelled.metadata["image/png"]["text_px"] == 12.5
    assert bare.metadata["image/png"]["text_px"] is None
