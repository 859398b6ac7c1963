"""A notebook rearranged for projection: the cells `make slides` hands to reveal.js.

`deck_notebook` returns a new notebook (the source is never changed), laid out as slides that a
lecturer projects as they are:

- **every slide has a title** that says what it holds: the heading of the section it belongs to,
  with "(2/3)" on each slide of a section that spans several, "(output)" on a slide that shows
  the output of code on an earlier slide, and "(solution)" on a worked solution; `#` and `##`
  open a section (right arrow), deeper headings a slide within it (down arrow);
- **nothing is hidden or scrolled**: a section's prose, formulas, code and outputs are packed onto
  slides in order, as many as fit a 1280x720 slide at a readable size; what does not fit goes on
  the next slide of the section. Code is cut only at a statement boundary; a long text output
  continues on the next slide;
- **a code cell and its outputs stay on one slide** where they fit together (the code moves to
  the next slide rather than leave its output behind); where they cannot, the slides that go on
  with the output say so in their title;
- **a lead-in stays with what it introduces**: a paragraph that ends on a colon ("Every step, with
  its shape:") never ends a slide whose next slide holds what it announces; it moves along;
- **a figure fills the room its slide has**: never drawn below its natural size when a slide of
  its own would hold it (it takes one, titled as output), and enlarged into the room left on its
  slide (up to `MAX_ENLARGE`), so that its smallest label reads at `FIGURE_TEXT_PX` or more where
  the figure allows it (each figure's smallest text is recorded when the notebook runs:
  labkit/figures.py, `record_text_sizes`), and its image's alt text says the words it shows, for a
  screen reader (`figure_alt`);
- **speaker notes** (`s`) hold every prose paragraph that a slide leaves out;
- an **exercise** is shown as the learner gets it (the solution taken out, as in the student
  copies), and its worked solution follows on a slide of its own, or is left out;
- the **quiz** is one slide per question, its answer and explanation the next fragment (space);
- widgets, which need a kernel, lose their live output (the static figure beside them stays);
- relative links are rewritten to work from the folder the deck is written to.

Sizes are estimates in CSS pixels, on the safe side, for the fonts and spacing slides.css sets. A
line's width is counted in columns, a Chinese (wide) character as two (`text_width`), since its
glyph is about twice as wide as a Latin letter in any font. The browser test
(tests/kit/test_slides_browser.py) measures every slide of every deck, English and Chinese, so an
estimate that is too generous fails there.
"""

from __future__ import annotations

import ast
import base64
import copy
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from labkit.course.student import BEGIN, END, SOLUTION_TAG, strip_solution
from labkit.figures import TEXT_PX, TEXTS
from labkit.i18n import language, phrase, tr
from labkit.i18n.output import LISTS

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# The slide, in CSS pixels (slides.css): 1280x720 less its padding, and the room each thing takes.
SLIDE_WIDTH = 1280 - 2 * 28
SLIDE_HEIGHT = 720 - 2 * 14 - 40  # and a margin for what the estimates below miss
TITLE_LINE, TITLE_CHARS, TITLE_GAP = 46, 58, 14  # 34 px headings: about 58 columns a line
TEXT_LINE, TEXT_CHARS, BLOCK_GAP = 31, 86, 12    # 21 px body text, inline LaTeX longer in source
QUIZ_SPARE = 4 * TEXT_LINE  # room left free under a quiz question's answer (see quiz())
CODE_LINE, CODE_CHARS, CELL_GAP = 22, 108, 14    # 17 px code, wrapped at about 108 columns
FORMULA = 64                                     # a displayed formula, one line
FIGURE_GAP = CELL_GAP + 8                        # a figure's cell, beyond the image itself
FIGURE_SHARE = 0.7   # a figure is drawn smaller than it wants only to stay beside its lead-in, and no smaller
MAX_ENLARGE = 2.0     # a figure is drawn at most twice its natural size: past that it blurs
FIGURE_TEXT_PX = 12   # the smallest label a slide shows on a figure (CONTRIBUTING.md, "Who uses the course")
ALT_CHARS = 250       # a figure's alt text ends with the first of its words that reaches this length

# The kinds of slide whose title says what they hold (the plain kind, "", says nothing more).
SOLUTION, OUTPUT = "solution", "output"
_KIND_WORDS = {SOLUTION: phrase("solution"), OUTPUT: phrase("output")}

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
# The course's fact markers (<!-- fact: name -->12,288<!-- /fact -->, CONTRIBUTING.md) and any other HTML
# comment: invisible in the notebook, so left out of the slides and out of the estimate of their height.
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


@dataclass
class Figure:
    """A PNG output as a slide shows it: its natural size and smallest text in CSS pixels (the
    text size None where the figure has no text, or ran before its text sizes were recorded), and
    the scale it is drawn at."""
    width: int
    height: int
    text_px: float | None
    scale: float = 1.0

    def largest(self, room: float) -> float:
        """The largest scale at which the figure fits `room` pixels of height and the slide's width."""
        return max(0.0, min(SLIDE_WIDTH / self.width, (room - FIGURE_GAP) / self.height, MAX_ENLARGE))

    def wanted(self, room_alone: float) -> float:
        """The scale a slide must give it: its natural size, or larger if its labels need it to
        reach FIGURE_TEXT_PX, but never more than a slide of its own allows."""
        legible = FIGURE_TEXT_PX / self.text_px if self.text_px else 1.0
        return min(self.largest(room_alone), max(1.0, legible))


@dataclass
class Piece:
    """One thing on a slide: Markdown, or a code cell (its input, or an output alone), and its height."""
    cell: nbformat.NotebookNode
    height: float
    fragment: bool = False  # shown one step later (the quiz's answer)
    lead_in: bool = False   # Markdown that introduces what follows it ("... with its shape:")
    origin: int | None = None  # for code and outputs: which notebook cell they come from
    output: bool = False
    figure: Figure | None = None


@dataclass
class Slide:
    title: str
    opens_section: bool  # a `#`/`##` heading: a new horizontal slide
    kind: str = ""       # SOLUTION for a worked solution; OUTPUT is decided when the deck is done
    pieces: list[Piece] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    used: float = 0.0

    def room(self) -> float:
        return room_below(self.title) - self.used

    def add(self, piece: Piece) -> None:
        self.pieces.append(piece)
        self.used += piece.height


def room_below(title: str) -> float:
    """The height a slide titled `title` has below its title, whatever its title says beyond it
    ("(output, 2/3)")."""
    longest = max((tr(word) for word in _KIND_WORDS.values()), key=text_width)
    return SLIDE_HEIGHT - title_height(f"{title} ({longest}, 9/9)")


def deck_notebook(notebook: nbformat.NotebookNode, notebook_path: Path, out_dir: Path,
                  solutions: bool = True) -> nbformat.NotebookNode:
    """A copy of `notebook` arranged as slides (see the module docstring)."""
    deck = copy.deepcopy(notebook)
    builder = _Deck(_first_heading(deck) or notebook_path.stem)
    for number, cell in enumerate(deck.cells):
        if cell.cell_type == "markdown":
            builder.markdown(_relink(cell.source, notebook_path.parent, out_dir))
        elif cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
            builder.exercise(cell, solutions, number)
        elif cell.cell_type == "code" and _quiz_source(cell.source) is not None:
            builder.quiz(_quiz_source(cell.source))
        elif cell.cell_type == "code":
            cell.outputs = [out for out in cell.outputs if WIDGET_MIME not in out.get("data", {})]
            builder.code(cell, number)
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

def text_width(text: str) -> int:
    """How many columns `text` takes on a slide, a wide character (Chinese, Japanese, Korean, and
    full-width punctuation) counting as two: their glyphs are a square em in every font, about
    twice the width of a Latin letter, whichever font draws them."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _wrapped_lines(text: str, per_line: int) -> int:
    return sum(max(1, math.ceil(text_width(line) / per_line)) for line in text.split("\n"))


def title_height(title: str) -> float:
    return math.ceil(text_width(title) / TITLE_CHARS) * TITLE_LINE + TITLE_GAP


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
    return math.ceil(text_width(text) / TEXT_CHARS) * TEXT_LINE * tall + BLOCK_GAP


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


def _text_output_height(lines: list[str]) -> float:
    return sum(max(1, math.ceil(text_width(line) / CODE_CHARS)) for line in lines) * CODE_LINE + 16 + CELL_GAP


def _png_pixels(output: nbformat.NotebookNode) -> tuple[int, int] | None:
    data = output.get("data", {}).get("image/png")
    if not data:
        return None
    head = base64.b64decode(data[:64] if isinstance(data, str) else "".join(data)[:64])
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def png_size(output: nbformat.NotebookNode) -> tuple[int, int] | None:
    """A PNG output's size in CSS pixels: its metadata's, else the image's own."""
    pixels = _png_pixels(output)
    if pixels is None:
        return None
    width, height = pixels
    meta = output.get("metadata", {}).get("image/png", {})
    if meta.get("width") and meta.get("height"):
        return int(meta["width"]), int(meta["height"])
    if meta.get("width"):
        return int(meta["width"]), round(height * int(meta["width"]) / width)
    return width, height


def figure_of(output: nbformat.NotebookNode) -> Figure | None:
    """A PNG output's Figure: its natural size, and its smallest text (recorded in the image's
    own pixels when the notebook ran) in CSS pixels at that size."""
    size = png_size(output)
    if size is None:
        return None
    text = output.get("metadata", {}).get("image/png", {}).get(TEXT_PX)
    return Figure(*size, text * size[0] / _png_pixels(output)[0] if text else None)


def figure_alt(output: nbformat.NotebookNode) -> str | None:
    """A PNG output's alt text on a slide, for a screen reader: the words the figure shows (its
    texts, recorded as the notebook drew it: labkit/figures.py), in the order drawn, each once,
    without its tick labels and the texts that hold no letter (the numbers written on a heatmap's
    cells), joined as a list is in the deck's language, and ended with "…" after ALT_CHARS. None for
    a figure without words, or drawn before its texts were recorded: nbconvert's alt text stays."""
    texts = output.get("metadata", {}).get("image/png", {}).get(TEXTS) or []
    words = dict.fromkeys(" ".join(text["text"].split()) for text in texts if not text.get("tick"))
    words = [word for word in words if any(character.isalpha() for character in word)]
    separator = "; " if language() == "en" else LISTS["; "]
    alt = ""
    for word in words:
        if len(alt) >= ALT_CHARS:
            return alt + separator.rstrip() + " …"
        alt += (separator if alt else "") + word
    return alt or None


def is_lead_in(block: str) -> bool:
    """A paragraph or list item that ends on a colon: it introduces what comes next."""
    first = block.lstrip()
    if first.startswith(("```", "~~~", "$$", "|", "#", "<", "!", "    ")):
        return False
    return _COMMENT.sub("", block).rstrip().endswith((":", "："))


# ---------------------------------------------------------------------------------------------
# The deck: slides filled in order
# ---------------------------------------------------------------------------------------------

class _Deck:
    def __init__(self, title: str):
        self.slides: list[Slide] = []
        self.title, self.opens, self.kind = title, True, ""

    # ------------------------------------------------------------------ slides and room

    def new_slide(self, opens_section: bool = False) -> Slide:
        slide = Slide(self.title, opens_section, self.kind)
        self.slides.append(slide)
        return slide

    def current(self) -> Slide:
        last = self.slides[-1] if self.slides else None
        if last is None or last.title != self.title or last.kind != self.kind:
            return self.new_slide(opens_section=self.opens)
        return last

    @staticmethod
    def fresh(slide: Slide) -> bool:
        """Whether `slide` holds nothing yet but lead-ins: what they announce goes on it, fitted
        to the room they leave, rather than on the next slide without them."""
        return all(piece.lead_in for piece in slide.pieces)

    def _carried(self, slide: Slide) -> list[Piece]:
        """The lead-ins that end `slide`, which go along to the next slide with what they
        introduce; none if they are all the slide holds (it would be left empty)."""
        count = 0
        while count < len(slide.pieces) and slide.pieces[-1 - count].lead_in:
            count += 1
        return slide.pieces[len(slide.pieces) - count:] if count < len(slide.pieces) else []

    def room_on_next(self) -> float:
        """The room a new slide of the section would have, after the lead-ins it takes along."""
        slide = self.current()
        return room_below(self.title) - sum(piece.height for piece in self._carried(slide))

    def next_slide(self) -> Slide:
        """A new slide of the section; the lead-ins that end the current one move to it."""
        old = self.current()
        carried = self._carried(old)
        del old.pieces[len(old.pieces) - len(carried):]
        old.used -= sum(piece.height for piece in carried)
        new = self.new_slide()
        for piece in carried:
            new.add(piece)
        return new

    def place(self, piece: Piece) -> None:
        """Put `piece` on the current slide if it fits, else on a new slide of the section (a
        piece sized to the room a fresh slide leaves always fits it)."""
        slide = self.current()
        if slide.pieces and piece.height > slide.room():
            slide = self.next_slide()
        slide.add(piece)
        self.opens = False

    # ------------------------------------------------------------------ Markdown

    def markdown(self, source: str) -> None:
        for block in markdown_blocks(_COMMENT.sub("", source)):
            heading = _HEADING.match(block.lstrip())
            if heading:
                self.title, self.kind = heading.group(2).strip(), ""
                self.opens = len(heading.group(1)) <= 2
                self.new_slide(opens_section=self.opens)
                continue
            height = block_height(block)
            slide = self.current()
            lead_in = is_lead_in(block)
            announced = bool(slide.pieces) and slide.pieces[-1].lead_in
            if (_is_prose(block) and not lead_in and not announced and slide.pieces
                    and height > slide.room()):
                slide.notes.append(block)  # prose the slide leaves out: the speaker says it
                continue
            self.place(Piece(_markdown(block), height, lead_in=lead_in))

    # ------------------------------------------------------------------ code

    def code(self, cell: nbformat.NotebookNode, origin: int, outputs: bool = True) -> None:
        """The cell's input and its outputs: on one slide where they fit together (the current
        one, else the next), otherwise the input cut at statement boundaries where it does not
        fit, then the outputs after it."""
        shown = list(cell.outputs) if outputs else []
        whole = code_height(cell.source) + sum(self._output_height(output) for output in shown)
        slide = self.current()
        if not self.fresh(slide) and slide.room() < whole <= self.room_on_next():
            self.next_slide()
        if whole <= self.current().room():
            self._source(cell, cell.source, origin)
            for output in shown:
                self.output(cell, output, origin, whole=True)
            return
        rest = cell.source
        while rest.strip():
            slide = self.current()
            if not self.fresh(slide) and code_height(rest) > slide.room():
                slide = self.next_slide()
            chunk = split_code(rest, slide.room())[0]
            if slide.pieces and code_height(chunk) > slide.room():  # one statement taller than the room
                chunk = split_code(rest, self.next_slide().room())[0]
            self._source(cell, chunk, origin)
            rest = rest[rest.index(chunk) + len(chunk):].strip("\n")
        for output in shown:
            self.output(cell, output, origin)

    def _source(self, cell: nbformat.NotebookNode, source: str, origin: int) -> None:
        part = _part(cell, source, [])
        self.place(Piece(part, code_height(source), origin=origin))

    def _output_height(self, output: nbformat.NotebookNode) -> float:
        figure = figure_of(output)
        if figure is not None:
            return figure.height * figure.wanted(room_below(self.title)) + FIGURE_GAP
        text = _output_text(output)
        if text is not None:
            return _text_output_height(text.rstrip("\n").split("\n"))
        return _html_height(output)

    def output(self, cell: nbformat.NotebookNode, output: nbformat.NotebookNode, origin: int,
               whole: bool = False) -> None:
        """One output, after its code; `whole`: it is known to fit on the current slide."""
        figure = figure_of(output)
        text = _output_text(output)
        if figure is not None:
            self.figure(cell, output, figure, origin)
        elif text is not None:
            lines = text.rstrip("\n").split("\n")
            while lines:
                room = max(self.current().room(), CODE_LINE * 3) - 16 - CELL_GAP
                take, used = 0, 0.0
                for line in lines:
                    extra = max(1, math.ceil(text_width(line) / CODE_CHARS)) * CODE_LINE
                    if not whole and take and used + extra > room:
                        break
                    take, used = take + 1, used + extra
                if take < len(lines) and take < 3 and not self.fresh(self.current()):
                    self.next_slide()
                    continue
                chunk = copy.deepcopy(output)
                if chunk.output_type == "stream":
                    chunk.text = "\n".join(lines[:take]) + "\n"
                elif chunk.output_type == "error":
                    chunk.traceback = lines[:take]
                else:
                    chunk.data = {"text/plain": "\n".join(lines[:take])}
                self.place(Piece(_output_only(cell, chunk), used + 16 + CELL_GAP, origin=origin, output=True))
                lines = lines[take:]
        else:  # HTML (a table) or another rich output: its rows, roughly
            self.place(Piece(_output_only(cell, output), _html_height(output), origin=origin, output=True))

    def figure(self, cell: nbformat.NotebookNode, output: nbformat.NotebookNode, figure: Figure,
               origin: int) -> None:
        """The figure on the current slide if it gets its wanted size there, else on a slide of
        its own; enlarged into the room its slide has left once the deck is laid out."""
        wanted = figure.wanted(room_below(self.title))
        slide = self.current()
        if slide.pieces and figure.largest(slide.room()) < wanted * (FIGURE_SHARE if self.fresh(slide) else 1):
            slide = self.next_slide()
        figure.scale = min(wanted, figure.largest(slide.room())) or wanted
        alt = figure_alt(output)
        if alt:
            output.setdefault("metadata", {}).setdefault("image/png", {})["alt"] = alt
        self.place(Piece(_output_only(cell, output), figure.height * figure.scale + FIGURE_GAP,
                         origin=origin, output=True, figure=figure))

    # ------------------------------------------------------------------ exercises and the quiz

    def exercise(self, cell: nbformat.NotebookNode, solutions: bool, origin: int) -> None:
        exercise = copy.deepcopy(cell)
        exercise.source = strip_solution(cell.source)
        self.code(exercise, origin, outputs=False)
        if solutions:
            self.kind = SOLUTION  # titled by the section it solves, "(solution)"
            self.new_slide()
            worked = copy.deepcopy(cell)
            worked.source = solution_source(cell.source)
            self.code(worked, origin, outputs=False)
            self.kind = ""
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
            # four lines to spare: question, choices and answer are drawn as HTML blocks whose inline
            # math (MathJax's sub- and superscripts, unbreakable in Chinese lines) stands taller than
            # the Markdown estimate allows: 02's tied-consequences took 27% more in Chromium
            fits = sum(block_height(b) for b in markdown_blocks(explained)) <= slide.room() - QUIZ_SPARE
            answer = _quiz_html(question.answer_text(), bold=True)
            slide.pieces.append(Piece(_markdown(answer + (_quiz_html(shown(question.explanation)) if fits else "")),
                                      0, fragment=True))
            if not fits:
                slide.notes.append(_quiz_html(shown(question.explanation)))
        self.opens = False

    # ------------------------------------------------------------------ out: cells

    def cells(self) -> list[nbformat.NotebookNode]:
        slides = [s for s in self.slides if s.pieces or s.notes]
        for slide in slides:
            _enlarge_figures(slide)
        sections = []  # consecutive slides under one heading
        for slide in slides:
            if sections and sections[-1][0].title == slide.title and not slide.opens_section:
                sections[-1].append(slide)
            else:
                sections.append([slide])
        out: list[nbformat.NotebookNode] = []
        for section in sections:
            for slide in section:
                # Numbered within the section: the worked solutions apart, so the deck without
                # them numbers every other slide as the full deck does.
                same = [s for s in section if (s.kind == SOLUTION) == (slide.kind == SOLUTION)]
                kind = slide.kind or (OUTPUT if _shows_output_alone(slide) else "")
                title = slide_title(slide.title, kind, same.index(slide) + 1, len(same))
                first = slide.opens_section and slide is section[0]
                heading = f"{'##' if first else '###'} {title}"
                pieces = list(slide.pieces)
                if pieces and pieces[0].cell.cell_type == "markdown" and not pieces[0].fragment:
                    head = _markdown(f"{heading}\n\n{pieces.pop(0).cell.source}")
                else:
                    head = _markdown(heading)
                head.metadata["slide_kind"] = kind  # for the tests: "", "solution" or "output"
                out.append(_typed(head, "slide" if first else "subslide"))
                for piece in pieces:
                    out.append(_typed(piece.cell, "fragment" if piece.fragment else "-"))
                if slide.notes:
                    out.append(_typed(_markdown(_join(slide.notes)), "notes"))
        if out:
            out[0].metadata["slideshow"] = {"slide_type": "slide"}
        return out


def slide_title(title: str, kind: str, number: int, count: int) -> str:
    """A slide's title: its section's, then what kind of slide it is and where in the section:
    "Masks (2/3)", "Masks (output, 3/3)", "Exercise 1: masks (solution)"."""
    said = [tr(_KIND_WORDS[kind])] if kind else []
    if count > 1:
        said.append(f"{number}/{count}")
    if len(said) == 2:
        said = [tr("{kind}, {number}", kind=said[0], number=said[1])]
    return f"{title} ({said[0]})" if said else title


def _shows_output_alone(slide: Slide) -> bool:
    """Whether the slide shows an output whose code is on an earlier slide."""
    code = {piece.origin for piece in slide.pieces if not piece.output}
    return any(piece.output and piece.origin not in code for piece in slide.pieces)


def _enlarge_figures(slide: Slide) -> None:
    """Give the room left on `slide` to its figures, all grown by one factor where they can be,
    each up to the slide's width and MAX_ENLARGE, and write each figure's size into its output."""
    figures = [piece for piece in slide.pieces if piece.figure is not None]
    for _ in range(3):  # a figure that stops at its limit leaves its share to the others
        left = slide.room()
        growing = [p for p in figures if p.figure.largest(left + p.height) > p.figure.scale + 1e-3]
        if left < 1 or not growing:
            break
        factor = 1 + left / sum(p.figure.height * p.figure.scale for p in growing)
        for piece in growing:
            figure = piece.figure
            figure.scale = min(figure.scale * factor, figure.largest(left + piece.height))
            height = figure.height * figure.scale + FIGURE_GAP
            slide.used += height - piece.height
            piece.height = height
    for piece in figures:
        figure, output = piece.figure, piece.cell.outputs[0]
        output.setdefault("metadata", {}).setdefault("image/png", {}).update(
            width=math.floor(figure.width * figure.scale), height=math.floor(figure.height * figure.scale))


def _html_height(output: nbformat.NotebookNode) -> float:
    html = "".join(output.get("data", {}).get("text/html", ""))
    return 40 * max(2, html.count("<tr")) + CELL_GAP


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
    # nbformat.v4.new_markdown_cell, without validating each new cell against the notebook schema
    # (a third of the time the deck's cells took): these are made here, and nbconvert reads them.
    return nbformat.NotebookNode(cell_type="markdown", source=source, metadata=nbformat.NotebookNode())


def _part(cell: nbformat.NotebookNode, source: str, outputs: list) -> nbformat.NotebookNode:
    """A copy of the code cell `cell` with this source and these outputs (its own are not copied)."""
    part = copy.deepcopy(nbformat.NotebookNode({key: value for key, value in cell.items() if key != "outputs"}))
    part.source, part.outputs = source, outputs
    return part


def _output_only(cell: nbformat.NotebookNode, output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A code cell showing one output and no input (nbconvert leaves out a source marked so)."""
    part = _part(cell, "", [output])
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
