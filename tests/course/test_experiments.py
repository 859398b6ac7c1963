"""Every experiment script of every module runs with its defaults, checks its claim and exits 0.

The scripts are found through the syllabus, so a module's scripts are tested the moment they exist.
Each runs in its own process, as a learner runs it, with figures sent to a temporary folder.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from experiment_scripts import times_itself

from labkit.syllabus import all_modules

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [script for module in all_modules(ROOT) for script in module.experiments]
# A script whose claim is about time runs after the parallel pass, alone (the "serial" marker, see
# the Makefile's test target): a busy neighbour on the other core is not what it measures.
def timed(script: Path):
    return pytest.param(script, marks=pytest.mark.serial) if times_itself(script) else script


# A hang is a script that never ends, not a slow one: on a loaded machine a script's wall-clock time
# stretches, the CPU time it uses does not. So a script may use CPU_LIMIT seconds of CPU, 30 times an
# experiment's budget (20 s on 2 cores), and no wall-clock limit stands in its way. The limit is set
# in a small Python that then becomes the script (os.execv keeps it), where the platform has it.
CPU_LIMIT = 600
LIMITED = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_CPU, ({0}, {0} + 30)); "
           "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])").format(CPU_LIMIT)


def run_script(script: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    prefix = ["-c", LIMITED] if importlib.util.find_spec("resource") is not None else []
    result = subprocess.run([sys.executable, *prefix, str(script), *args], cwd=cwd, env=env,
                            capture_output=True, text=True)
    assert result.returncode != -getattr(signal, "SIGXCPU", 0), \
        f"{script.name} used more than {CPU_LIMIT} s of CPU: a loop that never ends?"
    return result


def test_every_module_on_disk_has_experiments_found():
    assert SCRIPTS, "no experiment scripts were found under experiments/"


@pytest.mark.parametrize("script", [timed(script) for script in SCRIPTS], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_script_runs_with_defaults_and_its_claims_hold(script, tmp_path):
    out = tmp_path / "figures"
    result = run_script(script, "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert "claim holds" in result.stdout, "an experiment checks at least one claim"
    assert "CLAIM DOES NOT HOLD" not in result.stdout
    figures = sorted(out.glob("*.png"))
    assert figures, "an experiment saves its figures"
    assert all(f.name.startswith(script.stem + "_") for f in figures), "figures are named after their script"
    assert sorted(tmp_path.iterdir()) == [out], "nothing is written outside the output folder"
