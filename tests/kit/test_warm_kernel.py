"""A kernel forked from the warm server (tests/warm_kernel.py) is the kernel a learner gets fresh.

Every notebook the suite runs goes through that server, so what a notebook test shows depends on it
being faithful: these tests start one kernel forked and one fresh, from the same folder and
environment but for one variable (which is what makes the server start it fresh), and compare what
a notebook can see. They also hold the launcher to its part: an interrupt, a kill and the kernel's
exit status reach through it, and no kernel outlives its server.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the warm server forks and is started on Linux only")

from warm_kernel import WarmKernels  # noqa: E402

# What a notebook can see of how its kernel started.
FINGERPRINT = r'''
import json, locale, os, signal, sys
import matplotlib, matplotlib.pyplot as plt
shell = get_ipython()
handler = signal.getsignal(signal.SIGINT)
print(json.dumps({
    "forked": os.getppid() != int(os.environ["JPY_PARENT_PID"]),
    "path": sys.path, "cwd": os.getcwd(),
    "argv": [sys.argv[:-1], sys.orig_argv[:-1]],  # the last: each kernel's own connection file
    "env": {key: value for key, value in os.environ.items() if key != "WARM_KERNEL_PROBE"},
    "backend": matplotlib.get_backend(),
    "post_execute": sorted(f"{f.__module__}.{f.__qualname__}" for f in shell.events.callbacks["post_execute"]),
    "session_leader": os.getsid(0) == os.getpid(),
    "sigint": getattr(handler, "__qualname__", str(handler)),
    "encodings": [sys.stdout.encoding, sys.stderr.encoding, sys.getfilesystemencoding(),
                  locale.getpreferredencoding(False)],
    "modules": sorted(name for name in sys.modules
                      if name.split(".")[0] in ("labkit", "minimind_ref", "ipykernel", "matplotlib_inline", "IPython")),
}))
plt.plot([0, 1])
plt.show()
'''


def _run(client, code: str) -> list[dict]:
    outputs = []
    client.execute_interactive(code, timeout=120, output_hook=lambda message: outputs.append(message))
    return [m for m in outputs if m["msg_type"] in ("stream", "display_data", "execute_result", "error")]


def _start(folder, **env):
    from jupyter_client.manager import start_new_kernel

    return start_new_kernel(kernel_name="python3", cwd=str(folder), env={**os.environ, **env}, startup_timeout=120)


@pytest.fixture(scope="module")
def one_thread():
    # As in a test worker (conftest.py): with a thread pool, a library holds a thread the server
    # would have to fork, and it starts every kernel fresh. And a learner's backend, whatever the
    # caller's MPLBACKEND (CI's second pass sets Agg): these tests show a figure, and set a backend.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        patch.setenv("MKL_NUM_THREADS", "1")
        patch.delenv("MPLBACKEND", raising=False)
        yield


@pytest.fixture(scope="module")
def warm(one_thread):
    with WarmKernels() as kernels:
        yield kernels


def _seen(folder, **env) -> tuple[dict, list[str]]:
    manager, client = _start(folder, **env)
    try:
        outputs = _run(client, FINGERPRINT)
    finally:
        client.stop_channels()
        manager.shutdown_kernel()
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
    shown = [sorted(m["content"]["data"]) for m in outputs if m["msg_type"] == "display_data"]
    return json.loads(text), shown


def test_a_forked_kernel_sees_what_a_fresh_one_sees(warm, tmp_path):
    forked, forked_shown = _seen(tmp_path)
    fresh, fresh_shown = _seen(tmp_path, WARM_KERNEL_PROBE="1")  # a variable the server has not: started fresh
    assert forked.pop("forked") and not fresh.pop("forked"), "one kernel forked, one fresh"
    assert forked == fresh
    assert forked_shown == fresh_shown and any("image/png" in kinds for kinds in forked_shown), forked_shown


def test_a_kernel_with_another_matplotlib_backend_starts_fresh(warm, tmp_path):
    seen, shown = _seen(tmp_path, MPLBACKEND="Agg")
    assert not seen["forked"], "matplotlib reads MPLBACKEND as it is imported: the server imported it without"
    assert seen["env"]["MPLBACKEND"] == "Agg" and seen["backend"].lower() == "agg"


def test_an_interrupt_reaches_a_forked_kernel(warm, tmp_path):
    manager, client = _start(tmp_path)
    try:
        _forked_pid(client)
        client.execute("import time; time.sleep(600)")
        time.sleep(1)
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=120)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _forked_pid(client) -> int:
    """The kernel's process id, once it is seen to be forked from the server."""
    code = "import os; print(os.getpid(), os.getppid() != int(os.environ['JPY_PARENT_PID']))"
    pid, forked = _run(client, code)[0]["content"]["text"].split()
    assert forked == "True", "the kernel was started fresh"
    return int(pid)


def _ends(pid: int) -> bool:
    """Whether process `pid` is gone (a hang is a kernel that never goes: the limit is generous)."""
    for _ in range(600):
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return False


def test_a_kill_and_an_exit_status_reach_through_the_launcher(warm, tmp_path):
    manager, client = _start(tmp_path)
    kernel = _forked_pid(client)
    client.stop_channels()
    manager.shutdown_kernel(now=True)  # Jupyter kills the process it launched
    assert _ends(kernel), "the forked kernel outlived its launcher"

    manager, client = _start(tmp_path)
    _forked_pid(client)
    client.execute("import os; os._exit(3)")
    launcher = manager.provisioner.process
    for _ in range(600):
        if launcher.poll() is not None:
            break
        time.sleep(0.1)
    client.stop_channels()
    assert launcher.returncode == 3, "the launcher ends with its kernel's status"
    manager.cleanup_resources()


def test_no_kernel_outlives_its_server(one_thread, tmp_path):
    with WarmKernels(preload=()):  # what the server imports plays no part in its kernels' ends
        manager, client = _start(tmp_path)
        kernel = _forked_pid(client)
        client.stop_channels()
    assert _ends(kernel), "a forked kernel outlived the server"
    manager.shutdown_kernel(now=True)
