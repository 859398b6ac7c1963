"""The course's shape: every module in the README's table has all its parts, the table matches
what is on disk, and every notebook follows the anatomy in CONTRIBUTING.md (exercises with hidden
solutions and checks, a quiz, seeded, no stray output-ignoring)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from experiment_scripts import times_itself

from labkit.syllabus import get_module, numbers_on_disk

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
TABLE_ROW = re.compile(r"^\| (\d\d) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", re.M)
LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")


def readme_rows() -> dict[str, tuple[str, ...]]:
    table = README.split("## Modules", 1)[1].split("\n## ", 1)[0]
    return {number: tuple(cell.strip() for cell in cells) for number, *cells in TABLE_ROW.findall(table)}


# Module 00 is the start-here notebook; every numbered module after it has all four parts. The
# modules come from the README and from the disk, so a module missing from either is still tested.
COURSE_MODULES = sorted((set(readme_rows()) | set(numbers_on_disk(ROOT))) - {"00"})
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def link(cell: str) -> tuple[str, str]:
    match = LINK.fullmatch(cell)
    assert match, f"expected a Markdown link in the module table, got {cell!r}"
    return match.group(1), match.group(2)


def test_readme_table_lists_exactly_the_modules_on_disk():
    assert sorted(readme_rows()) == sorted(numbers_on_disk(ROOT)), (
        "the README's module table and the modules on disk differ: add or remove rows")


@pytest.mark.parametrize("number", COURSE_MODULES)
def test_module_has_guide_notebook_experiments_and_quiz(number):
    module = get_module(number, ROOT)
    assert module.guide is not None, f"modules/{module.name}/README.md is missing"
    assert module.notebook is not None, f"notebooks/{module.name}.ipynb is missing"
    assert len(module.experiments) >= 2, f"experiments/{module.name}/ needs at least two expK_*.py scripts"
    assert module.quiz is not None, f"quizzes/{module.name}.json is missing"


@pytest.mark.parametrize("number", COURSE_MODULES)
def test_readme_row_links_to_the_module_parts(number):
    module = get_module(number, ROOT)
    topic, guide, notebook, experiments, quiz = readme_rows()[number]
    assert topic == module.title
    assert link(guide)[1] == f"modules/{module.name}/README.md"
    assert link(notebook) == (module.name, f"notebooks/{module.name}.ipynb")
    count = len(module.experiments)
    assert link(experiments) == (f"{count} scripts", f"experiments/{module.name}/")
    assert link(quiz)[1] == f"quizzes/{module.name}.json"


@pytest.mark.parametrize("number", COURSE_MODULES)
def test_guide_follows_the_anatomy(number):
    module = get_module(number, ROOT)
    guide = module.guide.read_text()
    for heading in ("Learning goals", "Key ideas", "Code guide", "How to run", "Common mistakes", "Further reading"):
        assert re.search(rf"^## {heading}", guide, re.M), f"{module.guide} lacks a '## {heading}' section"
    assert f"make exp M={number}" in guide and f"make quiz M={number}" in guide
    for script in module.experiments:
        assert script.name in guide, f"the guide does not describe {script.name}"
    assert re.search(r"arXiv \d{4}\.\d{4,5}", guide), "further reading cites papers by arXiv id"
    assert not re.search(r"\bline \d+", guide), "the code guide points by file and function name, not line number"
    for path in re.findall(r"`minimind_ref/([\w/]+\.py)`", guide):
        assert (ROOT / "minimind_ref" / path).is_file(), f"the guide names minimind_ref/{path}, which does not exist"


def notebook_cells(number):
    module = get_module(number, ROOT)
    return nbformat.read(module.notebook, as_version=4).cells


@pytest.mark.parametrize("number", COURSE_MODULES)
def test_notebook_exercises_have_hidden_solutions_and_checks(number):
    cells = notebook_cells(number)
    solutions = [i for i, cell in enumerate(cells) if "solution" in cell.metadata.get("tags", [])]
    assert solutions, "the notebook has exercises whose solution cells are tagged 'solution'"
    for i in solutions:
        cell = cells[i]
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"solution cell {i} is not collapsed"
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
        following = cells[i + 1] if i + 1 < len(cells) else None
        assert following is not None and "check(" in following.source, (
            f"solution cell {i} is not followed by a check(...)")


@pytest.mark.parametrize("number", COURSE_MODULES)
def test_notebook_is_seeded_and_ends_with_a_quiz(number):
    code = [cell.source for cell in notebook_cells(number) if cell.cell_type == "code"]
    assert any("manual_seed" in source for source in code[:3]), "seed torch in the first cells"
    assert any("show_quiz(" in source for source in code), "the notebook shows its quiz"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_with_outputs_and_ignores_output_only_with_a_reason(path):
    cells = nbformat.read(path, as_version=4).cells
    printing = [cell for cell in cells if cell.cell_type == "code" and "print(" in cell.source]
    assert all(cell.outputs for cell in printing), f"{path.name} is stored with its outputs: run make notebooks"
    for cell in cells:
        if cell.cell_type == "code" and "NBVAL_IGNORE_OUTPUT" in cell.source:
            lines = cell.source.splitlines()
            # nbval honours the marker only when it stands alone on its line; the reason goes below it
            assert lines[0] == "# NBVAL_IGNORE_OUTPUT" and re.match(r"# \(.+\)$", lines[1]), (
                f"{path.name}: an output-ignoring cell starts with '# NBVAL_IGNORE_OUTPUT' alone, then "
                f"'# (why its output varies)'; got {lines[:2]}")
            # CONTRIBUTING.md: for timings and versions only
            assert re.search(r"timing|version", lines[1]), (
                f"{path.name}: outputs are ignored only for timings and versions, not {lines[1]!r}")
            if "timing" in lines[1]:
                timing_cell_names_its_check(path.name, cell.source)


CHECKED_BY = re.compile(r"^# \(.*\b((?:experiments|benchmarks)/[\w/]+\.py)\b.*\)$", re.M)


def timing_cell_names_its_check(notebook: str, source: str) -> None:
    """A timing in a notebook is shown, never asserted: nbval and the learner-copy tests run notebooks
    beside other work, where a close timing can flip. Its claim lives in a script that times itself,
    which make test runs alone (or in a benchmark), and the cell names that script."""
    assert not re.search(r"^\s*assert\b", source, re.M), (
        f"{notebook}: a timing cell prints its ratios and asserts none (under load a timing can flip); "
        "check the claim in an experiment that make test runs alone, and name it in the cell")
    named = CHECKED_BY.search(source)
    assert named, (f"{notebook}: a timing cell names, in a '# (...)' line, the experiment or benchmark that "
                   "checks its claim, as in '# (the claim is checked ... by experiments/NN_slug/expK_name.py)'")
    script = ROOT / named.group(1)
    assert script.is_file() and times_itself(script), (
        f"{notebook}: {named.group(1)}, named as checking a timing cell's claim, "
        + ("does not time anything" if script.is_file() else "does not exist"))


def heading(cell) -> tuple[int, str] | None:
    """(level, text) of a Markdown cell that starts with a heading, else None."""
    match = re.match(r"(#{1,6}) (.+)", cell.source) if cell.cell_type == "markdown" else None
    return (len(match.group(1)), match.group(2).strip()) if match else None


def tags_of(cell) -> list[str]:
    return cell.metadata.get("tags", [])


TEACHING_MODULES = [n for n in COURSE_MODULES if "01" <= n <= "09"]


@pytest.mark.parametrize("number", TEACHING_MODULES)
def test_the_learner_predicts_twice_and_finds_a_bug_in_the_core(number):
    """Issue 24: every teaching module asks, in its main line, for two predictions before a result is
    shown (each followed by the cell that reveals it) and for one bug to find and fix."""
    cells = notebook_cells(number)
    core = [(i, cell) for i, cell in enumerate(cells) if "deep-dive" not in tags_of(cell)]
    predictions = [i for i, cell in core if "predict" in tags_of(cell)]
    assert len(predictions) >= 2, f"module {number} has {len(predictions)} core prediction(s); it needs two"
    for i in predictions:
        assert "predict(" in cells[i].source, f"cell {i} is tagged predict but asks nothing"
        result = next(cell for cell in cells[i + 1:] if cell.cell_type == "code")
        assert ".reveal(" in result.source, f"the code cell after prediction {i} does not reveal it"
    bugs = [i for i, cell in core if "find-the-bug" in tags_of(cell)]
    assert bugs, f"module {number} has no core find-the-bug exercise"
    for i in bugs:
        assert "solution" in tags_of(cells[i]) and "### BUGGY" in cells[i].source, (
            f"find-the-bug cell {i} keeps its broken lines after '### BUGGY' in a solution block")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_deep_dives_are_marked_in_their_heading_and_on_every_cell(path):
    """Issue 29: a section is a deep dive exactly when its heading says so, and then every one of its
    cells carries the tag, so tools (the clock, the routes) can leave it out."""
    cells = nbformat.read(path, as_version=4).cells
    inside: int | None = None  # the level of the deep dive's heading while inside one
    for i, cell in enumerate(cells):
        found = heading(cell)
        if found and (inside is None or found[0] <= inside):
            inside = found[0] if re.match(r"(\d+\. )?Deep dive: ", found[1]) else None
        marked = "deep-dive" in tags_of(cell)
        assert marked == (inside is not None), (
            f"{path.name}, cell {i}: " + ("inside a 'Deep dive: ' section but not tagged deep-dive" if inside
                                          else "tagged deep-dive outside a section headed 'Deep dive: ...'"))


@pytest.mark.parametrize("number", COURSE_MODULES)
def test_the_guide_ends_with_what_the_learner_can_now_do(number):
    """Issue 29: a completion checklist (write, explain, measure), each item pointing to where it is shown."""
    guide = get_module(number, ROOT).guide.read_text()
    checklist = guide.split("\n## Checklist: what you can now do", 1)
    assert len(checklist) == 2, "the guide ends with '## Checklist: what you can now do'"
    items = [" ".join(item.split()) for item in re.split(r"\n\s*- ", "\n" + checklist[1].split("\n## ", 1)[0])[1:]]
    items = [item for item in items if not re.fullmatch(r"\*\*\w+\*\*:?", item)]  # "- **Write**" heads a group
    unpointed = [item for item in items if "](" not in item and ".py" not in item]
    assert len(items) >= 3 and not unpointed, (
        f"each checklist item points to the notebook section or script that shows it: {unpointed}")
