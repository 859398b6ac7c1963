"""Figures drawn below the cells of a notebook, whatever the environment says.

Jupyter draws matplotlib figures inline by default, unless the environment names another backend.
`MPLBACKEND=Agg` is a common setting on headless servers, in containers and in CI images, and with
it every pyplot figure of a notebook is made and never drawn: the learner sees no plot, and a
stored notebook re-run under strict nbval loses its pictures. And under the inline backend itself, a
Figure made without pyplot shows as text until pyplot has loaded the backend. Every notebook of the
course starts with `show_figures_inline()`, which sets inline figures up in both cases and keeps any
other backend that can show them.

`readable_ticks` gives log axes and large numbers plain tick labels; the experiment scaffold
applies it to every figure it saves, so a script's plot reads right without asking.

Each figure a notebook draws inline carries, in its output's metadata, the size of the smallest
text on it in the PNG's own pixels (`"image/png": {"text_px": 13.9}`, `record_text_sizes`), so
that the slides can show it large enough to read (labkit/course/slide_deck.py), and the texts it
shows (`"texts"`), which the tests read instead of pixels.

In a Chinese notebook (its kernel runs in notebooks/zh-CN/ or workspace/zh-CN/), the same first call
makes the kernel speak Chinese (labkit/i18n/output.py, `translate_cells`): each line a cell prints is
matched against the templates of that cell's source, and each figure is translated before it is drawn.

`figure_tr` and `use_chinese_font` put the Chinese edition's words on a figure only where they can
be drawn: matplotlib's own fonts have no Chinese characters. The course pins one that has them,
Noto Sans CJK SC from the `mplfonts` package (requirements.txt), so Chinese labels look the same on
every machine; without it, a font with Chinese installed on the system is used (Source Han Sans,
WenQuanYi, PingFang, Microsoft YaHei, ...), and with none at all the figure stays English rather
than showing empty boxes.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import wraps

from .i18n import language, tr
from .i18n.fonts import chinese_font, use_chinese_font

__all__ = ["chinese_font", "figure_tr", "show_figures_inline", "plain_number", "readable_ticks",
           "use_chinese_font"]

def figure_tr(text: str, /, **fields: object) -> str:
    """`tr` for a text drawn on a figure: the current language where a font can draw it (Chinese
    needs `chinese_font()`), else English. Mark the literal for the catalog with `phrase`:
    `figure_tr(phrase("layer {index}"), index=2)`."""
    if language() == "en" or chinese_font() is not None:
        return tr(text, **fields)
    return text.format(**fields) if fields else text


def show_figures_inline() -> bool:
    """In a Jupyter kernel, draw figures below the cells, as `%matplotlib inline` does, unless the
    kernel already uses a backend that shows them another way. Returns True if it set inline up.

    Two cases need it. With a backend that cannot show anything (`MPLBACKEND=Agg`, pdf, svg, ...),
    pyplot's figures would be made and never drawn. And with the kernel's own default, the inline
    backend, IPython learns to draw a Figure as a picture only once pyplot has loaded that backend:
    a Figure built without pyplot (the course map) and displayed before that shows as the text
    `<Figure size 1220x560 with 1 Axes>`. `%matplotlib inline` registers the picture formats at
    once, in both cases. A backend of another kind (ipympl's `%matplotlib widget`, a window) is
    kept. Outside a Jupyter kernel (a script, a terminal IPython) nothing changes, so a cell copied
    into a script still runs and still saves its figures where the script says.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python without IPython: not a notebook
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:  # not a Jupyter kernel
        return False
    if language() == "zh-CN":  # what the cells print, in Chinese (labkit/i18n/output.py)
        from .i18n.output import translate_cells
        translate_cells(shell)
    import matplotlib
    from matplotlib.backends import BackendFilter, backend_registry

    backend = matplotlib.get_backend().lower()
    inline = backend in ("inline", "module://matplotlib_inline.backend_inline")
    if not inline and backend not in backend_registry.list_builtin(BackendFilter.NON_INTERACTIVE):
        return False
    shell.run_line_magic("matplotlib", "inline")
    _draw_each_figure_once(shell)
    record_text_sizes(shell)
    return True


def _draw_each_figure_once(shell) -> None:
    """After each cell, pyplot draws every figure the cell changed (its hook for interactive
    shells), and then the inline backend draws each again, as the picture below the cell, and
    closes it. The first drawing is never shown, and it was a third of the time a figure takes. So
    pyplot's hook is moved to run after the backend's: the figures it would draw have been drawn
    and closed by then. The hook stays (plt.ioff() removes it, a backend of another kind needs it)."""
    from matplotlib import pyplot

    hook = getattr(pyplot, "_draw_all_if_interactive", None)
    if hook is not None and hook in shell.events.callbacks["post_execute"]:
        shell.events.unregister("post_execute", hook)
        shell.events.register("post_execute", hook)


TEXT_PX = "text_px"  # the key, in an output's "image/png" metadata, of its smallest text in image pixels
TEXTS = "texts"  # the key of what the picture says: labkit.i18n.output.figure_texts, as drawn


def record_text_sizes(shell) -> None:
    """Make the kernel's PNG picture of a Figure carry the size of its smallest text, in the PNG's
    own pixels, as `metadata["image/png"]["text_px"]`, and every text it shows, as
    `metadata["image/png"]["texts"]` (figure_texts: each text and its size, tick labels marked), so
    that a test reads a figure's labels without looking at its pixels. In Chinese (a translator is
    active: labkit/i18n/output.py), the figure is translated first, so both are the Chinese
    picture's. A slide shows the image at some scale; the
    text the audience reads is this size times that scale, which the slides need (to draw a
    figure large enough) and the browser test measures. The size is what matplotlib drew, not what
    the code asked for: every visible text of the picture (tick labels, legends, annotations),
    its font size in points at the picture's resolution; None for a picture without text."""
    from matplotlib.figure import Figure

    formatter = shell.display_formatter.formatters["image/png"]
    try:
        draw = formatter.lookup_by_type(Figure)
    except KeyError:  # the backend draws figures in another format: nothing to record
        return
    if getattr(draw, "records_text", False):
        return

    from .i18n.output import figure_texts, translate_figure

    @wraps(draw)
    def picture_with_text_sizes(figure):
        translate_figure(figure)  # in Chinese (a translator is active): its texts, before it is drawn
        with _text_sizes_drawn() as sizes:
            drawn = draw(figure)
        data, metadata = drawn if isinstance(drawn, tuple) else (drawn, None)
        if data is None:
            return drawn
        return data, {**(metadata or {}), TEXT_PX: round(min(sizes), 1) if sizes else None,
                      TEXTS: figure_texts(figure, figure.dpi)}

    picture_with_text_sizes.records_text = True
    formatter.for_type(Figure, picture_with_text_sizes)


@contextmanager
def _text_sizes_drawn():
    """The pixel size of every non-empty visible text matplotlib draws while the block runs."""
    from matplotlib.text import Text

    sizes: list[float] = []
    draw = Text.draw

    @wraps(draw)
    def recording(text, renderer, *args, **kwargs):
        if renderer is not None and text.get_visible() and text.get_text().strip():
            sizes.append(renderer.points_to_pixels(text.get_fontsize()))
        return draw(text, renderer, *args, **kwargs)

    Text.draw = recording
    try:
        yield sizes
    finally:
        Text.draw = draw


def plain_number(value: float, _position: object = None) -> str:
    """A tick label a reader takes in at a glance: 2, 50, 0.5, 5e-5, 12k, 3M, 1G (not 2×10⁰ or 10⁸)."""
    if value == 0:
        return "0"
    if abs(value) < 0.01:  # 5e-5, shorter than 0.00005
        mantissa, exponent = f"{value:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _whole_or_plain(value: float, _position: object = None) -> str:
    return f"{value:,.0f}" if value >= 1 and float(value).is_integer() else plain_number(value)


def readable_ticks(figure) -> None:
    """Tick labels a reader takes in at a glance, on every axis of `figure` whose ticks are still
    matplotlib's own (axes whose ticks were set by hand are left as they are):

    - a log axis is labelled with plain numbers (plain_number) at each power of ten, or at 1, 2
      and 5 times each when it spans less than two decades; minor ticks stay unlabelled.
      matplotlib's own labels are powers (10⁸) and, over less than a decade, minor labels such as
      2×10⁰, 3×10⁰, long enough to run into the axis label;
    - a linear axis whose numbers reach 100,000 is labelled 200k, 1M, ... instead of carrying a
      separate "1e6" multiplier in its corner, which a reader easily misses.

    Call it once the data are drawn: it reads each axis's limits.
    """
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, ScalarFormatter

    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(abs(v) for v in axis.get_view_interval())
            base = getattr(axis.get_transform(), "base", 10)
            if axis.get_scale() == "log" and isinstance(axis.get_major_locator(), LogLocator) and base != 10:
                # powers of 2 (256, 512, 1,024), as a script that chose base 2 wants them
                axis.set_major_formatter(FuncFormatter(_whole_or_plain))
                axis.set_minor_formatter(NullFormatter())
            elif axis.get_scale() == "log" and isinstance(axis.get_major_locator(), LogLocator):
                narrow = low > 0 and math.log10(high / low) < 2
                axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
                axis.set_major_formatter(FuncFormatter(plain_number))
                axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10))))
                axis.set_minor_formatter(NullFormatter())
            elif (axis.get_scale() == "linear" and type(axis.get_major_formatter()) is ScalarFormatter
                  and high >= 1e5):
                axis.set_major_formatter(FuncFormatter(plain_number))
