"""A learner's file, graded from a process of its own (what `python -m labkit.grader FILE` does).

The file is imported, and its layer built and called, only in a worker process started with
`spawn` (a fresh interpreter, nothing inherited). The worker sends back what each call returned
(`Records`: tensors and error messages); the reference, the planted mistakes and every comparison
run here, in the parent, which never imports the file. So a file that replaces the grader's
functions, torch's or minimind_ref's changes only the worker's copies, which no verdict relies on
(and the worker's own guard names it, see guard.py). A worker that dies (`os._exit`, a crash) or
stops answering is a usage error named here: each call into the learner's code sends a heartbeat
first, and the parent waits for the next message no longer than the time limit allows.
"""

from __future__ import annotations

import importlib.util
import inspect
import multiprocessing
import sys
from pathlib import Path

from torch import nn

from .guard import DEFAULT_TIME_LIMIT, Guard, Misuse, learner_line
from .ladder import STAGE, Stage, Unfinished

STARTUP_LIMIT = 300.0  # seconds for the worker to start and import torch, on a slow and busy laptop
GRACE = 15.0  # the worker's own alarm speaks first; the parent's clock is the backstop


def learner_file(path: str) -> Path:
    """The learner's .py file; GraderUsageError names what is wrong with `path` otherwise."""
    from .grade import GraderUsageError

    file = Path(path)
    if not file.is_file():
        raise GraderUsageError(f"{path}: no such file; give the path of the .py file that defines your "
                               f"attention class.")
    if file.suffix != ".py":
        raise GraderUsageError(f"{path} is not a Python file (.py).")
    return file


def load_class(path: str, class_name: str | None, guard: Guard | None = None):
    """The attention class defined in the file at `path`: `class_name`, or the only nn.Module
    class the file defines. GraderUsageError says what is wrong otherwise."""
    from .grade import GraderUsageError

    file = learner_file(path)
    spec = importlib.util.spec_from_file_location(f"learner_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))  # the file may import its neighbours
    try:
        with guard.watch(f"at import of {file.name}") if guard is not None else _nothing():
            spec.loader.exec_module(module)
    except Exception as error:
        raise GraderUsageError(f"{path} does not import: {type(error).__name__}: {error}{learner_line(error)}") \
            from None
    finally:
        sys.path.remove(str(file.resolve().parent))
    defined = {name: value for name, value in vars(module).items()
               if inspect.isclass(value) and issubclass(value, nn.Module) and value.__module__ == module.__name__}
    if class_name is not None:
        if class_name not in defined:
            raise GraderUsageError(f"--class {class_name}: {path} defines no nn.Module class of that name; "
                                   f"it defines {', '.join(sorted(defined)) or 'none'}.")
        return defined[class_name]
    if len(defined) != 1:
        found = ", ".join(sorted(defined)) if defined else "none"
        raise GraderUsageError(f"{path} must define exactly one nn.Module class, or name one with --class; "
                               f"it defines {found}.")
    return next(iter(defined.values()))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _worker(conn, path: str, class_name: str | None, time_limit: float | None) -> None:
    """The worker's loop: import the file, then answer ("check",) and ("run", stage key, seed, passes)."""
    from .grade import GraderUsageError, LocalLearner, check_learner

    try:
        guard = Guard(time_limit, on_call=lambda where: conn.send(("call", where)))
        cls = load_class(path, class_name, guard)
        check_learner(cls)
        learner = LocalLearner(cls, time_limit)
        learner.guard = guard
        conn.send(("ready", cls.__name__))
        while True:
            request = conn.recv()
            if request[0] == "stop":
                return
            if request[0] == "check":
                learner.check(cls.__name__)
                conn.send(("done", None))
            else:
                _, key, seed, passes = request
                conn.send(("done", learner.run(STAGE[key], seed, passes)))
    except Misuse as error:
        conn.send(("misuse", error.message))
    except GraderUsageError as error:
        conn.send(("usage", str(error)))
    except Unfinished as error:
        conn.send(("unfinished", str(error)))
    except EOFError:
        return
    except BaseException as error:  # anything else is the grader's fault: say so rather than hang the parent
        conn.send(("misuse", f"the grader's worker failed: {type(error).__name__}: {error}"))


class IsolatedLearner:
    """The learner's file in a spawned worker; the same interface as grade.LocalLearner."""

    def __init__(self, path: str, class_name: str | None = None, time_limit: float | None = DEFAULT_TIME_LIMIT):
        self.path, self.class_name, self.time_limit = path, class_name, time_limit
        self.where = "while the worker starts"
        self.process = None

    def start(self) -> str:
        """Start the worker; the class's name once the file is imported and the class checked."""
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child, self.path, self.class_name, self.time_limit),
                                       daemon=True)
        self.process.start()
        child.close()
        return self._answer(STARTUP_LIMIT)

    def check(self, name: str) -> None:
        self.conn.send(("check",))
        self._answer()

    def run(self, stage: Stage, seed: int, passes: tuple[str, ...]):
        self.conn.send(("run", stage.key, seed, passes))
        return self._answer()

    def _answer(self, first_limit: float | None = None):
        from .grade import GraderUsageError

        limit = first_limit
        while True:
            wait = limit if limit is not None else (self.time_limit + GRACE if self.time_limit else None)
            if not self.conn.poll(wait):
                self.close()
                raise Misuse(f"your code did not return within {wait:g} s {self.where}: a loop that never ends? "
                             f"The grader stopped it.")
            try:
                kind, value = self.conn.recv()
            except (EOFError, ConnectionError):
                self.process.join(5)
                code = self.process.exitcode
                raise Misuse(f"your code ended the grader's worker process {self.where} (exit status {code}): "
                             f"os._exit(), a crash, or a signal. A layer must return.") from None
            limit = None
            if kind == "call":
                self.where = value
                continue
            if kind == "misuse":
                raise Misuse(value)
            if kind == "usage":
                raise GraderUsageError(value)
            if kind == "unfinished":
                raise Unfinished(value)
            return value

    def close(self) -> None:
        if self.process is None:
            return
        if self.process.is_alive():
            try:
                self.conn.send(("stop",))
            except (OSError, ValueError):
                pass
            self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.process = None


def grade_file(path: str, class_name: str | None = None, seed: int = 0, quiet: bool = False,
               time_limit: float | None = DEFAULT_TIME_LIMIT):
    """grade() for the class in a file, the file run in a worker process (module docstring)."""
    from .grade import GraderUsageError, climb

    learner_file(path)
    learner = IsolatedLearner(path, class_name, time_limit)
    try:
        try:
            name = learner.start()
        except Misuse as error:
            raise GraderUsageError(error.message) from None
        return climb(learner, name, seed, quiet)
    finally:
        learner.close()
