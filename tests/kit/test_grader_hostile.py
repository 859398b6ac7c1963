"""A verdict beyond doubt: files and classes that would end, hang or bend the grading get a named
usage error (exit 2, also from make), never exit 0; a wrong layer that the old ladder let through
(a wrong path without weights, dropout on in eval, no weights when asked) fails and says why; and
a match of many known mistakes at once is called inconclusive. The cases are in
grader_hostile_cases.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from grader_hostile_cases import CASES, write

import labkit.grader.compare
import minimind_ref as mm
from labkit.grader import GraderUsageError, grade
from labkit.grader.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_command_line_names_each_hostile_case(case, tmp_path, capsys):
    path = write(tmp_path, case)
    words, status = CASES[case][1], CASES[case][2]
    assert main([str(path), "--time-limit", "1"]) == status
    out, err = capsys.readouterr()
    text = err if status == 2 else out
    for word in words:
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


@pytest.mark.parametrize("cls, words", [
    (ExitsInForward, "your code ends the program in forward (stage 1"),
    (ChangesDtype, "changes torch's global state in forward (stage 1, layer 0, one call, every key visible; "
                   "5 tokens): the default dtype (torch.float32 -> torch.float64)"),
    (Hangs, "did not return within 1 s in forward (stage 1"),
    (PatchesTheGrader, "replaces the grader's own functions in forward (stage 1, layer 0, one call, every key "
                       "visible; 5 tokens): labkit.grader.compare.first_difference"),
])
def test_grade_in_process_refuses_what_would_bend_the_verdict(cls, words):
    original = labkit.grader.compare.first_difference
    try:
        with pytest.raises(GraderUsageError) as raised:
            grade(cls, quiet=True, time_limit=1)
        assert words in str(raised.value)
        assert torch.get_default_dtype() == torch.float32  # put back as it was
    finally:
        labkit.grader.compare.first_difference = original


def test_a_forward_that_returns_a_bare_tensor_is_told_to_return_a_pair():
    class Bare(mm.Attention):
        def forward(self, *args):
            return super().forward(*args)[0]

    report = grade(Bare, quiet=True)
    assert report.stage.key == "one_head" and "forward must return a pair (output, weights or None)" in str(report)
