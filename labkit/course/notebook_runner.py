"""Execute a notebook headless, in a fresh kernel, the one way the course does it.

`make notebooks` (refreshing stored outputs), `make portability` and the tests that run cells in a
real kernel all execute notebooks through `execute_notebook`, which adds two things to nbclient:

- **A time limit per cell** (`CELL_TIMEOUT`), so that a cell that never finishes fails within
  minutes, naming the cell, instead of stalling a run for good. (`make test` runs the notebooks
  with nbval, which takes the same limit from `pyproject.toml`.)
- **No hang on widget cells.** nbclient stands in for a browser's `ipywidgets.Output` widget: each
  output that the widget captures (the figure an `interact` slider draws, say) is echoed back to
  the kernel as a comm message on the shell channel, the very socket on which nbclient is waiting,
  at that moment, for the cell's `execute_reply`. Now and then the reply that arrives around such a
  send is never noticed: the kernel is idle, the reply sits unread in nbclient's socket (a fresh
  poll finds it at once), and nbclient waits for ever. On a busy 2-core machine, 3 of 12 runs of
  notebook 06 stalled so at its first `interact` cell (each until a 40-second timer polled again),
  with ipykernel 7.4 and 6.31 alike; without the echo, 0 of 39. The echo only updates the kernel's
  copy of the widget, which nothing shows in a headless run, so the course's client leaves it out;
  the captured outputs are still saved with the notebook's widget state.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

CELL_TIMEOUT = 180  # seconds one cell may run; every notebook runs whole in under 60 s on 2 cores


def _client_class():
    """NotebookClient whose Output-widget stand-in never writes to the shell channel (see above)."""
    from nbclient import NotebookClient
    from nbclient.output_widget import OutputWidget

    class SilentOutputWidget(OutputWidget):
        def send(self, data=None, metadata=None, buffers=None) -> None:
            """Keep the captured outputs here; do not echo them to the kernel (module docstring)."""

    class CourseNotebookClient(NotebookClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.widget_registry["@jupyter-widgets/output"]["OutputModel"] = SilentOutputWidget

    return CourseNotebookClient


def execute_notebook(notebook, folder: Path, cell_timeout: int | None = CELL_TIMEOUT,
                     allow_errors: bool = False, record_timing: bool = False, env: dict | None = None,
                     then: Callable[[Callable[[str], Any]], Any] | None = None, name: str | None = None):
    """Run every code cell of `notebook` (an nbformat node, updated in place and returned) top to
    bottom in a fresh python3 kernel started in `folder` (with the environment `env`, default this
    process's). A cell past `cell_timeout` seconds raises nbclient's CellTimeoutError; a failing
    cell raises CellExecutionError unless `allow_errors`. `name`, the notebook's file name, is told
    to the kernel as JupyterLab tells it (JPY_SESSION_NAME: a Chinese kernel reads its notebook's
    catalog first, labkit/i18n/output.py).

    `then`, if given, is called once every cell has run, with the kernel still up, as a learner
    goes on in the same kernel: `then(run)`, where `run(source)` executes one more cell (not kept in
    `notebook`) and returns it, outputs and all. Its return value is returned instead of the notebook."""
    client = _client_class()(notebook, timeout=cell_timeout, kernel_name="python3", allow_errors=allow_errors,
                             record_timing=record_timing, resources={"metadata": {"path": str(folder)}})
    if name is not None:
        env = {**(os.environ if env is None else env), "JPY_SESSION_NAME": str(Path(folder) / name)}
    kernel = {"env": env} if env is not None else {}
    if then is None:
        client.execute(**kernel)
        return notebook
    from nbformat.v4 import new_code_cell

    client.reset_execution_trackers()
    with client.setup_kernel(**kernel):
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)

        def run(source: str):
            cell = new_code_cell(source)
            notebook.cells.append(cell)  # nbclient stores each executed cell back at its index
            try:
                client.execute_cell(cell, len(notebook.cells) - 1, execution_count=client.code_cells_executed + 1)
            finally:
                notebook.cells.pop()
            return cell

        return then(run)
