"""The learner's `make` targets in Chinese (issue 36): `make list|workspace|slides|exp|experiments|quiz
LANG=zh-CN` run `python -m labkit.course --lang zh-CN ...`, and every line that command prints for the
learner, errors included, is Chinese; paths, module numbers, slugs, commands and values stay as
they are.

The commands run in this process on a small course in a temporary folder (one notebook of a few
cells in both editions, two one-line experiment scripts, a real quiz and the real catalogs), so
nothing is written into the repository and no notebook is executed. A line fails when it holds
English prose (labkit/i18n/prose.py, the rule the experiment scripts' Chinese is held to), once
the `make` commands it quotes, paths and slugs are set aside, or when it holds an English word and no Chinese at all.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from labkit import i18n, syllabus
from labkit.course.cli import main
from labkit.i18n.prose import english_prose, english_words

REPO = Path(__file__).resolve().parents[2]
MODULE = "01_attention_basics"
_COMMAND = re.compile(r"\bmake [a-z-]+(?: [A-Z_]+=\S*)*")  # a command the learner types is code
_PATH = re.compile(r"\S*/\S*")  # experiments/01_attention_basics/exp1_ok.py
_SLUGS = re.compile(rf"\b(?:{'|'.join(slug for slug, _ in syllabus.PLANNED_MODULES.values())})\b")  # identifiers
_CHINESE = re.compile(r"[\u4e00-\u9fff]")


def english_lines(text: str) -> list[str]:
    """The lines of `text` that a Chinese learner would read as English."""
    found = []
    for line in text.splitlines():
        bare = _SLUGS.sub(" ", _PATH.sub(" ", _COMMAND.sub(" ", line)))
        if english_prose(bare) or (english_words(bare) and not _CHINESE.search(bare)):
            found.append(line)
    return found


@pytest.fixture
def zh_course(tmp_path, monkeypatch):
    """A course of one module (01) in a temporary folder, with the real catalogs and quiz 01, in Chinese."""
    cells = [nbformat.v4.new_markdown_cell("# Attention basics\n\nA dot product scores a query against a key."),
             nbformat.v4.new_code_cell("import torch\nscores = torch.ones(2, 2)\nscores.shape")]
    for folder in (tmp_path / "notebooks", tmp_path / "notebooks" / "zh-CN"):
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / f"{MODULE}.ipynb")
    experiments = tmp_path / "experiments" / MODULE
    experiments.mkdir(parents=True)
    (experiments / "exp1_ok.py").write_text("print(1)\n")
    (experiments / "exp2_fails.py").write_text("raise SystemExit(1)\n")
    (tmp_path / "quizzes").mkdir()
    shutil.copy(REPO / "quizzes" / f"{MODULE}.json", tmp_path / "quizzes")
    shutil.copytree(REPO / "translations", tmp_path / "translations")
    wheels = REPO / ".venv" / "slides-wheels"  # reveal.js and MathJax, downloaded once (as test_slides does)
    if wheels.is_dir():
        (tmp_path / ".venv").mkdir()
        (tmp_path / ".venv" / "slides-wheels").symlink_to(wheels, target_is_directory=True)
    monkeypatch.setenv(syllabus.ROOT_ENV, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    i18n._translations.cache_clear()  # the catalogs of this course, whatever a test before found
    yield tmp_path
    i18n.use_language(None)
    i18n._translations.cache_clear()


def run_zh(capfd, *command: str) -> tuple[int, str]:
    """Run `python -m labkit.course --lang zh-CN COMMAND` here; its exit status and all it printed."""
    status = main(["--lang", "zh-CN", *command])
    out, err = capfd.readouterr()
    return status, out + err


def test_the_learner_commands_print_chinese(zh_course, capfd, monkeypatch):
    printed = {}
    for command in (["list"], ["workspace"], ["workspace", "01"], ["workspace", "01", "--force"],
                    ["exp", "01"], ["experiments"], ["slides", "01"], ["quiz", "01"],
                    ["exp", "42"], ["slides", "07"], ["exp", ""], ["quiz", "05"]):
        if command[0] == "quiz":
            monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
        status, text = run_zh(capfd, *command)
        printed[" ".join(command)] = (status, text)
    statuses = {command: status for command, (status, _) in printed.items()}
    assert statuses == {"list": 0, "workspace": 0, "workspace 01": 0, "workspace 01 --force": 0, "exp 01": 1,
                        "experiments": 1, "slides 01": 0, "quiz 01": 0, "exp 42": 2, "slides 07": 2, "exp ": 2,
                        "quiz 05": 2}
    english = {command: english_lines(text) for command, (_, text) in printed.items()}
    assert english == {command: [] for command in printed}, english
    every = "\n".join(text for _, text in printed.values())
    for word in ("PASS", "FAIL", "Summary", "passed", "kept", "made", "yes", "Wrote", "Unknown"):
        assert not re.search(rf"\b{word}\b", every), word  # acronym-like or single words the rule lets by
    # What stays as it is: paths, numbers, commands, the module's slug.
    assert f"workspace/zh-CN/{MODULE}.ipynb" in printed["workspace"][1]
    assert "make lab LANG=zh-CN" in printed["workspace"][1]
    assert f"outputs/slides/zh-CN/{MODULE}.slides.html" in printed["slides 01"][1]
    assert f"experiments/{MODULE}/exp2_fails.py" in printed["exp 01"][1]
    assert "'42'" in printed["exp 42"][1] and "make exp M=01" in printed["exp 42"][1]
    assert "attention_basics" in printed["list"][1]


def test_the_table_of_modules_stays_aligned_in_chinese(zh_course, capfd):
    """A Chinese character takes two columns of a terminal: the columns after the title still line up."""
    _, text = run_zh(capfd, "list")
    header, row = [line for line in text.splitlines() if line.startswith(("NN", "01"))]
    title = i18n.tr("Attention basics")
    assert title != "Attention basics" and title in row

    def starts(line: str) -> list[int]:
        """The terminal column where each cell (cells are two spaces apart or more) begins."""
        return [sum(2 if _CHINESE.match(char) else 1 for char in line[:cell.start()])
                for cell in re.finditer(r"(?:(?<=  )|^)\S", line)]

    assert len(starts(header)) == len(starts(row)) == 7 and starts(header) == starts(row)


def test_every_module_title_in_the_table_is_chinese():
    """`make list` shows tr(title): the planned titles (the glossary's catalog) and module 00's, taken from its slug."""
    with i18n.speaking("zh-CN"):
        titles = {module.number: i18n.tr(module.title) for module in syllabus.all_modules(REPO)}
    assert "00" in titles and {number: english_lines(title) for number, title in titles.items()} == {
        number: [] for number in titles}


def test_the_module_check_before_setup_speaks_the_language_make_passes(zh_course, capsys, monkeypatch):
    """make runs `python -m labkit.syllabus check` before .venv exists, with ATTENTION_LAB_LANG=$(EDITION)."""
    monkeypatch.setenv(i18n.ENV, "zh-CN")
    assert syllabus._script(["check", "slides", ""]) == 2
    message = capsys.readouterr().err
    assert english_lines(message) == [] and "make slides M=01" in message
    assert "ATTENTION_LAB_LANG=$(EDITION)" in (REPO / "Makefile").read_text().split("\nCHECK = ")[1].split("\n")[0]


def test_english_is_unchanged(zh_course, capfd):
    status = main(["--lang", "en", "exp", "42"])
    assert status == 2 and "Unknown module '42'. Modules on disk: 01." in capfd.readouterr().err
