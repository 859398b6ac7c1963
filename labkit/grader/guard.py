"""Keeping the grader's verdict the grader's own: every call into a learner's code runs under a
`Guard`, which turns what would end, hang or quietly bend the grading into a named usage error.

- a call that exits (`sys.exit`, `exit()`, `raise SystemExit`) is stopped, not obeyed;
- a call that runs past the time limit is interrupted (SIGALRM, where the platform has it; the
  command line also has the parent's clock, see isolate.py);
- a call that changes torch's global state (the default dtype, grad mode, the random seed, ...)
  is found by comparing a snapshot taken before it with one taken after, and the state is put back;
- a call that replaces a function or class of the grader, of minimind_ref or of torch is found by
  comparing the identity of every name in those namespaces with a snapshot taken when the grader
  was imported (`replaced()`).

`python -m labkit.grader FILE` goes further: the file runs in a process of its own, and the
reference and every comparison run in the parent, where the file cannot reach (isolate.py).
"""

from __future__ import annotations

import contextlib
import linecache
import signal
import sys
import threading
import traceback
from pathlib import Path

import torch
from torch import nn

DEFAULT_TIME_LIMIT = 30.0  # seconds per call: a stage-10 generate takes well under one on a laptop


class Misuse(BaseException):
    """The learner's code did something that makes grading it meaningless. A BaseException, so that
    no `except Exception` on the way (the learner's or the ladder's) can swallow it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class _OutOfTime(BaseException):
    pass


# -- torch's global state -------------------------------------------------------------------------

def torch_state() -> dict:
    """What a layer's code could change in torch for every caller after it, readable and restorable."""
    return {
        "the default dtype": torch.get_default_dtype(),
        "the default device": str(torch.get_default_device()),
        "grad mode (torch.set_grad_enabled)": torch.is_grad_enabled(),
        "inference mode": torch.is_inference_mode_enabled(),
        "deterministic algorithms (torch.use_deterministic_algorithms)": (
            torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
        "anomaly detection (torch.autograd.set_detect_anomaly)": torch.is_anomaly_enabled(),
        "the random seed (torch.manual_seed)": torch.initial_seed(),
        "float32 matmul precision": torch.get_float32_matmul_precision(),
        "the number of threads (torch.set_num_threads)": torch.get_num_threads(),
    }


def restore_torch_state(state: dict, rng: torch.Tensor | None = None) -> None:
    torch.set_default_dtype(state["the default dtype"])
    torch.set_default_device(None if state["the default device"] == "cpu" else state["the default device"])
    torch.set_grad_enabled(state["grad mode (torch.set_grad_enabled)"])
    enabled, warn_only = state["deterministic algorithms (torch.use_deterministic_algorithms)"]
    torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
    torch.autograd.set_detect_anomaly(state["anomaly detection (torch.autograd.set_detect_anomaly)"])
    torch.set_float32_matmul_precision(state["float32 matmul precision"])
    torch.set_num_threads(state["the number of threads (torch.set_num_threads)"])
    if rng is not None:
        torch.set_rng_state(rng)


def changed_state(before: dict, after: dict) -> list[str]:
    return [f"{name} ({before[name]} -> {after[name]})" for name in before if before[name] != after[name]]


# -- the grader's own functions -------------------------------------------------------------------

def _namespaces() -> dict[str, tuple[object, bool]]:
    """Every namespace whose names the grading relies on (a module or a class), with whether a name
    added to it counts too: the grader, minimind_ref and the kit's numerics (their modules, and the
    classes they define, where an added method overrides behaviour), torch's functions and Tensor's
    methods."""
    found = {name: (space, False) for name, space in (
        ("torch", torch), ("torch.nn.functional", torch.nn.functional), ("torch.Tensor", torch.Tensor),
        ("torch.nn.Module", nn.Module), ("torch.nn.Linear", nn.Linear), ("torch.autograd", torch.autograd))}
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith(("labkit.grader", "minimind_ref"))
                                  or name in ("labkit.numerics", "labkit.models")):
            continue
        found[name] = (module, False)
        for attribute, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == name:
                found[f"{name}.{attribute}"] = (value, True)
    return found


# space name -> (the module or class, whether additions count, a copy of its names then)
_SNAPSHOT: dict[str, tuple[object, bool, dict]] = {}


def take_snapshot() -> None:
    """Record every name in the namespaces above (called when the grader is imported, and after the
    grader's own runs, which may import more of torch)."""
    _SNAPSHOT.clear()
    for space, (holder, additions_count) in _namespaces().items():
        _SNAPSHOT[space] = (holder, additions_count, dict(vars(holder)))


def _same(now, original) -> bool:
    """The same object, or torch's own wrapper of it (importing torch._dynamo, which transformers
    does, rebinds torch.manual_seed to a wrapper whose __wrapped__ is the original)."""
    return now is original or (getattr(now, "__wrapped__", None) is original
                               and str(getattr(now, "__module__", "")).startswith("torch"))


# Names that Python itself sets on a class or module as it is used (copy, pickle, typing).
_BOOKKEEPING = {"__slotnames__", "__annotations__", "__dict__", "__weakref__", "__builtins__", "__cached__",
                "__loader__", "__spec__", "__file__", "__doc__"}


def _unchanged(names, then: dict) -> bool:
    """The fast path, one comparison in C per namespace (identical objects compare equal at once)."""
    try:
        return bool(names == then)
    except Exception:  # a value whose == is not a bool (a tensor): look name by name
        return False


def replaced() -> list[str]:
    """Names whose object is no longer the one recorded, that are gone, or that were added to a
    class of the grader or of minimind_ref."""
    found = []
    for space, (holder, additions_count, then) in _SNAPSHOT.items():
        names = vars(holder)
        if _unchanged(names, then):
            continue
        for name, original in then.items():
            if name not in _BOOKKEEPING and (name not in names or not _same(names[name], original)):
                found.append(f"{space}.{name}")
        if additions_count:
            found += [f"{space}.{name}" for name in names if name not in then and not name.startswith("__")]
    return found


# -- where in the learner's code --------------------------------------------------------------------

_OURS = tuple(str(Path(p).resolve().parent) for p in (torch.__file__, __file__)) + (
    str(Path(__file__).resolve().parents[2] / "minimind_ref"), str(Path(contextlib.__file__).resolve().parent))


def learner_line(error: BaseException) -> str:
    """' at FILE:LINE: `source`' for the deepest frame of the traceback outside torch, the kit,
    minimind_ref and the standard library: the learner's line. Empty when there is none."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = str(Path(frame.filename).resolve()) if not frame.filename.startswith("<") else frame.filename
        if path.startswith(_OURS) or frame.filename.startswith("<frozen"):
            continue
        source = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
        return f" at {Path(frame.filename).name}:{frame.lineno}" + (f": `{source}`" if source else "")
    return ""


# -- the guard ------------------------------------------------------------------------------------

class Guard:
    """Runs the learner's code: `with guard.watch("in forward, stage 3 ..."): layer(...)`."""

    def __init__(self, time_limit: float | None = DEFAULT_TIME_LIMIT, on_call=None):
        self.time_limit = time_limit
        self.on_call = on_call  # called with the description before each call (the worker's heartbeat)

    def _alarm_available(self) -> bool:
        return (self.time_limit is not None and hasattr(signal, "setitimer")
                and threading.current_thread() is threading.main_thread())

    @contextlib.contextmanager
    def watch(self, where: str):
        if self.on_call is not None:
            self.on_call(where)
        before, rng = torch_state(), torch.get_rng_state()
        previous = None
        if self._alarm_available():
            def out_of_time(signum, frame):
                raise _OutOfTime
            previous = signal.signal(signal.SIGALRM, out_of_time)
            signal.setitimer(signal.ITIMER_REAL, self.time_limit)
        try:
            yield
        except SystemExit as error:
            raise Misuse(f"your code ends the program {where}: it raises SystemExit"
                         f"{'(' + repr(error.code) + ')' if error.code is not None else ''}{learner_line(error)} "
                         f"(sys.exit(), exit() or quit()). A layer must return; move a self-test under "
                         f"`if __name__ == \"__main__\":`.") from None
        except _OutOfTime:
            raise Misuse(f"your code did not return within {self.time_limit:g} s {where}: a loop that never ends? "
                         f"The grader stopped it.") from None
        finally:
            if previous is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
        after = torch_state()
        changes = changed_state(before, after)
        if changes:
            restore_torch_state(before, rng)
            raise Misuse(f"your code changes torch's global state {where}: {'; '.join(changes)}. A layer must "
                         f"leave torch as it found it (use a context manager such as torch.no_grad(), or set "
                         f"dtypes on your own tensors).")
        gone = replaced()
        if gone:
            raise Misuse(f"your code replaces the grader's own functions {where}: {', '.join(gone[:4])}"
                         f"{f' and {len(gone) - 4} more' if len(gone) > 4 else ''}. The grader grades your layer, "
                         f"not a patched grader.")
