"""show_heatmaps: the one function every module uses to draw attention weights.

An attention map is a [T, S] table: one row per query token, one column per key token, each cell
the weight that query puts on that key. Every module of the course looks at such tables (one head,
the heads of a layer, every layer and head, masks, RoPE scores, FlashAttention tiles), so they are
all drawn by this function and read the same way everywhere: queries down the left, keys along
the bottom, and one colour scale shared by every map in a figure, so that a brighter cell means
a larger weight whichever map it is in.

    weights [T, S]          one map
    weights [N, T, S]       a row of N maps (the heads of one layer)
    weights [R, C, T, S]    a grid of R x C maps (layers x heads)

Where the weights come from: a forward pass with `output_attentions=True` returns one tensor per
layer, each [B, H, T, S]. Stack them and pick one example of the batch:

    >>> import torch
    >>> from minimind_ref import MiniMindConfig, MiniMindForCausalLM
    >>> from labkit.heatmaps import show_heatmaps
    >>> model = MiniMindForCausalLM(MiniMindConfig(hidden_size=64, num_hidden_layers=2,
    ...                             num_attention_heads=4, num_key_value_heads=2, vocab_size=128))
    >>> out = model(torch.tensor([[5, 17, 42, 8]]), output_attentions=True)
    >>> weights = torch.stack(out.attentions)[:, 0]       # L x [B, H, T, S] -> [L, H, T, S]
    >>> fig = show_heatmaps(weights, x_labels=["The", "cat", "sat", "."])
    >>> fig.savefig("attention.png")                     # in a script; a notebook shows it

In a notebook the figure appears once, below the cell, whether the line is `fig = show_heatmaps(...)`,
`show_heatmaps(...);` or a bare `show_heatmaps(...)` (see `HeatmapFigure`). In a script nothing is
shown: call `fig.savefig(path)`, or `plt.show()` yourself for a window. It never calls plt.show(),
so it works headless.

Missing values: NaN and +-inf cells are drawn blank (the background shows through) and are left
out of the colour scale. That is how the -inf that a mask writes into the scores before the
softmax appears. A map with no finite value at all is refused, since there is nothing to draw.

Bool and integer inputs (a mask, counts) are drawn as numbers (False = 0, True = 1).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .arguments import flag, real, shown

__all__ = ["HeatmapFigure", "show_heatmaps"]

# Tick labels are set at one readable size and never shrink: when an axis has more tokens than
# fit at that size, only every k-th token is labelled, so labels never overlap. Sizes in points.
TICK_POINTS = 9.0
_LABEL_PITCH = 1.35  # the room one label needs along its axis, in multiples of its font size

# Default size of one map, in inches: this much per token, within bounds (tiny maps still get
# room for their labels; long sequences do not grow without limit).
_INCHES_PER_TOKEN = 0.3
_MAP_INCHES = (2.4, 6.0)
# A whole grid wider than _MAX_FIGURE_WIDTH (what a notebook shows at full size, about 1000 pixels)
# or taller than _MAX_FIGURE_HEIGHT shrinks its maps (to no less than _MIN_MAP_INCHES): a wider
# figure is scaled down on the screen, and its labels with it.
_MAX_FIGURE_WIDTH = 10.0
_MAX_FIGURE_HEIGHT = 16.0
_MIN_MAP_INCHES = 1.2
# map_size beyond this many inches a side is a mistake (pixels or tokens given as inches), not a figure.
_MAX_MAP_INCHES = 20.0
# annotate=True: a number in every cell; beyond this many cells a side they cannot be read, and
# drawing a million of them takes minutes.
_MAX_ANNOTATED_CELLS = 40
# A token label longer than this is cut (ending in an ellipsis): the figure grows with its labels.
_LABEL_CHARACTERS = 40
# Beyond this many maps the grid's labels no longer fit a screen (MiniMind2's 8 layers x 8 heads is
# 64), and beyond this many cells the values outnumber the pixels and fill the memory (float64).
_MAX_MAPS = 256
_MAX_CELLS = 2 ** 24
# The colour scale's ends, at most: matplotlib subtracts and averages them, which overflows a
# float64 (largest 1.8e308) for ends near its limit.
_MAX_SCALE = 1e300


class HeatmapFigure(Figure):
    """A matplotlib Figure that a notebook shows once, however the cell ends.

    A figure made with pyplot is drawn by Jupyter's inline backend at the end of the cell. When
    the same figure is also the cell's value (a bare `show_heatmaps(...)` as the last line),
    IPython draws it a second time as the cell's result; that duplicate is a well-known
    surprise. This figure instead displays itself and leaves pyplot, so the end of the cell
    has nothing left to draw. Everything else is a plain Figure (savefig, axes, ...).
    """

    def _ipython_display_(self) -> None:
        from IPython import get_ipython
        from IPython.display import publish_display_data

        shell = get_ipython()
        if shell is None:  # displayed outside IPython: nothing to draw into
            return
        data, metadata = {}, {}
        for mime, formatter in shell.display_formatter.formatters.items():
            if not getattr(formatter, "enabled", True):
                continue
            result = formatter(self)  # the formatters registered for Figure: png, text, ...
            if isinstance(result, tuple):
                result, meta = result
                if meta:
                    metadata[mime] = meta
            if result is not None:
                data[mime] = result
        publish_display_data(data, metadata)
        if "inline" in matplotlib.get_backend().lower():
            plt.close(self)  # drawn now; the inline backend must not draw it again


def show_heatmaps(
    weights: Any,
    x_labels: Sequence[Any] | None = None,
    y_labels: Sequence[Any] | None = None,
    titles: Any | None = None,
    row_name: str = "layer",
    col_name: str = "head",
    xlabel: str = "key",
    ylabel: str = "query",
    suptitle: str | None = None,
    cmap: Any = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    annotate: bool | str = "auto",
    fmt: str = ".2f",
    colorbar: bool = True,
    map_size: Any | None = None,
) -> Figure:
    """Draw one attention map, a row of them, or a grid, on one shared colour scale.

    weights: a torch.Tensor (any dtype or device; it may require grad) or a numpy array,
        [T, S] (one map), [N, T, S] (a row of N maps) or [R, C, T, S] (R rows x C columns).
        NaN and +-inf cells are drawn blank and left out of the colour scale.
    x_labels: the S key tokens, along the x axis. y_labels: the T query tokens, along the
        y axis; by default the key tokens when T == S (self-attention). Without labels the
        axes show positions 0, 1, 2, ...
    titles: one title per map, a flat list of R*C strings (row by row) or a nested [R][C]
        list; one string for a single map. By default a single map has none, a row of maps
        "head 0", "head 1", ... and a grid "layer 0, head 1" (`row_name`, `col_name`);
        [""] * n for none.
    xlabel, ylabel: the axis names, written once per row and column of the grid.
    suptitle: one title over the whole figure.
    cmap: a matplotlib colormap or its name.
    vmin, vmax: the colour scale shared by every map. By default from min(0, smallest value)
        to the largest value, so that zero weight always has the same colour.
    annotate: write each value in its cell, in black or white, whichever reads better on that
        cell's colour. "auto" (the default) does so when the maps are small enough for the
        numbers to be read, at most 10 x 10 cells of at least a quarter inch: a reader then sees
        the weights themselves, not only their colours. True or False decides. `fmt` is the
        format spec, ".2f" by default.
    colorbar: one colour bar for the whole figure.
    map_size: inches per map, a number (square) or (width, height); by default chosen from
        T and S so that the token labels stay readable.

    Returns the figure, open: a notebook shows it below the cell, a script saves it with
    `fig.savefig(path)`. Wrong input raises a ValueError (TypeError for a wrong type) that
    names the argument, what it was and what is expected.
    """
    data = _as_float_array(weights)  # [R, C, T, S] float64, NaN where missing
    rows, cols, T, S = data.shape
    finite = np.isfinite(data)
    if not finite.any():
        raise ValueError(
            f"weights has no finite value (all {data.size} entries are NaN or inf): nothing to draw.")

    x_text = _labels("x_labels", x_labels, S, "S, the number of keys (the last dimension of weights)")
    y_text = _labels("y_labels", y_labels, T, "T, the number of queries (the second-to-last dimension of weights)")
    if y_text is None and x_text is not None and T == S:
        y_text = x_text
    grid_titles = _titles(titles, weights_dims=_ndim_of(weights), rows=rows, cols=cols,
                          row_name=row_name, col_name=col_name)
    low, high = _colour_scale(data[finite], vmin, vmax)
    norm = Normalize(vmin=low, vmax=high)
    width, height = _map_size(map_size, T, S, rows, cols)
    colorbar = flag("show_heatmaps", "colorbar", colorbar)
    if isinstance(annotate, str) and annotate == "auto":
        annotate = max(T, S) <= _AUTO_ANNOTATE_CELLS and min(width / S, height / T) >= _AUTO_ANNOTATE_INCHES
    elif not isinstance(annotate, (bool, np.bool_)):
        raise ValueError(f'annotate must be True, False or "auto", got {shown(annotate)}.')
    elif annotate and max(T, S) > _MAX_ANNOTATED_CELLS:
        raise ValueError(f"annotate=True writes a number in each of the {T} x {S} cells of a map: too many "
                         f"to read (at most {_MAX_ANNOTATED_CELLS} a side). Use annotate=False, or show a "
                         f"slice such as weights[..., :{_MAX_ANNOTATED_CELLS}, :{_MAX_ANNOTATED_CELLS}].")
    if annotate:
        _check_fmt(fmt)
    colormap = _colormap(cmap)

    # Room around the maps for tick labels, axis names, titles and the colour bar.
    x_room = 0.25 + 0.075 * max((len(t) for t in x_text), default=2) if x_text else 0.3
    y_room = 0.25 + 0.075 * max((len(t) for t in y_text), default=2) if y_text else 0.3
    fig_width = cols * width + y_room + 0.6 + (0.9 if colorbar else 0.0)
    fig_height = rows * height + x_room + 0.5 + (0.3 * rows if grid_titles else 0.0) + (0.4 if suptitle else 0.0)
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(fig_width, fig_height),
                             layout="constrained", FigureClass=HeatmapFigure)

    masked = np.ma.masked_invalid(data)  # NaN and inf cells: blank
    image = None
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            image = ax.imshow(masked[r, c], cmap=colormap, norm=norm, aspect="auto",
                              interpolation="nearest")
            _set_ticks(ax.xaxis, x_text, S, rotate=True, inches=width)
            _set_ticks(ax.yaxis, y_text, T, rotate=False, inches=height)
            ax.tick_params(labelbottom=(r == rows - 1), labelleft=(c == 0))
            if r == rows - 1 and xlabel:
                ax.set_xlabel(xlabel)
            if c == 0 and ylabel:
                ax.set_ylabel(ylabel)
            if grid_titles and grid_titles[r][c]:
                ax.set_title(grid_titles[r][c], fontsize=10)
            if annotate:
                _annotate(ax, data[r, c], colormap, norm, fmt, cell_inches=min(width / S, height / T))
    if colorbar:
        shrink = 0.9 if rows > 1 else 1.0
        # about a quarter of an inch wide, however tall the grid (matplotlib's default is 1/20 of
        # its length, a wide slab beside a tall grid)
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=shrink,
                     aspect=max(10.0, rows * height * shrink / 0.25))
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# ----------------------------------------------------------------------------------- checking


def _ndim_of(weights: Any) -> int:
    return weights.dim() if isinstance(weights, torch.Tensor) else np.ndim(weights)


def _as_float_array(weights: Any) -> np.ndarray:
    """weights as a float64 array [R, C, T, S] (2-D and 3-D inputs get leading 1s), NaN for a
    numpy masked entry; refuses what cannot be a stack of maps."""
    if isinstance(weights, torch.Tensor):
        tensor = weights.detach()
        if tensor.device.type == "meta":
            raise ValueError("weights is a meta tensor: it has a shape but no values to draw. Draw the tensor "
                             "a real run computed (on the CPU or a GPU).")
        if tensor.is_nested:
            raise ValueError("weights is a nested tensor, whose maps differ in size: draw one at a time "
                             "(weights[i]), or pad them to one size first.")
        if tensor.layout != torch.strided:  # sparse: the missing entries are zeros
            tensor = tensor.to_dense()
        if tensor.is_complex():
            raise ValueError(f"weights must be real, got a complex tensor ({tensor.dtype}).")
        _check_size(list(tensor.shape))
        array = tensor.cpu().to(torch.float64).numpy()
    elif isinstance(weights, np.ndarray) or isinstance(weights, (list, tuple)):
        if np.ma.isMaskedArray(weights):
            array = np.ma.filled(np.ma.asarray(weights).astype(np.float64), np.nan)
        else:
            try:
                array = np.asarray(weights)
            except ValueError:  # numpy refuses a ragged nest of lists
                raise ValueError(f"weights is a ragged list (rows of different lengths: {_lengths(weights)}): "
                                 f"every map must be T rows of S numbers each.") from None
        if array.dtype.kind == "O" and all(isinstance(x, numbers.Real) for x in array.flat):
            try:  # Python ints too large for numpy's own integers
                array = array.astype(np.float64)
            except OverflowError:
                raise ValueError("weights holds an integer too large for a float (above 1.8e308).") from None
        if array.dtype.kind not in "biuf":
            raise ValueError(f"weights must hold numbers, got a numpy array of dtype {array.dtype}.")
        _check_size(list(array.shape))
        array = array.astype(np.float64)
    else:
        raise TypeError(f"weights must be a torch.Tensor or a numpy array, got {type(weights).__name__}.")
    return array.reshape((1,) * (4 - array.ndim) + array.shape)


def _lengths(nest: Any) -> str:
    """The lengths of a nest of lists, where they differ first: '[2, 1]'."""
    while isinstance(nest, (list, tuple)) and nest:
        lengths = [len(x) if isinstance(x, (list, tuple, np.ndarray)) else None for x in nest]
        if len(set(lengths)) > 1 or None in lengths:
            return str([n if n is not None else "a number" for n in lengths]).replace("'", "")
        nest = nest[0]
    return "?"


def _check_size(shape: list[int]) -> None:
    """2-D to 4-D, no empty dimension, and no more maps and cells than a figure can show."""
    if len(shape) not in (2, 3, 4):
        hint = ""
        if len(shape) == 5:
            hint = " For attentions [L, B, H, T, S], pick one example of the batch: weights[:, 0]."
        elif len(shape) == 1:
            hint = " For one row of weights [S], add a query dimension: weights[None]."
        raise ValueError(
            f"weights must be 2-D [T, S], 3-D [N, T, S] or 4-D [R, C, T, S], got {len(shape)}-D "
            f"with shape {shape}.{hint}")
    if 0 in shape:
        raise ValueError(f"weights has shape {shape}: every dimension must be at least 1 (an empty map).")
    count = math.prod(shape[:-2])
    if count > _MAX_MAPS:
        raise ValueError(f"weights has shape {shape}: {count} maps, more than the {_MAX_MAPS} one figure can show "
                         f"legibly. Show a slice, such as weights[:4] (the first four).")
    if math.prod(shape) > _MAX_CELLS:
        raise ValueError(f"weights has shape {shape}: {math.prod(shape):,} cells, more than the {_MAX_CELLS:,} "
                         f"a figure can show (a screen has fewer pixels). Show a slice, such as "
                         f"weights[..., :512, :512].")


def _labels(name: str, labels: Sequence[Any] | None, count: int, what: str) -> list[str] | None:
    """The labels as strings, exactly `count` of them, or None."""
    if labels is None:
        return None
    if isinstance(labels, torch.Tensor):
        labels = labels.tolist()
    elif isinstance(labels, np.ndarray):
        labels = labels.tolist()
    try:
        text = [_short(str(label)) for label in labels]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of {count} token strings, got {type(labels).__name__}.") from None
    if len(text) != count:
        hint = ""
        if isinstance(labels, str):
            hint = " It is one string, so each character counts as a label: pass a list of tokens, e.g. text.split()."
        raise ValueError(f"{name} has {len(text)} labels, expected {count} ({what}).{hint}")
    return text


def _short(label: str) -> str:
    """A tick label of at most _LABEL_CHARACTERS: a longer one would push the maps off the figure."""
    return label if len(label) <= _LABEL_CHARACTERS else label[:_LABEL_CHARACTERS - 1] + "\u2026"


def _titles(titles: Any, weights_dims: int, rows: int, cols: int, row_name: str,
            col_name: str) -> list[list[str]] | None:
    """Titles as a rows x cols list of strings ('' = none), or None for no titles at all."""
    count = rows * cols
    if titles is None:
        if weights_dims == 2:
            return None
        if weights_dims == 3:
            return [[f"{col_name} {c}" for c in range(cols)]]
        return [[f"{row_name} {r}, {col_name} {c}" for c in range(cols)] for r in range(rows)]
    if isinstance(titles, str):
        if count == 1:
            return [[titles]]
        raise ValueError(
            f"titles is one string, but there are {count} maps: give a list of {count} strings "
            f"(or use suptitle for one title over the whole figure).")
    try:
        items = list(titles)
    except TypeError:
        raise TypeError(f"titles must be a list of strings, got {type(titles).__name__}.") from None
    nested = bool(items) and all(isinstance(item, (list, tuple)) for item in items)
    layout = f"{rows} row{'s' if rows != 1 else ''} x {cols} column{'s' if cols != 1 else ''}"
    if nested:
        if len(items) != rows or any(len(row) != cols for row in items):
            given = [len(row) for row in items]
            raise ValueError(
                f"titles is nested with row lengths {given}, expected {rows} rows of {cols} "
                f"(one per map: {layout}).")
        return [["" if t is None else str(t) for t in row] for row in items]
    if len(items) != count:
        raise ValueError(
            f"titles has {len(items)} entries, expected {count} (one per map: {layout}), "
            f"as a flat list row by row or a nested [{rows}][{cols}] list.")
    flat = ["" if t is None else str(t) for t in items]
    return [flat[r * cols:(r + 1) * cols] for r in range(rows)]


def _colour_scale(values: np.ndarray, vmin: Any, vmax: Any) -> tuple[float, float]:
    """(low, high) of the shared colour scale; `values` are the finite entries."""
    data_min, data_max = float(values.min()), float(values.max())
    low = real("show_heatmaps", "vmin", vmin) if vmin is not None else min(0.0, data_min)
    high = real("show_heatmaps", "vmax", vmax) if vmax is not None else data_max
    if max(abs(low), abs(high)) > _MAX_SCALE:
        raise ValueError(
            f"the colour scale runs from {low:g} to {high:g}: beyond +-{_MAX_SCALE:.0e}, matplotlib's arithmetic "
            f"on the scale (differences, midpoints) overflows a float64 (largest 1.8e+308). Scale the weights "
            f"down first (weights / 1e300), or give vmin and vmax within +-{_MAX_SCALE:.0e}.")
    if low < high:
        return low, high
    if vmin is None and vmax is None:  # every value equal (and <= 0): any scale around it will do
        return low, low + max(1.0, abs(low))
    where = {
        (True, True): "both given",
        (True, False): f"vmax defaulted to the largest value in weights, {data_max:g}",
        (False, True): f"vmin defaulted to min(0, the smallest value in weights) = {low:g}",
    }[(vmin is not None, vmax is not None)]
    raise ValueError(f"vmin must be below vmax, got vmin={low:g} and vmax={high:g} ({where}).")


def _colormap(cmap: Any) -> Any:
    if isinstance(cmap, str):
        try:
            return matplotlib.colormaps[cmap]
        except KeyError:
            raise ValueError(
                f"cmap {cmap!r} is not a matplotlib colormap name; try 'viridis', 'magma' or 'Blues'.") from None
    if not callable(cmap):
        raise TypeError(f"cmap must be a colormap name or a matplotlib Colormap, got {type(cmap).__name__}.")
    return cmap


def _check_fmt(fmt: Any) -> None:
    try:
        format(0.5, fmt)
    except (TypeError, ValueError):
        raise ValueError(f"fmt must be a format spec for a number such as '.2f', got {fmt!r}.") from None


# annotate="auto": the largest map, and the smallest cell, whose values are still written in.
_AUTO_ANNOTATE_CELLS = 10
_AUTO_ANNOTATE_INCHES = 0.25


def _map_size(map_size: Any, T: int, S: int, rows: int, cols: int) -> tuple[float, float]:
    """(width, height) of one map in inches."""
    if map_size is not None:
        try:
            width, height = (map_size, map_size) if np.ndim(map_size) == 0 else tuple(map_size)
            if any(isinstance(x, (str, bytes, bool, np.bool_)) for x in (width, height)):
                raise TypeError  # '3' and True are not sizes, though float() takes them
            width, height = float(width), float(height)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"map_size must be a number of inches or (width, height), got {map_size!r}.") from None
        if not (width > 0 and height > 0 and math.isfinite(width) and math.isfinite(height)):
            raise ValueError(f"map_size must be positive, got {map_size!r}.")
        if max(width, height) > _MAX_MAP_INCHES:
            raise ValueError(f"map_size is in inches per map, at most {_MAX_MAP_INCHES:g}; got {map_size!r}. "
                             "Leave it out for a size chosen from the number of tokens.")
        return width, height
    low, high = _MAP_INCHES
    width = min(max(_INCHES_PER_TOKEN * S + 0.6, low), high)
    height = min(max(_INCHES_PER_TOKEN * T + 0.6, low), high)
    shrink = min(1.0, _MAX_FIGURE_WIDTH / (cols * width), _MAX_FIGURE_HEIGHT / (rows * height))
    return max(width * shrink, _MIN_MAP_INCHES), max(height * shrink, _MIN_MAP_INCHES)


# ----------------------------------------------------------------------------------- drawing


def _set_ticks(axis: Any, labels: list[str] | None, count: int, rotate: bool, inches: float) -> None:
    """Token labels at the cells, at TICK_POINTS; every k-th one when they would not fit along the
    `inches` of the axis (a label needs _LABEL_PITCH times its size, across its baseline, or its
    width for upright labels side by side); positions without labels."""
    if labels is None:
        axis.set_major_locator(MaxNLocator(integer=True))
        return
    widest = max(len(text) for text in labels)
    upright = rotate and widest <= 2  # single characters fit upright
    pitch = TICK_POINTS * (_LABEL_PITCH if not upright else max(_LABEL_PITCH, 0.7 * widest + 0.6)) / 72
    step = max(1, math.ceil(count / max(1, math.floor(inches / pitch))))
    positions = list(range(0, count, step))
    axis.set_ticks(positions, [labels[p] for p in positions], fontsize=TICK_POINTS)
    if rotate and not upright:
        # slanted labels read better, but need more room between them than upright ones
        slanted = inches * 72 / len(positions) >= 1.9 * TICK_POINTS
        for label in axis.get_ticklabels():
            label.set(rotation=45, ha="right", rotation_mode="anchor") if slanted else label.set(rotation=90)


def _annotate(ax: Any, values: np.ndarray, colormap: Any, norm: Normalize, fmt: str,
              cell_inches: float) -> None:
    """Each value in its cell, black on light colours and white on dark ones; inf as text, NaN
    left blank."""
    size = min(10.0, max(5.0, cell_inches * 72 * 0.3))
    for (i, j), value in np.ndenumerate(values):
        if math.isnan(value):
            continue
        if math.isinf(value):
            ax.text(j, i, "-inf" if value < 0 else "inf", ha="center", va="center", fontsize=size, color="black")
            continue
        red, green, blue, _ = colormap(norm(value))
        luminance = 0.299 * red + 0.587 * green + 0.114 * blue
        text = format(value, fmt)
        if text.startswith("-") and not any(ch in "123456789" for ch in text.split("e")[0]):
            text = text[1:]  # a tiny negative rounded to zero reads "-0.00", as if it meant something
        ax.text(j, i, text, ha="center", va="center", fontsize=size,
                color="black" if luminance > 0.5 else "white")
