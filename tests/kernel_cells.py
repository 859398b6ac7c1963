"""Run a few code cells in a real Jupyter kernel, as a notebook would, for the tests of helpers
whose behaviour depends on IPython's display machinery."""

from __future__ import annotations

from pathlib import Path

import nbformat

from labkit.course.notebook_runner import execute_notebook


def run_cells(sources: list[str], folder: Path) -> list:
    """Execute `sources` as consecutive cells of one notebook (kernel python3, started in
    `folder`) and return the executed cells, outputs included."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    return execute_notebook(notebook, folder).cells
