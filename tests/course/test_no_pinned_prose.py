"""No test pins a sentence of prose: `assert "<five words or more>" in guide` breaks on rewording.

A number or behaviour stated in a guide or notebook is a bound fact (tests/facts/), which lets the
sentence around it change. This reads every test file's syntax tree and fails on an `in` / `not in`
test whose left side is a string literal (or f-string) of five words or more, in the tests of the
course's content (tests/course/); tests of the kit may check a message the code prints.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = 5


def _literal_words(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return len(node.value.split())
    if isinstance(node, ast.JoinedStr):
        return sum(len(part.value.split()) for part in node.values if isinstance(part, ast.Constant))
    return 0


def pinned_sentences(path: Path) -> list[tuple[str, int, str]]:
    """(function, line, literal) of each sentence-sized literal that an `in` test looks for."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn)
                    and _literal_words(node.left) >= WORDS):
                found.append((function.name, node.lineno, ast.unparse(node.left)[:80]))
    return found


def test_no_test_pins_a_sentence():
    pinned = []
    for path in sorted((ROOT / "tests" / "course").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for function, line, literal in pinned_sentences(path):
            pinned.append(f"{name}:{line} ({function}): {literal}")
    assert not pinned, ("tests that pin a sentence of prose; bind its number or behaviour as a fact instead "
                        "(CONTRIBUTING.md, 'Bound facts'):\n" + "\n".join(pinned))


def test_the_check_finds_a_pinned_sentence(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text('def test_x():\n    guide = ""\n    assert f"caches {1} bytes per token in bfloat16" in guide\n'
                      '    assert "64" in guide\n')
    assert [(f, line) for f, line, _ in pinned_sentences(sample)] == [("test_x", 3)]
