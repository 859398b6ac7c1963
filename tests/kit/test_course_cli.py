"""The course's spine: module discovery, the teaching CLI and the Makefile that calls it.

Most tests build a fake course in a temporary folder, so they hold whatever modules the real
repository has at the time, and run the CLI in this process to stay fast.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labkit import syllabus
from labkit.course.cli import main
from labkit.syllabus import CourseError, find_course_root, get_module

REPO = Path(__file__).resolve().parents[2]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A fake course root with module 01's experiments: one passes, one fails, one is number 10."""
    exp = tmp_path / "experiments" / "01_attention_basics"
    exp.mkdir(parents=True)
    (exp / "exp1_ok.py").write_text("print('claim one holds')\n")
    (exp / "exp2_fail.py").write_text("import sys\nprint('claim two fails')\nsys.exit(1)\n")
    (exp / "exp10_x.py").write_text("print('claim ten holds')\n")
    (exp / "helpers.py").write_text("raise SystemExit('not an experiment')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_course_root_is_found_from_a_subfolder(course, monkeypatch):
    monkeypatch.chdir(course / "experiments" / "01_attention_basics")
    assert find_course_root() == course


def test_the_real_repository_is_a_course_root():
    assert find_course_root(REPO / "tests") == REPO


def test_a_folder_without_modules_is_no_course_and_the_error_says_how_to_name_one(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "analysis.ipynb").write_text("{}")  # a notebook, but no NN_slug module
    monkeypatch.delenv("ATTENTION_LAB_COURSE", raising=False)
    with pytest.raises(CourseError, match="No Attention Lab course in .* ATTENTION_LAB_COURSE="):
        find_course_root(tmp_path)


def test_the_environment_names_the_course_from_anywhere(course, tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(course))
    assert find_course_root() == course
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(course / "experiments"))
    with pytest.raises(CourseError, match="is not an Attention Lab course"):
        find_course_root()


def test_the_syllabus_runs_without_torch_through_the_package(tmp_path):
    """`make exp M=..` checks the number before .venv exists: the syllabus, imported as a package
    module, must not import torch (here a torch that refuses to be imported)."""
    (tmp_path / "torch.py").write_text("raise ImportError('torch must not be imported by the syllabus')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    ok = subprocess.run([sys.executable, "-m", "labkit.syllabus", "check", "exp", "3"],
                        cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stderr == ""
    wrong = subprocess.run([sys.executable, "-m", "labkit.syllabus", "check", "exp", "42"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "Unknown module '42'" in wrong.stderr


@pytest.mark.parametrize("given", ["1", "01", " 1 "])
def test_numbers_are_normalised_to_two_digits(course, given):
    module = get_module(given, course)
    assert (module.number, module.slug, module.name) == ("01", "attention_basics", "01_attention_basics")


@pytest.mark.parametrize("given", ["x", "123", "3.0", "42", ""])
def test_unknown_numbers_name_the_input_and_list_the_valid_ones(course, given):
    with pytest.raises(CourseError) as error:
        get_module(given, course)
    message = str(error.value)
    assert f"Unknown module '{given.strip()}'" in message
    assert "Modules on disk: 01." in message
    assert "Planned but not yet written: 02..10." in message
    assert "Use: make exp M=01" in message


def test_a_planned_module_without_experiments_says_so(course):
    with pytest.raises(CourseError, match=r"Module 03 \(multi_head\) has no experiment scripts yet"):
        syllabus.experiment_scripts(get_module("3", course))


def test_a_module_on_disk_but_not_planned_is_valid(course):
    (course / "quizzes").mkdir()
    (course / "quizzes" / "11_sparse_attention.json").write_text("{}")
    module = get_module("11", course)
    assert (module.slug, module.title, module.quiz.name) == (
        "sparse_attention", "Sparse attention", "11_sparse_attention.json")
    assert set(syllabus.numbers_on_disk(course)) == {"01", "11"}


def test_experiment_scripts_sort_by_their_number(course):
    names = [p.name for p in get_module("01", course).experiments]
    assert names == ["exp1_ok.py", "exp2_fail.py", "exp10_x.py"]


def test_format_numbers_collapses_runs():
    assert syllabus.format_numbers(["07", "03", "04", "05", "01", "02"]) == "01..05, 07"
    assert syllabus.format_numbers(["01", "02"]) == "01, 02"
    assert syllabus.format_numbers([]) == "none yet"


def test_exp_runs_every_script_in_order_and_fails_if_one_fails(course, capfd):
    assert main(["exp", "1"]) == 1
    out = capfd.readouterr().out
    assert out.index("claim one holds") < out.index("claim two fails") < out.index("claim ten holds")
    assert "not an experiment" not in out
    assert re.search(r"PASS  experiments/01_attention_basics/exp1_ok\.py  \(\d+\.\d s\)", out)
    assert re.search(r"FAIL  experiments/01_attention_basics/exp2_fail\.py", out)
    assert "2 passed, 1 failed." in out


def test_exp_passes_when_every_script_passes(course, capfd):
    (course / "experiments" / "01_attention_basics" / "exp2_fail.py").unlink()
    assert main(["exp", "01"]) == 0
    assert "2 passed, 0 failed." in capfd.readouterr().out


def test_exp_errors_are_one_line_with_exit_2(course, capsys):
    assert main(["exp", "42"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Unknown module '42'.") and err.count("\n") == 1
    assert main(["exp", "5"]) == 2
    assert "Module 05 (masking) has no experiment scripts yet" in capsys.readouterr().err


def test_experiments_with_none_on_disk_exits_0(course, capsys):
    shutil.rmtree(course / "experiments")
    (course / "modules" / "01_attention_basics").mkdir(parents=True)  # a course still, with a guide only
    assert main(["experiments"]) == 0
    assert "No experiment scripts exist yet." in capsys.readouterr().out


def test_experiments_runs_every_module(course, capfd):
    assert main(["experiments"]) == 1
    assert "2 passed, 1 failed." in capfd.readouterr().out


def test_quiz_missing_says_which_modules_have_one(course, capsys):
    assert main(["quiz", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "Module 01 has no quiz yet (no quizzes/01_attention_basics.json). Modules with quizzes: none yet.")


QUIZ = {
    "module": "01_attention_basics",
    "title": "Attention basics",
    "questions": [
        {"id": "softmax-sum", "type": "single", "question": "What does a row of weights sum to?",
         "choices": ["0", "1"], "answer": 1, "explanation": "Softmax makes a distribution."},
        {"id": "causal-rows", "type": "multiple", "question": "Which hold for a causal row?",
         "choices": ["It sums to 1", "It holds negative weights", "Future weights are 0"],
         "answer": [0, 2], "explanation": "Softmax, then the mask."},
        {"id": "causal-entries", "type": "numeric", "question": "Non-zero entries for T = 6?",
         "answer": 21, "tolerance": 0, "explanation": "6 * 7 / 2."},
    ],
}


def _write_quiz(course: Path, data) -> Path:
    (course / "quizzes").mkdir(exist_ok=True)
    path = course / "quizzes" / "01_attention_basics.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def test_quiz_runs_in_the_terminal(course, capsys, monkeypatch):
    _write_quiz(course, QUIZ)
    monkeypatch.setattr(sys, "stdin", io.StringIO("b\nA,C\n20\n22\n"))
    assert main(["quiz", "1"]) == 0
    out = capsys.readouterr().out
    assert "Question 3 of 3" in out and "Not quite: you answered 20." not in out  # the first try: a hint
    assert "Not quite: you answered 22. The answer is 21." in out
    assert out.rstrip().endswith("Score: 2 of 3 right on the first try, 3 answered, 0 skipped.")


class _Interrupted(io.StringIO):
    def readline(self, *args):
        raise KeyboardInterrupt


@pytest.mark.parametrize("stdin,score", [
    (lambda: io.StringIO("b\n"), "Score: 1 of 3 right on the first try, 1 answered, 0 skipped, 2 not reached."),
    (_Interrupted, "Score: 0 of 3 right on the first try, 0 answered, 0 skipped, 3 not reached."),
], ids=["end-of-input", "ctrl-c"])
def test_quiz_stops_cleanly_with_the_score_so_far(course, capsys, monkeypatch, stdin, score):
    _write_quiz(course, QUIZ)
    monkeypatch.setattr(sys, "stdin", stdin())
    assert main(["quiz", "01"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.rstrip().endswith(score)


def test_a_malformed_quiz_lists_its_problems_with_exit_2(course, capsys):
    data = json.loads(json.dumps(QUIZ))
    data["questions"][0]["answer"] = 2
    data["questions"][2]["explaination"] = data["questions"][2].pop("explanation")
    _write_quiz(course, data)
    assert main(["quiz", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "quizzes/01_attention_basics.json, question 1 ('softmax-sum'): \"answer\" is 2 but there are "
        "only 2 choices (0 to 1).",
        "quizzes/01_attention_basics.json, question 3 ('causal-entries'): unknown key \"explaination\" "
        "(did you mean \"explanation\"?); the keys allowed in a \"numeric\" question are: id, type, "
        "question, answer, tolerance, unit, explanation, hint, check, unchecked, deep_dive.",
        "quizzes/01_attention_basics.json, question 3 ('causal-entries'): \"explanation\" is missing; "
        "add it: why the answer is right, shown after answering.",
    ]


def test_a_quiz_that_is_not_json_gives_line_and_column_with_exit_2(course, capsys):
    _write_quiz(course, '{\n  "module": "01_attention_basics",\n  "title": "x",\n}\n')
    assert main(["quiz", "1"]) == 2
    assert capsys.readouterr().err == (
        "quizzes/01_attention_basics.json: not valid JSON at line 4, column 1: Expecting property name "
        "enclosed in double quotes. Keys need double quotes, and JSON allows no comma after the last "
        "item.\n")


def test_notebooks_with_none_on_disk_exits_0(course, capsys):
    assert main(["notebooks"]) == 0
    assert "No notebooks exist yet." in capsys.readouterr().out
    assert main(["notebooks", "1"]) == 2
    assert "Module 01 (attention_basics) has no notebook yet" in capsys.readouterr().err


def test_list_shows_each_module_and_its_parts(course, capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NN", "slug", "title", "guide", "notebook", "experiments", "quiz"]
    assert lines[1].split()[:2] == ["01", "attention_basics"] and lines[1].split()[-2:] == ["3", "-"]
    assert [line.split()[0] for line in lines[1:]] == sorted(syllabus.PLANNED_MODULES)


def _fake_course_with_makefile(course: Path) -> Path:
    """The fake course plus the real Makefile and syllabus, and no .venv: make must answer alone."""
    shutil.copy(REPO / "Makefile", course / "Makefile")
    (course / "labkit").mkdir(parents=True)
    for part in ("__init__.py", "syllabus.py", "course_root.py"):
        shutil.copy(REPO / "labkit" / part, course / "labkit" / part)
    shutil.copytree(REPO / "labkit" / "i18n", course / "labkit" / "i18n")  # the syllabus's messages
    return course


def _make(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}  # not a sub-make
    return subprocess.run(["make", "-s", "-C", str(root), *args, f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, env=env, timeout=60)


@needs_make
@pytest.mark.parametrize("target", ["exp", "quiz", "slides"])
def test_make_without_m_explains_before_building_the_venv(course, target):
    root = _fake_course_with_makefile(course)
    result = _make(root, target)
    assert result.returncode != 0
    assert f"make {target} needs a module number, as in: make {target} M=" in result.stderr
    assert "Planned modules: 01..10." in result.stderr
    assert not (root / ".venv").exists()


@needs_make
def test_make_with_an_unknown_m_explains_before_building_the_venv(course):
    root = _fake_course_with_makefile(course)
    result = _make(root, "exp", "M=42")
    assert "Unknown module '42'. Modules on disk: 01." in result.stderr
    assert result.returncode != 0 and not (root / ".venv").exists()


@needs_make
def test_make_help_is_the_default_and_every_listed_target_exists():
    default, helped = _make(REPO), _make(REPO, "help")
    assert default.returncode == 0 and default.stdout == helped.stdout
    targets = re.findall(r"^  ([a-z][a-z-]*) ", helped.stdout, flags=re.M)
    expected = {"help", "setup", "lab", "test", "list", "exp", "experiments", "quiz", "grade", "notebooks",
                "portability", "answers", "workspace", "slides", "bench", "clean", "distclean"}
    assert expected <= set(targets)
    for target in targets:  # -n: print the commands without running them
        result = _make(REPO, "-n", target, "M=01")
        assert result.returncode == 0, f"make -n {target}: {result.stderr}"


@needs_make
def test_make_clean_keeps_the_workspace(course):
    root = _fake_course_with_makefile(course)
    for folder in ("workspace", "outputs/01_attention_basics", "outputs/slides"):
        (root / folder).mkdir(parents=True)
        (root / folder / "file").write_text("x")
    assert _make(root, "clean").returncode == 0
    assert not (root / "outputs").exists()
    assert (root / "workspace" / "file").read_text() == "x"


def test_ci_runs_the_readme_command():
    script = REPO / ".ci" / "run"
    text = script.read_text()
    assert os.access(script, os.X_OK)
    assert "set -euo pipefail" in text
    assert re.search(r"^make test$", text, flags=re.M)
