"""The README tells the truth: its commands exist, its links resolve, its numbers are computed."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
README_ZH = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")


def make_targets() -> set[str]:
    help_text = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"^  ([a-z][a-z-]*)\s", help_text, flags=re.M))


def test_start_is_exactly_make_lab_and_make_test():
    start = README.split("## Start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"^(make \w+)", start.split("```bash", 1)[1].split("```", 1)[0], flags=re.M)
    assert commands == ["make lab", "make test"]
    assert {"lab", "test"} <= make_targets()


def test_the_first_screen_is_the_learners_path():
    """Issue 29: the first 40 lines give the two commands, where to start, the routes with their
    times (bound facts) and the module table; the rest (maintainers' matters) comes after."""
    first = "\n".join(README.split("\n")[:40])
    for heading in ("## Start", "## Routes", "## Modules"):
        assert f"\n{heading}\n" in first, f"{heading} is not in the README's first 40 lines"
    assert "00_start_here.ipynb" in first, "the first screen says where to start"
    assert {"clock_route_express_hours", "clock_route_full_hours"} <= set(re.findall(r"fact: (\w+)", first))
    rows = re.findall(r"^\| (\d\d) \|", README, flags=re.M)
    assert rows and all(re.search(rf"^\| {n} \|", first, flags=re.M) for n in rows), "the whole module table"
    taste = first.split("## Routes", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    scripts = re.findall(r"(experiments/\S+\.py)", taste)
    assert len(scripts) == 3 and all((ROOT / script).is_file() for script in scripts), scripts
    assert "](docs/maintainers.md)" in README


def test_every_make_command_in_the_readme_is_a_target():
    mentioned = set(re.findall(r"`make (\w[\w-]*)", README))
    assert mentioned, "the README names its make targets"
    assert mentioned <= make_targets(), mentioned - make_targets()


def test_ci_runs_the_readme_test_command():
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), flags=re.M)


def test_relative_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


@pytest.mark.parametrize("package, heading", [("minimind_ref", "## The reference implementation"),
                                              ("labkit", "## The course kit")])
def test_each_package_table_names_every_file_and_only_files_that_exist(package, heading):
    section = README.split(heading, 1)[1].split("\n## ", 1)[0]
    first_cells = re.findall(r"^\| ([^|]+) \|", section, flags=re.M)
    named = {name for cell in first_cells for name in re.findall(r"`([\w/.]+)`", cell)}
    for name in named:
        assert (ROOT / package / name).exists(), f"README names {package}/{name}, which does not exist"
    on_disk = {path.name for path in (ROOT / package).glob("*.py") if path.name != "__init__.py"}
    on_disk |= {path.name + "/" for path in (ROOT / package).iterdir()
                if path.is_dir() and not path.name.startswith(("_", "."))}
    assert on_disk - named == set(), f"files of {package}/ missing from the README's table"


def test_the_conventions_live_in_the_repository():
    """CONTRIBUTING.md holds the course's conventions; no file points to a design document that a
    clone of the course does not contain."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert "](CONTRIBUTING.md)" in README
    for section in ("## A module", "## Truth", "## Stored outputs that hold on every machine"):
        assert section in contributing
    outside = ("CURRICULUM" + ".md", "../" + "shared/")  # spelled in parts, so this file does not cite them
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        path = ROOT / name
        if path.suffix in (".md", ".py", ".json", ".ipynb", ".toml", ".txt", "") and path.is_file():
            text = path.read_text(errors="ignore")
            assert not any(cited in text for cited in outside), f"{name} cites a file outside the course"


def test_the_ci_checks_a_second_machine_too():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
                     r"MPLBACKEND=Agg", ci)
    assert re.search(r'^env "\$\{perturbed\[@\]\}" make test$', ci, flags=re.M)


def test_the_pythons_the_readme_names_are_the_ones_installed_and_checked():
    """The README's range of Pythons is pyproject's requires-python, the one the Makefile builds .venv
    with, and CI builds the environment at both of its ends (make pythons, .ci/pythons)."""
    requires = re.search(r'^requires-python = ">=3\.(\d+),<3\.(\d+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert requires, "pyproject.toml's requires-python must read \">=3.X,<3.Y\""
    lowest, highest = int(requires[1]), int(requires[2]) - 1
    stated = re.search(r"You need Python ((?:3\.\d+, )*3\.\d+ or 3\.\d+) \(3\.(\d+) recommended\)", README)
    assert stated, "the README states the Pythons it needs as 'You need Python 3.A, ... or 3.Z (3.A recommended)'"
    minors = [int(name.split(".")[1]) for name in re.split(r", | or ", stated[1])]
    assert minors == list(range(lowest, highest + 1)) and int(stated[2]) == lowest, stated[0]
    zh = re.search(r"你需要 Python ((?:3\.\d+、)*3\.\d+ 或 3\.\d+)（推荐 3\.(\d+)）", README_ZH)
    assert zh, "README.zh-CN.md states the same Pythons as the README"
    assert [int(n.split(".")[1]) for n in re.split(r"、| 或 ", zh[1])] == minors and int(zh[2]) == lowest, zh[0]
    makefile = (ROOT / "Makefile").read_text()
    guard = re.search(r"not \(3, (\d+)\) <= sys\.version_info\[:2\] <= \(3, (\d+)\)", makefile)
    assert guard and (int(guard[1]), int(guard[2])) == (lowest, highest), "the Makefile must refuse what pyproject does"
    assert re.search(r"^pythons: .*\n\t@\.ci/pythons$", makefile, flags=re.M)
    assert re.search(r"^make pythons$", (ROOT / ".ci" / "run").read_text(), flags=re.M)
