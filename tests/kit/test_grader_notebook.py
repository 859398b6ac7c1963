"""Notebook 10's blank-page path runs on its own: with MODE = "blank", a learner who skips path A
(sections 3 and 4: the step exercises and MyAttention) runs every other core cell without an error.
Run in a real kernel, as the learner runs it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat

from labkit.course.notebook_runner import execute_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "10_capstone.ipynb"


def _heading(cell, prefix: str) -> bool:
    return cell.cell_type == "markdown" and any(line.startswith(prefix) for line in cell.source.splitlines())


def blank_path(notebook):
    """The core cells a blank-page learner runs: MODE set to "blank", path A's cells (from its
    heading to path B's) and the deep dives left out; the cells left out, as a list."""
    start = next(i for i, cell in enumerate(notebook.cells) if _heading(cell, "## 3. Path A"))
    end = next(i for i, cell in enumerate(notebook.cells) if _heading(cell, "## 5. Path B"))
    skipped = [cell for cell in notebook.cells[start:end] if cell.cell_type == "code"]
    kept = [cell for i, cell in enumerate(notebook.cells)
            if not (start <= i < end and cell.cell_type == "code") and "deep-dive" not in cell.metadata.get("tags", [])]
    for cell in kept:
        if cell.cell_type == "code" and cell.source.lstrip().startswith("MODE = "):
            cell.source = cell.source.replace('MODE = "steps"', 'MODE = "blank"', 1)
            assert 'MODE = "blank"' in cell.source
    notebook.cells = kept
    return notebook, skipped


def test_the_blank_page_path_runs_without_the_steps_cells():
    notebook, skipped = blank_path(nbformat.read(NOTEBOOK, as_version=4))
    assert any("class MyAttention" in cell.source for cell in skipped)  # path A's class is not there
    assert sum("### BEGIN SOLUTION" in cell.source for cell in skipped) >= 9
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    execute_notebook(notebook, NOTEBOOK.parent, env=env)  # a NameError (or any error) fails here, naming the cell
    printed = "".join(out.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                      for out in cell.get("outputs", []))
    assert re.search(r"^✓ BlankAttention\b.*: right\.$", printed, re.M), printed[-2000:]
