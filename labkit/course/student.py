"""The learner's workspace: a copy of every notebook, each exercise's worked solution taken out,
its check kept.

`make lab` (through `make_workspace`) writes `workspace/NN_slug.ipynb` for every notebook that has
no copy there yet, then opens JupyterLab on workspace/; the solved notebooks in notebooks/ are the
answer book (`make answers`). workspace/ sits beside notebooks/, so a copy's relative links
(`../docs/glossary.md`, `../modules/05_masking/README.md`, `06_rope.ipynb`) lead where the answer
book's do. In each solution cell
(tagged "solution", see labkit/checks/) the lines between `### BEGIN SOLUTION` and `### END SOLUTION`
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
So is the stored output of any later cell that uses a name an exercise defines (its function, or a
variable its solution sets): the answer book computed it with the solution.

A learner's work is never lost: a copy that exists is kept, even when a newer answer book would
make a different one, and the command says which copies it made and which it kept. Only
`make workspace M=NN FORCE=1` (one copy) or `make workspace FORCE=1` (all) replaces a copy, and
the copy it replaces is first saved beside it, `NN_slug.backup-YYYYMMDD-HHMMSS.ipynb`, which the
command names. Nothing is written through a link: a copy that is a symbolic link (wherever it
points), or a workspace folder that leads out of the course, is refused by name, so no file
outside the course folder is ever written.
"""

from __future__ import annotations

import ast
import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

BEGIN, END, BUGGY = "### BEGIN SOLUTION", "### END SOLUTION", "### BUGGY"
PLACEHOLDER = 'raise NotImplementedError("your code here: write it, then run the check below")'
SOLUTION_TAG, EXERCISE_TAG, PREDICT_TAG = "solution", "exercise", "predict"
# Where the copies live, beside notebooks/ (git-ignored), and the commands that make and open them.
WORKSPACE = "workspace"
OPEN_COPIES, OPEN_ANSWERS, REMAKE_ONE = "make lab", "make answers", "make workspace M={number} FORCE=1"


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


def defined_names(source: str) -> set[str]:
    """The names a cell binds at its top level (functions, classes, assigned variables); none for a
    cell Python cannot parse (an IPython magic)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def used_names(source: str) -> set[str]:
    """The names a cell reads; none for a cell Python cannot parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _clear(cell) -> None:
    if cell is not None and cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None


def student_notebook(notebook: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """A copy of `notebook` with its solutions taken out; the original is not changed."""
    student = copy.deepcopy(notebook)
    cells = student.cells
    exercise_names: set[str] = set()
    for index, cell in enumerate(cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and SOLUTION_TAG not in tags and used_names(cell.source) & exercise_names:
            _clear(cell)  # computed, in the answer book, with a solution
        if PREDICT_TAG in tags:
            _clear(next((later for later in cells[index + 1:] if later.cell_type == "code"), None))
        if SOLUTION_TAG not in tags:
            continue
        exercise_names |= defined_names(cell.source)
        cell.source = strip_solution(cell.source, f"{name}, cell {index}")
        cell.metadata["tags"] = [EXERCISE_TAG if tag == SOLUTION_TAG else tag for tag in tags]
        cell.metadata.get("jupyter", {}).pop("source_hidden", None)
        _clear(cell)
        _clear(cells[index + 1] if index + 1 < len(cells) else None)
    return student


@dataclass
class Written:
    path: Path
    status: str  # "made" (there was none), "replaced" (FORCE), "kept" or "kept, differs" (left as it was)
    backup: Path | None = None  # where a replaced copy was saved first


def backup_name(copy_path: Path, when: float | None = None) -> Path:
    """Where a copy about to be replaced is saved: beside it, named by the time, never over a file."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    candidate = copy_path.with_name(f"{copy_path.stem}.backup-{stamp}{copy_path.suffix}")
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = copy_path.with_name(f"{copy_path.stem}.backup-{stamp}-{number}{copy_path.suffix}")
    return candidate


def _refuse_links(out_dir: Path, course: Path | None) -> None:
    """A workspace folder must lead to a folder inside the course (when the course is known)."""
    if course is None:
        return
    inside = Path(os.path.realpath(out_dir))
    home = Path(os.path.realpath(course))
    if inside != home and home not in inside.parents:
        raise StudentCopyError(f"{out_dir} leads out of the course folder (to {inside}): your copies are kept "
                               f"inside the course, so nothing else is ever written. Replace the link with a "
                               f"folder of its own (move the link away; the next run makes the folder)")


def make_workspace(notebooks: list[Path], out_dir: Path, replace: list[Path] | None = None,
                   course: Path | None = None) -> list[Written]:
    """Make the learner's copy of each notebook in `out_dir` where there is none yet; keep every
    copy that exists, except those of the notebooks in `replace`, which are saved beside themselves
    (backup_name) and then made afresh. `course`, when given, is the folder nothing is written outside.

    A kept copy is "kept" when it is what a fresh copy would be, and "kept, differs" when not: the
    learner's edits, or an older answer book (the learner decides; the copy is not touched). A copy
    that is a link or a folder is a StudentCopyError, checked for every copy before any is written."""
    _refuse_links(out_dir, course)
    replace = {path.name for path in replace or []}
    for source in notebooks:
        target = out_dir / source.name
        if target.is_symlink():
            raise StudentCopyError(f"{target} is a link (to {os.readlink(target)}), not a notebook of your own: "
                                   f"a copy is never written through a link. Move the link away, or replace it "
                                   f"with the file it points to, then run the command again")
        if target.exists() and not target.is_file():
            raise StudentCopyError(f"{target} is a folder, not a notebook: move it away to make your copy")
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for source in notebooks:
        fresh = nbformat.writes(student_notebook(nbformat.read(source, as_version=4), source.name)) + "\n"
        target = out_dir / source.name
        if target.exists() and source.name not in replace:
            results.append(Written(target, "kept" if target.read_text() == fresh else "kept, differs"))
            continue
        backup = None
        if target.exists():
            backup = backup_name(target)
            os.replace(target, backup)  # the learner's copy, kept whole, before the fresh one is written
        target.write_text(fresh)
        results.append(Written(target, "replaced" if backup else "made", backup))
    return results
