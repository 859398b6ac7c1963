"""pytest set-up shared by tests/ and the notebooks that nbval runs.

Exercise checks (labkit/checks.py) only print "not yet" for a learner; under the
test suite a failing check must fail its notebook cell. The variable is set here, before any
kernel starts, so every notebook kernel that nbval launches inherits it.

One thread per test worker. `make test` runs one pytest worker per core (pyproject's addopts), and
each worker's tensors are small: with torch's full thread pool in every worker, the workers fight
over the same cores and mostly wait (on a loaded 2-core machine tests/model took 20 min that way,
against 4 min with one thread each). xdist names a worker in PYTEST_XDIST_WORKER before this file
is imported, so the threads are fixed here, before torch starts its pool, and every process a
worker starts (a notebook kernel, an experiment script) inherits them. A thread count the caller
set is kept. The serial pass (`-n0`, the claims about time) runs alone and keeps the machine's.
"""

import os
import sys

import pytest

os.environ["ATTENTION_LAB_STRICT_CHECKS"] = "1"

# pytest rewrites each test module's asserts before importing it and keeps the result in the
# module's __pycache__ (git-ignored, removed by make clean), unless bytecode is not to be written
# (PYTHONDONTWRITEBYTECODE): then every pytest process, each worker and the serial pass, rewrites
# all 200-odd test modules again, 7 s of CPU each. The suite's own processes write them; a learner's
# Python is left as it was set.
sys.dont_write_bytecode = False

if "PYTEST_XDIST_WORKER" in os.environ:
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

# Notebook kernels start warm in each worker: forked from a server that has imported torch
# (tests/warm_kernel.py says when a kernel is started fresh instead). Linux only: the server uses
# fork and Linux's sockets. FRESH_KERNELS=1 starts every kernel fresh, as a learner's starts, and
# spares a run that starts none (tests/kit/test_harness.py's) the server's imports.
FRESH_KERNELS = "ATTENTION_LAB_FRESH_KERNELS"
_warm_kernels = None


def pytest_configure(config):
    global _warm_kernels
    if hasattr(config, "workerinput") and sys.platform == "linux" and os.environ.get(FRESH_KERNELS) != "1":
        tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests")
        if tests not in sys.path:
            sys.path.insert(0, tests)
        from warm_kernel import WarmKernels

        _warm_kernels = WarmKernels().start()


def pytest_unconfigure(config):
    global _warm_kernels
    if _warm_kernels is not None:
        _warm_kernels.close()
        _warm_kernels = None


# The Chinese notebooks (notebooks/zh-CN/) run the English ones' code cells (tests/course/test_translation.py
# holds that), so nbval would only run the same code again: their stored outputs are held, without a
# kernel, to the English outputs translated (tests/course/test_chinese_outputs.py).
collect_ignore_glob = ["notebooks/zh-CN/*"]


# How the parallel pass shares its work. xdist's `loadfile` gives each worker whole files (so a file's
# module fixtures are built once per worker), the files with the most tests first. A test count is not
# a cost: the 900 bound facts take seconds, the ten learner copies minutes; and a costly file handed
# out last leaves the other worker idle at the end (on 2 cores, a minute of the suite). So the costly
# files go first, in COSTLY's order (the learner copies, the experiment runs, the browser, the
# grader's subprocesses, the slowest notebooks), the rest after them as collected; and the two files
# whose tests are each a whole run of their own (a learner copy in a kernel, an experiment script) are
# shared test by test, so that both workers take them. `ARGS="--dist load"` and the like are kept.
COSTLY = ("tests/kit/test_student_copies.py", "tests/course/test_experiments.py",
          "tests/kit/test_slides_browser.py", "tests/kit/test_grader_hostile.py", "tests/kit/test_grader.py",
          "tests/kit/test_grader_notebook.py", "notebooks/10_capstone.ipynb", "notebooks/04_gqa.ipynb",
          "notebooks/05_masking.ipynb", "tests/kit/test_portability.py", "tests/kit/test_harness.py",
          "tests/kit/test_warm_kernel.py")
BY_TEST = ("tests/kit/test_student_copies.py", "tests/course/test_experiments.py")


def _path(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class CostlyFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if _path(nodeid) in BY_TEST else super()._split_scope(nodeid)

    config.option.loadscopereorder = False  # the order of collection, below, not the test count
    return CostlyFirst(config, log)


# The files that may hold tests marked serial: the Makefile's serial pass collects only these (its
# SERIAL), so a serial test anywhere else would never run; collection refuses one.
SERIAL_FILES = ("tests/course/test_experiments.py",)


def pytest_collection_modifyitems(config, items):
    astray = sorted({_path(item.nodeid) for item in items if item.get_closest_marker("serial")} - set(SERIAL_FILES))
    if astray:
        raise pytest.UsageError(f"tests marked serial in {', '.join(astray)}: make test's serial pass runs only "
                                f"{', '.join(SERIAL_FILES)}; add the file to SERIAL_FILES (conftest.py) and to "
                                "SERIAL (Makefile)")
    rank = {path: index for index, path in enumerate(COSTLY)}
    items.sort(key=lambda item: rank.get(_path(item.nodeid), len(COSTLY)))  # stable: each file's order kept
