"""The test harness itself: how `make test` uses the machine's cores (the root conftest.py)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_each_worker_runs_torch_on_one_thread_and_passes_it_on(tmp_path):
    """An xdist worker, as `make test` starts them: it computes on one thread, and so does a process
    it starts (a notebook kernel, an experiment script), unless the caller chose a count. (One
    worker: each worker is set up by the same conftest, and each costs a torch import.)"""
    probe = ROOT / "tests" / "kit" / f"harness_probe_{os.getpid()}_test.py"
    probe.write_text(
        "import os, subprocess, sys\n"
        "import torch\n\n"
        "def test_threads():\n"
        "    child = subprocess.run([sys.executable, '-c', 'import torch; print(torch.get_num_threads())'],\n"
        "                           capture_output=True, text=True, check=True)\n"
        "    seen = [os.environ['PYTEST_XDIST_WORKER'], str(torch.get_num_threads()), child.stdout.strip()]\n"
        "    with open(os.environ['HARNESS_PROBE_OUT'], 'a') as out:\n"
        "        out.write(' '.join(seen) + '\\n')\n"
    )
    out = tmp_path / "threads.txt"
    env = {key: value for key, value in os.environ.items()
           if key not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTEST_XDIST_WORKER")}
    env["HARNESS_PROBE_OUT"] = str(out)
    env["ATTENTION_LAB_FRESH_KERNELS"] = "1"  # it starts no kernel: no warm-kernel server and its imports
    try:
        # without nbval, whose import (jsonschema's grammars) is half of a pytest's start-up
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider",
                                 "-p", "no:nbval", "--no-header", "-o", "addopts=", str(probe)],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        probe.unlink()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.split() for line in out.read_text().splitlines()]
    assert [line[0] for line in lines] == ["gw0"], lines
    assert lines[0][1:] == ["1", "1"], f"worker and child threads: {lines}"


@pytest.mark.skipif("PYTEST_XDIST_WORKER" not in os.environ, reason="only a worker of the parallel pass")
def test_this_worker_has_one_thread():
    import torch

    assert torch.get_num_threads() == 1


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_serial_pass_collects_every_file_that_may_hold_a_serial_test():
    """`make test`'s serial pass collects only the Makefile's SERIAL, the files conftest.py allows
    serial tests in; a serial test in any other file is refused at collection, never left unrun."""
    conftest = _root_conftest()
    makefile = (ROOT / "Makefile").read_text()
    serial = next(line.split("=", 1)[1].split() for line in makefile.splitlines() if line.startswith("SERIAL ="))
    assert tuple(serial) == conftest.SERIAL_FILES
    assert "-m serial -n0 $(or $(ARGS),$(SERIAL))" in makefile

    class Item:
        def __init__(self, nodeid, serial):
            self.nodeid, self.serial = nodeid, serial

        def get_closest_marker(self, name):
            return name == "serial" and self.serial or None

    allowed = [Item(f"{conftest.SERIAL_FILES[0]}::test_times_itself", True), Item("tests/kit/test_x.py::t", False)]
    conftest.pytest_collection_modifyitems(None, allowed)
    with pytest.raises(pytest.UsageError, match="tests/kit/test_elsewhere.py"):
        conftest.pytest_collection_modifyitems(None, [*allowed, Item("tests/kit/test_elsewhere.py::t", True)])
