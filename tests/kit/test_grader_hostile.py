"""A verdict beyond doubt: files and classes that would end, hang or bend the grading get a named
usage error (exit 2, also from make), never exit 0; a wrong layer that the old ladder let through
(a wrong path without weights, dropout on in eval, no weights when asked) fails and says why; and
a match of many known mistakes at once is called inconclusive. The cases are in
grader_hostile_cases.py.

No test here depends on how fast the machine is: every call gets the default time limit (30 s, a
hundred times what it takes), and the cases that hang get a limit measured here, now, relative to
what a correct stage takes (`hang_limit`): a hang is a call that never returns, not a slow one."""

from __future__ import annotations

import importlib
import operator
import os
import pickle
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch
from grader_hostile_cases import CASES, write

import labkit.grader.compare
import minimind_ref as mm
from labkit.grader import LADDER, GraderUsageError, grade
from labkit.grader.__main__ import main
from labkit.grader.grade import climb
from labkit.grader.guard import WORKER_MODULES
from labkit.grader.isolate import IsolatedLearner, _decode, records_from_data, records_to_data
from labkit.grader.ladder import run_stage

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hang_limit() -> float:
    """Seconds one call may take in the tests that hang: 20 times what a whole correct stage (some
    twenty calls) takes on this machine, now, so that a loaded machine stretches both; 2 s at least."""
    start = time.perf_counter()
    run_stage(mm.Attention, LADDER[0])
    return max(2.0, round(20 * (time.perf_counter() - start), 1))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_command_line_names_each_hostile_case(case, tmp_path, capsys, hang_limit):
    path = write(tmp_path, case)
    words, status = CASES[case][1], CASES[case][2]
    hangs = any("{limit}" in word for word in words)
    assert main([str(path), *(["--time-limit", str(hang_limit)] if hangs else [])]) == status
    out, err = capsys.readouterr()
    text = err if status == 2 else out
    for word in words:
        word = word.format(limit=f"{hang_limit:g}")
        assert word in text, f"{word!r} not in:\n{text}"
    if status == 2:  # one line, on stderr, after the stage lines that ran
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err + out


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("case", ["exit_at_import", "exit_in_forward"])
def test_make_grade_does_not_exit_0_when_the_file_exits(case, tmp_path):
    path = write(tmp_path, case)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    result = subprocess.run(["make", "-s", "-C", str(ROOT), "grade", f"FILE={path}", f"PYTHON={sys.executable}",
                             f"PY={sys.executable}"], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "usage error: your code ends the program" in result.stderr


# -- the same guards on a class in this process (the notebook's grade(MyAttention)) -----------------

class ExitsInForward(mm.Attention):
    def forward(self, *args):
        sys.exit(0)


class ChangesDtype(mm.Attention):
    def forward(self, *args):
        torch.set_default_dtype(torch.float64)
        return super().forward(*args)


class Hangs(mm.Attention):
    def forward(self, *args):
        while True:
            pass


class PatchesTheGrader(mm.Attention):
    def scores(self, q, k):
        labkit.grader.compare.first_difference = lambda *args: None  # "then every stage passes"
        return q @ k.transpose(-2, -1)


class SwapsTheCode(mm.Attention):
    def scores(self, q, k):
        labkit.grader.compare.first_difference.__code__ = (lambda *args: None).__code__
        return q @ k.transpose(-2, -1)


class ReachesTheCollector(mm.Attention):
    def scores(self, q, k):
        import gc
        gc.get_referrers(self)
        return q @ k.transpose(-2, -1)


class ReachesMemory(mm.Attention):
    def scores(self, q, k):
        import ctypes
        ctypes.cast(id(q), ctypes.py_object)
        return q @ k.transpose(-2, -1)


@pytest.mark.parametrize("cls, words", [
    (ExitsInForward, "your code ends the program in forward (stage 1"),
    (ChangesDtype, "changes torch's global state in forward (stage 1, layer 0, one call, every key visible; "
                   "5 tokens): the default dtype (torch.float32 -> torch.float64)"),
    (Hangs, "did not return within {limit} s in forward (stage 1"),
    (PatchesTheGrader, "replaces the grader's own functions in forward (stage 1, layer 0, one call, every key "
                       "visible; 5 tokens): labkit.grader.compare.first_difference"),
    (SwapsTheCode, "replaces the grader's own functions in forward (stage 1, layer 0, one call, every key "
                   "visible; 5 tokens): labkit.grader.compare.first_difference (its code, defaults or closure)"),
    (ReachesTheCollector, "reaches into the interpreter in forward (stage 1, layer 0, one call, every key visible; "
                          "5 tokens): a call to gc.get_referrers()"),
    (ReachesMemory, "reaches into the interpreter in forward (stage 1, layer 0, one call, every key visible; "
                    "5 tokens): ctypes, which reads and writes memory"),
])
def test_grade_in_process_refuses_what_would_bend_the_verdict(cls, words, hang_limit):
    original = labkit.grader.compare.first_difference
    code = original.__code__
    try:
        with pytest.raises(GraderUsageError) as raised:
            grade(cls, quiet=True, time_limit=hang_limit if cls is Hangs else 30)
        assert words.format(limit=f"{hang_limit:g}") in str(raised.value)
        assert torch.get_default_dtype() == torch.float32  # put back as it was
    finally:
        labkit.grader.compare.first_difference = original
        original.__code__ = code


def test_a_forward_that_returns_a_bare_tensor_is_told_to_return_a_pair():
    class Bare(mm.Attention):
        def forward(self, *args):
            return super().forward(*args)[0]

    report = grade(Bare, quiet=True)
    assert report.stage.key == "one_head" and "forward must return a pair (output, weights or None)" in str(report)


# -- the worker's process: dead between calls, and what crosses its pipe ---------------------------

def test_a_worker_that_dies_between_calls_is_a_named_usage_error(tmp_path, capsys):
    """Killed after answering, while the parent compares: the next send finds a broken pipe."""
    path = tmp_path / "mine.py"
    path.write_text("import minimind_ref as mm\n\n\nclass MyAttention(mm.Attention):\n    pass\n")
    learner = IsolatedLearner(str(path))
    try:
        assert learner.start() == "MyAttention"
        learner.check("MyAttention")
        learner.run(LADDER[0], 0, ("weights",))
        learner.process.kill()
        learner.process.join()
        with pytest.raises(GraderUsageError) as raised:
            climb(learner, "MyAttention", quiet=True)
    finally:
        learner.close()
    message = str(raised.value)
    assert message.startswith("your code ended the grader's worker process between two calls")
    assert "(killed by signal SIGKILL)" in message and "A layer must return." in message
    assert "Traceback" not in capsys.readouterr().err


def test_a_worker_starts_in_this_process_folder_and_environment_as_they_are_now(tmp_path, monkeypatch):
    """A worker forked from the grader's server (isolate.worker_context) starts from the server's
    state, as it was when the server started; it is given this process's folder and environment as
    they are now, as a fresh interpreter would start with them: a relative path and the file's own
    reads resolve here."""
    plain = tmp_path / "plain.py"
    plain.write_text("import minimind_ref as mm\n\n\nclass MyAttention(mm.Attention):\n    pass\n")
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "mine.py").write_text(
        "import os\nimport minimind_ref as mm\n\n"
        "assert os.environ.get('GRADER_PROBE') == 'now', os.environ.get('GRADER_PROBE')\n"
        "assert os.getcwd() == os.path.dirname(os.path.abspath(__file__)), os.getcwd()\n\n\n"
        "class MyAttention(mm.Attention):\n    pass\n")
    monkeypatch.setenv("GRADER_PROBE", "then")
    for folder, path in ((ROOT, str(plain)), (tmp_path / "here", "mine.py")):  # the server started by now
        monkeypatch.chdir(folder)
        learner = IsolatedLearner(path)
        try:
            assert learner.start() == "MyAttention"
        finally:
            learner.close()
        monkeypatch.setenv("GRADER_PROBE", "now")


def test_the_worker_may_send_data_only(tmp_path):
    """What the worker sends is read as data (torch.load, weights_only): a pickle that would run code
    here is refused, and runs nothing; records that are not tensors are refused too."""
    ran = tmp_path / "ran"

    class Runs:
        def __reduce__(self):
            return (ran.write_text, ("the parent ran the worker's code",))

    for data in (b"T" + pickle.dumps(("done", Runs(), ""), protocol=2), pickle.dumps(("done", None, "")), b"X", b"T"):
        with pytest.raises(Exception):
            _decode(data)
    assert not ran.exists()
    with pytest.raises(ValueError, match="not tensors"):
        records_from_data({(0, 0, "5 tokens"): {"out": [1.0], "weights": None}})
    with pytest.raises(ValueError, match="wrong form"):
        records_from_data({"5 tokens": {"raised": "x"}})
    kept = records_from_data(records_to_data(run_stage(mm.Attention, LADDER[0], passes=("weights",))))
    assert all(isinstance(value.out, torch.Tensor) for value in kept.values())


def test_the_data_the_worker_grades_with_cannot_be_changed_in_place():
    """The guard compares names, code and the stages' fields; every other value the worker's modules
    hold is immutable, so that no change to it can go unseen."""
    immutable = (str, int, float, bool, type(None), tuple, frozenset, types.MappingProxyType, Path, torch.dtype,
                 types.GenericAlias, type(annotations), operator.attrgetter)
    for name in WORKER_MODULES:
        for attribute, value in vars(importlib.import_module(name)).items():
            if attribute.startswith("__") or attribute in ("_SNAPSHOT",):
                continue
            if isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
                continue
            assert isinstance(value, immutable), f"{name}.{attribute} is a {type(value).__name__}"
