"""Two packages with one job each, and their declared dependencies are their true ones.

pyproject.toml declares `minimind_ref`'s needs as the distribution's dependencies and `labkit`'s as
the `kit` extra. These tests read every import statement of both packages (at the top of a file or
inside a function: both are needs) and hold the declarations to them, so a new import cannot slip
in undeclared and a dependency cannot outlive its last use.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# import name -> distribution name, where they differ
DISTRIBUTION = {"IPython": "ipython", "markdown_it": "markdown-it-py"}  # import name -> distribution
OURS = {"minimind_ref", "labkit"}
# what a learner who opens minimind_ref/ must not find there
PRESENTATION = {"matplotlib", "ipywidgets", "IPython", "nbformat", "nbclient", "nbconvert", "jupyter_client",
                "ipykernel", "jinja2", "numpy", "safetensors"}


def imported_distributions(files) -> dict[str, set[str]]:
    """distribution name -> the files that import it, for every import that is neither the standard
    library, nor relative, nor one of the course's own packages."""
    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in OURS or top == "__future__":
                    continue
                found.setdefault(DISTRIBUTION.get(top, top).lower(), set()).add(path.relative_to(ROOT).as_posix())
    return found


def declared(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def package_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_minimind_ref_needs_torch_and_declares_exactly_that():
    model_files = [path for path in package_files("minimind_ref") if path.name != "oracles.py"]
    needs = imported_distributions(model_files)
    assert set(needs) == declared(PYPROJECT["project"]["dependencies"]) == {"torch"}, needs


def test_the_oracles_need_transformers_which_the_test_extra_declares():
    needs = imported_distributions([ROOT / "minimind_ref" / "oracles.py"])
    assert {"transformers"} <= set(needs) <= {"torch", "transformers"}
    assert "transformers" in declared(PYPROJECT["project"]["optional-dependencies"]["test"])


def reached_model_files(files) -> list[Path]:
    """The files of minimind_ref that `files` import, and those they import in turn: a kit file that
    imports minimind_ref.oracles needs what the oracles import (transformers)."""
    reached, todo = set(), [(path, ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])) for path in files]
    while todo:
        path, package = todo.pop()
        for module in _imported_modules(path.read_text(), package):
            found = ROOT.joinpath(*module.split("."))
            found = found / "__init__.py" if found.is_dir() else found.with_suffix(".py")
            if module.split(".")[0] == "minimind_ref" and found.is_file() and found not in reached:
                reached.add(found)
                todo.append((found, ".".join(found.relative_to(ROOT).with_suffix("").parts[:-1])))
    return sorted(reached)


def test_labkit_declares_exactly_what_it_imports_in_the_kit_extra():
    """What labkit imports, and what the files of minimind_ref it imports import (the grader's
    twin needs transformers at run time)."""
    files = package_files("labkit")
    needs = imported_distributions(files + reached_model_files(files))
    kit = declared(PYPROJECT["project"]["optional-dependencies"]["kit"])
    model = declared(PYPROJECT["project"]["dependencies"])
    assert set(needs) - model == kit, {name: sorted(files) for name, files in needs.items() if name not in model}


def test_no_presentation_library_is_imported_under_minimind_ref():
    needs = imported_distributions(package_files("minimind_ref"))
    offenders = {name: files for name, files in needs.items() if name in {n.lower() for n in PRESENTATION}}
    assert offenders == {}


def test_every_declared_dependency_is_pinned_in_requirements():
    """make setup installs requirements.txt only (the package itself with --no-deps), so every
    dependency the packages declare must be pinned there."""
    pinned = {line.split("==")[0].strip().lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
              if "==" in line and not line.lstrip().startswith("#")}
    wanted = declared(PYPROJECT["project"]["dependencies"])
    for extra in PYPROJECT["project"]["optional-dependencies"].values():
        wanted |= declared(extra)
    assert wanted - pinned == set()


def test_no_file_names_the_old_teaching_package():
    old = "minimind_ref" + ".teaching"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    offenders = [name for name in tracked if Path(ROOT / name).is_file()
                 and name.endswith((".py", ".md", ".ipynb", ".toml", ".txt", ".json", "Makefile"))
                 and old in (ROOT / name).read_text(errors="replace")]
    assert offenders == []


@pytest.mark.parametrize("package, absent", [
    ("minimind_ref", ["matplotlib", "ipywidgets", "IPython", "nbformat", "transformers", "labkit"]),
    ("labkit", ["torch", "matplotlib", "ipywidgets", "minimind_ref"]),
    ("labkit.syllabus", ["torch", "matplotlib", "ipywidgets", "minimind_ref"]),
    ("labkit.course.cli", ["torch", "matplotlib", "ipywidgets", "nbformat"]),  # make list and make quiz start at once
    ("labkit.quiz", ["torch", "matplotlib", "ipywidgets"]),
])
def test_importing_a_package_loads_only_what_it_needs(package, absent):
    code = f"import sys, {package}; print(sorted(m for m in {absent!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


def test_notebooks_experiments_and_benchmarks_import_the_kit_by_its_short_names():
    """`from labkit.heatmaps import show_heatmaps` works, but a reader should meet one spelling:
    whatever labkit exports at the top is imported from there."""
    import nbformat

    import labkit

    sources = {path: path.read_text()
               for folder in ("experiments", "benchmarks") for path in (ROOT / folder).rglob("*.py")}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        sources[path] = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    # one line, or a parenthesised list over several: never the next line's import
    deep = re.compile(r"^\s*from labkit\.(\w+) import (?:\(([\w,\s]+)\)|([\w, ]+))", re.M)
    offenders = []
    for path, source in sources.items():
        for module, listed, inline in deep.findall(source):
            names = listed or inline
            exported = [name.strip() for name in names.split(",") if name.strip() in labkit.__all__]
            if exported:
                offenders.append(f"{path.relative_to(ROOT)}: from labkit.{module} import {', '.join(exported)}")
    assert offenders == [], "import these from labkit itself:\n" + "\n".join(offenders)



def _imported_modules(source: str, package: str) -> set[str]:
    """Every module a file of `package` imports, relative imports resolved to absolute names."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}  # `from labkit import course`
    return found


def _names_the_tools(names: set[str]) -> list[str]:
    return sorted(name for name in names if name == "labkit.course" or name.startswith("labkit.course."))


def test_the_kit_never_imports_the_maintainer_tools():
    """labkit.course (the make targets' commands, student copies, slides, the notebook runner)
    uses the kit; a kit file that imported it back would tie a learner's notebook to them."""
    offenders = {}
    for path in (ROOT / "labkit").rglob("*.py"):
        module = path.relative_to(ROOT).with_suffix("").parts
        if module[:2] == ("labkit", "course"):
            continue
        names = _names_the_tools(_imported_modules(path.read_text(), ".".join(module[:-1])))
        if names:
            offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


@pytest.mark.parametrize("source, package", [
    ("from labkit.course.catalog import x", "labkit.quiz"), ("from ..course.cli import main", "labkit.quiz"),
    ("from .course import cli", "labkit"), ("from labkit import course", "labkit"),
    ("import labkit.course.slides", "labkit.grader"),
])
def test_the_import_reader_sees_every_spelling_of_the_maintainer_tools(source, package):
    """The test above cannot pass by not seeing an import."""
    assert _names_the_tools(_imported_modules(source, package))
    assert not _names_the_tools(_imported_modules("from .syllabus import find_course_root", "labkit"))
