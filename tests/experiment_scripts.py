"""Experiment scripts imported as modules, so that tests can call their functions and read their
constants and default flags.

The scripts in experiments/NN_slug/ are scripts, not a package. `make exp` runs each one as
`python experiments/NN_slug/expK_name.py`, which puts the script's own folder first on sys.path
(exp4_padding_side imports exp3_training_without_mask from beside it); `load_experiment` imports a
script the same way, and finds it through the syllabus, as `make exp` does.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from labkit.syllabus import experiment_scripts, get_module

ROOT = Path(__file__).resolve().parents[1]
# The course's timers, labkit.timing's and the benchmark harness's built on them. An experiment that
# calls one makes a claim about time, so make test runs it after the parallel pass, alone (the
# "serial" marker); a notebook's timing cell names such a script, or a benchmark, as its check.
TIMERS = ("time_call", "best_time", "best_step_times", "interleaved_times", "interleaved_medians")


def times_itself(script: Path) -> bool:
    """Whether `script` (an experiment or a benchmark) times what it measures."""
    text = script.read_text(encoding="utf-8")
    return any(name in text for name in TIMERS)


def load_experiment(module: str, script: str) -> ModuleType:
    """Experiment script `script` (its file name without .py) of module `module` ("5" or "05").

    Every call runs the script again and returns a new module object, never put in sys.modules:
    a test that changes a script's globals cannot leak into another test. A module number that
    is wrong or has no scripts raises the syllabus's CourseError; a script it does not have,
    FileNotFoundError naming the path.
    """
    scripts = {path.stem: path for path in experiment_scripts(get_module(module, ROOT))}
    if script not in scripts:
        folder = next(iter(scripts.values())).parent.relative_to(ROOT)
        raise FileNotFoundError(f"no experiment script {folder / script}.py; {folder}/ has {', '.join(scripts)}")
    path = scripts[script]
    spec = importlib.util.spec_from_file_location(f"experiments_{path.parent.name}_{script}", path)
    loaded = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(loaded)
    finally:
        sys.path.remove(str(path.parent))
    return loaded
