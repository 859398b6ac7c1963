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

os.environ["ATTENTION_LAB_STRICT_CHECKS"] = "1"

if "PYTEST_XDIST_WORKER" in os.environ:
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

# The Chinese notebooks (notebooks/zh-CN/) are built from the English ones with the same code cells and
# stored outputs, byte for byte (tests/course/test_translation.py holds that), so nbval would only run
# the same code again; their kernels would also speak Chinese where the stored outputs are English.
collect_ignore_glob = ["notebooks/zh-CN/*"]
