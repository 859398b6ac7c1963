"""`make lab` opens JupyterLab on the learner's workspace/ (`make answers` on the answer book,
notebooks/), with the course as the server's root so that relative links open: start the very
command it runs, on a free port and without a browser, and load the page it serves (loopback only,
a few seconds)."""

import re
import shlex
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fetch_when_listening(url: str, seconds: float) -> str:
    """The page at `url`; the address is printed a moment before the socket listens, so retry."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as page:
                return page.read().decode()
        except urllib.error.URLError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_make_answers_opens_the_answer_book():
    command = subprocess.run(["make", "-s", "-n", "answers"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    assert "jupyter lab --ServerApp.root_dir=. " in command and "--LabApp.default_url=/lab/tree/notebooks" in command


def test_lang_zh_cn_makes_and_opens_the_chinese_copies():
    """make lab LANG=zh-CN: the Chinese copies (workspace/zh-CN/), opened where they are; the answer book
    too (notebooks/zh-CN/). A Chinese notebook's kernel runs in that folder, and speaks Chinese."""
    lab = subprocess.run(["make", "-s", "-n", "lab", "LANG=zh-CN"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    assert any(line.endswith("-m labkit.course --lang zh-CN workspace") for line in lab)
    assert "--LabApp.default_url=/lab/tree/workspace/zh-CN" in lab[-1]
    answers = subprocess.run(["make", "-s", "-n", "answers", "LANG=zh-CN"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip().splitlines()[-1]
    assert "--LabApp.default_url=/lab/tree/notebooks/zh-CN" in answers


def test_make_lab_serves_jupyterlab_on_the_workspace():
    lines = subprocess.run(["make", "-s", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.strip().splitlines()
    assert any(line.endswith("-m labkit.course --lang en workspace") for line in lines)  # the copies come first
    command = lines[-1]
    assert "jupyter lab --ServerApp.root_dir=. " in command and "--LabApp.default_url=/lab/tree/workspace" in command
    server = subprocess.Popen(shlex.split(command) + ["--no-browser", "--ServerApp.port=0"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        serving, url, deadline = None, None, time.monotonic() + 90
        while time.monotonic() < deadline and url is None:
            line = server.stderr.readline()
            if not line and server.poll() is not None:
                break
            serving = serving or re.search(r"Serving notebooks from local directory: (\S+)", line)
            found = re.search(r"(http://127\.0\.0\.1:\d+/lab[/\w]*\?token=\w+)", line)
            url = found.group(1) if found else None
        assert serving and Path(serving.group(1)) == ROOT
        assert url, "JupyterLab printed no address"
        assert "/lab/tree/workspace?" in url, "the file browser opens on the workspace"
        assert "JupyterLab" in fetch_when_listening(url, seconds=30)
    finally:
        server.terminate()
        server.wait(timeout=30)
