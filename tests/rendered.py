"""What a learner sees below a notebook's cells, read from the outputs as a front end displays them.

A front end shows the richest form of each output it can: a figure's PNG, not the text beside it.
So the problems are read from the outputs themselves, the stored ones (the answer book, the slides)
and those of a live run (a learner copy executed headless), never from what the code meant to show:

- a figure that arrives as the text `<Figure size 1220x560 with 1 Axes>`, with no picture;
- a map that is not the first thing drawn: every notebook opens with the course map (its first
  code cell calls `show_map`), two pictures, and nothing is drawn before them;
- a `repr` of a torch module (a model's tree of layers) or a wall of numbers: a tensor printed in
  more than WALL_LINES lines, or an output holding more than WALL_NUMBERS numbers. A printed table
  is a claim's evidence; a wall is a dump.

Used by tests/kit/test_rendered_outputs.py (stored outputs, both editions) and by the learner-copy
run in tests/kit/test_student_copies.py (live outputs).

In the Chinese edition, `english_problems` reads the same outputs for English a Chinese learner
would meet: a printed line with English prose, a figure whose own texts (titles, labels, legends,
annotations: what `metadata["image/png"]["texts"]` records, labkit/figures.py) hold an English word
(labkit/i18n/prose.py says what counts; tick labels are data, such as a sentence's tokens). The
course map is left out: labkit draws it in the learner's language (figure_tr), with code names
(`scores [B,8,T,S]`, `weights @ v`) as its labels.
"""

from __future__ import annotations

import re

from labkit.i18n.prose import english_prose, english_words

WALL_LINES = 16    # the longest tensor print the notebooks teach with is 15 lines (03, split heads)
WALL_NUMBERS = 120  # the largest table is 94 numbers (07, FLOPs per token against the context)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_MODULE_REPR = re.compile(r"^\s*\(\w+\): [A-Z]\w*\(", re.M)  # "  (q_proj): Linear(in_features=..."
_FIGURE_TEXT = re.compile(r"^<Figure size \d+x\d+ with \d+ Axes>$")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _widget_outputs(notebook) -> list[dict]:
    """The outputs that interact widgets captured (the widget state stored with the notebook)."""
    state = notebook.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return [output for model in state.get("state", {}).values()
            for output in model.get("state", {}).get("outputs", []) or []]


def _output_problems(output: dict, where: str) -> list[str]:
    data = output.get("data", {})
    problems = []
    plain = _text(data.get("text/plain"))
    if _FIGURE_TEXT.match(plain.strip()) and "image/png" not in data:
        problems.append(f"{where}: a figure shows as the text {plain.strip()!r}, not as a picture")
    shown = _text(output.get("text")) + ("" if "image/png" in data else plain)
    if _MODULE_REPR.search(shown):
        problems.append(f"{where}: prints the repr of a torch module (a model's layers): summarise it instead")
    if max((len(block.split("])", 1)[0].splitlines()) for block in shown.split("tensor([")[1:]), default=0) \
            > WALL_LINES:
        problems.append(f"{where}: prints a tensor over more than {WALL_LINES} lines: show its shape, a slice "
                        f"or a claim")
    if len(_NUMBER.findall(shown)) > WALL_NUMBERS and not shown.lstrip().startswith(("Quiz", "测验")):
        problems.append(f"{where}: prints {len(_NUMBER.findall(shown))} numbers in one output (a wall, more "
                        f"than {WALL_NUMBERS}): print a claim, a few rows or a figure")
    return problems


def seen_problems(notebook, name: str) -> list[str]:
    """Every problem of what `notebook` (an nbformat node, executed or stored) shows, one line each."""
    problems = []
    code = [(i, cell) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    for i, cell in code:
        for output in cell.get("outputs", []):
            problems += _output_problems(output, f"{name}, cell {i}")
    for output in _widget_outputs(notebook):
        problems += _output_problems(output, f"{name}, a widget's output")
    if code and "show_map(" in code[0][1].source:
        first, cell = code[0]
        pictures = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if len(pictures) != 2:
            problems.append(f"{name}, cell {first}: the map should arrive as two pictures; it shows "
                            f"{len(pictures)}")
    drawn = [i for i, cell in code for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
    mapped = [i for i, cell in code if "show_map(" in cell.source]
    if mapped and drawn and drawn[0] < mapped[0]:
        problems.append(f"{name}, cell {drawn[0]}: draws before the map (cell {mapped[0]}), which comes first")
    return problems


def _shown_text(output: dict) -> str:
    data = output.get("data", {})
    if output.get("output_type") == "stream":
        return _text(output.get("text")) if output.get("name") == "stdout" else ""
    return "" if "image/png" in data else _text(data.get("text/plain"))


# An error that torch or the model raises, shown as the lesson ("RuntimeError: view size is not
# compatible ..."), stays English, as issue 36 allows: what follows its name is not read for English.
RAISED = re.compile(r"\b\w*(?:Error|Exception|Warning): ")


def english_problems(notebook, name: str) -> list[str]:
    """Every English text a Chinese learner meets in `notebook`'s outputs (module docstring), one line each."""
    problems = []
    outputs = [(f"{name}, cell {i}", output, "show_map(" in cell.source) for i, cell in enumerate(notebook.cells)
               if cell.cell_type == "code" for output in cell.get("outputs", [])]
    outputs += [(f"{name}, a widget's output", output, False) for output in _widget_outputs(notebook)]
    for where, output, course_map in outputs:
        for line in _shown_text(output).splitlines():
            if english_prose(RAISED.split(line, 1)[0]):
                problems.append(f"{where}: prints English: {line.strip()!r}")
        png = output.get("data", {}).get("image/png")
        if png is None or course_map:
            continue
        texts = output.get("metadata", {}).get("image/png", {}).get("texts")
        if texts is None:
            problems.append(f"{where}: a figure without its texts recorded (show_figures_inline() draws them)")
            continue
        english = [entry["text"] for entry in texts if not entry.get("tick") and english_words(entry["text"])]
        if english:
            problems.append(f"{where}: a figure says, in English: {english}")
    return problems
