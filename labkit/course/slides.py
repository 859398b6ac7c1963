"""Slides from a notebook, for a classroom walkthrough that needs no network: `make slides M=NN`.

`write_slides` turns `notebooks/NN_slug.ipynb`, with its stored outputs, into
`outputs/slides/NN_slug.slides.html`, a reveal.js deck the instructor opens in any browser:

- every Markdown cell that starts with a `#` or `##` heading opens a new slide (right arrow);
- every other cell is a sub-slide of its section (down arrow), so the deck goes cell by cell, and
  space walks through everything in order; exercise solutions come one step after their task;
- `s` opens reveal.js's speaker view.

Offline: the deck loads reveal.js and MathJax from `outputs/slides/assets/`, never from a CDN.
Those files come once from two wheels on PyPI, pinned in `requirements-slides.txt`
(reveal.js as vendored by sphinx-revealjs, MathJax 2 as vendored by jupyter-server-mathjax),
downloaded without their dependencies into `.venv/slides-wheels/` and unpacked; nothing is
installed into the environment. After that first time, `make slides` needs no network at all.
Widgets cannot run without a kernel; their cells show the static figure that precedes them.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

ASSETS = "assets"
# What each wheel vendors, and where it goes under outputs/slides/assets/.
_WHEEL_FILES: dict[str, tuple] = {
    "sphinx_revealjs": ("sphinx_revealjs/_static/revealjs/", "reveal.js"),
    "jupyter_server_mathjax": ("jupyter_server_mathjax/static/", "mathjax"),
}
# MathJax 2, with the one combined configuration that jupyter-server-mathjax ships.
MATHJAX_URL = f"{ASSETS}/mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
REVEAL_PREFIX = f"{ASSETS}/reveal.js"

# nbconvert's reveal template, minus everything it fetches from a CDN (jQuery, require.js,
# mermaid, the widget manager), with reveal.js loaded by plain script tags instead of require.js.
OFFLINE_TEMPLATE = """{%- extends 'reveal/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_css -%}
<style type="text/css">
/* Code at a size where a 100-character line fits the slide; a taller cell scrolls. */
:root { --jp-code-font-size: 15px; --jp-content-font-size1: 18px; }
.reveal .slides section { height: 100%; overflow-y: auto; }
.reveal .jp-OutputArea-output img { max-height: 560px; width: auto; }
</style>
{%- endblock html_head_css -%}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, slideNumber: "c/t",
  width: {{ resources.reveal.width | default('1100', true) }}, height: 760,
  plugins: [RevealNotes]
});
Reveal.on("slidechanged", function (event) {
  if (window.MathJax && MathJax.Hub) { MathJax.Hub.Queue(["Typeset", MathJax.Hub, event.currentSlide]); }
});
</script>
{% endblock footer_js %}
"""

_HEADING = re.compile(r"^\s*#{1,2}\s")


class SlidesError(RuntimeError):
    """The slide assets could not be fetched, or a notebook cannot be made into slides."""


def slide_types(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `notebook` with reveal.js slide metadata: a section per heading, a step per cell."""
    deck = copy.deepcopy(notebook)
    for index, cell in enumerate(deck.cells):
        opens_section = index == 0 or (cell.cell_type == "markdown" and _HEADING.match(cell.source))
        cell.metadata["slideshow"] = {"slide_type": "slide" if opens_section else "subslide"}
        cell.metadata.get("jupyter", {}).pop("source_hidden", None)  # a hidden solution: its own step
    return deck


def ensure_assets(out_dir: Path, root: Path) -> Path:
    """Unpack reveal.js and MathJax into `out_dir/assets` (once), downloading the wheels if needed."""
    assets = out_dir / ASSETS
    if all((assets / target).is_dir() for _, target in _WHEEL_FILES.values()):
        return assets
    wheels_dir = root / ".venv" / "slides-wheels"
    wheels = _find_wheels(wheels_dir)
    if len(wheels) < len(_WHEEL_FILES):
        _download_wheels(root / "requirements-slides.txt", wheels_dir)
        wheels = _find_wheels(wheels_dir)
    for name, (prefix, target) in _WHEEL_FILES.items():
        if name not in wheels:
            raise SlidesError(f"no {name} wheel in {wheels_dir} after downloading requirements-slides.txt")
        _unpack(wheels[name], prefix, assets / target)
    return assets


def _find_wheels(folder: Path) -> dict[str, Path]:
    found = {}
    for wheel in sorted(folder.glob("*.whl")) if folder.is_dir() else []:
        name = wheel.name.split("-", 1)[0].lower()
        if name in _WHEEL_FILES:
            found[name] = wheel
    return found


def _download_wheels(requirements: Path, folder: Path) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--quiet", "--dest", str(folder), "-r", str(requirements)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SlidesError("make slides needs reveal.js and MathJax once, from PyPI "
                          f"({requirements.name}), and could not download them:\n{result.stderr.strip()}\n"
                          "Run it once with a network connection; after that it works offline.")


def _unpack(wheel: Path, prefix: str, target: Path) -> None:
    """Extract the files under `prefix` in `wheel` into `target`, atomically (all or nothing)."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith(prefix) and not member.endswith("/"):
                destination = partial / member[len(prefix):]
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(archive.read(member))
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def write_slides(notebook_path: Path, out_dir: Path, root: Path) -> Path:
    """Write `out_dir/<notebook>.slides.html` from the notebook's stored outputs; return its path."""
    from jinja2 import DictLoader
    from nbconvert.exporters import SlidesExporter

    ensure_assets(out_dir, root)
    deck = slide_types(nbformat.read(notebook_path, as_version=4))
    exporter = SlidesExporter(extra_loaders=[DictLoader({"offline_reveal.html.j2": OFFLINE_TEMPLATE})],
                              template_file="offline_reveal.html.j2", reveal_url_prefix=REVEAL_PREFIX,
                              mathjax_url=MATHJAX_URL, reveal_theme="white")
    html, _ = exporter.from_notebook_node(deck, resources={"metadata": {"name": notebook_path.stem}})
    target = out_dir / f"{notebook_path.stem}.slides.html"
    target.write_text(html)
    return target


def remote_urls(html: str) -> list[str]:
    """The http(s) URLs that the page itself loads (scripts, style sheets, images, frames): an
    offline deck has none. Links a reader may click (a paper on arXiv) are not loads."""
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html, re.I)
    return [url for tag in tags for url in re.findall(r"""(?:src|href)\s*=\s*["'](https?://[^"']+)""", tag)]
