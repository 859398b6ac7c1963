"""A notebook rearranged for projection: the cells `make slides` hands to reveal.js.

`deck_notebook` returns a new notebook (the source is never changed), laid out as slides that a
lecturer projects as they are:

- **every slide has a title**: the heading of the section it belongs to, with "(2/3)" on each
  slide of a section that spans several; `#` and `##` open a section (right arrow), deeper headings
  a slide within it (down arrow);
- **nothing is hidden or scrolled**: a section's prose, formulas, code and outputs are packed onto
  slides in order, as many as fit a 1280x720 slide at a readable size; what does not fit goes on
  the next slide of the section. Code is cut only at a statement boundary; a figure that does not
  fit beside its code gets a slide of its own, scaled to the slide (never past it); a long text
  output continues on the next slide;
- **speaker notes** (`s`) hold every prose paragraph that a slide leaves out;
- an **exercise** is shown as the learner gets it (the solution taken out, as in the student
  copies), and its worked solution follows on a slide of its own, or is left out;
- the **quiz** is one slide per question, its answer and explanation the next fragment (space);
- widgets, which need a kernel, lose their live output (the static figure beside them stays);
- relative links are rewritten to work from the folder the deck is written to.

Sizes are estimates in CSS pixels, on the safe side, for the fonts and spacing slides.css sets;
the browser test (tests/kit/test_slides_browser.py) measures every slide of every deck at two
screen sizes, so an estimate that is too generous fails there.
"""

from __future__ import annotations

import ast
import base64
import copy
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from labkit.course.student import BEGIN, END, SOLUTION_TAG, strip_solution
from labkit.i18n import tr

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# The slide, in CSS pixels (slides.css): 1280x720 less its padding, and the room each thing takes.
SLIDE_WIDTH = 1280 - 2 * 28
SLIDE_HEIGHT = 720 - 2 * 14 - 40  # and a margin for what the estimates below miss
TITLE_LINE, TITLE_CHARS, TITLE_GAP = 46, 58, 14  # 34 px headings: about 58 characters a line
TEXT_LINE, TEXT_CHARS, BLOCK_GAP = 31, 86, 12    # 21 px body text, inline LaTeX longer in source
CODE_LINE, CODE_CHARS, CELL_GAP = 22, 108, 14    # 17 px code, wrapped at about 108 characters
FORMULA = 64                                     # a displayed formula, one line
FIGURE_SHARE = 0.7  # a figure shares a slide only if it keeps this much of its size alone
MIN_FIGURE = 180    # ... and at least this many pixels of height

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
# The course's fact markers (<!-- fact: name -->12,288<!-- /fact -->, CONTRIBUTING.md) and any other HTML
# comment: invisible in the notebook, so left out of the slides and out of the estimate of their height.
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


@dataclass
class Piece:
    """One thing on a slide: Markdown, or a code cell (its input, or an output alone), and its height."""
    cell: nbformat.NotebookNode
    height: float
    fragment: bool = False  # shown one step later (the quiz's answer)


@dataclass
class Slide:
    title: str
    opens_section: bool  # a `#`/`##` heading: a new horizontal slide
    pieces: list[Piece] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    used: float = 0.0

    def room(self) -> float:
        return SLIDE_HEIGHT - title_height(self.title + " (9/9)") - self.used


def deck_notebook(notebook: nbformat.NotebookNode, notebook_path: Path, out_dir: Path,
                  solutions: bool = True) -> nbformat.NotebookNode:
    """A copy of `notebook` arranged as slides (see the module docstring)."""
    deck = copy.deepcopy(notebook)
    builder = _Deck(_first_heading(deck) or notebook_path.stem)
    for cell in deck.cells:
        if cell.cell_type == "markdown":
            builder.markdown(_relink(cell.source, notebook_path.parent, out_dir))
        elif cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
            builder.exercise(cell, solutions)
        elif cell.cell_type == "code" and _quiz_source(cell.source) is not None:
            builder.quiz(_quiz_source(cell.source))
        elif cell.cell_type == "code":
            cell.outputs = [out for out in cell.outputs if WIDGET_MIME not in out.get("data", {})]
            builder.code(cell)
        # raw cells are not shown
    deck.cells = builder.cells()
    for number, cell in enumerate(deck.cells):
        cell.id = f"slide-cell-{number}"  # a split cell's parts would otherwise share its id
    return deck


def _first_heading(notebook: nbformat.NotebookNode) -> str | None:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if _HEADING.match(line):
                    return _HEADING.match(line).group(2).strip()
    return None


# ---------------------------------------------------------------------------------------------
# Heights
# ---------------------------------------------------------------------------------------------

def _wrapped_lines(text: str, per_line: int) -> int:
    return sum(max(1, math.ceil(len(line) / per_line)) for line in text.split("\n"))


def title_height(title: str) -> float:
    return math.ceil(len(title) / TITLE_CHARS) * TITLE_LINE + TITLE_GAP


def block_height(block: str) -> float:
    """Roughly how many pixels the Markdown block `block` takes on a slide, its margin included."""
    first = block.lstrip()
    if first.startswith(("```", "~~~")):
        return _wrapped_lines(block, CODE_CHARS - 10) * CODE_LINE * 1.1 + BLOCK_GAP + 8
    if first.startswith("    "):  # an indented block: shown as code, at body size
        return _wrapped_lines(block, TEXT_CHARS) * TEXT_LINE + BLOCK_GAP + 8
    if first.startswith("$$"):
        rows = max(1, block.count("\\\\") + 1)
        tall = 1.35 if re.search(r"\\(?:frac|sum|sqrt|begin|max|underbrace|overbrace)", block) else 1.0
        return FORMULA * rows * tall + BLOCK_GAP
    if first.startswith("|"):
        return 40 * (block.count("\n") + 1) + BLOCK_GAP
    if first.startswith("!["):
        return 320
    text = re.sub(r"\s+", " ", block)
    tall = 1.3 if re.search(r"\\(?:frac|sum|sqrt|hat|tilde|overline)|\^\{|_\{", text) else 1.0
    return math.ceil(len(text) / TEXT_CHARS) * TEXT_LINE * tall + BLOCK_GAP


def code_height(source: str) -> float:
    return _wrapped_lines(source, CODE_CHARS) * CODE_LINE + 16 + CELL_GAP


def _output_text(output: nbformat.NotebookNode) -> str | None:
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.get("traceback", []))
    data = output.get("data", {})
    if any(key.startswith("image/") or key == "text/html" for key in data):
        return None
    return data.get("text/plain")


def png_size(output: nbformat.NotebookNode) -> tuple[int, int] | None:
    """A PNG output's size in CSS pixels: its metadata's, else the image's own."""
    data = output.get("data", {}).get("image/png")
    if not data:
        return None
    meta = output.get("metadata", {}).get("image/png", {})
    head = base64.b64decode(data[:64] if isinstance(data, str) else "".join(data)[:64])
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if meta.get("width") and meta.get("height"):
        return int(meta["width"]), int(meta["height"])
    if meta.get("width"):
        return int(meta["width"]), round(height * int(meta["width"]) / width)
    return width, height


# ---------------------------------------------------------------------------------------------
# The deck: slides filled in order
# ---------------------------------------------------------------------------------------------

class _Deck:
    def __init__(self, title: str):
        self.slides: list[Slide] = []
        self.title, self.opens = title, True

    # ------------------------------------------------------------------ slides and room

    def new_slide(self, title: str | None = None, opens_section: bool = False) -> Slide:
        slide = Slide(title or self.title, opens_section)
        self.slides.append(slide)
        return slide

    def current(self) -> Slide:
        if not self.slides or self.slides[-1].title != self.title:
            return self.new_slide(opens_section=self.opens)
        return self.slides[-1]

    def place(self, cell: nbformat.NotebookNode, height: float, fragment: bool = False) -> None:
        """Put `cell` on the current slide if it fits, else on a new slide of the section."""
        slide = self.current()
        if slide.pieces and height > slide.room():
            slide = self.new_slide()
        slide.pieces.append(Piece(cell, height, fragment))
        slide.used += height
        self.opens = False

    # ------------------------------------------------------------------ Markdown

    def markdown(self, source: str) -> None:
        for block in markdown_blocks(_COMMENT.sub("", source)):
            heading = _HEADING.match(block.lstrip())
            if heading:
                self.title = heading.group(2).strip()
                self.opens = len(heading.group(1)) <= 2
                self.new_slide(opens_section=self.opens)
                continue
            height = block_height(block)
            slide = self.current()
            if _is_prose(block) and slide.pieces and height > slide.room():
                slide.notes.append(block)  # prose the slide leaves out: the speaker says it
                continue
            self.place(_markdown(block), height)

    # ------------------------------------------------------------------ code

    def code(self, cell: nbformat.NotebookNode, outputs: bool = True) -> None:
        """The cell's input, cut at statement boundaries where it does not fit, then its outputs."""
        room_alone = SLIDE_HEIGHT - title_height(self.title + " (9/9)")
        for chunk in split_code(cell.source, room_alone):
            part = copy.deepcopy(cell)
            part.source, part.outputs = chunk, []
            self.place(part, code_height(chunk))
        for output in (cell.outputs if outputs else []):
            self.output(cell, output)

    def output(self, cell: nbformat.NotebookNode, output: nbformat.NotebookNode) -> None:
        size = png_size(output)
        text = _output_text(output)
        if size is not None:
            self.figure(cell, output, size)
        elif text is not None:
            lines = text.rstrip("\n").split("\n")
            while lines:
                room = max(self.current().room(), CODE_LINE * 3) - 16 - CELL_GAP
                take, used = 0, 0.0
                for line in lines:
                    extra = max(1, math.ceil(len(line) / CODE_CHARS)) * CODE_LINE
                    if take and used + extra > room:
                        break
                    take, used = take + 1, used + extra
                if take < len(lines) and take < 3 and self.current().pieces:
                    self.new_slide()
                    continue
                chunk = copy.deepcopy(output)
                if chunk.output_type == "stream":
                    chunk.text = "\n".join(lines[:take]) + "\n"
                elif chunk.output_type == "error":
                    chunk.traceback = lines[:take]
                else:
                    chunk.data = {"text/plain": "\n".join(lines[:take])}
                self.place(_output_only(cell, chunk), used + 16 + CELL_GAP)
                lines = lines[take:]
        else:  # HTML (a table) or another rich output: its rows, roughly
            html = "".join(output.get("data", {}).get("text/html", ""))
            self.place(_output_only(cell, output), 40 * max(2, html.count("<tr")) + CELL_GAP)

    def figure(self, cell: nbformat.NotebookNode, output: nbformat.NotebookNode,
               size: tuple[int, int]) -> None:
        """The figure beside what precedes it if it keeps most of its size there, else on a slide
        of its own; scaled to fit (width and height attributes), never past the slide."""
        width, height = size
        alone = SLIDE_HEIGHT - title_height(self.title + " (9/9)") - CELL_GAP - 8
        full = min(1.0, SLIDE_WIDTH / width, alone / height)
        slide = self.current()
        here = min(1.0, SLIDE_WIDTH / width, (slide.room() - CELL_GAP - 8) / height)
        if slide.pieces and (here < FIGURE_SHARE * full or height * here < MIN_FIGURE):
            slide = self.new_slide()
            here = full
        shown = copy.deepcopy(output)
        shown.setdefault("metadata", {})["image/png"] = {"width": math.floor(width * here),
                                                         "height": math.floor(height * here)}
        self.place(_output_only(cell, shown), height * here + CELL_GAP + 8)

    # ------------------------------------------------------------------ exercises and the quiz

    def exercise(self, cell: nbformat.NotebookNode, solutions: bool) -> None:
        exercise = copy.deepcopy(cell)
        exercise.source = strip_solution(cell.source)
        self.code(exercise, outputs=False)
        if solutions:
            name = re.search(r"def\s+(\w+)", cell.source)
            section = self.title
            self.title = tr("Solution: {what}", what=f"`{name.group(1)}`" if name else section)
            self.new_slide()
            worked = copy.deepcopy(cell)
            worked.source = solution_source(cell.source)
            self.code(worked, outputs=False)
            self.title = section
        # The check starts a slide of its own in both decks, so the deck without solutions is the
        # full deck less its solution slides, slide for slide.
        self.new_slide()

    def quiz(self, source) -> None:
        from labkit.quiz.model import letter, shown
        from labkit.quiz.widget import resolve_quiz

        quiz = resolve_quiz(source)
        for number, question in enumerate(quiz.questions, 1):
            self.title = tr("Quiz: question {number} of {count}", number=number, count=len(quiz.questions))
            self.opens = number == 1
            slide = self.new_slide(opens_section=self.opens)
            choices = [(letter(i), shown(c)) for i, c in enumerate(question.choices)]
            choose = tr("Choose all that apply.") if question.type == "multiple" else None
            # the room each part takes is measured on the Markdown the deck once wrote for it
            asked = _join([shown(question.question)] + [f"- **{mark}.** {text}" for mark, text in choices]
                          + ([f"*{choose}*"] if choose else []))
            explained = f"**{question.answer_text()}**\n\n{shown(question.explanation)}"
            slide.pieces.append(Piece(_markdown(_quiz_html(shown(question.question), choices, choose)),
                                      sum(block_height(b) for b in markdown_blocks(asked))))
            slide.used = slide.pieces[0].height
            fits = sum(block_height(b) for b in markdown_blocks(explained)) <= slide.room()
            answer = _quiz_html(question.answer_text(), bold=True)
            slide.pieces.append(Piece(_markdown(answer + (_quiz_html(shown(question.explanation)) if fits else "")),
                                      0, fragment=True))
            if not fits:
                slide.notes.append(_quiz_html(shown(question.explanation)))
        self.opens = False

    # ------------------------------------------------------------------ out: cells

    def cells(self) -> list[nbformat.NotebookNode]:
        slides = [s for s in self.slides if s.pieces or s.notes]
        counts: dict[int, int] = {}
        runs = []  # consecutive slides with one title: numbered (k/n)
        for slide in slides:
            if runs and runs[-1][0].title == slide.title and not slide.opens_section:
                runs[-1].append(slide)
            else:
                runs.append([slide])
        out: list[nbformat.NotebookNode] = []
        for run in runs:
            for k, slide in enumerate(run, 1):
                counts[id(slide)] = k
                title = slide.title + (f" ({k}/{len(run)})" if len(run) > 1 else "")
                heading = f"## {title}" if slide.opens_section and k == 1 else f"### {title}"
                kind = "slide" if slide.opens_section and k == 1 else "subslide"
                pieces = list(slide.pieces)
                if pieces and pieces[0].cell.cell_type == "markdown" and not pieces[0].fragment:
                    first = pieces.pop(0).cell
                    out.append(_typed(_markdown(f"{heading}\n\n{first.source}"), kind))
                else:
                    out.append(_typed(_markdown(heading), kind))
                for piece in pieces:
                    out.append(_typed(piece.cell, "fragment" if piece.fragment else "-"))
                if slide.notes:
                    out.append(_typed(_markdown(_join(slide.notes)), "notes"))
        if out:
            out[0].metadata["slideshow"] = {"slide_type": "slide"}
        return out


def _typed(cell: nbformat.NotebookNode, slide_type: str) -> nbformat.NotebookNode:
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    cell.metadata.get("jupyter", {}).pop("source_hidden", None)
    return cell


def _quiz_html(text: str, choices: list[tuple[str, str]] = (), choose: str | None = None,
               bold: bool = False) -> str:
    """Quiz text as the deck shows it: escaped and marked up by the quiz widget's own rule
    (`labkit.quiz.widget.markup`: HTML-escaped, `code`, **bold** and $math$ kept), inside one HTML
    block of one line, so nothing a quiz file holds reaches the page as HTML or as Markdown (a link,
    an image): the deck shows what the widget shows."""
    from labkit.quiz.widget import markup

    html = f"<p>{f'<b>{markup(text)}</b>' if bold else markup(text)}</p>"
    if choices:
        html += "<ul>" + "".join(f"<li><b>{mark}.</b> {markup(choice)}</li>" for mark, choice in choices) + "</ul>"
    if choose:
        html += f"<p><em>{markup(choose)}</em></p>"
    return f'<div class="quiz">{html}</div>'


def _markdown(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source)


def _output_only(cell: nbformat.NotebookNode, output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A code cell showing one output and no input (nbconvert leaves out a source marked so)."""
    part = copy.deepcopy(cell)
    part.source, part.outputs = "", [output]
    part.metadata["transient"] = {"remove_source": True}
    return part


# ---------------------------------------------------------------------------------------------
# Code cut at statement boundaries
# ---------------------------------------------------------------------------------------------

def statement_starts(source: str, top_level_only: bool = False) -> list[int]:
    """The 0-based lines where a statement starts (at any depth, or only at the top level), each
    moved up over the comments and blank lines just above it, so a comment stays with the
    statement it explains."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [] if top_level_only else list(range(len(source.splitlines())))
    lines = source.splitlines()
    starts = set()
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.stmt):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
            while first > 0 and (not lines[first - 1].strip() or lines[first - 1].lstrip().startswith("#")):
                first -= 1
            starts.add(first)
    return sorted(starts)


def split_code(source: str, room: float) -> list[str]:
    """`source` in chunks that each fit `room` pixels, cut only where a statement starts: at the
    top level where that leaves a chunk at least half full, else inside a block (a chunk that is
    one statement taller than the room stays whole: the browser test says so)."""
    lines = source.splitlines()
    if code_height(source) <= room:
        return [source]
    top = set(statement_starts(source, top_level_only=True))
    cuts = [c for c in statement_starts(source) if c > 0] + [len(lines)]
    chunks, begin = [], 0
    while begin < len(lines):
        fitting = [c for c in cuts if c > begin and code_height("\n".join(lines[begin:c])) <= room]
        if not fitting or fitting[-1] == len(lines):
            end = fitting[-1] if fitting else next((c for c in cuts if c > begin), len(lines))
        else:
            at_top = [c for c in fitting if c in top and code_height("\n".join(lines[begin:c])) >= room / 2]
            end = at_top[-1] if at_top else fitting[-1]
        chunks.append("\n".join(lines[begin:end]).strip("\n"))
        begin = end
    return [chunk for chunk in chunks if chunk.strip()]


# ---------------------------------------------------------------------------------------------
# Markdown blocks
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


def _is_prose(block: str) -> bool:
    first = block.lstrip()
    return not (_HEADING.match(first) or _LIST_ITEM.match(first) or block.startswith("    ")
                or first.startswith(("```", "~~~", "$$", "|", "<", ">", "!")))


def _join(blocks: list[str]) -> str:
    """Blocks back into Markdown: list items of one list stay a tight list (one newline apart)."""
    text = ""
    for before, block in zip([None] + blocks, blocks):
        tight = before is not None and _LIST_ITEM.match(before) and _LIST_ITEM.match(block)
        text += ("\n" if tight else "\n\n" if text else "") + block
    return text


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
