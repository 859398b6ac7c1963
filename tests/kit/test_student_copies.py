"""The learner's workspace (`make lab`, `make workspace`): every notebook's learner copy keeps the
checks, gives nothing away, and runs top to bottom with each check saying "not yet"; a learner's
copy is never overwritten.

Three parts: the copy maker's units (solutions out, find-the-bug, predictions, the workspace's
rule of never overwriting); the leak test, which reads the learner copy of every notebook in
notebooks/ and names, per notebook and cell, each kind of leak (LEAK_KINDS); and one headless run
of every copy, in parallel, from a folder beside notebooks/ as workspace/ is.
"""

from __future__ import annotations

import ast
import copy
import os
import re
import textwrap
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest
from learner_predictions import play
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from rendered import english_problems, seen_problems

from labkit.checks import NOT_FILLED_IN, STRICT_ENV
from labkit.course.notebook_runner import execute_notebook
from labkit.course.student import (
    BEGIN,
    BUGGY,
    END,
    OPEN_ANSWERS,
    OPEN_COPIES,
    PLACEHOLDER,
    WORKSPACE,
    StudentCopyError,
    defined_names,
    make_workspace,
    strip_solution,
    student_notebook,
    used_names,
)
from labkit.course.translation.check import catalog_problems
from labkit.i18n import speaking, tr

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHINESE = sorted((ROOT / "notebooks" / "zh-CN").glob("*.ipynb"))  # built from the English (make translations)
WITH_EXERCISES = [p for p in NOTEBOOKS if BEGIN in p.read_text()]


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


@lru_cache(maxsize=None)
def _read(path: Path) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    original = nbformat.read(path, as_version=4)
    return original, student_notebook(original, path.name)


def answer_book_and_copy(path: Path) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """The notebook and its learner copy (fresh deep copies: a test may change them)."""
    return tuple(copy.deepcopy(nb) for nb in _read(path))


def solution_block(source: str) -> tuple[str, str]:
    """The fix (or worked solution) of a solution cell, and its BUGGY part ("" when none)."""
    block = source.split(BEGIN, 1)[1].split(END, 1)[0]
    fix, _, buggy = block.partition(BUGGY)
    return fix, buggy


# ---------------------------------------------------------------------------------------------
# The copy maker
# ---------------------------------------------------------------------------------------------


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
    (f"def f():\n    {BEGIN}\n    return 1\n    {BUGGY}\n    return 2\n    {END}\n", "must be commented out"),
    (f"def f():\n    {BUGGY}\n    # return 2\n", "belongs once inside"),
    (f"def f():\n    {BEGIN}\n    {BUGGY}\n    {BUGGY}\n    {END}\n", "belongs once inside"),
])
def test_malformed_solution_cells_are_named(source, problem):
    with pytest.raises(StudentCopyError, match=problem):
        strip_solution(source, "nb.ipynb, cell 7")


FIND_THE_BUG = f"""def scaled_scores(q, k):
    {BEGIN}
    return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    {BUGGY}
    # return q @ k.transpose(-2, -1) / q.shape[-1]
    {END}"""


def test_a_find_the_bug_copy_gets_the_broken_code_uncommented_and_runs_it():
    copied = strip_solution(FIND_THE_BUG)
    assert copied == "def scaled_scores(q, k):\n    return q @ k.transpose(-2, -1) / q.shape[-1]"
    namespace = {}
    exec(copied, namespace)

    class Shape:  # stands in for a tensor: enough to see which formula runs
        shape = (4,)

        def __matmul__(self, other):
            return 8.0

        def transpose(self, *dims):
            return self

    assert namespace["scaled_scores"](Shape(), Shape()) == 2.0  # the bug: divided by D, not sqrt(D)


def synthetic(*cells) -> nbformat.NotebookNode:
    """A small notebook: ("md", text), or (source, tags) for a code cell stored with an output."""
    built = []
    for cell in cells:
        if cell[0] == "md":
            built.append(new_markdown_cell(cell[1]))
        else:
            built.append(new_code_cell(cell[0], metadata={"tags": list(cell[1])}, execution_count=1,
                                       outputs=[new_output("stream", name="stdout", text="stored\n")]))
    return new_notebook(cells=built)


def test_the_copy_clears_what_the_answer_book_computed_with_a_solution():
    notebook = synthetic(
        ("guess = predict('?', choices=['a', 'b'])", ["predict"]),
        ("md", "Now the result."),
        ("guess.reveal('a')", []),
        ("print('unrelated')", []),
        (f"def f(x):\n    {BEGIN}\n    return x + 1\n    {END}", ["solution"]),
        ("check('f', f, references.f, cases=[1])", []),
        ("print(f(41))", []),
        ("print('still unrelated')", []),
        (FIND_THE_BUG, ["solution", "find-the-bug"]),
    )
    copied = student_notebook(notebook)
    stored = [bool(cell.get("outputs")) for cell in copied.cells]
    assert stored == [True, False, False, True, False, False, False, True, False]
    assert tags(copied.cells[4]) == ["exercise"] and tags(copied.cells[8]) == ["exercise", "find-the-bug"]
    assert all(bool(cell.get("outputs")) == (cell.cell_type == "code") for cell in notebook.cells)  # untouched


# ---------------------------------------------------------------------------------------------
# The workspace: made where missing, never overwritten unless asked
# ---------------------------------------------------------------------------------------------


def test_the_workspace_makes_missing_copies_and_keeps_every_other(tmp_path):
    answer_book = tmp_path / "notebooks"
    answer_book.mkdir()
    first, second = answer_book / "01_first.ipynb", answer_book / "02_second.ipynb"
    nbformat.write(synthetic((f"def f():\n    {BEGIN}\n    return 1\n    {END}", ["solution"]),
                             ("check('f', f, references.f, cases=[()])", [])), first)
    nbformat.write(synthetic(("print(2)", [])), second)
    workspace = tmp_path / WORKSPACE
    made = make_workspace([first, second], workspace)
    assert [(c.path.name, c.status) for c in made] == [("01_first.ipynb", "made"), ("02_second.ipynb", "made")]
    assert PLACEHOLDER in nbformat.read(workspace / "01_first.ipynb", as_version=4).cells[0].source
    assert [c.status for c in make_workspace([first, second], workspace)] == ["kept", "kept"]

    learner = nbformat.read(workspace / "01_first.ipynb", as_version=4)
    learner.cells[0].source = learner.cells[0].source.replace(PLACEHOLDER, "return 42")  # the learner's answer
    nbformat.write(learner, workspace / "01_first.ipynb")
    edited = (workspace / "01_first.ipynb").read_text()
    newer = nbformat.read(first, as_version=4)
    newer.cells.append(new_markdown_cell("A newer answer book."))
    nbformat.write(newer, first)
    (workspace / "02_second.ipynb").unlink()
    again = make_workspace([first, second], workspace)
    assert [c.status for c in again] == ["kept, differs", "made"]
    assert (workspace / "01_first.ipynb").read_text() == edited  # neither the edits nor a newer book win

    replaced = make_workspace([first, second], workspace, replace=[first])
    assert [c.status for c in replaced] == ["replaced", "kept"]
    assert "A newer answer book." in (workspace / "01_first.ipynb").read_text()
    backup = replaced[0].backup  # the learner's edited copy, saved whole beside the fresh one
    assert backup.parent == workspace and backup.name.startswith("01_first.backup-") and backup.suffix == ".ipynb"
    assert backup.read_text() == edited and replaced[1].backup is None
    again = make_workspace([first], workspace, replace=[first])  # a second FORCE never overwrites the first backup
    assert again[0].backup != backup and backup.read_text() == edited
    (workspace / "02_second.ipynb").unlink()
    (workspace / "02_second.ipynb").mkdir()
    with pytest.raises(StudentCopyError, match="is a folder, not a notebook"):
        make_workspace([second], workspace)


def test_the_workspace_is_git_ignored_and_beside_the_answer_book():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert f"{WORKSPACE}/" in ignored
    makefile = (ROOT / "Makefile").read_text()
    clean = makefile.split("\nclean:", 1)[1].split("\n\n", 1)[0]
    assert WORKSPACE not in clean.split("##", 1)[1].split("\n", 1)[1], "make clean never touches workspace/"
    assert (OPEN_COPIES, OPEN_ANSWERS) == ("make lab", "make answers")


RELATIVE_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)#\s]+)")


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_relative_links_lead_the_same_place_from_the_workspace(path):
    """workspace/ sits beside notebooks/ (and workspace/zh-CN/ beside notebooks/zh-CN/): a link up
    (../docs/...) or to a sibling notebook (whose copy the workspace holds too) leads where it does
    from the answer book; nothing else does."""
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "markdown":
            continue
        for target in RELATIVE_LINK.findall(cell.source):
            sibling = "/" not in target and target.endswith(".ipynb")
            assert target.startswith("../") or sibling, (
                f"{path.name}, cell {index}: the link {target} works from notebooks/ only")
            assert (path.parent / target).exists(), f"{path.name}, cell {index}: {target} does not exist"


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_learner_copy_hides_every_solution_and_keeps_every_check(path):
    original, student = answer_book_and_copy(path)
    assert len(student.cells) == len(original.cells)
    exercises = [i for i, c in enumerate(student.cells) if "exercise" in tags(c)]
    assert exercises
    for i in exercises:
        assert "check(" in student.cells[i + 1].source, f"{path.name}, cell {i + 1}: no check after the exercise"
    assert nbformat.validate(student) is None


# ---------------------------------------------------------------------------------------------
# The leak test: a learner copy gives nothing away
# ---------------------------------------------------------------------------------------------

LEAK_KINDS = {
    "stored output": "a stored output in an exercise, check, find-the-bug or post-predict result "
                     "cell, or in a cell the answer book ran with a solution",
    "wording": "text that points at a solution the copy does not hold",
    "solution left": "a solution block, or a solution's distinctive expression, in the copy",
    "fix left": "a find-the-bug cell that holds the fix, or no broken code",
    "check computes": "a check cell that does more than call check() on its inputs, or whose "
                      "expected value is not a call into minimind_ref, torch or labkit",
}
# Wording that sends a learner to a solution the copy does not have. A paragraph that names the
# answer book's command (`make answers`) says where the worked solutions are, and may.
POINTS_AT_A_SOLUTION = re.compile(r"collapsed worked solution|the solution above|worked solution", re.I)
ANSWER_BOOK = "make answers"
# Packages whose functions may give a check its expected value: kept out of the learner's sight.
REFERENCE_PACKAGES = {"minimind_ref", "torch", "labkit", "math"}
# Expressions smaller than this (in expression nodes), or that call nothing, are too common to
# identify a solution: `x.shape[0] // heads`.
DISTINCTIVE = 6


def expression_shapes(source: str) -> dict[str, str]:
    """Every expression of `source` of at least DISTINCTIVE nodes, as a dump in which each variable
    is renamed by its order of appearance (so `x.view(b, t, h, -1)` and `y.view(n, m, k, -1)` are
    the same shape), mapped to its text. Attribute names, functions of modules and constants stay."""
    shapes = {}
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return shapes
    for node in ast.walk(tree):
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


def reference_roots(notebook) -> set[str]:
    """The names a notebook imports from REFERENCE_PACKAGES (`mm`, `references`, `torch`, `th`,
    `causal_mask` from `from minimind_ref import causal_mask`)."""
    roots = set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots |= {(alias.asname or alias.name).split(".")[0] for alias in node.names
                          if alias.name.split(".")[0] in REFERENCE_PACKAGES}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in REFERENCE_PACKAGES:
                roots |= {alias.asname or alias.name for alias in node.names}
    return roots


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from: `mm` for `mm.causal_mask`."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


# Methods that rearrange or combine tensors: a function built from them is an implementation.
_TENSOR_METHODS = {"view", "reshape", "transpose", "permute", "matmul", "einsum", "exp", "sum", "maximum",
                   "cat", "stack", "tril", "triu", "cumsum", "chunk", "split", "unbind", "expand",
                   "view_as_complex", "polar", "outer", "cos", "sin", "masked_fill", "where", "max", "mean"}


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


def _expected_problem(node: ast.expr, roots: set[str], cell: ast.Module) -> str | None:
    """Why a check's expected value is not one the copy may show, or None: it must come from a
    reference package (a function of it, a call into it, a list of such calls), a function of this
    check cell that measures rather than computes, a lambda that calls without computing, or True
    (a verdict reached elsewhere, the grader's)."""
    bound = {target.id: statement.value for statement in cell.body if isinstance(statement, ast.Assign)
             for target in statement.targets if isinstance(target, ast.Name)}
    defined = {statement.name: statement for statement in cell.body if isinstance(statement, ast.FunctionDef)}
    if isinstance(node, ast.Constant):
        return None if node.value is True else f"the expected value {ast.unparse(node)} is typed in"
    if isinstance(node, (ast.List, ast.Tuple)):
        return next((p for p in (_expected_problem(e, roots, cell) for e in node.elts) if p), None)
    if isinstance(node, ast.Call):
        node = node.func
        if _root(node) in roots or isinstance(node, ast.Name) and node.id in defined:
            return None
        return f"the expected value is computed in the notebook's sight: {ast.unparse(node)}(...)"
    if isinstance(node, ast.Lambda):
        return f"the reference is written out: {ast.unparse(node)}" if _computes(node.body) else None
    if isinstance(node, ast.Attribute):
        return None if _root(node) in roots else (
            f"the expected value {ast.unparse(node)} is read from a notebook variable")
    if isinstance(node, ast.Name):
        if node.id in roots:
            return None
        if node.id in defined:
            return (f"the reference {node.id} is written out in the check cell"
                    if _computes(defined[node.id]) else None)
        if node.id in bound and not isinstance(bound[node.id], ast.Name):
            return _expected_problem(bound[node.id], roots, cell)
        return f"the reference {node.id} is the notebook's own code, not a call into minimind_ref, torch or labkit"
    return f"the expected value {ast.unparse(node)} is computed in plain sight"


def _check_calls(tree: ast.Module) -> list[ast.Call]:
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"]


def check_cell_problems(source: str, roots: set[str]) -> list[str]:
    """What a check cell does beyond calling check() on its inputs (LEAK_KINDS["check computes"])."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return [f"cannot be read as Python: {error.msg}"]
    problems = []
    for statement in tree.body:
        if isinstance(statement, ast.Expr):
            call = statement.value
            if not isinstance(call, ast.Call) or getattr(call.func, "id", None) in ("print", "display"):
                problems.append(f"it shows a value: {ast.unparse(statement)[:60]}")
    for call in _check_calls(tree):
        expected = call.args[2] if len(call.args) > 2 else next(
            (k.value for k in call.keywords if k.arg == "expected"), None)
        problem = _expected_problem(expected, roots, tree) if expected is not None else "no expected value"
        if problem:
            problems.append(problem)
    return problems


def leaks(original, name: str, student=None) -> list[str]:
    """Every leak of `original`'s learner copy (by default the one student_notebook makes), one line
    each: "NAME, cell N: kind: what"."""
    student = student_notebook(original, name) if student is None else student
    roots = reference_roots(original)
    found = []

    def leak(index: int, kind: str, what: str) -> None:
        found.append(f"{name}, cell {index}: {kind}: {what}")

    solutions = {i: solution_block(c.source) for i, c in enumerate(original.cells) if "solution" in tags(c)}
    exercise_names = set().union(*(defined_names(original.cells[i].source) for i in solutions))
    after_predict = set()
    for i, cell in enumerate(original.cells):
        if "predict" in tags(cell):
            later = next((j for j in range(i + 1, len(original.cells)) if original.cells[j].cell_type == "code"), None)
            after_predict |= {later} if later is not None else set()
    for i, cell in enumerate(student.cells):
        text = cell.source
        for paragraph in re.split(r"\n\s*\n", text):
            wording = POINTS_AT_A_SOLUTION.search(paragraph)
            if wording and (ANSWER_BOOK not in paragraph or "collapsed" in wording.group(0).lower()):
                leak(i, "wording", repr(wording.group(0)))
        if BEGIN in text or END in text or BUGGY in text:
            leak(i, "solution left", "a solution marker")
        if cell.cell_type != "code":
            continue
        role = ("an exercise" if i in solutions else "a check" if i - 1 in solutions else
                "a post-predict result" if i in after_predict else
                "a cell using an exercise's names" if used_names(text) & exercise_names else None)
        if role and cell.get("outputs"):
            leak(i, "stored output", f"in {role}")
    for i, (fix, buggy) in solutions.items():
        copy_lines = {line.strip() for line in student.cells[i].source.splitlines()} - {""}
        fix_lines = {line.strip() for line in fix.splitlines()} - {""}
        buggy_lines = {line.strip().removeprefix("#").strip() for line in buggy.splitlines()} - {""}
        if "find-the-bug" in tags(original.cells[i]):
            if not buggy_lines:
                leak(i, "fix left", f"no '{BUGGY}' part: the copy would hold a placeholder, not broken code")
            if buggy_lines == fix_lines:
                leak(i, "fix left", "the broken code is the fix itself")
            if (fix_lines - buggy_lines) & copy_lines:
                leak(i, "fix left", f"the copy holds the fix: {sorted((fix_lines - buggy_lines) & copy_lines)}")
        elif fix_lines & copy_lines:
            leak(i, "solution left", f"the exercise cell holds solution lines {sorted(fix_lines & copy_lines)}")
        if i + 1 < len(student.cells):
            shapes = expression_shapes(fix)
            shown = sorted({t for s, t in expression_shapes(student.cells[i + 1].source).items() if s in shapes})
            if shown:
                leak(i + 1, "solution left", f"the check shows the solution: {shown}")
            for problem in check_cell_problems(student.cells[i + 1].source, roots):
                leak(i + 1, "check computes", problem)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_a_learner_copy_gives_nothing_away(path):
    original, _ = answer_book_and_copy(path)
    found = leaks(original, path.name)
    assert not found, "the learner copy leaks:\n" + "\n".join(found)


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


IMPORTS = ("import torch\nimport minimind_ref as mm\nfrom labkit import check, references, tiny_heads as th", [])
EXERCISE = (f"def f(x):\n    {BEGIN}\n    return x.view(x.shape[0], 2, -1).transpose(0, 1).sum(0)\n    {END}",
            ["solution"])
CHECK = ("check('f', f, references.f, cases=[torch.randn(2, 4)])", [])


def kinds(*cells) -> list[str]:
    """The leak kinds found in a synthetic notebook, in order."""
    return [line.split(": ")[1] for line in leaks(synthetic(*cells), "nb.ipynb")]


def test_a_clean_synthetic_notebook_has_no_leak():
    assert kinds(IMPORTS, EXERCISE, CHECK) == []
    assert kinds(IMPORTS, EXERCISE, ("scores = th.measure(model)\ncheck('h', f, [th.best(model)], cases=[()])\n"
                                     "check('h', f, mm.causal_mask, cases=[(2, 2)])\n"
                                     "check('ok', grade(f).passed, True)", [])) == []


@pytest.mark.parametrize("check_cell, problem", [
    ("best = scores.previous_token_head\ncheck('h', f, [best], cases=[()])", "read from a notebook variable"),
    ("check('n', f, 4096, cases=[()])", "is typed in"),
    ("check('f', f, pool_kv_weight, cases=[1])", "the notebook's own code"),
    ("check('f', f, my_reference(3), cases=[1])", "computed in the notebook's sight"),
    ("check('f', f, lambda x: x.view(2, -1).sum(0), cases=[1])", "the reference is written out"),
    ("def ref(x):\n    return x.view(2, -1).sum(0)\ncheck('f', f, ref, cases=[1])", "written out in the check cell"),
    ("check('f', f, [2 * c.nbytes for c in cases], cases=[1])", "computed in plain sight"),
    ("check('f', f, references.f, cases=[1])\nprint(references.f(1))", "it shows a value"),
    ("check('f', f, references.f, cases=[1])\nreferences.f(1)", None),  # a call whose value is not shown
    ("check('f', f, references.f, cases=[1])\nbest", "it shows a value"),
])
def test_the_leak_test_reads_what_a_check_cell_does(check_cell, problem):
    found = check_cell_problems(check_cell, {"torch", "mm", "references", "th"})
    if problem is None:
        assert found == []
    else:
        assert any(problem in line for line in found), found


def test_the_leak_test_names_each_kind_with_its_cell():
    stored = [("guess = predict('?', choices=['a', 'b'])", ["predict"]), ("guess.reveal('a')", [])]
    notebook = synthetic(IMPORTS, *stored, EXERCISE, CHECK, ("print(f(torch.ones(2, 4)))", []))
    assert leaks(notebook, "nb.ipynb") == []
    found = leaks(notebook, "nb.ipynb", student=copy.deepcopy(notebook))  # a copy maker that cleared nothing
    assert "nb.ipynb, cell 2: stored output: in a post-predict result" in found
    assert "nb.ipynb, cell 3: stored output: in an exercise" in found
    assert "nb.ipynb, cell 4: stored output: in a check" in found
    assert "nb.ipynb, cell 5: stored output: in a cell using an exercise's names" in found
    assert "nb.ipynb, cell 3: solution left: a solution marker" in found

    assert kinds(IMPORTS, ("md", "If you are stuck, open the collapsed worked solution."), EXERCISE, CHECK) == [
        "wording"]
    assert kinds(IMPORTS, ("md", "Compare with the solution above."), EXERCISE, CHECK) == ["wording"]
    assert kinds(IMPORTS, ("md", "The worked solutions are in the answer book (`make answers`)."), EXERCISE,
                 CHECK) == []
    leaky_check = ("check('f', f, lambda x: x.view(x.shape[0], 2, -1).transpose(0, 1).sum(0), cases=[1])", [])
    assert set(kinds(IMPORTS, EXERCISE, leaky_check)) == {"solution left", "check computes"}


def test_the_leak_test_sees_a_find_the_bug_cell_that_holds_the_fix():
    check_fixed = ("check('scores', scaled_scores, references.scaled_scores, cases=[(torch.ones(1, 4),) * 2])", [])
    assert kinds(IMPORTS, (FIND_THE_BUG, ["solution", "find-the-bug"]), check_fixed) == []
    no_bug = FIND_THE_BUG.replace(f"    {BUGGY}\n    # return q @ k.transpose(-2, -1) / q.shape[-1]\n", "")
    assert kinds(IMPORTS, (no_bug, ["solution", "find-the-bug"]), check_fixed) == ["fix left"]
    no_change = FIND_THE_BUG.replace("# return q @ k.transpose(-2, -1) / q.shape[-1]",
                                     "# return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5")
    assert kinds(IMPORTS, (no_change, ["solution", "find-the-bug"]), check_fixed) == ["fix left"]


# ---------------------------------------------------------------------------------------------
# Every copy runs headless, each check answering "not yet"
# ---------------------------------------------------------------------------------------------

# A learner's kernel (a failing check prints, never raises), one thread each so that copies run
# side by side without fighting for the cores. The figures are drawn as a learner's JupyterLab draws
# them (its default backend, unless the caller's environment names one, as CI's second pass does),
# and what the copy shows is read as a front end shows it (tests/rendered.py).
KERNEL_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _check_words(lang: str) -> tuple[str, str]:
    """What check() prints, in `lang`, for "not yet" and for an exercise not filled in."""
    with speaking(lang):
        line = tr("✗ {name}: not yet — {reason}", name="\0", reason="\1")
        return line.split("\0")[1].split("\1")[0].strip(" :：—-"), tr(NOT_FILLED_IN)


def _run_copy(path: Path, folder: Path, lang: str = "en") -> list[str]:
    """Run `path`'s learner copy top to bottom from `folder`, then play its predictions in the same
    kernel (tests/learner_predictions.py: shown only once committed); the problems, one line each."""
    answer_book, notebook = answer_book_and_copy(path)
    env = {key: value for key, value in os.environ.items() if key != STRICT_ENV} | KERNEL_ENV

    def predictions(run):
        return play(run, notebook, answer_book, path.name, lang, right_first=lang == "en")

    try:
        problems = execute_notebook(notebook, folder, env=env, then=predictions, name=path.name)
    except Exception as error:  # a failing cell, a dead kernel or a timeout: the copy does not run
        return [f"{path.name}: the copy does not run top to bottom: {type(error).__name__}: {str(error)[-600:]}"]
    problems += seen_problems(notebook, f"{path.name} (learner copy, run)")
    if lang != "en" and not catalog_problems(ROOT, f"notebook:{path.stem}"):  # finished: no English left
        problems += english_problems(notebook, f"{path.name} ({lang} learner copy, run)")
    for i, cell in enumerate(notebook.cells):
        if "exercise" not in tags(cell):
            continue
        printed = "".join(out.get("text", "") for out in notebook.cells[i + 1].outputs)
        bug = "find-the-bug" in tags(cell)
        not_yet, not_filled_in = _check_words(lang)
        if not_yet not in printed or (not_filled_in in printed) == bug:
            want = "a wrong result from the broken code" if bug else "that the exercise is not filled in yet"
            problems.append(f"{path.name}, cell {i + 1}: the check should say {want}; it printed {printed!r}")
    return problems


# Each learner copy runs once, in one language. A Chinese copy runs the English copy's code cell for
# cell (test_translation holds that) with the same checks and predictions, and also shows that the
# language follows the folder and that a Chinese learner reads no English (tests/rendered.py:
# english_problems, once the notebook's catalog is finished). So every module runs in Chinese but
# ENGLISH_RUN, which keeps the English wording of the checks and the right-first play of predictions
# (a Chinese run plays them wrong first) covered. Running every copy in both languages would double
# this file's load, the biggest of the suite.
ENGLISH_RUN = ("01",)


def learner_runs() -> list[tuple[Path, str]]:
    chinese = {path.name: path for path in CHINESE}
    return [(path, "en") if path.name[:2] in ENGLISH_RUN or path.name not in chinese else (chinese[path.name], "zh-CN")
            for path in WITH_EXERCISES]


def test_both_languages_run():
    assert {lang for _, lang in learner_runs()} == {"en", "zh-CN"}, "make translations builds notebooks/zh-CN"


@pytest.mark.parametrize("path, lang", learner_runs(), ids=lambda x: x.stem if isinstance(x, Path) else x)
def test_every_learner_copy_runs_headless_and_each_check_says_not_yet(path, lang):
    """The copy, run from a folder beside notebooks/ as workspace/ is (workspace/zh-CN/ for a Chinese
    copy, as make lab LANG=zh-CN makes it): its relative paths resolve as a learner's do, and each
    check (the grader's too) says "not yet" in the copy's language. The copies run side by side,
    one per test worker (conftest.py shares this file test by test)."""
    folder = ROOT / WORKSPACE / ("zh-CN" if lang == "zh-CN" else "")
    folder.mkdir(parents=True, exist_ok=True)  # git-ignored; nothing is written into it here
    problems = _run_copy(path, folder, lang)
    assert not problems, "\n".join(problems)


def test_the_commands_say_where_the_copies_are(tmp_path, capsys):
    from labkit.course import cli

    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / WITH_EXERCISES[0].name).write_text(WITH_EXERCISES[0].read_text())
    assert cli.main.__module__  # the command behind make lab and make workspace
    args = cli._parser().parse_args(["workspace"])
    assert cli.cmd_workspace(args, tmp_path) == 0
    out = capsys.readouterr().out
    assert f"{WORKSPACE}/{WITH_EXERCISES[0].name}: made (new)" in out and OPEN_ANSWERS in out
    assert cli.cmd_workspace(args, tmp_path) == 0
    assert f"{WORKSPACE}/{WITH_EXERCISES[0].name}: kept" in capsys.readouterr().out
    makefile = (ROOT / "Makefile").read_text()
    lab = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "$(CLI) workspace" in lab and "/lab/tree/workspace" in lab
    assert "/lab/tree/notebooks" in makefile.split("\nanswers:", 1)[1].split("\n\n", 1)[0]
