"""Notebook kernels that start warm: forked from one interpreter that has imported torch already.

The suite starts some fifty python3 kernels (nbval's notebooks, the learner copies, the kernel
tests), and a fresh kernel spends 2 to 3 s of CPU importing torch, numpy and matplotlib before its
first cell runs (8 kernels and their first cells: 31-33 s of CPU fresh, 16.5 s forked, the server's
imports included). So each pytest worker (conftest.py) starts one server that
imports those libraries once, and points Jupyter's `python3` kernelspec at this file. A kernel the
suite asks for is then forked from the server and runs ipykernel as `python -m ipykernel_launcher -f
CONNECTION_FILE` does: in the folder, with the environment and the standard streams it was launched
with, in a session of its own. The launched process stays between Jupyter and the kernel: it
passes on the signals Jupyter sends (an interrupt, a kill) and ends with the kernel's status.

A fork is used only where it gives what a fresh kernel would; otherwise this file *becomes* a fresh
`python -m ipykernel_launcher` (exec), the same process Jupyter launched. That is the case when
- the kernel's environment differs from the server's in any variable but those only a kernel or
  the course reads (JPY_*, ATTENTION_LAB_*): torch, numpy and matplotlib read theirs when they are
  imported (ATEN_CPU_CAPABILITY, MKL_CBWR, MPLBACKEND, OMP_NUM_THREADS...), so a kernel started
  with other settings (the portability tests, CI's second pass) must import them itself;
- the server has a second thread (a library started a pool): forking one is not safe;
- no server is running (a pytest run without workers, a learner's JupyterLab).
Only libraries are preloaded, never the course (labkit, minimind_ref: a kernel started in a copy of
the course imports that copy), nor ipykernel and matplotlib's inline backend, which read the
kernel's own environment and shell when they are imported. tests/kit/test_warm_kernel.py holds a
forked kernel to a fresh one: the same paths, arguments, environment, backend and display hooks.

As launched by Jupyter (the kernelspec's argv):  python warm_kernel.py SOCKET -f CONNECTION_FILE
As the server (WarmKernels starts it):           python warm_kernel.py --serve SOCKET [MODULE ...]
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# transformers: the oracle models of notebooks 00, 04, 06 and 10 and the grader's last stage, 3 s of
# CPU in each of their kernels (both runs of each: nbval's and the learner copy's), once per server.
PRELOAD = ("torch", "numpy", "matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg",
           "transformers.models.llama.modeling_llama", "transformers.models.qwen3.modeling_qwen3")
# Variables a kernel's environment may hold unlike the server's: read by Jupyter's kernel machinery,
# pytest or the course, or by torch only when it compiles (it sets its cache folder in the test
# process then), never by a preloaded library as it is imported.
NOT_READ_ON_IMPORT = ("JPY_", "ATTENTION_LAB_", "PYTEST_", "TORCHINDUCTOR_CACHE_DIR")
MESSAGE = 1 << 20


def _library_env(env) -> dict[str, str]:
    return {key: value for key, value in env.items() if not key.startswith(NOT_READ_ON_IMPORT)}


class WarmKernels:
    """The server and a `python3` kernelspec that uses it, for the life of one pytest worker.

    `start()` writes the kernelspec into a temporary folder, puts that folder first on JUPYTER_PATH
    (so that every kernel this process and its children start is launched through this file) and
    starts the server with this process's environment. `close()` ends the server and its kernels.
    `preload` names the modules the server imports (a test of the server's own workings needs none)."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD):
        self.preload = preload
        self._folder = tempfile.TemporaryDirectory(prefix="warm-kernels-")
        self.socket = os.path.join(self._folder.name, "server")
        self._server = None

    def start(self) -> WarmKernels:
        from ipykernel.kernelspec import get_kernel_dict

        spec = get_kernel_dict()  # ipykernel's own python3 spec, with only the launch command changed
        spec["argv"] = [sys.executable, os.path.abspath(__file__), self.socket, "-f", "{connection_file}"]
        folder = Path(self._folder.name, "kernels", "python3")
        folder.mkdir(parents=True)
        (folder / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        self._jupyter_path = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [self._folder.name, self._jupyter_path]))
        # The server's stdin is a pipe from this process: when this process ends, however it ends,
        # the server reads end-of-file and ends its kernels.
        self._server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", self.socket,
                                         *self.preload],
                                        stdin=subprocess.PIPE, env=dict(os.environ))
        for _ in range(200):  # until it listens (a few hundredths of a second); a kernel asked for sooner starts fresh
            if os.path.exists(self.socket) or self._server.poll() is not None:
                break
            time.sleep(0.01)
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.stdin.close()
            self._server.wait(timeout=60)
            self._server = None
            if self._jupyter_path is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = self._jupyter_path
        self._folder.cleanup()

    def __enter__(self) -> WarmKernels:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


# ------------------------------------------------------------------------------ launched by Jupyter

def launch(server: str, args: list[str]) -> None:
    """Ask the server for a forked kernel; stand in for it until it ends. Without one, exec a fresh one."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(server)
        request = {"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
        reply = json.loads(connection.recv(MESSAGE) or b'{"fresh": "the server ended"}')
    except OSError as error:
        reply = {"fresh": f"no server ({error})"}
    if "fresh" in reply:
        connection.close()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *args])
    kernel = reply["pid"]

    def forward(signum, frame):  # as Jupyter signals a fresh kernel's process group
        try:
            os.killpg(kernel, signum)
        except ProcessLookupError:
            pass

    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), forward)
    ended = connection.recv(MESSAGE)
    status = json.loads(ended)["status"] if ended else -signal.SIGKILL
    if status < 0:  # the kernel was killed by a signal: end as it did
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


# ------------------------------------------------------------------------------------------ the server

def _refusal(request: dict, library_env: dict[str, str]) -> str | None:
    """Why `request` cannot be a fork of this server (None: it can)."""
    asked = _library_env(request["env"])
    if asked != library_env:
        differ = sorted(key for key in asked.keys() | library_env.keys() if asked.get(key) != library_env.get(key))
        return f"its environment differs in {', '.join(differ)}"
    if len(os.listdir("/proc/self/task")) > 1:
        return "the server has more than one thread"
    return None


def serve(path: str, preload: list[str]):
    """Import the libraries `preload` names, then fork a kernel per request. Returns only in a
    forked child: its request and the launcher's standard streams. The server itself exits when its
    stdin ends."""
    import gc
    import importlib
    import selectors

    library_env = _library_env(os.environ)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for pytest; stdin's end stops the server
    # Listening before importing: a kernel asked for meanwhile waits for the imports, not starts fresh.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    # ipykernel names its inline backend before any cell runs, unless the kernel was told another;
    # matplotlib reads the name when it is imported, so it is imported with the name a kernel gives it.
    named = os.environ.get("MPLBACKEND")
    if not named:  # ipykernel's own test
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for name in preload:
        importlib.import_module(name)
    # The imports' 400,000 objects are never garbage: no kernel's collector visits them again (each
    # full collection, and ipykernel makes one as a kernel shuts down, spent 0.25 s on them).
    gc.freeze()
    os.environ.pop("MPLBACKEND")
    if named is not None:
        os.environ["MPLBACKEND"] = named

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the selector through the pipe
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(wake_read, selectors.EVENT_READ, "wake")
    selector.register(sys.stdin, selectors.EVENT_READ, "stdin")
    kernels: dict[int, socket.socket] = {}  # pid -> its launcher's connection

    def end_kernel(pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    while True:
        for key, _ in selector.select():
            if key.data == "stdin":
                if not sys.stdin.buffer.read1(MESSAGE):
                    for pid in kernels:
                        end_kernel(pid)
                    os._exit(0)
            elif key.data == "wake":
                os.read(wake_read, MESSAGE)
                while True:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    connection = kernels.pop(pid, None)
                    if connection is not None:
                        selector.unregister(connection)
                        try:
                            connection.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
                        except OSError:
                            pass
                        connection.close()
            elif key.data == "listener":
                connection, _ = listener.accept()
                data, fds, _, _ = socket.recv_fds(connection, MESSAGE, 3)
                request = json.loads(data)
                refusal = _refusal(request, library_env)
                if refusal:
                    connection.send(json.dumps({"fresh": refusal}).encode())
                    connection.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh Python has it
                    for other in [connection, listener, *kernels.values()]:
                        other.close()
                    selector.close()
                    for fd in (wake_read, wake_write):
                        os.close(fd)
                    return request, fds
                for fd in fds:
                    os.close(fd)
                kernels[pid] = connection
                selector.register(connection, selectors.EVENT_READ, pid)
                connection.send(json.dumps({"pid": pid}).encode())
            else:  # a launcher's connection: it only ever ends (Jupyter killed it), and so does its kernel
                connection, pid = key.fileobj, key.data
                if not connection.recv(MESSAGE):
                    selector.unregister(connection)
                    connection.close()
                    kernels.pop(pid, None)
                    end_kernel(pid)


def become_kernel(request: dict, fds: list[int]) -> None:
    """In the forked child: become `python -m ipykernel_launcher ARGS`, as launched."""
    import runpy

    os.setsid()  # a process group of its own, as Jupyter gives a kernel, for its signals
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    args = request["args"]
    sys.orig_argv[:] = [sys.executable, "-m", "ipykernel_launcher", *args]
    sys.argv[:] = ["-m", *args]
    sys.path[0] = os.getcwd()  # as -m puts it
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        become_kernel(*serve(sys.argv[2], sys.argv[3:]))
    else:
        launch(sys.argv[1], sys.argv[2:])
