"""No import goes round in a circle in minimind_ref or labkit: a module that imports another which
imports it back (directly or through others) half-initialises one of them, and ties two files that
should each have one job. The imports are read from the source with `ast`, at the top of a file and
inside functions alike (a function-level import only postpones the circle). `import a.b.c` leads to
a.b.c, `from a.b import c` to a.b.c when c is a module and to a.b otherwise; the implicit import of
a parent package by its submodules is Python's, not a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("minimind_ref", "labkit")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known) -> set[str]:
    """The modules of `known` that module `name` (the file `path`) imports."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            found |= {f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                      for alias in node.names}
    return {module for module in found if module in known and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle, as the modules along it (the first repeated at the end)."""
    found, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                circle = path[path.index(target):] + [target]
                if frozenset(circle) not in done:
                    done.add(frozenset(circle))
                    found.append(circle)
            elif target not in finished:
                visit(target, path + [target])
        finished.add(module)

    finished: set[str] = set()
    for module in sorted(graph):
        if module not in finished:
            visit(module, [module])
    return found


def test_no_import_circle_in_minimind_ref_or_labkit():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    circles = cycles(graph)
    assert circles == [], "import circles:\n" + "\n".join(" -> ".join(circle) for circle in circles)


@pytest.mark.parametrize("files, circle", [
    ({"a/__init__.py": "", "a/x.py": "from .y import f", "a/y.py": "def f():\n    from a.x import g"},
     ["a.x", "a.y", "a.x"]),
    ({"a/__init__.py": "", "a/x.py": "from . import y", "a/y.py": "import a.x"}, ["a.x", "a.y", "a.x"]),
    ({"a/__init__.py": "from .x import f", "a/x.py": "from a import g"}, ["a", "a.x", "a"]),
])
def test_the_reader_sees_a_circle_however_it_is_spelled(tmp_path, files, circle):
    """The test above cannot pass by not seeing an import: relative, absolute, in a function."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    known = {".".join(p.relative_to(tmp_path).with_suffix("").parts[:-1] if p.name == "__init__.py"
                      else p.relative_to(tmp_path).with_suffix("").parts): p for p in tmp_path.rglob("*.py")}
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert cycles(graph) == [circle]
    assert cycles({name: set() for name in graph}) == []
