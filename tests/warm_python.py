"""Run scripts as `python script.py ARGS` does, from one interpreter that has imported torch already.

A fresh Python that imports torch and matplotlib spends 2 to 4 s of CPU before the script's first
line; the suite runs every experiment script with its defaults, and that start-up was most of what
those runs cost. A `WarmPython` starts one server process that imports the heavy modules once and
then forks a child per script. The child is a process of its own, as a learner's run is: its own
globals, folder, standard streams and CPU limit; it runs the script as `__main__` with the script's
folder first on sys.path, and exits with the script's status (a SystemExit's code, 1 after an
uncaught exception, -signal when killed). Each child starts from the server's state, never from
another script's. The server only imports: a process forked after torch has run a parallel region
can hang, and the server never runs one.

Where there is no fork (Windows) each script gets a fresh interpreter, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# torch._dynamo: torch imports it at the first optimizer or dispatch mode a script makes, 1 to 2 s of
# CPU in 14 of the 39 scripts. (transformers is left out: only module 10's two scripts import it, and
# each pytest process that runs scripts starts a server of its own, three in `make test`.)
WARM = ("torch", "torch._dynamo", "numpy", "matplotlib", "matplotlib.pyplot", "labkit.experiment", "minimind_ref")


class WarmPython:
    """`run(script, *args, cwd=...)` returns a CompletedProcess, as subprocess.run(..., text=True,
    capture_output=True) would. `env` is the scripts' environment, fixed when the server starts
    (torch reads its thread count then); `cpu_limit` (seconds) ends a script that uses more CPU
    than that with SIGXCPU. Use it as a context manager, or call close()."""

    def __init__(self, env: dict[str, str], cpu_limit: int):
        self.env, self.cpu_limit = env, cpu_limit
        self._streams = tempfile.TemporaryDirectory(prefix="warm-python-")
        self._server = None
        if hasattr(os, "fork"):
            self._server = subprocess.Popen([sys.executable, __file__], env=env, text=True, encoding="utf-8",
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, script: Path, *args: str, cwd: Path,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run `script` with `args` from `cwd`; `env` changes variables for this run (an empty value
        removes one), such as the language, read when the script runs, not when torch starts."""
        argv, env = [str(script), *args], env or {}
        if self._server is None:
            whole = {k: v for k, v in {**self.env, **env}.items() if v}
            return subprocess.run([sys.executable, *argv], cwd=cwd, env=whole, capture_output=True, text=True,
                                  encoding="utf-8", errors="replace")
        out, err = (os.path.join(self._streams.name, name) for name in ("stdout", "stderr"))
        request = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": out, "stderr": err,
                   "cpu_limit": self.cpu_limit}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        reply = self._server.stdout.readline()
        if not reply:
            raise RuntimeError(f"the warm Python server ended (exit {self._server.wait()}) before running {script}")
        code = json.loads(reply)["returncode"]
        read = [Path(path).read_text(encoding="utf-8", errors="replace") for path in (out, err)]
        return subprocess.CompletedProcess([sys.executable, *argv], code, *read)

    def close(self) -> None:
        if self._server is not None:
            self._server.stdin.close()
            self._server.wait(timeout=30)
            self._server = None
        self._streams.cleanup()

    def __enter__(self) -> WarmPython:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ------------------------------------------------------------------------------------------ the server

def _child(request: dict) -> None:
    """In the forked child: become `python argv...` run from cwd, then exit with its status."""
    import resource
    import runpy
    import traceback

    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)
        limit = request["cpu_limit"]
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 30))
        for name, value in request["env"].items():
            if value:
                os.environ[name] = value
            else:
                os.environ.pop(name, None)
        os.chdir(request["cwd"])
        script = os.path.abspath(request["argv"][0])
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(script)
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as done:
            status = done.code
            if status is None or isinstance(status, int):
                code = status or 0
            else:  # sys.exit("message"): the message on stderr, status 1, as Python does
                print(status, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF if code >= 0 else 1)


def _serve() -> None:
    import gc
    import importlib

    environment = dict(os.environ)
    for name in WARM:
        importlib.import_module(name)
    # A fresh script starts with the environment it was given: torch._dynamo's import sets its cache
    # folder's variable, which the script's own import sets again if it ever gets there.
    os.environ.clear()
    os.environ.update(environment)
    # The imports' third of a million objects are never garbage: the collector stops visiting them,
    # in the server and in every child, where each full collection would spend 0.2 s on them.
    gc.freeze()
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        replies.write(json.dumps({"returncode": code}) + "\n")
        replies.flush()


if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parents[1])  # the course, not tests/, first
    _serve()
