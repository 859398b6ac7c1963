"""Keeping the grader's verdict the grader's own: every call into a learner's code runs under a
`Guard`, which turns what would end, hang or quietly bend the grading into a named usage error,
and notes what it should know about the code it ran.

- a call that exits (`sys.exit`, `exit()`, `raise SystemExit`) is stopped, not obeyed;
- a call that runs past the time limit is interrupted (SIGALRM, where the platform has it; the
  command line also has the parent's clock, see isolate.py);
- a call that changes torch's global state (the default dtype, grad mode, the random seed, ...)
  is found by comparing a snapshot taken before it with one taken after, and the state is put back;
- a call that changes the grader, minimind_ref, torch, the builtins or the machinery that carries
  the records (pickle, multiprocessing's connections) is found by comparing them with a snapshot
  taken when the grader was imported (`replaced()`): the identity of every name, and of every
  function's code, defaults and closure (a swapped `__code__` leaves the function's identity as it
  was), and the grader's own data (its stages, tolerances, catalogue);
- a call that leaves something of its own behind to run later (a thread, a trace or profile hook,
  a signal handler, a garbage-collector callback, automatic collection switched back on in the
  worker) or reaches for the objects and frames that hold the grader's records (the garbage
  collector's `get_objects`/`get_referrers`, ctypes) is named too;
- what the code prints is kept (`take_output()`), so that the grader shows it below the stage's
  progress line, never inside it;
- the reference's own code that ran inside the call (minimind_ref's attention, its variants, the
  checks' references, a planted mistake, transformers) is noted (`borrowed`), so that a report can
  say when a verdict is about the reference's code rather than the learner's; only inside the
  call: the reference the grader builds for itself, between calls, is not the learner's.

`python -m labkit.grader FILE` goes further: the file runs in a process of its own, and the
reference and every comparison run in the parent, where the file cannot reach (isolate.py).
What no check inside one process can promise is listed in isolate.py's docstring.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import gc
import importlib.util
import io
import linecache
import operator
import signal
import sys
import sysconfig
import threading
import traceback
import types
from pathlib import Path

import torch
from torch import nn

from labkit.i18n import tr

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


# -- the interpreter's hooks: what would let code run later, outside any guard ------------------------

def _hooks() -> dict:
    """Everything through which code could arrange to run after its call returned, by identity."""
    return {
        "a trace function (sys.settrace)": sys.gettrace(),
        "a garbage-collector callback (gc.callbacks)": tuple(gc.callbacks),
        "automatic garbage collection (gc.enable/gc.disable)": gc.isenabled(),
        "a signal handler (signal.signal)": tuple(signal.getsignal(s) for s in _SIGNALS),
        "a thread (threading)": frozenset(t for t in threading.enumerate() if t.is_alive()),
    }


_SIGNALS = tuple(s for s in signal.valid_signals() if s not in (signal.SIGKILL, getattr(signal, "SIGSTOP", None))
                 and s != getattr(signal, "SIGALRM", None))  # SIGALRM is the guard's own clock


def _hooks_changed(before: dict, after: dict) -> list[str]:
    return [name for name in before if not _same_items(before[name], after[name])]


def _same_items(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        return b <= a  # a thread that ended is fine; one still running that was not there before is not
    return a is b or a == b


# -- the grader's own functions and data ------------------------------------------------------------

def _namespaces() -> dict[str, tuple[object, bool]]:
    """Every namespace whose names the grading relies on (a module or a class), with whether a name
    added to it counts too: the grader, minimind_ref and the kit's numerics (their modules, and the
    classes they define, where an added method overrides behaviour), torch's functions and Tensor's
    methods, the builtins, and what carries the records to the parent (pickle, torch.save,
    multiprocessing's connections)."""
    import multiprocessing.connection
    import pickle

    import torch.serialization

    modules = (("builtins", builtins), ("torch", torch), ("torch.nn.functional", torch.nn.functional),
               ("torch.autograd", torch.autograd),
               ("torch.serialization", torch.serialization), ("pickle", pickle), ("copy", sys.modules["copy"]),
               ("multiprocessing.connection", multiprocessing.connection),
               ("torch.nn.modules.module", sys.modules["torch.nn.modules.module"]))
    classes = (("torch.Tensor", torch.Tensor), ("torch.nn.Module", nn.Module), ("torch.nn.Linear", nn.Linear),
               ("multiprocessing.connection.Connection", multiprocessing.connection.Connection),
               ("multiprocessing.connection._ConnectionBase", multiprocessing.connection._ConnectionBase))
    # a name added to one of these classes counts when it overrides an inherited one (transformers adds
    # methods of its own to torch.nn.Module, which override nothing)
    found = {name: (space, NO_ADDITIONS) for name, space in modules} | {
        name: (space, OVERRIDING_ADDITIONS) for name, space in classes}
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith(("labkit.grader", "minimind_ref"))
                                  or name in ("labkit.numerics", "labkit.models")):
            continue
        found[name] = (module, NO_ADDITIONS)
        for attribute, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == name:
                found[f"{name}.{attribute}"] = (value, ALL_ADDITIONS)
    return found


# Which names added to a namespace count as a change: none (a module), those that override an
# inherited one (torch's classes, multiprocessing's), all (the grader's and minimind_ref's classes).
NO_ADDITIONS, OVERRIDING_ADDITIONS, ALL_ADDITIONS = 0, 1, 2


def _added(holder, names, then, additions: int) -> list[str]:
    added = [name for name in names if name not in then and not name.startswith("__")]
    if additions == OVERRIDING_ADDITIONS:
        return [name for name in added if any(name in vars(base) for base in holder.__mro__[1:])]
    return added if additions == ALL_ADDITIONS else []


def _functions(value) -> list[types.FunctionType]:
    """The Python functions a namespace entry runs: itself, a method's function, a property's parts."""
    if isinstance(value, types.FunctionType):
        return [value]
    if isinstance(value, (staticmethod, classmethod)):
        return _functions(value.__func__)
    if isinstance(value, property):
        return [f for part in (value.fget, value.fset, value.fdel) for f in _functions(part)]
    return []


# Names that legitimately change: Python's own bookkeeping on a class or module (copy, pickle,
# typing), the builtins' `_` (the last result, in a plain REPL), the guard's snapshot itself and
# grade.py's cache of the reference's records.
_BOOKKEEPING = frozenset({"__slotnames__", "__annotations__", "__dict__", "__weakref__", "__builtins__",
                          "__cached__", "__loader__", "__spec__", "__file__", "__doc__", "_", "_SNAPSHOT", "_TRUSTED"})
# The modules whose objects the worker grades with (the stages), beyond their names: a frozen
# dataclass can still be changed with object.__setattr__. Their other data is immutable (a mapping
# proxy, a tuple), which tests/kit/test_grader_hostile.py holds.
WORKER_MODULES = ("labkit.grader.ladder", "labkit.grader.guard", "labkit.grader.isolate")

_CODE, _DEFAULTS, _CONTENTS = (operator.attrgetter(name) for name in ("__code__", "__defaults__", "cell_contents"))


def _fields(objects) -> tuple:
    return tuple(tuple(vars(o).values()) for o in objects)


def _kwdefaults(functions) -> tuple:
    return tuple(tuple(f.__kwdefaults__.items()) for f in functions)


def _differ(a: tuple, b: tuple) -> bool:
    """Whether two tuples of objects differ; identical objects are equal at once, in C."""
    try:
        return bool(a != b)
    except Exception:  # an element whose != is not a bool (a tensor): by identity
        return len(a) != len(b) or any(x is not y for x, y in zip(a, b))


class Snapshot:
    """Everything `replaced()` compares, as it was: every namespace's names (read-only), what each
    of their functions runs (code, defaults, keyword defaults, closure contents) and the fields of
    the stages. Read-only once made."""

    __slots__ = ("spaces", "labels", "functions", "codes", "defaults", "with_kwdefaults", "kwdefaults", "cells",
                 "contents", "objects", "fields", "modules")

    def __init__(self, namespaces: dict[str, tuple[object, bool]]):
        set_ = object.__setattr__
        set_(self, "modules", len(sys.modules))
        set_(self, "spaces", tuple((name, holder, additions, types.MappingProxyType(dict(vars(holder))))
                                   for name, (holder, additions) in namespaces.items()))
        labels: dict[int, tuple[str, types.FunctionType]] = {}
        for name, _, _, names in self.spaces:
            for attribute, value in names.items():
                for function in _functions(value):
                    labels.setdefault(id(function), (f"{name}.{attribute}", function))
        set_(self, "labels", tuple(label for label, _ in labels.values()))
        set_(self, "functions", tuple(function for _, function in labels.values()))
        set_(self, "codes", tuple(map(_CODE, self.functions)))
        set_(self, "defaults", tuple(map(_DEFAULTS, self.functions)))
        set_(self, "with_kwdefaults", tuple(f for f in self.functions if f.__kwdefaults__))
        set_(self, "kwdefaults", _kwdefaults(self.with_kwdefaults))
        cells = [(i, cell) for i, f in enumerate(self.functions) for cell in f.__closure__ or ()]
        set_(self, "cells", tuple((i, cell) for i, cell in cells if _filled(cell)))
        set_(self, "contents", tuple(map(_CONTENTS, (cell for _, cell in self.cells))))
        objects = [item for name in WORKER_MODULES if name in sys.modules
                   for value in vars(sys.modules[name]).values() if isinstance(value, tuple)
                   for item in value if str(getattr(type(item), "__module__", "")).startswith("labkit.grader")
                   and hasattr(item, "__dict__")]
        set_(self, "objects", tuple(objects))
        set_(self, "fields", _fields(self.objects))

    def __setattr__(self, name, value):
        raise AttributeError("the grader's snapshot is read-only")

    def changed_functions(self) -> list[str]:
        """The functions whose code, defaults, keyword defaults or closure is no longer what it was."""
        functions = self.functions
        if not (_differ(tuple(map(_CODE, functions)), self.codes)
                or _differ(tuple(map(_DEFAULTS, functions)), self.defaults)
                or _differ(_kwdefaults(self.with_kwdefaults), self.kwdefaults)
                or _differ(tuple(map(_CONTENTS, (cell for _, cell in self.cells))), self.contents)):
            return []
        changed = {i for i, f in enumerate(functions)
                   if f.__code__ is not self.codes[i] or _differ((f.__defaults__,), (self.defaults[i],))}
        changed |= {functions.index(f) for f, then in zip(self.with_kwdefaults, self.kwdefaults)
                    if _differ(tuple(f.__kwdefaults__.items()), then)}
        changed |= {i for (i, cell), then in zip(self.cells, self.contents) if not _filled(cell)
                    or cell.cell_contents is not then}
        return [f"{self.labels[i]} (its code, defaults or closure)" for i in sorted(changed)]

    def changed_objects(self) -> list[str]:
        if not _differ(_fields(self.objects), self.fields):
            return []
        return [f"{type(o).__module__}.{type(o).__name__}({getattr(o, 'key', '')!r}) (its fields)"
                for o, then in zip(self.objects, self.fields) if _differ(tuple(vars(o).values()), then)]


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not filled yet
        return False
    return True


_SNAPSHOT: Snapshot | None = None


def take_snapshot() -> None:
    """Record every namespace above (called when the grader is imported, and after the grader's own
    runs when they imported a module: see imported_since_snapshot)."""
    global _SNAPSHOT
    _SNAPSHOT = Snapshot(_namespaces())


def imported_since_snapshot() -> bool:
    """Whether a module was imported since the snapshot was taken. The grader's own runs change what
    the snapshot holds only by importing (transformers imports torch._dynamo, which rebinds
    torch.manual_seed to a wrapper): a run that imported nothing needs no new snapshot, and taking
    one after each of the hundreds of runs a diagnosis makes was a quarter of the grading's time."""
    return len(sys.modules) != _SNAPSHOT.modules


def _same(now, original) -> bool:
    """The same object, or torch's own wrapper of it (importing torch._dynamo, which transformers
    does, rebinds torch.manual_seed to a wrapper whose __wrapped__ is the original)."""
    return now is original or (getattr(now, "__wrapped__", None) is original
                               and str(getattr(now, "__module__", "")).startswith("torch"))


def _unchanged(names, then) -> bool:
    """The fast path, one comparison in C per namespace (identical objects compare equal at once)."""
    try:
        return bool(names == then)
    except Exception:  # a value whose == is not a bool (a tensor): look name by name
        return False


def replaced(snapshot: Snapshot | None = None) -> list[str]:
    """Names whose object is no longer the one recorded, that are gone, or that were added to a
    class of the grader or of minimind_ref; functions whose code, defaults or closure changed (a
    swapped `__code__` keeps the function's identity); the stages' fields changed in place."""
    snapshot = snapshot or _SNAPSHOT
    found = []
    for space, holder, additions, then in snapshot.spaces:
        names = vars(holder)
        if _unchanged(names, then):
            continue
        for name, original in then.items():
            if name not in _BOOKKEEPING and (name not in names or not _same(names[name], original)):
                found.append(f"{space}.{name}")
        found += [f"{space}.{name}" for name in _added(holder, names, then, additions)]
    return found + snapshot.changed_functions() + snapshot.changed_objects()


# -- the reference's code, when it runs inside a learner's call ----------------------------------------

_ROOT = Path(__file__).resolve().parents[2]


def _reference_files() -> dict[str, str]:
    """Where the reference's attention lives, by file (or folder) -> how a report names it."""
    files = {str(_ROOT / "minimind_ref" / "attention.py"): "minimind_ref",
             str(_ROOT / "minimind_ref" / "variants") + "/": "minimind_ref.variants",
             str(_ROOT / "labkit" / "references.py"): "labkit.references",
             str(_ROOT / "labkit" / "grader" / "mistakes.py"): "the grader's planted mistakes"}
    spec = importlib.util.find_spec("transformers")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        files[str(Path(folder).resolve()) + "/"] = "transformers"
    return files


_REFERENCE_FILES = types.MappingProxyType(_reference_files())
_REFERENCE_PREFIXES = tuple(_REFERENCE_FILES)


def _forbidden_calls() -> dict:
    """The C functions a learner's code has no business calling, by function -> what it reaches:
    the garbage collector's view of every object, the profile, trace and audit hooks, a new thread
    or process (which no guard would watch)."""
    import _thread
    import os

    named = [(gc.get_objects, "a call to gc.get_objects()"), (gc.get_referrers, "a call to gc.get_referrers()"),
             (gc.get_referents, "a call to gc.get_referents()"), (sys.setprofile, "a call to sys.setprofile()"),
             (sys.settrace, "a call to sys.settrace()"), (sys.getprofile, "a call to sys.getprofile()"),
             (sys.addaudithook, "a call to sys.addaudithook()"), (_thread.start_new_thread, "a new thread"),
             (os.dup2, "a call to os.dup2()")]
    named += [(getattr(os, name), f"a new process (os.{name}())") for name in (
        "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve") if hasattr(os, name)]
    with contextlib.suppress(ImportError):
        import _posixsubprocess
        named.append((_posixsubprocess.fork_exec, "a new process (subprocess)"))
    return dict(named)


_FORBIDDEN_CALLS = types.MappingProxyType(_forbidden_calls())
_CTYPES_FILES = tuple(str(Path(folder).resolve()) + "/" for folder in (
    importlib.util.find_spec("ctypes").submodule_search_locations or []))
_LIBRARIES = tuple(dict.fromkeys([*(str(Path(path).resolve()) + "/" for path in (
    sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib"))),
    str(_ROOT / "labkit") + "/", str(_ROOT / "minimind_ref") + "/", "<frozen"]))


# -- where in the learner's code --------------------------------------------------------------------

_OURS = tuple(str(Path(p).resolve().parent) for p in (torch.__file__, __file__)) + (
    str(_ROOT / "minimind_ref"), str(Path(contextlib.__file__).resolve().parent))


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
    """Runs the learner's code: `with guard.watch("in forward, stage 3 ..."): layer(...)`.

    Its attributes are slots, set once: no code can hang a `watch` of its own on an instance."""

    __slots__ = ("time_limit", "on_call", "output", "borrowed")

    def __init__(self, time_limit: float | None = DEFAULT_TIME_LIMIT, on_call=None):
        self.time_limit = time_limit
        self.on_call = on_call  # called with the description before each call (the worker's heartbeat)
        self.output: list[str] = []  # what the learner's code printed, since take_output()
        self.borrowed: dict[str, None] = {}  # the reference's functions that ran inside a call, in order

    def take_output(self) -> str:
        text = "".join(self.output)
        self.output.clear()
        return text

    def _alarm_available(self) -> bool:
        return (self.time_limit is not None and hasattr(signal, "setitimer")
                and threading.current_thread() is threading.main_thread())

    @contextlib.contextmanager
    def watch(self, where: str):
        # What the checks below rely on is bound here, before the learner's code runs: this frame's
        # code cannot be swapped while it runs, so a replaced checker, snapshot or setting is seen.
        check, check_code, snapshot = replaced, replaced.__code__, _SNAPSHOT
        time_limit, on_call, borrowed = self.time_limit, self.on_call, self.borrowed
        if on_call is not None:
            on_call(where)
        before, rng, hooks = torch_state(), torch.get_rng_state(), _hooks()
        previous_alarm = None
        if time_limit is not None and self._alarm_available():
            def out_of_time(signum, frame):
                raise _OutOfTime
            previous_alarm = signal.signal(signal.SIGALRM, out_of_time)
            signal.setitimer(signal.ITIMER_REAL, time_limit)
        forbidden: list[str] = []
        # a profiler already in place (the worker's, isolate.py) reports for itself; leave any other alone
        profile = profiler(_tell_into(borrowed, forbidden)) if sys.getprofile() is None else None
        printed = io.StringIO()
        own_profiler, raised = True, None
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                if profile is not None:
                    sys.setprofile(profile)
                try:
                    _learner_runs()
                    yield
                finally:
                    _grader_runs()
                    if profile is not None:
                        own_profiler = sys.getprofile() is profile
                        sys.setprofile(None)
        except SystemExit as error:
            raise Misuse(tr("your code ends the program {where}: it raises {exit}{line} (sys.exit(), exit() or "
                            "quit()). A layer must return; move a self-test under `if __name__ == \"__main__\":`.",
                            where=where, line=learner_line(error), exit="SystemExit" + (
                                f"({error.code!r})" if error.code is not None else ""))) from None
        except _OutOfTime:
            raise Misuse(tr("your code did not return within {limit} s {where}: a loop that never ends? The "
                            "grader stopped it.", limit=f"{time_limit:g}", where=where)) from None
        except Misuse:
            raise
        except BaseException as error:  # how the call ended is told after what it changed, checked below
            raised = error
        finally:
            if previous_alarm is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous_alarm)
            self.output.append(printed.getvalue())
        if not own_profiler:
            forbidden.append("a call to sys.setprofile()")
        if forbidden:
            raise Misuse(reaches_in(forbidden, where))
        after = torch_state()
        changes = changed_state(before, after)
        if changes:
            restore_torch_state(before, rng)
            raise Misuse(tr("your code changes torch's global state {where}: {changes}. A layer must leave torch "
                            "as it found it (use a context manager such as torch.no_grad(), or set dtypes on your "
                            "own tensors).", where=where, changes="; ".join(changes)))
        left = _hooks_changed(hooks, _hooks())
        if left:
            raise Misuse(tr("your code leaves {left} behind {where}: code that runs after your call returned is "
                            "outside the grader's watch. A layer does its work inside forward.",
                            left=", ".join(left), where=where))
        intact = (replaced is check and check.__code__ is check_code and _SNAPSHOT is snapshot
                  and self.time_limit is time_limit and self.on_call is on_call and self.borrowed is borrowed)
        gone = check(snapshot) if intact else ["labkit.grader.guard (the grader's own checks)"]
        if gone:
            raise Misuse(tr("your code replaces the grader's own functions {where}: {gone}. The grader grades your "
                            "layer, not a patched grader.", where=where, gone=", ".join(gone[:4]) + (
                                tr(" and {count} more", count=len(gone) - 4) if len(gone) > 4 else "")))
        if raised is not None:
            raise raised


def _learner_runs() -> None:
    """Called by Guard.watch just before the learner's code runs: the profiler counts the reference's
    code from here (report_profile). Empty: the profiler sees the call, by its code object."""


def _grader_runs() -> None:
    """Called by Guard.watch as soon as the learner's code has returned: the grader's own code runs
    from here, and the reference it builds is not the learner's borrowing."""


def report_profile(tell, where: tuple, labels, qualname, off_limits: tuple, libraries: tuple, forbidden, hook_users,
                   marks: tuple, learner: list, frame, event, arg) -> None:
    """The grader's profile function, bound with functools.partial (whose function and arguments
    cannot be reassigned): `tell("borrowed", name)` as each of the reference's functions starts
    while the learner's code runs (inside a Guard.watch: `learner[0]` counts the watches open, moved
    by the calls to _learner_runs and _grader_runs from Guard.watch's own code only, `marks`; the
    worker's profiler is on for the whole grading, and the grader's own reference is not the learner's),
    `tell("forbidden", what)` before each forbidden C function runs (`forbidden`: function -> what)
    and as Python code of ctypes starts, called from code that is not a library's (`off_limits`:
    ctypes' files; `libraries`: where Python, its packages and the kit live, whose imports use ctypes).
    It looks up no global and no builtin, so rebinding one changes nothing here; the guard's own
    calls to the profiler hooks (`hook_users`, code objects: a running frame's code cannot be
    swapped) are allowed."""
    if event == "call":
        code = frame.f_code
        filename = code.co_filename
        if code is marks[0] or code is marks[1]:
            if frame.f_back is not None and frame.f_back.f_code is marks[2]:
                learner[0] += 1 if code is marks[0] else -1
        elif filename.startswith(off_limits):
            caller = frame.f_back
            if caller is not None and not caller.f_code.co_filename.startswith(libraries):
                tell("forbidden", "ctypes, which reads and writes memory")
        elif learner[0] > 0 and filename.startswith(where):
            for prefix, label in labels:
                if filename.startswith(prefix):
                    tell("borrowed", label + ": " + qualname(frame.f_code))
                    return
    elif event == "c_call" and arg in forbidden and frame.f_code not in hook_users:
        tell("forbidden", forbidden[arg])


def audit_hook(tell):
    """The audit hook to install: report_audit bound to `tell` and the grader's tables."""
    return functools.partial(report_audit, tell, AUDITED, SWAPPED_ATTRIBUTES, frozenset(_SNAPSHOT.functions))


def profiler(tell):
    """The profile function to install: report_profile bound to `tell` and the grader's tables."""
    return functools.partial(report_profile, tell, _REFERENCE_PREFIXES, tuple(_REFERENCE_FILES.items()),
                             operator.attrgetter("co_qualname" if sys.version_info >= (3, 11) else "co_name"),
                             _CTYPES_FILES, _LIBRARIES, _FORBIDDEN_CALLS, _HOOK_USERS,
                             (_learner_runs.__code__, _grader_runs.__code__, Guard.watch.__wrapped__.__code__), [0])


def report_audit(tell, events, swapped, functions, event, args) -> None:
    """The worker's audit hook (`sys.addaudithook`, which nothing can remove), bound with
    functools.partial: `tell("forbidden", what)` before an audited operation that reaches into the
    interpreter runs: the code or defaults of one of `functions` (the grader's, minimind_ref's,
    torch's: guard.Snapshot) swapped, the garbage collector's objects, ctypes, the trace hook, a
    new process."""
    if event in events or event[:7] == "ctypes.":
        tell("forbidden", events.get(event, "ctypes, which reads and writes memory"))
    elif event == "object.__setattr__" and args[1] in swapped and args[0] in functions:
        tell("forbidden", f"{args[1]} of {args[0].__module__}.{args[0].__qualname__} replaced")


AUDITED = types.MappingProxyType({
    "gc.get_objects": "a call to gc.get_objects()", "gc.get_referrers": "a call to gc.get_referrers()",
    "gc.get_referents": "a call to gc.get_referents()", "sys.settrace": "a call to sys.settrace()",
    "sys.addaudithook": "a call to sys.addaudithook()", "os.fork": "a new process (os.fork())",
    "os.forkpty": "a new process (os.forkpty())", "os.posix_spawn": "a new process (os.posix_spawn())",
    "os.exec": "another program (os.exec*())", "os.system": "a new process (os.system())",
    "subprocess.Popen": "a new process (subprocess)"})
SWAPPED_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
# (sys.setprofile is audited too, but the worker's own setprofile installs the profiler, after the
# audit hook: the profiler itself sees any later one, before it runs.)


def tell_parent(write, fd: int, pack, leave, kind: str, name: str) -> None:
    """What the worker's profiler and audit hook say, written straight to the pipe as one of
    multiprocessing's messages (a length, then the bytes), with no global, builtin or Python-level
    connection in the way; after a forbidden call, the worker leaves before the call runs."""
    payload = (b"B" if kind == "borrowed" else b"F") + name.encode()
    try:
        write(fd, pack(payload.__len__()) + payload)
    except OSError:
        leave(3)
    if kind == "forbidden":
        leave(3)


def _tell_into(borrowed: dict, forbidden: list):
    def tell(kind: str, name: str) -> None:
        (borrowed.setdefault if kind == "borrowed" else lambda name, _: forbidden.append(name))(name, None)
    return tell


def reaches_in(forbidden, where: str) -> str:
    return tr("your code reaches into the interpreter {where}: {what}. That can read or change the grader's own "
              "records, or run code where no guard watches; a layer computes its output from its inputs, and the "
              "grader does not grade code that does more.", where=where, what=", ".join(dict.fromkeys(forbidden)))


# The code that may call the profiler hooks: the guard's watch, which installs and removes its
# profiler (the worker installs its own before the learner's file runs, and never removes it).
_HOOK_USERS = frozenset({Guard.watch.__wrapped__.__code__})
