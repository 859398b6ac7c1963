"""A Chinese notebook's kernel speaks Chinese from its first cell (labkit/figures.py, show_figures_inline;
labkit/i18n/output.py, translate_cells), and an English one is left as it was.

One small notebook, run headless in a real kernel twice: from a folder named zh-CN (as notebooks/zh-CN/
and workspace/zh-CN/ are) and from an English folder. It calls show_figures_inline() twice, prints a
line the course's catalogs translate (notebook 02's "tied scores:") in the very cell that switches
Chinese on and in later ones, a learner's own line, a line without its newline at the end of a cell,
and draws a figure; a labkit widget and an ipywidgets Output print the same line. In Chinese each
course line is translated, once, in its own cell; a learner's own words and values are as written;
the figure's title is drawn, and recorded in the output's metadata, in Chinese. In English every
output is as printed, and the figure's texts are recorded as well.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from labkit.course.notebook_runner import execute_notebook
from labkit.i18n import ENV, _translations
from labkit.i18n.catalog import key_of

LINE, TITLE = "tied scores:", "colour returned"  # texts of notebook 02 (translations/zh-CN/notebooks/02_qkv.md)
OWN = "my own words, as written"

CELLS = [
    f"from labkit.figures import show_figures_inline\nshow_figures_inline()\nshow_figures_inline()\nprint({LINE!r})",
    "import sys\nprint(type(sys.stdout).__name__, type(getattr(sys.stdout, 'stream', sys.stdout)).__name__)",
    f"print({LINE!r})\nprint({OWN!r})\nprint('tied', end='')",
    "print(12)",
    f"import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax.set_title({TITLE!r})\n"
    f"ax.set_xlabel({OWN!r})\nplt.show()",
    f"from labkit.widgets import interact\ndef said(i):\n    print({LINE!r})\n    print(i)\ninteract(said, i=(0, 2))",
    f"import ipywidgets\nfrom IPython.display import display\nbox = ipywidgets.Output()\ndisplay(box)\n"
    f"with box:\n    print({LINE!r})",
    "from labkit.figures import show_figures_inline\nshow_figures_inline()\nprint('tied')",
]


def _run(folder: Path):
    folder.mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if key != ENV} | {"MPLBACKEND": "Agg"}
    notebook = execute_notebook(new_notebook(cells=[new_code_cell(source) for source in CELLS]), folder, env=env)
    printed = ["".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream") for cell in notebook.cells]
    figures = [o for o in notebook.cells[4].outputs if "image/png" in o.get("data", {})]
    state = notebook.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    captured = "".join(o.get("text", "") for model in state.get("state", {}).values()
                       for o in model.get("state", {}).get("outputs", []) or [])
    return printed, figures, captured


@pytest.fixture(scope="module")
def chinese():
    table = _translations()
    return {english: table[key_of(english)] for english in (LINE, TITLE, "tied")}


def test_a_chinese_kernel_translates_each_cell_as_it_runs(tmp_path, chinese):
    printed, figures, captured = _run(tmp_path / "zh-CN")
    assert printed[0] == chinese[LINE] + "\n", "the cell that switches Chinese on is translated too"
    assert printed[1] == "TranslatingStream OutStream\n", "ipykernel's stream, wrapped once (called twice)"
    assert printed[2] == f"{chinese[LINE]}\n{OWN}\n{chinese['tied']}", "a partial line is shown in its own cell"
    assert printed[3] == "12\n" and printed[7] == chinese["tied"] + "\n"
    assert len(figures) == 1
    texts = [entry["text"] for entry in figures[0].metadata["image/png"]["texts"] if not entry.get("tick")]
    assert chinese[TITLE] in texts and OWN in texts, texts
    assert figures[0].metadata["image/png"]["text_px"] > 0
    assert f"{chinese[LINE]}\n1\n" in captured, "a labkit widget's printed lines"
    assert captured.count(chinese[LINE]) == 2, "and an ipywidgets Output's"


def test_an_english_kernel_prints_as_written_and_records_figure_texts(tmp_path):
    printed, figures, captured = _run(tmp_path / "en")
    assert printed[0] == LINE + "\n" and printed[2] == f"{LINE}\n{OWN}\ntied"
    assert printed[1] == "OutStream OutStream\n", "standard output untouched"
    texts = [entry["text"] for entry in figures[0].metadata["image/png"]["texts"] if not entry.get("tick")]
    assert TITLE in texts and OWN in texts, texts
    assert captured.count(LINE) == 2
