"""Where facts read the course: a notebook's cell by its id, an experiment script's constants,
defaults and functions, and the course's other files.

A fact that states what a notebook's code does reads that code from the cell that holds it, by the
cell's id (ids survive edits to other cells; a cell that moved or lost its line fails loudly), and
where the sentence is about what the code computes, runs the cell (`run_cells`). A fact about an
experiment reads the script itself (`experiment`, `defaults`), so that changing the script changes
the fact. Each is read once per session (`facts.once`); the sabotage suite changes what they hold
(a cell's source, a script's constant) after `facts.forget()`, so the facts it recomputes read the
changed version.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import nbformat
from experiment_scripts import load_experiment

from facts import once

ROOT = Path(__file__).resolve().parents[2]


@once
def notebook(number: str) -> nbformat.NotebookNode:
    """The English notebook of module `number` ("09")."""
    (path,) = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    return nbformat.read(path, as_version=4)


def cell(number: str, cell_id: str) -> str:
    """The source of notebook `number`'s cell `cell_id`."""
    for candidate in notebook(number).cells:
        if candidate.get("id") == cell_id:
            return candidate.source
    raise AssertionError(f"notebook {number} has no cell {cell_id!r} any more: find the cell the sentence "
                         f"describes and give its id to the fact")


def read(number: str, cell_id: str, pattern: str, convert=int):
    """The groups of `pattern` in a cell, converted (one value, or a tuple of several)."""
    found = re.search(pattern, cell(number, cell_id), re.M)
    if not found:
        raise AssertionError(f"notebook {number}, cell {cell_id}: no line matches {pattern!r} any more; the "
                             f"sentence may describe code that changed")
    values = tuple(convert(group) for group in found.groups())
    return values[0] if len(values) == 1 else values


class _Unasked:
    """`predict` in a fact's namespace: a reveal cell runs its measurement, and nothing is asked or shown."""

    def __call__(self, *args, **kwargs):
        return None

    @contextlib.contextmanager
    def reveal(self, *args, **kwargs):
        yield self

    def result(self, *args, **kwargs):
        return None


def run_cells(number: str, *cell_ids: str, **namespace) -> dict:
    """Run notebook `number`'s cells `cell_ids`, in order, in a namespace that starts as `namespace`
    (what the earlier cells defined that these need; pass a do-nothing function for a figure the
    fact does not need). Returns the namespace: what the cells computed. The cells run under the
    session's random state, grad mode and threads, which they leave as they found them; a
    prediction's reveal block runs as its measurement, with nothing asked or shown."""
    import torch  # only here: reading a cell needs no torch

    namespace.setdefault("predict", _Unasked())

    threads = torch.get_num_threads()
    with torch.random.fork_rng(), torch.set_grad_enabled(torch.is_grad_enabled()):  # as they were, after
        try:
            for cell_id in cell_ids:
                exec(compile(cell(number, cell_id), f"<notebook {number} cell {cell_id}>", "exec"), namespace)
        finally:
            torch.set_num_threads(threads)
    return namespace


@once
def experiment(module: str, script: str) -> ModuleType:
    """Experiment script `script` of module `module`, imported once per session."""
    return load_experiment(module, script)


def defaults(module: str, script: str) -> argparse.Namespace:
    """The script's flags as its own parser fills them when none is given."""
    parser = argparse.ArgumentParser()
    experiment(module, script).add_arguments(parser)
    return parser.parse_args([])


def text(path: str) -> str:
    """A file of the course, by its path from the course's root."""
    return (ROOT / path).read_text(encoding="utf-8")


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """torch's global generator seeded as an experiment's `--seed` seeds it, and put back after."""
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        yield
