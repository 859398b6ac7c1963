"""Slides from a notebook, for a classroom walkthrough that needs no network: `make slides M=NN`.

`write_slides` turns `notebooks/NN_slug.ipynb`, with its stored outputs, into
`outputs/slides/NN_slug.slides.html`, a 16:9 reveal.js deck the instructor opens in any browser.
`SOLUTIONS=0` (`solutions=False`) writes `outputs/slides/NN_slug.no-solutions.slides.html`, the same
deck without the worked solutions, beside the full one. slide_deck.py decides what goes on which
slide (every slide titled by its section, content packed to fit and cut where it does not, never
scrolled; exercises with their solutions on the next slide or left out; the quiz a question per
slide; prose a slide leaves out in the speaker notes); slides.css sets the sizes it counts on.
Right arrow: next section; down arrow: next slide of the section; space: everything in order;
`s`: the speaker view with the notes.

Offline: the deck loads reveal.js and MathJax from `outputs/slides/assets/`, never from a CDN.
Those files come once from two wheels on PyPI, pinned in `requirements-slides.txt` (reveal.js as
vendored by sphinx-revealjs; MathJax 3's single-file TeX-to-SVG build, which needs no font files,
as vendored by django-static-mathjax), downloaded without their dependencies into
`.venv/slides-wheels/` and unpacked; nothing is installed into the environment. After that first
time, `make slides` needs no network at all.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

from labkit.course.slide_deck import deck_notebook
from labkit.i18n import tr

ASSETS = "assets"
# What each wheel vendors (a folder, or one file), and where it goes under outputs/slides/assets/.
_WHEEL_FILES: dict[str, tuple[str, str]] = {
    "sphinx_revealjs": ("sphinx_revealjs/_static/revealjs/", "reveal.js"),
    "django_static_mathjax": ("mathjax/static/mathjax/es5/tex-svg-full.js", "mathjax"),
}
MATHJAX_URL = f"{ASSETS}/mathjax/tex-svg-full.js"
REVEAL_PREFIX = f"{ASSETS}/reveal.js"
WIDTH, HEIGHT = 1280, 720  # 16:9; reveal.js scales the slide to the screen

# nbconvert's reveal template, minus everything it fetches from a CDN (jQuery, require.js,
# mermaid, the widget manager), with reveal.js loaded by plain script tags instead of require.js,
# and MathJax 3 set up for the notebooks' $...$ and $$...$$ instead of MathJax 2.
OFFLINE_TEMPLATE = r"""{%- extends 'reveal/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}
<script>
window.MathJax = {
  tex: {inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]],
        processEscapes: true},
  svg: {fontCache: "global"},
  options: {enableMenu: false}
};
</script>
<script src="{{ resources.mathjax_url }}"></script>
{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}
<style type="text/css">
{{ resources.slides_css }}
</style>
{%- endblock html_head_css -%}
{#- A figure's alt text (slide_deck.figure_alt: the words it shows), and its smallest text in its
    own pixels (labkit/figures.py, record_text_sizes), for the browser test to measure as the
    slide shows it: "none" for a figure without text. -#}
{% block data_png scoped %}
{%- set meta = output.metadata.get('image/png', {}) -%}
{%- set attributes = '' -%}
{%- if meta.alt -%}
{%- set attributes = 'alt="' ~ (meta.alt | e) ~ '" ' -%}
{%- endif -%}
{%- if 'text_px' in meta -%}
{%- set attributes = attributes ~ 'data-text-px="' ~ (meta.text_px if meta.text_px is not none else 'none') ~ '" ' -%}
{%- endif -%}
{{ super() | replace('<img ', '<img ' ~ attributes, 1) }}
{% endblock data_png %}
{#- Code as Pygments highlights it, which escapes it: nbconvert's own block runs its HTML
    sanitiser over that again, which changed no byte of any deck and took an eighth of the time
    a deck takes to write. -#}
{% block input %}
<div class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor" data-type="inline">
     <div class="cm-editor cm-s-jupyter">
{{ cell.source | highlight_code(metadata=cell.metadata) }}
     </div>
</div>
{%- endblock input %}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, hash: true, slideNumber: "c/t", center: false, margin: 0,
  transition: "none", width: {{ resources.slide_width }}, height: {{ resources.slide_height }},
  plugins: [RevealNotes]
});
</script>
{% endblock footer_js %}
"""


class SlidesError(RuntimeError):
    """The slide assets could not be fetched, or a notebook cannot be made into slides."""


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
            raise SlidesError(tr("no {name} wheel in {folder} after downloading requirements-slides.txt",
                                 name=name, folder=wheels_dir))
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
        raise SlidesError(tr("make slides needs reveal.js and MathJax once, from PyPI ({file}), and could not "
                             "download them:\n{pip}\nRun it once with a network connection; after that it works "
                             "offline.", file=requirements.name, pip=result.stderr.strip()))


def _unpack(wheel: Path, prefix: str, target: Path) -> None:
    """Extract the file `prefix`, or the files under the folder `prefix`, from `wheel` into the
    folder `target`, atomically (all or nothing)."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member == prefix:
                relative = Path(member).name
            elif prefix.endswith("/") and member.startswith(prefix) and not member.endswith("/"):
                relative = member[len(prefix):]
            else:
                continue
            destination = partial / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(archive.read(member))
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def deck_name(notebook_path: Path, solutions: bool = True) -> str:
    """The deck's file name: `NN_slug.slides.html` with the worked solutions, and
    `NN_slug.no-solutions.slides.html` without them, so a lecture copy and the copy handed out after
    it sit side by side."""
    return f"{notebook_path.stem}{'' if solutions else '.no-solutions'}.slides.html"


def write_slides(notebook_path: Path, out_dir: Path, root: Path, solutions: bool = True) -> Path:
    """Write `out_dir/<notebook>.slides.html` from the notebook's stored outputs; return its path.
    `solutions=False` leaves the worked solutions out of the deck."""
    ensure_assets(out_dir, root)
    notebook = nbformat.read(notebook_path, as_version=4)
    deck = deck_notebook(notebook, notebook_path, out_dir, solutions=solutions)
    html, _ = _exporter().from_notebook_node(deck, resources=deck_resources(notebook_path))
    target = out_dir / deck_name(notebook_path, solutions)
    target.write_text(html)
    return target


# What nbconvert's HTML exporter adds to a page once its template has rendered it: alt text on each
# image without one (a figure with words has its own: slide_deck.figure_alt), and a tabindex on each
# cell's input and output, so that a keyboard reaches them. nbconvert parses the whole page with
# BeautifulSoup and writes it out again to add them, which took half the time a deck takes;
# `accessible` adds them to the page as rendered (tests/kit/test_slides.py holds the result to
# nbconvert's own page, both parsed).
NO_ALT = "No description has been provided for this image"
_IMAGE_WITHOUT_ALT = re.compile(r"<img\b(?![^>]*\salt=)")
_FOCUSABLE = re.compile(r'(<div class="(?:[^"]* )?(?:jp-Cell-inputWrapper|jp-OutputArea-output)(?: [^"]*)?")'
                        r'(?![^>]*\stabindex=)')


def accessible(html: str) -> str:
    """`html` with nbconvert's alt text on every image that has none and a tabindex on every cell part."""
    return _FOCUSABLE.sub(r'\1 tabindex="0"', _IMAGE_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}"', html))


def deck_resources(notebook_path: Path) -> dict:
    """What the template reads besides the notebook: the deck's name, the slide's size, slides.css."""
    return {"metadata": {"name": notebook_path.stem}, "slide_width": WIDTH, "slide_height": HEIGHT,
            "slides_css": Path(__file__).with_name("slides.css").read_text()}


def exporter_options() -> dict:
    """nbconvert's SlidesExporter set up with OFFLINE_TEMPLATE."""
    from jinja2 import DictLoader

    return {"extra_loaders": [DictLoader({"offline_reveal.html.j2": OFFLINE_TEMPLATE})],
            "template_file": "offline_reveal.html.j2", "reveal_url_prefix": REVEAL_PREFIX,
            "mathjax_url": MATHJAX_URL, "reveal_theme": "white"}


@functools.cache
def _exporter():
    """One exporter per process: it compiles its templates the first time it writes a deck (a fifth
    of the time a deck took) and keeps them for the next."""
    from nbconvert.exporters import SlidesExporter, TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class OfflineSlides(SlidesExporter):
        def from_notebook_node(self, nb, resources=None, **kw):
            # HTMLExporter.from_notebook_node (nbconvert is pinned): its filters, the template, then
            # `accessible` instead of its BeautifulSoup pass
            language = nb.metadata.get("language_info", {})
            lexer = language.get("pygments_lexer", language.get("name"))
            self.register_filter("highlight_code",
                                 self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata,
                                                                           parent=self, resources=resources))
            html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return accessible(html), resources

    return OfflineSlides(**exporter_options())


def remote_urls(html: str) -> list[str]:
    """The http(s) URLs that the page itself loads (scripts, style sheets, images, frames): an
    offline deck has none. Links a reader may click (a paper on arXiv) are not loads."""
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html, re.I)
    return [url for tag in tags for url in re.findall(r"""(?:src|href)\s*=\s*["'](https?://[^"']+)""", tag)]
