"""A notebook rearranged for projection: the cells `make slides` hands to reveal.js.

`deck_notebook` returns a new notebook (the source is never changed) in which:

- every Markdown heading starts a slide, wherever it sits in its cell: `#` and `##` open a section
  (right arrow), deeper headings a slide within it (down arrow); the cell is split there;
- a Markdown slide holds what fits a 16:9 screen at a readable size; prose paragraphs that do not
  fit go to the speaker notes (`s`), and lists, formulas and tables that do not fit go on a
  continuation slide;
- an exercise is shown as the learner gets it (the solution taken out, as in the student copies),
  and its worked solution follows on a slide of its own, or is left out;
- the quiz is one slide per question, its answer and explanation the next fragment (space);
- widgets, which need a kernel, lose their live output (the static figure beside them stays);
- relative links are rewritten to work from the folder the deck is written to.

The fit is an estimate in lines of body text; the browser test (tests/kit/test_slides_browser.py)
measures every slide of every deck, so an estimate that is too generous fails there.
"""

from __future__ import annotations

import ast
import copy
import math
import os
import re
from pathlib import Path

import nbformat

from labkit.course.student import BEGIN, END, SOLUTION_TAG, strip_solution

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# Lines of 22 px body text that fit under a slide's heading on a 1280x720 slide, and characters per
# line: both on the safe side, since inline LaTeX is longer in the source than on screen.
BODY_LINES = 19.0
CHARS_PER_LINE = 100

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


def deck_notebook(notebook: nbformat.NotebookNode, notebook_path: Path, out_dir: Path,
                  solutions: bool = True) -> nbformat.NotebookNode:
    """A copy of `notebook` arranged as slides (see the module docstring)."""
    deck = copy.deepcopy(notebook)
    cells = []
    for cell in deck.cells:
        if cell.cell_type == "markdown":
            cells += _markdown_slides(_relink(cell.source, notebook_path.parent, out_dir))
        elif cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
            cells += _exercise_slides(cell, solutions)
        elif cell.cell_type == "code" and _quiz_source(cell.source) is not None:
            cells += quiz_slides(_quiz_source(cell.source))
        elif cell.cell_type == "code":
            cell.outputs = [out for out in cell.outputs if WIDGET_MIME not in out.get("data", {})]
            cells.append(_typed(cell, "subslide"))
        # raw cells are not shown
    if cells:
        cells[0].metadata["slideshow"] = {"slide_type": "slide"}
    for number, cell in enumerate(cells):
        cell.id = f"slide-cell-{number}"  # a split cell's parts would otherwise share its id
    deck.cells = cells
    return deck


def _typed(cell: nbformat.NotebookNode, slide_type: str) -> nbformat.NotebookNode:
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    cell.metadata.get("jupyter", {}).pop("source_hidden", None)
    return cell


def _markdown(source: str, slide_type: str) -> nbformat.NotebookNode:
    return _typed(nbformat.v4.new_markdown_cell(source), slide_type)


# ---------------------------------------------------------------------------------------------
# Markdown: a slide per heading, what does not fit to the notes or a continuation slide
# ---------------------------------------------------------------------------------------------

def markdown_blocks(source: str) -> list[str]:
    """`source` cut into blocks: headings, paragraphs, list items, fenced code, display math and
    tables each whole. A fenced block or a `$$` formula is never cut, even across blank lines."""
    blocks, current, fence = [], [], None
    for line in source.splitlines():
        stripped = line.strip()
        if fence:
            current.append(line)
            if stripped.startswith(fence) and (len(current) > 1):
                blocks.append("\n".join(current))
                current, fence = [], None
            continue
        opens = next((mark for mark in ("```", "~~~", "$$") if stripped.startswith(mark)), None)
        closes_on_same_line = opens == "$$" and len(stripped) > 2 and stripped.endswith("$$")
        if opens and not closes_on_same_line:
            _flush(blocks, current)
            current, fence = [line], opens
        elif not stripped:
            current = _flush(blocks, current)
        elif _HEADING.match(line) or (_LIST_ITEM.match(line) and not line.startswith(" ")):
            current = _flush(blocks, current)
            current.append(line)
            if _HEADING.match(line):
                current = _flush(blocks, current)
        else:
            current.append(line)
    _flush(blocks, current)
    return blocks


def _flush(blocks: list[str], current: list[str]) -> list[str]:
    if current:
        blocks.append("\n".join(current))
    return []


def block_lines(block: str) -> float:
    """Roughly how many lines of body text `block` takes on a slide, margins included."""
    first = block.lstrip()
    heading = _HEADING.match(first)
    if heading:  # reveal.js sets headings large: about 45 characters a line at h1, 60 at h2
        level, title = len(heading.group(1)), heading.group(2)
        per_line, height = {1: (45, 2.4), 2: (60, 1.9)}.get(level, (90, 1.3))
        return math.ceil(len(title) / per_line) * height + 0.6
    if first.startswith(("```", "~~~")):
        return 0.8 * block.count("\n") + 1.2
    if first.startswith("$$"):
        return 2.2 * max(1, block.count("\n") - 1) + 1.0
    if first.startswith("|"):
        return 1.4 * (block.count("\n") + 1) + 0.6
    text = re.sub(r"\s+", " ", block)
    return math.ceil(len(text) / CHARS_PER_LINE) * (1.6 if "\\frac" in text else 1.0) + 0.5


def _is_prose(block: str) -> bool:
    first = block.lstrip()
    return not (_HEADING.match(first) or _LIST_ITEM.match(first)
                or first.startswith(("```", "~~~", "$$", "|", "<", ">", "!")))


def _markdown_slides(source: str) -> list[nbformat.NotebookNode]:
    """The slides (and speaker notes) of one Markdown cell."""
    out: list[nbformat.NotebookNode] = []
    for heading, body in _sections(markdown_blocks(source)):
        level = len(_HEADING.match(heading).group(1)) if heading else 6
        slide_type = "slide" if level <= 2 else "subslide"
        shown, notes, used = [heading] if heading else [], [], block_lines(heading) if heading else 0.0
        for block in body:
            size = block_lines(block)
            if used + size <= BODY_LINES or not (shown[1:] if heading else shown):
                if used + size > BODY_LINES and _is_prose(block):
                    notes.append(block)  # a first paragraph too long for any slide
                    continue
                shown.append(block)
                used += size
            elif _is_prose(block):
                notes.append(block)
            else:  # a list, formula or table that does not fit: a continuation slide
                out += _slide_and_notes(shown, notes, slide_type)
                slide_type = "subslide"
                title = _HEADING.match(heading).group(2) if heading else ""
                continued = f"#### {title} (continued)" if title else ""
                shown = [continued, block] if continued else [block]
                notes, used = [], block_lines(continued) + size if continued else size
        out += _slide_and_notes(shown, notes, slide_type)
    return out


def _sections(blocks: list[str]) -> list[tuple[str | None, list[str]]]:
    """Blocks grouped under the heading that precedes them (None for text before any heading)."""
    sections: list[tuple[str | None, list[str]]] = []
    for block in blocks:
        if _HEADING.match(block):
            sections.append((block, []))
        elif sections:
            sections[-1][1].append(block)
        else:
            sections.append((None, [block]))
    return sections


def _join(blocks: list[str]) -> str:
    """Blocks back into Markdown: list items of one list stay a tight list (one newline apart)."""
    text = ""
    for before, block in zip([None] + blocks, blocks):
        tight = before is not None and _LIST_ITEM.match(before) and _LIST_ITEM.match(block)
        text += ("\n" if tight else "\n\n" if text else "") + block
    return text


def _slide_and_notes(shown: list[str], notes: list[str], slide_type: str) -> list[nbformat.NotebookNode]:
    cells = [_markdown(_join(shown), slide_type)] if shown else []
    if notes:
        cells.append(_markdown(_join(notes), "notes"))
    return cells


def _relink(source: str, notebook_dir: Path, out_dir: Path) -> str:
    """Relative link and image targets rewritten from the notebook's folder to the deck's."""
    def rewrite(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", target, re.I):
            return match.group(0)  # a URL, an anchor or an absolute path: left as it is
        path, _, anchor = target.partition("#")
        moved = os.path.relpath((notebook_dir / path).resolve(), out_dir.resolve())
        return match.group(1) + Path(moved).as_posix() + (f"#{anchor}" if anchor else "") + match.group(3)
    return _LINK.sub(rewrite, source)


# ---------------------------------------------------------------------------------------------
# Exercises and the quiz
# ---------------------------------------------------------------------------------------------

def solution_source(source: str) -> str:
    """The worked solution as a reader should see it: the cell without its BEGIN/END markers."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def _exercise_slides(cell: nbformat.NotebookNode, solutions: bool) -> list[nbformat.NotebookNode]:
    exercise = copy.deepcopy(cell)
    exercise.source = strip_solution(cell.source)
    exercise.outputs = []
    slides = [_typed(exercise, "subslide")]
    if solutions:
        name = re.search(r"def\s+(\w+)", cell.source)
        title = f"#### Solution: `{name.group(1)}`" if name else "#### Solution"
        worked = copy.deepcopy(cell)
        worked.source, worked.outputs = solution_source(cell.source), []
        slides += [_markdown(title, "subslide"), _typed(worked, "-")]
    return slides


def _quiz_source(source: str):
    """The argument of a cell that is a single `show_quiz(...)` call, else None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "show_quiz"
            and len(call.args) == 1 and isinstance(call.args[0], ast.Constant)):
        return call.args[0].value
    return None


def quiz_slides(source) -> list[nbformat.NotebookNode]:
    """One slide per question of the quiz that `show_quiz(source)` shows, the answer a fragment;
    an explanation too long for the slide goes to the speaker notes."""
    from labkit.quiz.model import letter
    from labkit.quiz.widget import resolve_quiz

    quiz = resolve_quiz(source)
    cells = []
    for number, question in enumerate(quiz.questions, 1):
        lines = [f"#### Quiz: question {number} of {len(quiz.questions)}", question.question]
        lines += [f"- **{letter(i)}.** {choice}" for i, choice in enumerate(question.choices)]
        if question.type == "multiple":
            lines.append("*Choose all that apply.*")
        answer = f"**{question.answer_text()}**"
        explained = f"{answer}\n\n{question.explanation}"
        used = sum(block_lines(block) for block in lines)
        fits = used + block_lines(explained) <= BODY_LINES
        cells += [_markdown(_join(lines), "subslide"),
                  _markdown(explained if fits else answer, "fragment")]
        if not fits:
            cells.append(_markdown(question.explanation, "notes"))
    return cells
