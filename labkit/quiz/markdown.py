"""Quiz Markdown in a terminal: **bold**, *italics*, `code` and [links](url) drawn as a terminal
draws them, with ANSI styles where the terminal shows them and as clean plain text elsewhere.

The quizzes are written for the notebook widget, which renders this Markdown as HTML
(widget.markup) and `$...$` with MathJax. A terminal renders neither, so `spans(text)` reads the
same subset and returns the text a reader sees (formulas in Unicode, plain_math.plain_formula;
no asterisks, backticks or brackets; a link as "text (url)") with the styles of each of its
characters. The terminal runner wraps that text to its width and then `paint`s it: ANSI styles
are zero columns wide, so they go in after wrapping, line by line. `plain_text(text)` is the text
alone, for a stream that is not a terminal, a terminal that cannot show styles (TERM=dumb), or a
reader who asked for none (NO_COLOR, https://no-color.org). Standard library only.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

from labkit.quiz.plain_math import plain_formula

BOLD, ITALIC, CODE, LINK = "bold", "italic", "code", "link"
# SGR codes that switch one style on and off without touching the others, so they nest.
_ANSI = {BOLD: ("\x1b[1m", "\x1b[22m"), ITALIC: ("\x1b[3m", "\x1b[23m"), CODE: ("\x1b[36m", "\x1b[39m"),
         LINK: ("\x1b[4m", "\x1b[24m")}
_ORDER = (BOLD, ITALIC, CODE, LINK)

# Code and formulas first, so that nothing inside them reads as Markdown.
_VERBATIM = re.compile(r"`([^`]*)`|\$\$(.+?)\$\$|(?<!\\)\$(.+?)(?<!\\)\$", re.S)
# A code span or formula stands in the text as one private-use character while emphasis is read.
_SLOT = 0xE000
# The Markdown spans a quiz text may hold, each pattern's group 1 its text (a link's group 2 its
# address); the widget renders the same ones as HTML (widget.markup).
EMPHASIS = (
    (LINK, re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")),
    (BOLD, re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.S)),
    (ITALIC, re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])", re.S)),
    (ITALIC, re.compile(r"(?<![\w])_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)", re.S)),  # not in snake_case
)

Styles = frozenset[str]


def spans(text: str) -> tuple[str, tuple[Styles, ...]]:
    """The text a reader sees, and the styles of each of its characters."""
    verbatim: list[tuple[str, Styles]] = []

    def hold(match: re.Match) -> str:
        code, display, inline = match.groups()
        verbatim.append((code, frozenset({CODE})) if code is not None
                        else (plain_formula(display if display is not None else inline), frozenset()))
        return chr(_SLOT + len(verbatim) - 1)

    held = _VERBATIM.sub(hold, text)
    held = held.replace("\\$", "\x00").replace("$", "").replace("\x00", "$")  # a lone dollar would only confuse
    characters: list[tuple[str, Styles]] = []
    for piece, styles in _emphasis(held, frozenset()):
        for char in piece:
            slot = ord(char) - _SLOT
            if 0 <= slot < len(verbatim):
                shown, own = verbatim[slot]
                characters += [(c, styles | own) for c in shown]
            else:
                characters.append((char, styles))
    return "".join(c for c, _ in characters), tuple(s for _, s in characters)


def _emphasis(text: str, styles: Styles) -> list[tuple[str, Styles]]:
    """`text` cut into pieces with their styles: the earliest Markdown span first, its inside read
    again (bold may hold italics or a link), then the rest."""
    found = [(match.start(), style, match) for style, pattern in EMPHASIS
             if (match := pattern.search(text))]
    if not found:
        return [(text, styles)] if text else []
    _, style, match = min(found, key=lambda item: item[0])
    before, after = text[: match.start()], text[match.end():]
    inside = _emphasis(match.group(1), styles | {style})
    if style == LINK and match.group(2) != match.group(1):
        inside.append((f" ({match.group(2)})", styles))
    return [*([(before, styles)] if before else []), *inside, *_emphasis(after, styles)]


def plain_text(text: str) -> str:
    """`text` as plain text: formulas in Unicode, code without backticks, emphasis without its
    asterisks, a link as "text (url)"."""
    return spans(text)[0]


def paint(lines: list[str], plain: str, styles: tuple[Styles, ...]) -> list[str]:
    """The `lines` that wrapping made of `plain` (which only changes its white space), with each
    character's styles as ANSI codes. Every line closes the styles it opened, so an indent or a
    line of the next text is never styled."""
    position = 0
    painted = []
    for line in lines:
        out, current = [], frozenset()
        for index, char in enumerate(line):
            if char.isspace():
                # white space inside a span (between two words of a link) keeps the span's style
                wanted = current & _next_styles(line, index, plain, position, styles)
            else:
                while position < len(plain) and plain[position].isspace():
                    position += 1
                wanted = styles[position] if position < len(plain) else frozenset()
                position += 1
            out.append(_switch(current, wanted) + char)
            current = wanted
        painted.append("".join(out) + _switch(current, frozenset()))
    return painted


def _next_styles(line: str, index: int, plain: str, position: int, styles: tuple[Styles, ...]) -> Styles:
    """The styles of the next visible character on this line (none at its end)."""
    if not line[index:].strip():
        return frozenset()
    while position < len(plain) and plain[position].isspace():
        position += 1
    return styles[position] if position < len(plain) else frozenset()


def _switch(current: Styles, wanted: Styles) -> str:
    return ("".join(_ANSI[s][1] for s in _ORDER if s in current - wanted)
            + "".join(_ANSI[s][0] for s in _ORDER if s in wanted - current))


def terminal_shows_styles(stream: TextIO | None = None) -> bool:
    """Whether to draw styles on `stream` (default sys.stdout): a terminal, not TERM=dumb, and no
    NO_COLOR set to a non-empty value. On Windows, a terminal known to read ANSI codes."""
    stream = sys.stdout if stream is None else stream
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if sys.platform == "win32":
        return any(os.environ.get(name) for name in ("WT_SESSION", "TERM", "ANSICON"))
    return True
