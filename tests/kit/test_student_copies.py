"""`make student`: every notebook's student copy keeps the checks, gives away no solution, and runs
top to bottom with each check saying "not yet"; a learner's edited copy is never overwritten."""

from __future__ import annotations

import ast
import copy
import textwrap
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
        exercise_lines = {line.strip() for line in student.cells[i].source.splitlines()}
        if "find-the-bug" in student.cells[i].metadata["tags"]:  # the copy holds the broken lines instead
            fix, buggy = solution.split("### BUGGY", 1)
            solution = fix
            assert {line.strip()[2:] for line in buggy.splitlines() if line.strip()} <= exercise_lines
        else:
            assert PLACEHOLDER in exercise_lines
        solution_lines = {line.strip() for line in solution.splitlines()} - {""}
        assert not solution_lines & exercise_lines
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
            finished = "find-the-bug" in cell.metadata["tags"]  # broken code that runs: "not yet", not "not filled in"
            assert "not yet" in printed and (finished or "not filled in yet" in printed), (
                f"{path.name}, cell {i + 1}: the check should report the unfinished exercise; printed {printed!r}")


# ---------------------------------------------------------------------------------------------
# A copy gives nothing away: no check cell holds the solution it checks
# ---------------------------------------------------------------------------------------------

# Expressions smaller than this (in expression nodes), or that call nothing, are too common to
# identify a solution: `x.shape[0] // heads`.
DISTINCTIVE = 6


def expression_shapes(source: str) -> dict[str, str]:
    """Every expression of `source` of at least DISTINCTIVE nodes, as a dump in which each variable
    is renamed by its order of appearance (so `x.view(b, t, h, -1)` and `y.view(n, m, k, -1)` are
    the same shape), mapped to its text. Attribute names, functions of modules and constants stay."""
    shapes = {}
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        inner = [child for child in ast.walk(node) if isinstance(child, ast.expr)] if isinstance(node, ast.expr) else []
        if len(inner) < DISTINCTIVE or not any(isinstance(child, ast.Call) for child in inner):
            continue
        names: dict[str, str] = {}

        def rename(inner):
            for child in ast.walk(inner):
                if isinstance(child, ast.Name) and child.id not in ("torch", "math", "F", "mm"):
                    child.id = names.setdefault(child.id, f"v{len(names)}")
                elif isinstance(child, ast.arg):
                    child.arg = names.setdefault(child.arg, f"v{len(names)}")
            return inner

        shapes[ast.dump(rename(copy.deepcopy(node)), annotate_fields=False)] = ast.unparse(node)
    return shapes


def test_the_detector_sees_a_solution_under_other_names():
    solution = "batch, tokens, width = x.shape\nreturn x.view(batch, tokens, heads, width // heads).transpose(1, 2)"
    leak = "check('f', f, lambda y, h: y.view(y.shape[0], y.shape[1], h, y.shape[2] // h).transpose(1, 2))"
    renamed = "n, t, w = z.shape\nout = z.view(n, t, k, w // k).transpose(1, 2)"
    harmless = "check('f', f, mm.split_heads, cases=[(torch.randn(1, 3, 4), 2)])"
    wrap = "def f():\n" + textwrap.indent(solution, "    ")
    assert set(expression_shapes(wrap)) & set(expression_shapes(renamed))
    assert not set(expression_shapes(wrap)) & set(expression_shapes(harmless))
    assert not set(expression_shapes(wrap)) & set(expression_shapes(leak)), (
        "a different expression of the same idea is the second test's job: references come from outside")


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_no_check_cell_holds_the_solution_it_checks(path):
    """The check cells of the copy must not contain the worked solution's distinctive expressions
    (under any variable names), and a reference they check against is imported (minimind_ref,
    labkit.references) or is data: never a function written out in the copy."""
    original = nbformat.read(path, as_version=4)
    student = student_notebook(original, path.name)
    for i, cell in enumerate(original.cells):
        if "solution" not in cell.metadata.get("tags", []):
            continue
        solution = cell.source.split(BEGIN, 1)[1].split(END, 1)[0]
        solution_shapes = expression_shapes(solution)
        check_cell = student.cells[i + 1]
        leaked = {text for shape, text in expression_shapes(check_cell.source).items() if shape in solution_shapes}
        assert not leaked, f"{path.name}, cell {i + 1}: the check shows the solution: {sorted(leaked)}"
        for reference in check_references(check_cell.source):
            assert not isinstance(reference, ast.Lambda) or not _computes(reference.body), (
                f"{path.name}, cell {i + 1}: the check's reference is written out in the copy: "
                f"{ast.unparse(reference)}")
            if isinstance(reference, ast.Name):
                defined = [n for n in ast.walk(ast.parse(check_cell.source))
                           if isinstance(n, ast.FunctionDef) and n.name == reference.id]
                assert not defined or not any(_computes(n) for n in defined), (
                    f"{path.name}, cell {i + 1}: the check's reference {reference.id} is written out in the copy")


def check_references(source: str) -> list[ast.expr]:
    """The third argument (the reference) of every `check(...)` call in `source`."""
    return [node.args[2] for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check" and len(node.args) > 2]


def _computes(node: ast.AST) -> bool:
    """Whether `node` works the answer out itself, with tensor arithmetic (operators, views,
    indexing), rather than measuring an object of minimind_ref that it builds (`mm.KVCache(...)`)
    or calling minimind_ref, labkit or a model it is given."""
    if any(isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr[:1].isupper()
           and getattr(child.func.value, "id", None) == "mm" for child in ast.walk(node)):
        return False
    for child in ast.walk(node):
        if isinstance(child, (ast.BinOp, ast.Subscript)):
            return True
        if isinstance(child, ast.Attribute) and child.attr in _TENSOR_METHODS:
            return True
    return False


# Methods that rearrange or combine tensors: a function built from them is an implementation.
_TENSOR_METHODS = {"view", "reshape", "transpose", "permute", "matmul", "einsum", "exp", "sum", "maximum",
                   "cat", "stack", "tril", "triu", "cumsum", "chunk", "split", "unbind", "expand",
                   "view_as_complex", "polar", "outer", "cos", "sin", "masked_fill", "where", "max", "mean"}


def test_one_way_to_say_how_to_open_the_copies(tmp_path, capsys):
    from labkit.course import cli
    from labkit.course.student import OPEN_COPIES

    readme, makefile = (ROOT / "README.md").read_text(), (ROOT / "Makefile").read_text()
    student_help = next(line for line in makefile.splitlines() if line.startswith("student:"))
    lab_help = next(line for line in makefile.splitlines() if line.startswith("lab:"))
    assert OPEN_COPIES in readme and OPEN_COPIES in student_help and OPEN_COPIES in lab_help
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / WITH_EXERCISES[0].name).write_text(WITH_EXERCISES[0].read_text())
    assert cli.cmd_student(cli._parser().parse_args(["student"]), tmp_path) == 0
    assert f"Open them with: {OPEN_COPIES}" in capsys.readouterr().out
