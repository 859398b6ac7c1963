"""Every fact marked in the course's prose equals the value its code computes (tests/facts/).

The prose is every guide (`modules/*/*.md`, in any language), the root README and its Chinese twin,
the pages of `docs/` (the cheat-sheet, in both languages), and the Markdown cells of every notebook,
the Chinese ones (notebooks/zh-CN/) included: a Chinese text marks the same facts by the same names. A marker reads
`<!-- fact: name -->12,288<!-- /fact -->`; how a marked text is compared with a computed value is
in tests/facts/__init__.py. A failure names the file, the line, the sentence, the text written and
the value computed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import nbformat
import pytest
from facts import FACTS, Fact, Marker, find_markers, mismatch, numbers_in

ROOT = Path(__file__).resolve().parents[2]


def prose_files() -> list[Path]:
    guides = sorted((ROOT / "modules").glob("*/*.md"))
    docs = sorted((ROOT / "docs").glob("*.md"))
    readmes = sorted(ROOT.glob("README*.md"))  # README.md and its Chinese twin
    notebooks = [*sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "notebooks" / "zh-CN").glob("*.ipynb"))]
    return [*readmes, *guides, *docs, *notebooks]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@cache
def markup() -> tuple[tuple[Marker, ...], tuple[str, ...]]:
    """Every marker of the course's prose, and every problem with the markup."""
    markers, problems = [], []
    for path in prose_files():
        name = path.relative_to(ROOT).as_posix()
        if path.suffix == ".ipynb":
            for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
                if cell.cell_type == "markdown":
                    text = cell.source
                    found = find_markers(text, lambda o, t=text, i=index: f"{name} cell {i}, line {_line_of(t, o)}")
                    markers += found[0]
                    problems += found[1]
        else:
            text = path.read_text(encoding="utf-8")
            found = find_markers(text, lambda o, t=text: f"{name}:{_line_of(t, o)}")
            markers += found[0]
            problems += found[1]
    return tuple(markers), tuple(problems)


def test_markers_are_well_formed():
    problems = markup()[1]
    assert not problems, "\n".join(problems)


def test_every_marker_names_a_fact():
    unknown = [f"{m.where}: no fact named {m.name!r} (define it in tests/facts/NN_slug.py): {m.sentence}"
               for m in markup()[0] if m.name not in FACTS]
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("name", sorted(FACTS))
def test_fact(name: str):
    rule: Fact = FACTS[name]
    uses = [m for m in markup()[0] if m.name == name]
    assert uses, (f"fact {name} (tests/facts/{rule.module}.py) is marked nowhere: the sentence it protected "
                  f"is gone or lost its marker. Mark it again, or delete the fact with the sentence.")
    computed = rule.compute()
    wrong = []
    for marker in uses:
        why = mismatch(rule, computed, marker.written)
        if why:
            wrong.append(f"{marker.where}: fact {name}: written {marker.written!r}, {why}\n    in: {marker.sentence}")
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------- the rules themselves

def _rule(**options) -> Fact:
    return Fact("example", lambda: None, "test", **options)


@pytest.mark.parametrize(("computed", "written", "options", "holds"), [
    (12288, "12,288", {}, True),
    (12288, "`12288` bytes", {}, True),
    (12288, "12,289", {}, False),
    (12288, "12.3 thousand", {}, False),  # an int is stated exactly
    (3.2183, "3.2", {}, True),  # rounded to the digits written
    (3.2183, "3.22", {}, True),
    (3.2183, "3.3", {}, False),
    (0.125, "`1/sqrt(64) = 0.125`", {}, False),  # three numbers written, one computed
    ((1, 64, 0.125), "`1/sqrt(64) = 0.125`", {}, True),
    ((3.18, 4.06), "3.2 to 4.1", {}, True),
    ((3.18, 4.06), "3.2 to 4.0", {}, False),
    (6.1e-8, "6e-08", {}, True),
    (-1.0, "−1", {}, True),
    (4, "four", {}, True),
    (4, "five", {}, False),
    (98.3, "about 100", {}, False),
    (98.3, "about 100", {"tolerance": 5}, True),
    (0.1234567, "0.123457", {"spread": 1e-5}, False),  # more digits than float32 promises
    (0.1234567, "0.1235", {"spread": 1e-5}, True),
    ("-inf", "-inf", {}, True),
    ("ValueError", "RuntimeError", {}, False),
    (("1279a616", "c090b69c"), "1279a616 and c090b69c", {}, True),
    (("1279a616", "c090b69c"), "c090b69c and 1279a616", {}, False),
    (2, "twice", {}, True),
    (8.3e-7, "1e-6", {"below": True, "why": "x"}, True),  # a bound above the value
    (8.3e-7, "1e-6", {"below": True, "spread": 0.5, "why": "x"}, False),  # ... that another machine may cross
    (8.3e-7, "2e-6", {"below": True, "spread": 0.5, "why": "x"}, True),
    (8.3e-7, "1e-4", {"below": True, "why": "x"}, False),  # a bound a hundred times the value says nothing
    (1.2e-7, "1e-7", {"magnitude": True, "why": "x"}, True),  # its power of ten
    (1.2e-7, "1e-6", {"magnitude": True, "why": "x"}, False),
    (2.9e-7, "1e-7", {"magnitude": True, "spread": 0.2, "why": "x"}, False),  # 3.5e-7 is nearer 1e-6
    ((3153.1, 4.0, 12612.3), "3,200 ... four ... 12,600", {"tolerance": (50, None, 50), "why": "x"}, True),
    ((3153.1, 4.6, 12612.3), "3,200 ... four ... 12,600", {"tolerance": (50, None, 50), "why": "x"}, False),
    (True, "any wording", {}, True),  # a claim: the text is free, the behaviour must hold
    (False, "any wording", {}, False),
])
def test_how_a_marked_text_is_compared(computed, written, options, holds):
    assert (mismatch(_rule(**options), computed, written) is None) == holds


def test_a_loose_comparison_says_why():
    from facts import fact

    with pytest.raises(ValueError, match="says not why"):
        fact(tolerance=0.5)(lambda: 1.0)


def test_how_markers_are_found():
    text = ("Heads are <!-- fact: d -->64<!-- /fact --> wide. MiniMind-3 caches\n<!-- fact: c -->12,288\n"
            "<!-- /fact --> bytes per token. Stray <!-- /fact --> and <!-- fact: open -->never closed.")
    markers, problems = find_markers(text, lambda offset: f"line {_line_of(text, offset)}")
    assert [(m.name, m.written) for m in markers] == [("d", "64"), ("c", "12,288")]
    assert markers[1].sentence == "MiniMind-3 caches 12,288 bytes per token."
    assert markers[1].where == "line 2"
    assert len(problems) == 2 and "closes no marker" in problems[0] and "not closed" in problems[1]
    assert [n.value for n in numbers_in("`[B, 8, T, 64]`, 1e-6 and 12{,}288")] == [8, 64, 1e-6, 12288]
