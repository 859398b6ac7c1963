"""`make student`: every notebook's student copy keeps the checks, gives away no solution, and runs
top to bottom with each check saying "not yet"; a learner's edited copy is never overwritten."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from labkit.checks import STRICT_ENV
from labkit.course.notebook_runner import execute_notebook
from labkit.course.student import (
    BEGIN,
    END,
    PLACEHOLDER,
    StudentCopyError,
    strip_solution,
    student_notebook,
    write_student_copies,
)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WITH_EXERCISES = [p for p in NOTEBOOKS if BEGIN in p.read_text()]


def test_strip_solution_keeps_the_signature_and_the_indentation():
    source = f"def f(x):\n    '''Doc.'''\n    {BEGIN}\n    y = x + 1\n    return y\n    {END}\n\nprint('after')"
    assert strip_solution(source) == f"def f(x):\n    '''Doc.'''\n    {PLACEHOLDER}\n\nprint('after')"
    namespace = {}
    exec(strip_solution(source), namespace)  # still a valid cell that defines f
    with pytest.raises(NotImplementedError):
        namespace["f"](1)


@pytest.mark.parametrize("source, problem", [
    (f"def f():\n    {BEGIN}\n    return 1\n", "never closed"),
    (f"def f():\n    return 1\n    {END}\n", "without"),
    (f"def f():\n    {BEGIN}\n    {BEGIN}\n    {END}\n", "twice"),
    ("def f():\n    return 1\n", "no"),
])
def test_malformed_solution_cells_are_named(source, problem):
    with pytest.raises(StudentCopyError, match=problem):
        strip_solution(source, "nb.ipynb, cell 7")


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_student_copy_hides_every_solution_and_keeps_every_check(path):
    original = nbformat.read(path, as_version=4)
    student = student_notebook(original, path.name)
    assert len(student.cells) == len(original.cells)
    text = "\n".join(cell.source for cell in student.cells)
    assert BEGIN not in text and END not in text
    exercises = [i for i, c in enumerate(student.cells) if "exercise" in c.metadata.get("tags", [])]
    assert exercises
    for i in exercises:
        solution = original.cells[i].source.split(BEGIN, 1)[1].split(END, 1)[0]
        solution_lines = {line.strip() for line in solution.splitlines()} - {""}
        exercise_lines = {line.strip() for line in student.cells[i].source.splitlines()}
        assert PLACEHOLDER in exercise_lines and not solution_lines & exercise_lines
        assert "check(" in student.cells[i + 1].source and not student.cells[i + 1].outputs
    assert nbformat.validate(student) is None


def test_an_edited_copy_is_kept_unless_forced(tmp_path):
    source = WITH_EXERCISES[0]
    (written,) = write_student_copies([source], tmp_path)
    assert written.status == "written"
    assert write_student_copies([source], tmp_path)[0].status == "unchanged"
    notebook = nbformat.read(written.path, as_version=4)
    exercise = next(c for c in notebook.cells if "exercise" in c.metadata.get("tags", []))
    exercise.source = exercise.source.replace(PLACEHOLDER, "return 42")  # the learner's answer
    nbformat.write(notebook, written.path)
    edited = written.path.read_text()
    assert write_student_copies([source], tmp_path)[0].status == "kept"
    assert written.path.read_text() == edited
    assert write_student_copies([source], tmp_path, force=True)[0].status == "written"
    assert written.path.read_text() != edited


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_student_copy_runs_top_to_bottom_and_every_check_says_not_yet(path, tmp_path, monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)  # a learner's kernel: a failing check prints, never raises
    (written,) = write_student_copies([path], tmp_path)
    notebook = nbformat.read(written.path, as_version=4)
    execute_notebook(notebook, path.parent)
    for i, cell in enumerate(notebook.cells):
        if "exercise" in cell.metadata.get("tags", []):
            printed = "".join(out.get("text", "") for out in notebook.cells[i + 1].outputs)
            assert "not yet" in printed and "not filled in yet" in printed, (
                f"{path.name}, cell {i + 1}: the check should report the unfinished exercise; printed {printed!r}")
