"""A screenshot of notebook 00's course map as a learner sees it: in a real JupyterLab, in Chromium.

    .venv/bin/python tests/kit/lab_screenshot.py [--out outputs/screenshots]

Starts JupyterLab (the course's pinned one) on a copy of notebooks/00_start_here.ipynb in a
temporary folder, so nothing of the answer book is run or saved; opens it in headless Chromium
(the system's, as the slides' browser test uses), runs the cells up to the map one by one with
Shift+Enter, the way a learner does, and waits for the kernel. Then it saves a picture of the map's
cell, `00_map.png`, and prints what the page shows there: the pictures (their drawn size) and any
figure that arrived as text. Exit 1 when the map is not two pictures, 2 for a usage mistake.

The tests read the same outputs from a kernel without a browser (tests/rendered.py, on every
stored notebook and every learner copy's run); this script is the look a reviewer takes with their
own eyes, in the front end learners use (docs/maintainers.md).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
START_LIMIT = 180  # seconds for JupyterLab to answer, and for the kernel to draw the map, on a busy laptop


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _map_cell_index() -> int:
    """The position, among the notebook's cells, of the first cell that draws the map."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    return next(i for i, cell in enumerate(cells)
                if cell["cell_type"] == "code" and "show_map(" in "".join(cell["source"]))


def _serve(folder: Path, port: int, token: str) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}  # a learner's default
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--ServerApp.root_dir={folder}", f"--IdentityProvider.token={token}",
               "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    server = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + START_LIMIT
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5)
            return server
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"JupyterLab stopped at start (exit {server.returncode})") from None
            time.sleep(0.5)
    server.terminate()
    raise RuntimeError(f"JupyterLab did not answer within {START_LIMIT} s")


def screenshot_map(out: Path) -> dict:
    """Run notebook 00 up to its map in JupyterLab and save the map's cell as out/00_map.png.
    Returns what the cell shows: {"pictures": [(width, height), ...], "figure_texts": [...], "png": path}."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(NOTEBOOK, Path(folder) / NOTEBOOK.name)
        port, token = _free_port(), secrets.token_hex(16)
        server = _serve(Path(folder), port, token)
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1800})  # the whole map cell in view
                page.goto(f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK.name}?token={token}")
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=START_LIMIT * 1000)
                page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                       timeout=START_LIMIT * 1000)
                cells = page.locator(".jp-Notebook .jp-Cell")
                target = _map_cell_index()
                cells.nth(0).click()
                page.keyboard.press("Escape")  # command mode: Shift+Enter runs a cell and selects the next
                for _ in range(target + 1):
                    page.keyboard.press("Shift+Enter")
                    page.wait_for_timeout(500)  # a learner's pace: each cell is queued before the next key
                cell = cells.nth(target)
                try:
                    cell.locator(".jp-OutputArea-output").first.wait_for(timeout=START_LIMIT * 1000)
                except Exception:
                    page.screenshot(path=str(out / "00_map.failed.png"))  # what the page showed instead
                    raise
                page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                       timeout=START_LIMIT * 1000)
                no_news = page.get_by_role("button", name="No")  # JupyterLab asks once about its news feed
                if no_news.count():
                    no_news.first.click()
                cell.scroll_into_view_if_needed()
                boxes = cell.locator(".jp-OutputArea-output img").evaluate_all(
                    "images => images.map(i => ({w: i.getBoundingClientRect().width, "
                    "h: i.getBoundingClientRect().height}))")
                pictures = [(box["w"], box["h"]) for box in boxes]
                texts = [text for text in cell.locator(".jp-OutputArea-output").all_inner_texts()
                         if text.strip().startswith("<Figure size")]
                png = out / "00_map.png"
                cell.screenshot(path=str(png))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {"pictures": pictures, "figure_texts": texts, "png": png}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "outputs" / "screenshots"), help="folder for 00_map.png")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        parser.error(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set ATTENTION_LAB_CHROMIUM)")
    seen = screenshot_map(Path(args.out))
    print(f"Notebook 00's map cell in JupyterLab: {len(seen['pictures'])} pictures "
          f"({', '.join(f'{w:.0f}x{h:.0f} px' for w, h in seen['pictures']) or 'none'}), "
          f"{len(seen['figure_texts'])} figures as text; saved {seen['png']}")
    return 0 if len(seen["pictures"]) == 2 and not seen["figure_texts"] else 1


if __name__ == "__main__":
    sys.exit(main())
