"""A learner's file, graded from a process of its own (what `python -m labkit.grader FILE` does).

The file is imported, and its layer built and called, only in a worker process that inherits
nothing from this one (`worker_context`). The worker sends back what each call returned
(`Records`: tensors and error messages); the reference, the planted mistakes and every comparison
run here, in the parent, which never imports the file. So a file that replaces the grader's
functions, torch's or minimind_ref's changes only the worker's copies, which no verdict relies on
(and the worker's own guard names it, see guard.py).

What crosses from the worker is data, never code: each message is written with `torch.save` and
read here with `torch.load(weights_only=True)`, which builds tensors, numbers, strings and
containers and refuses anything else, so nothing the worker sends can run here (a pickle can).

A worker that dies (`os._exit`, a crash, a signal, memory running out), at a call or between two,
or stops answering, is a usage error named here, whichever way the pipe says so: every send and
every receive is guarded, and each call into the learner's code sends a heartbeat first, so the
parent waits for the next message no longer than the time limit allows.

From before the file is imported to its end, the worker runs an audit hook (`sys.addaudithook`,
which nothing can remove) and a profiler (`sys.setprofile`), both written so that no later
rebinding or code swap reaches them (guard.report_audit, guard.report_profile). They write straight
to the pipe: each time any of the reference's attention code runs in the worker inside a call
into the learner's code (minimind_ref's, a planted mistake's, transformers'; not the reference the
grader builds there for itself, between calls), and before an operation that reaches into the interpreter
runs (a swapped `__code__` of the grader's or torch's functions, the garbage collector's objects,
ctypes, the profiler itself, a new thread or process), after which the worker leaves. So a file
cannot hide that its layer's numbers are the reference's, and the report says so; nor quietly
rewrite the grader first.

What no check can promise: a file whose own code computes a right layer, wherever in the file it
sits, can make its records right, by frames it walks (a frame's locals) rather than by its class;
that is the learner's code computing the right numbers, and graded as such.
"""

from __future__ import annotations

import errno
import functools
import importlib.util
import inspect
import io
import multiprocessing
import os
import signal
import stat
import struct
import sys
from pathlib import Path

import torch
from torch import nn

from labkit.i18n import language, phrase, tr, use_language

from .guard import DEFAULT_TIME_LIMIT, Guard, Misuse, audit_hook, learner_line, profiler, reaches_in, tell_parent
from .ladder import STAGE, Outcome, Raised, Stage, Unfinished


def worker_context() -> multiprocessing.context.BaseContext:
    """How workers start. On Linux, forked from a server that was itself started as a fresh
    interpreter and has only imported the grader (`forkserver`): a worker begins in 0.1 s instead of
    the 2 to 3 s a fresh interpreter takes to import torch, which counts when one process grades many
    files (the test suite does), and nothing of this process reaches it. Elsewhere a fresh interpreter
    per worker (`spawn`): on macOS a process forked after torch and Apple's libraries start may crash,
    and Windows cannot fork."""
    if sys.platform != "linux":
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # kept until the server starts, with the first worker
    return context


STARTUP_LIMIT = 300.0  # seconds for the worker to start and import torch, on a slow and busy laptop
GRACE = 15.0  # the worker's own alarm speaks first; the parent's clock is the backstop


# -- the learner's file ------------------------------------------------------------------------------

def learner_file(path: str) -> Path:
    """The learner's .py file; GraderUsageError names what `path` is otherwise (a folder, a pipe, a
    device, a link to nothing or a loop of links, a file that cannot be read), before anything
    opens it: a FIFO or /dev/zero would be read for ever."""
    from .grade import GraderUsageError

    file = Path(path)
    ask = tr("give the path of the .py file that defines your attention class")
    if not str(path).strip():  # Path("") is the current folder, which the learner did not mean
        raise GraderUsageError(tr("the file's path is empty; {ask}.", ask=ask))
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        if file.is_symlink():
            raise GraderUsageError(tr("{path} is a symbolic link to {target}, which does not exist; {ask}.",
                                      path=path, target=os.readlink(file), ask=ask)) from None
        raise GraderUsageError(tr("{path}: no such file; {ask}.", path=path, ask=ask)) from None
    except OSError as error:
        what = {errno.ELOOP: phrase("is a loop of symbolic links (each points on to another, never to a file)"),
                errno.ENOTDIR: phrase("runs through a file as if it were a folder"),
                errno.EACCES: phrase("cannot be reached: permission denied on a folder on the way"),
                errno.ENAMETOOLONG: phrase("is too long a name for this system")}.get(error.errno)
        what = tr(what) if what else tr("cannot be read ({error})", error=error)
        raise GraderUsageError(tr("{path} {what}; {ask}.", path=path, what=what, ask=ask)) from None
    kind = _kind(mode)
    if kind is not None:
        link = tr(" (a symbolic link to {target})", target=os.readlink(file)) if file.is_symlink() else ""
        raise GraderUsageError(tr("{path}{link} is {kind}, not a file; {ask}.", path=path, link=link, kind=tr(kind),
                                  ask=ask))
    if file.suffix != ".py":
        raise GraderUsageError(tr("{path} is not a Python file (.py); {ask}.", path=path, ask=ask))
    if not os.access(file, os.R_OK):
        raise GraderUsageError(tr("{path} cannot be read: permission denied; {ask}.", path=path, ask=ask))
    return file


def _kind(mode: int) -> str | None:
    """What a path that is not a regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return phrase("a folder")
    if stat.S_ISFIFO(mode):
        return phrase("a named pipe (FIFO), which the grader would wait on for ever")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return phrase("a device (such as /dev/zero), which the grader would read for ever")
    if stat.S_ISSOCK(mode):
        return phrase("a socket")
    return phrase("a special file of the system")


def load_class(path: str, class_name: str | None, guard: Guard | None = None):
    """The attention class defined in the file at `path`: `class_name`, or the only nn.Module
    class the file defines. GraderUsageError says what is wrong otherwise."""
    from .grade import GraderUsageError

    file = learner_file(path)
    spec = importlib.util.spec_from_file_location(f"learner_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))  # the file may import its neighbours
    try:
        with guard.watch(tr("at import of {file}", file=file.name)) if guard is not None else _nothing():
            try:
                spec.loader.exec_module(module)
                problem = None
            except Exception as error:  # put in words under the guard: the error's text is the file's code
                problem = f"{path} does not import: {type(error).__name__}: {error}{learner_line(error)}"
    finally:
        sys.path.remove(str(file.resolve().parent))
    if problem is not None:
        raise GraderUsageError(problem)
    defined = {name: value for name, value in vars(module).items()
               if inspect.isclass(value) and issubclass(value, nn.Module) and value.__module__ == module.__name__}
    if class_name is not None:
        if class_name not in defined:
            raise GraderUsageError(tr("--class {name}: {path} defines no nn.Module class of that name; it defines "
                                      "{found}.", name=class_name, path=path,
                                      found=", ".join(sorted(defined)) or tr("none")))
        return defined[class_name]
    if len(defined) != 1:
        found = ", ".join(sorted(defined)) if defined else tr("none")
        raise GraderUsageError(tr("{path} must define exactly one nn.Module class, or name one with --class; it "
                                  "defines {found}.", path=path, found=found))
    return next(iter(defined.values()))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- what crosses the pipe: data only ---------------------------------------------------------------

def _encode(message: tuple) -> bytes:
    """One of the grader's messages: b"T", then the message written by torch.save."""
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return b"T" + buffer.getvalue()


def _decode(data: bytes) -> tuple:
    """A message from the worker, read as data: b"B" or b"F" and a name (what the profiler and the
    audit hook tell, guard.tell_parent), or b"T" and a tuple read with `weights_only` (tensors,
    numbers, strings, containers). ValueError for anything else."""
    tag, body = data[:1], data[1:]
    if tag in (b"B", b"F"):
        return ("borrowed" if tag == b"B" else "forbidden", body.decode())
    if tag != b"T":
        raise ValueError("an unknown tag")
    message = torch.load(io.BytesIO(body), weights_only=True)
    if not (isinstance(message, tuple) and message and isinstance(message[0], str)):
        raise ValueError(f"a {type(message).__name__}, not a message")
    return message


def records_to_data(records: dict) -> dict:
    return {key: {"raised": value.text} if isinstance(value, Raised) else
            {"out": value.out, "weights": value.weights, "merged": value.merged, "grads": value.grads}
            for key, value in records.items()}


def records_from_data(data) -> dict:
    """Records as the grader compares them, from the worker's data; ValueError for anything else."""
    if not isinstance(data, dict):
        raise ValueError("records that are not a dict")
    records = {}
    for key, value in data.items():
        if not (isinstance(key, tuple) and len(key) == 3 and isinstance(key[2], str) and isinstance(value, dict)):
            raise ValueError(f"a record {key!r} of the wrong form")
        if "raised" in value:
            records[key] = Raised(str(value["raised"]))
            continue
        out, weights, merged, grads = (value.get(name) for name in ("out", "weights", "merged", "grads"))
        tensors = [out, weights, merged, *((grads or {}).values())]
        if not isinstance(out, torch.Tensor) or not all(t is None or isinstance(t, torch.Tensor) for t in tensors):
            raise ValueError(f"a record {key!r} that is not tensors")
        records[key] = Outcome(out, weights, merged, grads)
    return records


# -- the worker -------------------------------------------------------------------------------------

def _worker(conn, path: str, class_name: str | None, time_limit: float | None, lang: str,
            environment: dict[str, str]) -> None:
    """The worker's loop: watch, import the file, then answer ("check",) and ("run", stage key, seed,
    passes); its messages in the parent's language `lang`, in the parent's environment."""
    from .grade import GraderUsageError, LocalLearner, check_learner, inherited_reference

    os.environ.clear()
    os.environ.update(environment)
    use_language(lang)
    tr("usage error: {error}", error="")  # the catalog read now, before the file runs and the hooks watch

    # Before the file runs: an audit hook (which nothing can remove) and a profiler, both telling the
    # parent straight through the pipe (module docstring). Neither is ever taken down.
    tell = functools.partial(tell_parent, os.write, conn.fileno(), struct.Struct("!i").pack, os._exit)
    sys.addaudithook(audit_hook(tell))
    sys.setprofile(profiler(tell))

    def send(*message) -> None:
        try:
            conn.send_bytes(_encode(message))
        except (OSError, ValueError):  # the parent is gone: nobody is left to tell
            os._exit(3)

    guard = Guard(time_limit, on_call=lambda where: send("call", where))
    try:
        cls = load_class(path, class_name, guard)
        with guard.watch(tr("while the grader reads your class")):
            check_learner(cls)
            name, inherits = cls.__name__, inherited_reference(cls)
        learner = LocalLearner(cls, time_limit)
        learner.guard = guard
        send("ready", name, inherits)
        while True:
            request = conn.recv()
            if request[0] == "stop":
                return
            if request[0] == "check":
                learner.check(name)
                send("done", None, guard.take_output())
            else:
                _, key, seed, passes = request
                records = records_to_data(learner.run(STAGE[key], seed, passes))
                send("done", records, guard.take_output())
    except Misuse as error:
        send("misuse", error.message, guard.take_output())
    except GraderUsageError as error:
        send("usage", str(error), guard.take_output())
    except Unfinished as error:
        send("unfinished", str(error), guard.take_output())
    except (EOFError, OSError):
        return
    except BaseException as error:  # anything else is the grader's fault: say so rather than hang the parent
        send("misuse", f"the grader's worker failed: {type(error).__name__}: {error}", guard.take_output())


# -- the parent's side ------------------------------------------------------------------------------

class IsolatedLearner:
    """The learner's file in a worker process; the same interface as grade.LocalLearner, plus what
    the worker told along the way: `borrowed` (the reference's code that ran in it), `inherits`."""

    def __init__(self, path: str, class_name: str | None = None, time_limit: float | None = DEFAULT_TIME_LIMIT):
        self.path, self.class_name, self.time_limit = path, class_name, time_limit
        self.where = self.last_call = tr("while the worker starts")
        self.process = None
        self.borrowed: dict[str, None] = {}
        self.inherits: list[str] = []
        self.output = ""

    def start(self) -> str:
        """Start the worker; the class's name once the file is imported and the class checked."""
        context = worker_context()
        self.conn, child = context.Pipe()
        # this process's environment as it is now, as a fresh interpreter would start with it (a forked
        # worker has the server's, as it was when the server started; multiprocessing itself passes
        # the folder and sys.path on)
        self.process = context.Process(target=_worker, daemon=True, args=(
            child, self.path, self.class_name, self.time_limit, language(), dict(os.environ)))
        self.process.start()
        child.close()
        name, self.inherits = self._answer(STARTUP_LIMIT)
        return name

    def check(self, name: str) -> None:
        self._send(("check",))
        self._answer()

    def run(self, stage: Stage, seed: int, passes: tuple[str, ...]):
        self._send(("run", stage.key, seed, passes))
        return records_from_data(self._answer())

    def take_output(self) -> str:
        text, self.output = self.output, ""
        return text

    def _send(self, request: tuple) -> None:
        try:
            self.conn.send(request)
        except (OSError, ValueError, EOFError):  # BrokenPipeError, ConnectionResetError, a closed pipe
            raise self._ended() from None

    def _ended(self) -> Misuse:
        """The usage error for a worker that is gone, with how it ended."""
        code = None
        if self.process is not None:
            self.process.join(5)
            code = self.process.exitcode
        if code is None:
            how = tr("it stopped answering")
        elif code < 0:
            how = tr("killed by signal {signal}",
                     signal=signal.Signals(-code).name if -code in signal.valid_signals() else -code)
        else:
            how = tr("exit status {code}", code=code)
        self.close()
        return Misuse(tr("your code ended the grader's worker process {where} ({how}): os._exit(), a crash, a "
                         "signal, or memory running out. A layer must return.", where=self.where, how=how))

    def _answer(self, first_limit: float | None = None):
        from .grade import GraderUsageError

        limit = first_limit
        while True:
            wait = limit if limit is not None else (self.time_limit + GRACE if self.time_limit else None)
            try:
                ready = self.conn.poll(wait)
            except (OSError, ValueError, EOFError):
                raise self._ended() from None
            if not ready:
                self.close()
                raise Misuse(tr("your code did not return within {limit} s {where}: a loop that never ends? The "
                                "grader stopped it.", limit=f"{wait:g}", where=self.where))
            try:
                data = self.conn.recv_bytes()
            except (OSError, ValueError, EOFError):
                raise self._ended() from None
            try:
                kind, *value = _decode(data)
            except Exception as error:  # not data the grader reads: a message forged or cut short
                self.close()
                raise Misuse(tr("the grader's worker sent something that is not a record {where} ({error}): did "
                                "your code write to the grader's pipe?", where=self.where,
                                error=type(error).__name__)) from None
            limit = None
            if kind == "call":
                self.where = self.last_call = value[0]
            elif kind == "borrowed":
                self.borrowed[value[0]] = None
            elif kind == "forbidden":
                self.close()
                raise Misuse(reaches_in(value, self.where))
            elif kind == "ready":
                self.where = tr("between two calls")
                return value
            elif kind == "done":
                self.output += value[1]
                self.where = tr("between two calls (the last: {call})", call=self.last_call)
                return value[0]
            else:
                self.output += value[1] if len(value) > 1 else ""
                message = str(value[0])
                if kind == "misuse":
                    raise Misuse(message)
                if kind == "usage":
                    raise GraderUsageError(message)
                if kind == "unfinished":
                    raise Unfinished(message)
                raise Misuse(tr("the grader's worker sent a message of an unknown kind, {kind} {where}.",
                                kind=repr(kind), where=self.where))

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
