"""The Chinese edition at the output boundary: what a program prints and draws, translated as it leaves.

The teaching code stays the same in both editions: a notebook's cells and an experiment script
print and draw English. In Chinese, an `OutputTranslator` sits where that English leaves the
program:

- **printed lines**: `sys.stdout` is wrapped (`TranslatingStream`), and each complete line is
  matched against the English templates of the code that printed it (labkit/i18n/templates.py);
  the placeholders match the values, and the Chinese template gets the same values back. A value
  that is itself a known English text (a phrase kept in data) is translated too. A line that
  matches no template (a learner's own print, numbers, code) is shown as written;
- **figures**: before a figure is drawn for the learner (the notebook's inline display, an
  Experiment's save), every text on it (titles, axis labels, legends, annotations, tick labels
  set by hand) is translated the same way, and drawn with a font that has Chinese characters
  (labkit.i18n.fonts.chinese_font: the pinned Noto Sans CJK SC; without any such font the figure
  stays English rather than showing boxes).

Where the templates come from: in a notebook, the source of every cell as it runs (so a learner's
own text is never mistaken for the course's); in a script, the script's file. Where the Chinese
comes from: the catalogs of translations/zh-CN/, keyed by the English template's hash like every
other text (translations/zh-CN/experiments/NN_slug.md, and the notebook's own catalog).

`figure_texts` lists what a figure says (each text and its size in pixels), which labkit records
in a notebook output's metadata and in a saved PNG (`record_png`, `png_texts`), so that tests read
every figure's labels without looking at pixels.
"""

from __future__ import annotations

import functools
import json
import os
import re
import struct
import sys
import unicodedata
import zlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from labkit.i18n.catalog import key_of, read_catalog
from labkit.i18n.prose import english_words
from labkit.i18n.templates import Context, Template, extended_context, fill, source_templates

__all__ = ["OutputTranslator", "TranslatingStream", "active", "figure_texts", "install", "png_texts",
           "notebook_catalog", "record_png", "translate_cells", "translate_figure", "uninstall"]

DEPTH = 3  # a value translated inside a value inside a line, and no deeper
PNG_KEY = "labkit:texts"
SESSION = "JPY_SESSION_NAME"  # the notebook a Jupyter server started this kernel for

_active: OutputTranslator | None = None

# Texts labkit composes from words it is given (show_heatmaps' grid titles "layer 0, head 1", from
# row_name and col_name): no English of their own, so no catalog block; the words are values,
# translated where a catalog knows them, and only the punctuation changes. One matches only where
# a value is a known text and the others hold no English word (numbers, code: "causal mask: P x"),
# never a line of values such as "[(1, 0), (1, 1)]".
LISTS = {"; ": "；", ", ": "、"}  # a list joined into one line: its separator, and the Chinese one
CELL = re.compile(r"\S+(?: \S+)*")  # a table's cell: words apart by single spaces
COMPOSED = {"{row_name} {r}, {col_name} {c}": "{row_name} {r}，{col_name} {c}", "{name}: {value}": "{name}：{value}",
            "({text})": "（{text}）",  # a known text in brackets: a tick label's second line, "(first token)"
            "{col_name} {c}": "{col_name} {c}"}  # show_heatmaps' one row of maps: "head 0", "head 1", ...


@cache
def _labkit_texts() -> dict[str, str]:
    """The finished blocks of labkit's own catalog (translations/zh-CN/labkit.md)."""
    from labkit.course_root import CourseError, find_course_root
    from labkit.i18n import TRANSLATIONS

    try:
        root = find_course_root()
    except CourseError:
        root = Path(__file__).resolve().parents[2]
    return read_catalog(root / TRANSLATIONS / "labkit.md").translations()


class OutputTranslator:
    """English templates with a Chinese translation, and the text they translate.

    What is translated: a line (or a value inside one) that holds English words
    (labkit/i18n/prose.py); a line of numbers, code, shapes or tensors is shown as written, so a
    value such as `x`, `16` or `[1, 0, 0]` is never rewritten because some catalog knows it. A
    value is translated only when it is a whole known text whose Chinese differs.

    Where the Chinese comes from: the catalog a source was added with (`add_source(source,
    catalog=...)`: a script's or a notebook's own), then every catalog of the course (`table`). The
    same English may be translated two ways in two catalogs ("step" is 步数 in one notebook and 间距
    in a script): a source's own catalog decides for its own lines.
    """

    def __init__(self, table: dict[str, str] | None = None):
        """`table`: the Chinese of each English text by its key (default: every catalog's). A value
        inside a line is translated only when it is a text of the program's own (its templates) or
        of labkit's (`phrase`: translations/zh-CN/labkit.md): every catalog's would also match a
        word that another notebook or script translates for its own sentence (a prediction's unit
        "weights" is 个权重)."""
        self.phrases = table
        if table is None:
            from labkit.i18n import _translations
            table, self.phrases = _translations(), _labkit_texts()
        self.table = table
        self.own: dict[str, str] = {}  # key -> Chinese, from the catalogs the sources were added with
        self.templates: dict[str, tuple[Template, str]] = {}  # English -> (template, Chinese)
        self.exact: dict[str, str] = {}  # English text without values -> Chinese
        self.context: Context | None = None  # what the sources so far bound: a cell's names, in the next
        self._ordered: list[tuple[Template, str]] | None = None
        for english, chinese in COMPOSED.items():
            self.templates[english] = (Template(english), chinese)

    def add(self, english: str, catalog: Mapping[str, str] | None = None) -> None:
        """Learn `english`, translated by `catalog` (its code's own) or else by any catalog."""
        key = key_of(english)
        chinese = (catalog or {}).get(key) or self.table.get(key)
        if chinese is None or (english in self.templates and not (catalog and key in catalog)):
            return
        template = Template(english)
        if template.fields:
            self.templates[english] = (template, chinese)
            self._ordered = None
        else:  # a text without values: looked up whole (its braces undoubled, as printed)
            self.exact[template.literals[0] if template.literals else ""] = fill(chinese, {})

    def known(self, text: str) -> str | None:
        """The Chinese of a whole text without values that holds English words: the templates', then
        the sources' own catalogs', then labkit's (`phrase`); None where it has no English word (a
        number, code: `x`, `16`) or its Chinese is the same text. Not every catalog's: another
        notebook's word translated for its own sentence (a prediction's unit "weights" is 个权重)
        would turn `weights: tensor(...)` into 个权重：..."""
        if not english_words(text):
            return None
        found = self.exact.get(text)
        if found is None:
            key = key_of(text)
            found = self.own.get(key, self.phrases.get(key))
            found = None if found is None or "{" in found else found
        return None if found == text else found

    def add_source(self, source: str, catalog: Path | Mapping[str, str] | None = None) -> None:
        """Learn the templates of a Python source (a script, a notebook cell, after the cells before
        it), translated by `catalog` (a catalog's path, or key -> Chinese) where it knows them: a
        source's own catalog decides where two catalogs translate one English word apart ("step": a
        float's spacing in one script, a stage of an algorithm in another)."""
        if isinstance(catalog, Path):
            catalog = read_catalog(catalog).finished() if catalog.is_file() else {}
        if catalog:
            self.own.update(catalog)
        for _, _, template in source_templates(source, self.context):
            self.add(template, catalog)
        self.context = extended_context(self.context, source)

    def _by_weight(self) -> list[tuple[Template, str]]:
        if self._ordered is None:  # most specific first: a line that two templates match takes this one
            self._ordered = sorted(self.templates.values(), key=lambda pair: -pair[0].weight)
        return self._ordered

    def line(self, text: str, depth: int = 0) -> str:
        """One line (no newline) in Chinese, or as written when nothing matches it. A text without
        an English word (numbers, code, a shape, a lone letter such as the `x` of `x @ W.T`) is
        always as written: another catalog may translate the same letters as a word of its own."""
        core = text.strip(" ")
        if not core or depth > DEPTH or not english_words(core):
            return text
        lead, trail = text[:len(text) - len(text.lstrip(" "))], text[len(text.rstrip(" ")):]
        exact = self.known(core)
        if exact is not None:
            return lead + exact + trail
        for template, chinese in self._by_weight():
            chosen, start = None, lead
            # The first split is the shortest first value; where a value holds the text that follows
            # it (a name with a colon), a later split may be the one whose values are known texts.
            candidates = list(template.matches(core)) if depth == 0 else list(filter(None, [template.match(core)]))
            if not candidates and lead:  # its first value printed the spaces: f"{'':10} boundaries ..."
                retry = template.match(text.rstrip(" "))
                candidates, start = ([retry], "") if retry is not None else ([], lead)
            for values in candidates:
                if template.text in COMPOSED and not self._composed(values):
                    continue
                shown = {field: self.line(value, depth + 1) for field, value in values.items()}
                chosen = chosen or shown
                if all(shown[field] != value or not english_words(value) for field, value in values.items()):
                    chosen = shown
                    break
            if chosen is not None:
                return start + fill(chinese, chosen) + trail
        joined = self._joined(core, depth)
        if joined is not None:
            return lead + joined + trail
        return self._row(text, depth)  # a value too: a header's names joined into one placeholder

    def _composed(self, values: dict[str, str]) -> bool:
        # a known value is a known English text: a number or a letter that some catalog happens to
        # hold ("6", a quiz's choice; "x", a unit) does not make "(2, 6, 4, 8)" a grid title
        known = [self.known(value) is not None and bool(english_words(value)) for value in values.values()]
        return any(known) and all(k or not english_words(v) for k, v in zip(known, values.values()))

    def _joined(self, text: str, depth: int) -> str | None:
        """A list of known texts joined into one ("; ".join(titles)): each translated and joined with
        Chinese punctuation, or None unless every part is a known text (never half a list)."""
        for separator, chinese in LISTS.items():
            parts = text.split(separator)
            if len(parts) > 1 and all(self.known(part) is not None for part in parts):
                return chinese.join(self.known(part) for part in parts)
        return None

    def _row(self, text: str, depth: int = 0) -> str:
        """A line that no template matches, read as a table's row (cells apart by two or more
        spaces): each cell that is a known text translated, the columns kept (a Chinese character
        takes two). As written where no cell is known."""
        cells = [(m.start(), m.end(), m.group()) for m in CELL.finditer(text)]
        if len(cells) < 2:
            return text
        shown = [self.line(cell, depth + 1) for _, _, cell in cells]  # one level deeper: a value's row ends
        if shown == [cell for _, _, cell in cells]:
            return text
        (start, _, _), out = cells[0], ""
        out = text[:start] + shown[0]  # the first cell keeps its left edge, the others their right edge
        for (_, end, _), cell in zip(cells[1:], shown[1:]):
            out += " " * max(columns(text[:end]) - columns(cell) - columns(out), 2) + cell
        return out

    def text(self, text: str) -> str:
        """A text of one or more lines (a figure's label, a table's cell), line by line; each run of
        a line between carriage returns (a progress line redrawn) on its own."""
        return "\n".join("\r".join(self.line(part) for part in line.split("\r")) for line in text.split("\n"))


def columns(text: str) -> int:
    """Columns a text takes on a terminal: two for a wide (Chinese) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


class TranslatingStream:
    """A text stream that writes each complete line to `stream` translated. A partial line waits
    for the rest of its line (print(..., end="")), unless it is flushed first (a progress line)."""

    def __init__(self, stream, translator: OutputTranslator):
        self.stream = stream
        self.translator = translator
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            *lines, self._pending = self._pending.split("\n")
            self.stream.write("".join(self.translator.text(line) + "\n" for line in lines))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._pending:
            self.stream.write(self.translator.text(self._pending))
            self._pending = ""
        self.stream.flush()

    def __getattr__(self, name: str):  # encoding, isatty, fileno, ... are the stream's own
        return getattr(self.stream, name)


# ------------------------------------------------------------------------------------------ switching on

def active() -> OutputTranslator | None:
    """The translator at work in this process, or None (English, or nothing installed)."""
    return _active


def install(source: str | Path | None = None) -> OutputTranslator:
    """Translate standard output from now on, learning the templates of `source` (a file, or the
    text of a cell); more can be added with `active().add_source(...)`. Installing twice keeps one
    translator and one wrapper."""
    global _active
    if _active is None:
        _active = OutputTranslator()
    if source is not None:
        text = Path(source).read_text(encoding="utf-8") if isinstance(source, Path) else source
        _active.add_source(text, _own_catalog(source) if isinstance(source, Path) else None)
    if not isinstance(sys.stdout, TranslatingStream):
        sys.stdout = TranslatingStream(sys.stdout, _active)
    return _active


def _own_catalog(script: Path) -> dict[str, str]:
    """The finished blocks of an experiment script's own catalog
    (translations/zh-CN/experiments/NN_slug/expN_name.md), or nothing. They win over another
    catalog's for the same English: every catalog is keyed by the English alone, and a short word
    means what its context says ("no" is 否 in a script's table of flags, 不对称 as the choice of a
    prediction about symmetry; "step" a float's spacing in one script, a stage in another)."""
    from labkit.i18n import TRANSLATIONS

    script = Path(script).resolve()
    if len(script.parents) < 3 or script.parents[1].name != "experiments":
        return {}
    path = script.parents[2] / TRANSLATIONS / "experiments" / script.parent.name / f"{script.stem}.md"
    return read_catalog(path).translations() if path.is_file() else {}


def uninstall() -> None:
    """Back to untranslated output (tests)."""
    global _active
    if isinstance(sys.stdout, TranslatingStream):
        sys.stdout.flush()
        sys.stdout = sys.stdout.stream
    _active = None


# ------------------------------------------------------------------------------------------ a notebook's kernel

def translate_cells(shell) -> OutputTranslator:
    """In a Jupyter kernel (`shell`, IPython's), translate what every cell prints from now on: install
    the translator on the kernel's standard output (ipykernel's OutStream, wrapped), learn each
    cell's templates from its own source just before it runs (so a learner's own print matches
    nothing and is shown as written), and write out a partial line (print(..., end="")) when the
    cell ends. Figures are translated as the kernel draws them (labkit.figures.record_text_sizes).
    Called from show_figures_inline(), which every notebook runs first; calling it again (a second
    show_figures_inline, a widget's redraw) changes nothing.

    Where the kernel knows its notebook, that notebook's catalog decides a word that two catalogs
    translate apart ("yes" is 是 for masked_fill in module 05, 有 in make list): JupyterLab tells a
    kernel its notebook's path (JPY_SESSION_NAME, kept by ipykernel as `__session__`), VS Code sets
    `__vsc_ipynb_file__`, and labkit's own runs (make notebooks, the tests) pass it as JupyterLab does."""
    global _cell_catalog
    translator = install()
    events = shell.events
    if _learn_cell not in events.callbacks["pre_run_cell"]:
        _cell_catalog = _notebook_catalog(shell)
        events.register("pre_run_cell", _learn_cell)
        events.register("post_run_cell", _end_of_cell)
        history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
        if history:  # the cell running now, whose pre_run_cell has passed: its prints come next
            translator.add_source(history[-1], _cell_catalog)
    return translator


_cell_catalog: dict[str, str] = {}


def _notebook_catalog(shell) -> dict[str, str]:
    """The catalog of the notebook this kernel runs, where the kernel is told which, else {}."""
    names = getattr(shell, "user_ns", None) or {}
    notebook = names.get("__session__") or names.get("__vsc_ipynb_file__") or os.environ.get(SESSION)
    return notebook_catalog(str(notebook)) if notebook else {}


def notebook_catalog(notebook: str) -> dict[str, str]:
    """The finished blocks of the catalog of the notebook at `notebook` (a path or a file name), or
    {} where it has none (a learner's copy keeps its notebook's name; a backup,
    NN_slug.backup-....ipynb, too)."""
    from labkit.course_root import CourseError, find_course_root
    from labkit.i18n import TRANSLATIONS

    try:
        root = find_course_root()
    except CourseError:
        return {}
    catalog = root / TRANSLATIONS / "notebooks" / f"{Path(notebook).name.split('.')[0]}.md"
    return read_catalog(catalog).finished() if catalog.is_file() else {}


def _learn_cell(info) -> None:
    """pre_run_cell: the cell's templates, and the wrapper back on stdout if something (a
    capture_output left open, a library) replaced it."""
    if _active is not None:
        install().add_source(info.raw_cell or "", _cell_catalog)


def _end_of_cell(result) -> None:
    """post_run_cell: a line printed without its newline is shown now, below its own cell."""
    if isinstance(sys.stdout, TranslatingStream):
        sys.stdout.flush()


# ------------------------------------------------------------------------------------------ figures

def translate_figure(figure) -> None:
    """Every text of `figure` in Chinese where the active translator knows it, drawn with a font that
    has Chinese characters. Nothing without an active translator, nor without such a font (English
    is better than boxes)."""
    from labkit.i18n.fonts import chinese_font, use_chinese_font

    translator = active()
    if translator is None or chinese_font() is None:
        return
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for text in figure.findobj(Text):
        words = text.get_text()
        if words:
            translated = translator.text(words)
            if translated != words:
                text.set_text(translated)
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
                if isinstance(formatter, FixedFormatter):  # tick labels set by hand are made again at each draw
                    formatter.seq = [translator.text(label) if isinstance(label, str) else label
                                     for label in formatter.seq]
                elif isinstance(formatter, FuncFormatter) and _tick_labels(formatter) is not None:
                    labels = _tick_labels(formatter)  # set_ticklabels after set_ticks: {position: label}
                    labels.update({at: translator.text(label) for at, label in labels.items()
                                   if isinstance(label, str)})
    use_chinese_font(figure)


def _tick_labels(formatter) -> dict | None:
    """The {position: label} behind a FuncFormatter that matplotlib made for labels set by hand
    (`set_xticks(ticks, labels)`, `ax.set(xticklabels=...)` once the ticks are fixed: a partial of
    Axis._format_with_dict), or None for a formatter of the program's own."""
    func = formatter.func
    if isinstance(func, functools.partial) and getattr(func.func, "__name__", "") == "_format_with_dict" \
            and func.args and isinstance(func.args[0], dict):
        return func.args[0]
    return None


def figure_texts(figure, dpi: float) -> list[dict]:
    """What a drawn figure says: each visible, non-empty text as {"text", "px"} (its font size in
    pixels at `dpi`), with "tick": true for tick labels, in drawing order. Call it after the figure
    was drawn (saved or displayed), when its tick labels exist."""
    from matplotlib.text import Text

    ticks = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.majorTicks, *axis.minorTicks]:
                ticks.update((id(tick.label1), id(tick.label2)))
    shown = []
    for ax in figure.axes:  # the ticks in view, as the last draw laid them out
        for axis in (ax.xaxis, ax.yaxis):
            shown += [(label, True) for label in [*axis.get_majorticklabels(), *axis.get_minorticklabels()]]
    shown += [(text, False) for text in figure.findobj(Text) if id(text) not in ticks]
    out = []
    for text, tick in shown:
        words = text.get_text()
        if not words.strip() or not text.get_visible() or not _drawn(text):
            continue
        entry = {"text": words, "px": round(text.get_fontsize() * dpi / 72, 1)}
        if tick:
            entry["tick"] = True
        out.append(entry)
    return out


def _drawn(text) -> bool:
    return text.axes is None or text.axes.get_visible()


# ------------------------------------------------------------------------------------------ PNG records

def record_png(path: Path, texts: list[dict]) -> None:
    """Write `texts` into the PNG file at `path`, as an international text chunk (iTXt) named
    labkit:texts holding JSON: any PNG reader keeps the picture, and `png_texts` reads them back."""
    data = Path(path).read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[-12:-8] != b"\0\0\0\0" or data[-8:-4] != b"IEND":
        raise ValueError(f"record_png: {path} is not a PNG file that ends with its IEND chunk.")
    body = PNG_KEY.encode("latin-1") + b"\0\0\0\0\0" + json.dumps(texts, ensure_ascii=False).encode("utf-8")
    chunk = struct.pack(">I", len(body)) + b"iTXt" + body + struct.pack(">I", zlib.crc32(b"iTXt" + body))
    Path(path).write_bytes(data[:-12] + chunk + data[-12:])


def png_texts(path: Path) -> list[dict] | None:
    """The texts `record_png` wrote into a PNG file, or None when it holds none."""
    data = Path(path).read_bytes()
    position = 8
    while position + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"iTXt" and body.startswith(PNG_KEY.encode("latin-1") + b"\0"):
            return json.loads(body[len(PNG_KEY) + 5:].decode("utf-8"))
        position += 12 + length
    return None
