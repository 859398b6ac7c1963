"""Student copies of the notebooks: every exercise's worked solution taken out, its check kept.

`make student` writes `outputs/student/NN_slug.ipynb` for every notebook. In each solution cell
(tagged "solution", see checks.py) the lines between `### BEGIN SOLUTION` and `### END SOLUTION`
become one `raise NotImplementedError(...)` at the same indentation, so the cell still defines the
learner's function; the check in the next cell then reports "not yet" instead of stopping the
notebook, and the copy runs top to bottom. The exercise cell is shown expanded (it is now the
learner's to write) and the stored outputs of exercise and check cells are cleared, so the copy
gives nothing away.

A find-the-bug exercise (tags "solution" and "find-the-bug") keeps the broken code in its solution
block, commented out after a `### BUGGY` line: the answer book shows the fix with the bug beneath
it, and the student copy gets the broken lines back, uncommented, in place of the placeholder, so
the learner starts from code that runs and gives a wrong result:

    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    ### BUGGY
    # scores = q @ k.transpose(-2, -1) / head_dim
    ### END SOLUTION

A prediction (tag "predict", see labkit/predict.py) is followed by the cell that shows the result;
its stored output is cleared too, so the result is not on the page before the learner has guessed.

A learner's work is never overwritten: a copy that already exists and differs from what would be
written now (the learner edited it) is kept, and the command says how to regenerate it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import nbformat

BEGIN, END, BUGGY = "### BEGIN SOLUTION", "### END SOLUTION", "### BUGGY"
PLACEHOLDER = 'raise NotImplementedError("your code here: write it, then run the check below")'
SOLUTION_TAG, EXERCISE_TAG, PREDICT_TAG = "solution", "exercise", "predict"
# The one way the course says how to open the copies: here, in `make help` and in the README.
OPEN_COPIES = "make lab DIR=outputs/student"


class StudentCopyError(ValueError):
    """A solution cell that cannot be turned into an exercise (markers missing or out of order)."""


def _uncomment(line: str, where: str, number: int) -> str:
    """A line of a BUGGY block as the learner gets it: its first '# ' taken out."""
    indent = line[: len(line) - len(line.lstrip())]
    body = line.lstrip()
    if not body:
        return ""
    if not body.startswith("#"):
        raise StudentCopyError(f"{where}, line {number}: a line after '{BUGGY}' must be commented out "
                               f"('# ...'), so that the answer book runs the fix")
    return indent + body[2:] if body.startswith("# ") else indent + body[1:]


def strip_solution(source: str, where: str = "a solution cell") -> str:
    """Replace every BEGIN/END SOLUTION block of `source` with the placeholder (same indentation),
    or, where the block has a BUGGY part, with the broken lines it holds."""
    lines, out, inside, buggy = source.splitlines(), [], False, None
    for number, line in enumerate(lines, 1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise StudentCopyError(f"{where}, line {number}: '{BEGIN}' twice without '{END}' between")
            inside, buggy, indent = True, None, line[: len(line) - len(line.lstrip())]
        elif marker == BUGGY:
            if not inside or buggy is not None:
                raise StudentCopyError(f"{where}, line {number}: '{BUGGY}' belongs once inside a "
                                       f"'{BEGIN}' ... '{END}' block")
            buggy = []
        elif marker == END:
            if not inside:
                raise StudentCopyError(f"{where}, line {number}: '{END}' without '{BEGIN}' before it")
            inside = False
            out.extend(buggy if buggy else [indent + PLACEHOLDER])
        elif inside and buggy is not None:
            buggy.append(_uncomment(line, where, number))
        elif not inside:
            out.append(line)
    if inside:
        raise StudentCopyError(f"{where}: '{BEGIN}' is never closed by '{END}'")
    if len(out) == len(lines):
        raise StudentCopyError(f"{where} has no '{BEGIN}' ... '{END}' block to take out")
    return "\n".join(out)


def student_notebook(notebook: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """A copy of `notebook` with its solutions taken out; the original is not changed."""
    student = copy.deepcopy(notebook)
    cells = student.cells
    for index, cell in enumerate(cells):
        tags = cell.metadata.get("tags", [])
        if PREDICT_TAG in tags:
            result = next((later for later in cells[index + 1:] if later.cell_type == "code"), None)
            if result is not None:
                result.outputs, result.execution_count = [], None
        if SOLUTION_TAG not in tags:
            continue
        cell.source = strip_solution(cell.source, f"{name}, cell {index}")
        cell.metadata["tags"] = [EXERCISE_TAG if tag == SOLUTION_TAG else tag for tag in tags]
        cell.metadata.get("jupyter", {}).pop("source_hidden", None)
        for exercise_or_check in (cell, cells[index + 1] if index + 1 < len(cells) else None):
            if exercise_or_check is not None and exercise_or_check.cell_type == "code":
                exercise_or_check.outputs = []
                exercise_or_check.execution_count = None
    return student


@dataclass
class Written:
    path: Path
    status: str  # "written", "unchanged" or "kept" (the learner's edited copy)


def write_student_copies(notebooks: list[Path], out_dir: Path, force: bool = False) -> list[Written]:
    """Write a student copy of each notebook into `out_dir`; keep edited copies unless `force`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for source in notebooks:
        fresh = nbformat.writes(student_notebook(nbformat.read(source, as_version=4), source.name)) + "\n"
        target = out_dir / source.name
        if target.exists() and not target.is_file():
            raise StudentCopyError(f"{target} is a folder, not a notebook: move it away to write the student copy")
        if target.exists() and target.read_text() == fresh:
            results.append(Written(target, "unchanged"))
        elif target.exists() and not force:
            results.append(Written(target, "kept"))
        else:
            target.write_text(fresh)
            results.append(Written(target, "written"))
    return results
