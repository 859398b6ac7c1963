"""The course map: MiniMind's decoder block and its attention forward pass, with every tensor's shape.

Two pictures, both drawn from `minimind_ref`'s own configurations, so no number on them can drift
from the model:

- the **block**: token ids -> embedding -> N x [RMSNorm -> attention -> + residual,
  RMSNorm -> feed-forward -> + residual] -> final RMSNorm -> LM head -> logits;
- the **attention forward pass**, step by step, in the order of `minimind_ref.Attention.forward`,
  each step with the tensors it produces, for MiniMind2-Small (`MiniMindConfig()`) and MiniMind-3
  (`MiniMindConfig.minimind3()`), and the module of the course that teaches it.

`show_map("05")` draws both with module 05's steps highlighted ("you are here"); `show_map()` draws
them plain (notebook 00). `forward_steps(config)` and `block_rows(config)` are the data behind the
pictures; the tests run a real forward pass through `minimind_ref.Attention` and compare every
shape the map states with the shape the layer produces.

Shapes are written with symbols where they vary from call to call: B (batch), T (the new tokens
of this call), S (every key the queries see: the cached tokens plus T). The rest are numbers read
from the configuration.

Figures are sized for a 16:9 slide (`make slides`): each fits 1224 x 560 CSS pixels unscaled, and
no text on it is under 16 pixels there (`MIN_TEXT_PX`, checked by the tests).

In the Chinese edition the labels (step names, what each step does, headings, the caption) are
drawn in Chinese where a font can draw it (`labkit.figures.figure_tr`); the data keeps the English
(`phrase` marks it for the catalog), and code, shapes and module numbers are the same in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from minimind_ref import MiniMindConfig

from .figures import figure_tr, use_chinese_font
from .i18n import phrase
from .syllabus import PLANNED_MODULES

__all__ = ["Step", "block_rows", "forward_steps", "map_figures", "show_map"]

Shape = tuple[int | str, ...]

DPI = 100                       # the figures' pixels per inch, stated so every front end shows the same size
FIGSIZE = (12.2, 5.6)           # inches: 1220 x 560 px, within a slide's room for a figure alone
FONT_PT = 12.5                  # every text on the maps; 12.5 pt at 100 dpi is 17.4 px
MIN_TEXT_PX = 16                # the slides' smallest readable text (CONTRIBUTING.md, "Who uses the course")
HERE = "#f4a259"                # the highlighted steps ("you are here")
PLAIN = "#e8eef4"
DIMMED = "#f4f4f4"


@dataclass(frozen=True)
class Step:
    """One step of a picture: what it does, the tensors it produces, and who teaches it.

    `key` names the step for tools and tests; `modules[0]` teaches the step, later entries also
    work on it (08 fuses the score-to-output steps, 09 reads the weights, 10 writes them all).
    `tensors` is empty for a step the configuration does not have (q/k norm in MiniMind2-Small)."""

    key: str
    name: str
    code: str
    tensors: tuple[tuple[str, Shape], ...]
    modules: tuple[str, ...]
    detail: str = ""  # a size the configuration sets, shown after the shapes


def _configs(config: MiniMindConfig | None) -> list[tuple[str, MiniMindConfig]]:
    if config is not None:
        return [(figure_tr(phrase("your config")), config)]
    return [("MiniMind2-Small", MiniMindConfig()), ("MiniMind-3", MiniMindConfig.minimind3())]


def forward_steps(config: MiniMindConfig) -> list[Step]:
    """The attention forward pass of `minimind_ref.Attention`, one entry per step, with the shape of
    every tensor it produces, for this configuration."""
    c, h, kv, d = config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim
    q_heads, kv_heads = ("B", h, "T", d), ("B", kv, "T", d)
    norm = (("q", q_heads), ("k", kv_heads)) if config.qk_norm else ()
    return [
        Step("input", phrase("input x"), phrase("x (after RMSNorm)"), (("x", ("B", "T", c)),), ("01",)),
        Step("project", phrase("q/k/v projections"), "x @ W.T",
             (("q", ("B", "T", h * d)), ("k,v", ("B", "T", kv * d))), ("02",)),
        Step("split_heads", phrase("split heads"), "view + transpose", (("q", q_heads), ("k,v", kv_heads)), ("03",)),
        Step("qk_norm", phrase("q/k norm"), phrase("RMSNorm over D"), norm, ("02",)),
        Step("rope", "RoPE", phrase("rotate by position"), (("q", q_heads), ("k", kv_heads)), ("06",)),
        Step("cache", phrase("KV cache append"), "cat(cached, new)", (("k,v", ("B", kv, "S", d)),), ("07",)),
        Step("repeat_kv", "repeat_kv (GQA)", phrase("copy kv x n_rep"), (("k,v", ("B", h, "S", d)),), ("04",)),
        Step("scores", "scores / sqrt(D)", "q @ k.T / sqrt(D)", (("scores", ("B", h, "T", "S")),), ("01", "08")),
        Step("mask", phrase("mask"), phrase("hide: min float"), (("scores", ("B", h, "T", "S")),), ("05", "08")),
        Step("softmax", "softmax", phrase("softmax over S"), (("weights", ("B", h, "T", "S")),), ("01", "08", "09")),
        Step("weighted_sum", "weights @ v", "weights @ v", (("out", ("B", h, "T", d)),), ("01", "08")),
        Step("merge_heads", phrase("merge heads"), "transpose+reshape", (("out", ("B", "T", h * d)),), ("03",)),
        Step("o_proj", "o_proj", "out @ W_o.T", (("y", ("B", "T", c)),), ("03",)),
    ]


def block_rows(config: MiniMindConfig) -> list[Step]:
    """MiniMind's decoder, from token ids to logits, for this configuration. Rows inside the
    repeated block have keys starting with "layer."."""
    c, v, f = config.hidden_size, config.vocab_size, config.intermediate_size
    h, kv, d = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    hidden = (("h", ("B", "T", c)),)
    tied = "= embedding.T" if config.tie_word_embeddings else phrase("own weights")
    return [
        Step("ids", phrase("token ids"), "", (("ids", ("B", "T")),), ()),
        Step("embed", phrase("embedding"), phrase("table lookup"), hidden, (), f"{v}x{c}"),
        Step("layer.norm1", "RMSNorm", phrase("per token"), hidden, ()),
        Step("layer.attention", phrase("attention"), phrase("next map"), hidden,
             ("01", "02", "03", "04", "05", "06", "07", "08", "09"), f"{h}q/{kv}kv x {d}"),
        Step("layer.residual1", phrase("+ residual"), "h + attention(...)", hidden, ()),
        Step("layer.norm2", "RMSNorm", phrase("per token"), hidden, ()),
        Step("layer.ffn", phrase("feed-forward"), "SwiGLU", hidden, (), f"width {f}"),
        Step("layer.residual2", phrase("+ residual"), "h + ffn(...)", hidden, ()),
        Step("norm", phrase("final RMSNorm"), phrase("per token"), hidden, ()),
        Step("lm_head", phrase("LM head"), tied, (("logits", ("B", "T", v)),), ()),
    ]


def _shape_text(step: Step) -> str:
    if not step.tensors:
        return figure_tr(phrase("(not in this model)"))
    text = " ".join(f"{name} [{','.join(str(n) for n in shape)}]" for name, shape in step.tensors)
    detail = step.detail
    if detail.startswith("width "):  # the feed-forward's width: a word and a number
        detail = figure_tr(phrase("width {width}"), width=detail.removeprefix("width "))
    return f"{text} ({detail})" if detail else text


def _check_module(module: str | int | None) -> str | None:
    if module is None:
        return None
    number = f"{int(module):02d}" if str(module).isdigit() else str(module)
    if number != "00" and number not in PLANNED_MODULES:
        raise ValueError(f"show_map(module={module!r}): no such module; use one of "
                         f"00, {', '.join(PLANNED_MODULES)}.")
    return number


def _here(step: Step, module: str | None) -> bool | None:
    """True: this module's step; False: another's; None: no module chosen (all plain)."""
    if module is None or module == "00":
        return None
    return module == "10" or module in step.modules


def _draw(title: str, columns: list[str], rows: list[Step], per_config: list[list[Step]],
          module: str | None, repeat: str | None) -> Figure:
    """One picture: a column of boxes joined by arrows (the steps), and a table beside it (the
    code, each configuration's shapes, the teaching module)."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, FIGSIZE[0])
    ax.set_ylim(0, FIGSIZE[1])
    ax.axis("off")
    n = len(rows)
    top, pitch = FIGSIZE[1] - 1.0, (FIGSIZE[1] - 1.35) / n
    box_x, box_w = 0.5, 2.2
    code_x = box_x + box_w + 0.15
    shape_xs = [4.95, 8.0] if len(per_config) > 1 else [4.95]
    module_x = FIGSIZE[0] - 0.25
    ax.text(0.15, FIGSIZE[1] - 0.3, title, fontsize=FONT_PT + 2, weight="bold", va="center")
    header_y = FIGSIZE[1] - 0.72
    for x, label in zip([code_x, *shape_xs], [figure_tr(phrase("what it does")), *columns], strict=True):
        ax.text(x, header_y, label, fontsize=FONT_PT, weight="bold", va="center")
    ax.text(module_x, header_y, figure_tr(phrase("module")), fontsize=FONT_PT, weight="bold", va="center",
            ha="right")
    layer_rows = [i for i, row in enumerate(rows) if row.key.startswith("layer.")]
    for i, row in enumerate(rows):
        y = top - (i + 0.5) * pitch
        here = _here(row, module)
        colour = PLAIN if here is None else (HERE if here else DIMMED)
        ax.add_patch(FancyBboxPatch((box_x, y - 0.36 * pitch), box_w, 0.72 * pitch,
                                    boxstyle="round,pad=0.02,rounding_size=0.08", facecolor=colour,
                                    edgecolor="#333333" if here is not False else "#aaaaaa", linewidth=1.2))
        weight = "bold" if here else "normal"
        ink = "#111111" if here is not False else "#777777"
        ax.text(box_x + box_w / 2, y, figure_tr(row.name), fontsize=FONT_PT, ha="center", va="center", weight=weight,
                color=ink)
        if i:
            ax.annotate("", (box_x + box_w / 2, y + 0.36 * pitch + 0.02),
                        (box_x + box_w / 2, y + 0.64 * pitch - 0.02),
                        arrowprops={"arrowstyle": "-|>", "color": "#555555", "lw": 1.0})
        codes = {cfg[i].code for cfg in per_config}
        code = figure_tr(row.code) if len(codes) == 1 else figure_tr(phrase("see shapes"))
        ax.text(code_x, y, code, fontsize=FONT_PT, va="center", family="monospace", color=ink)
        for x, cfg in zip(shape_xs, per_config, strict=True):
            ax.text(x, y, _shape_text(cfg[i]), fontsize=FONT_PT, va="center", family="monospace",
                    color=ink, weight=weight)
        taught = row.modules[0] if len(row.modules) == 1 else (
            f"{row.modules[0]}-{row.modules[-1]}" if row.key == "layer.attention" else " ".join(row.modules))
        ax.text(module_x, y, taught or "-", fontsize=FONT_PT, va="center", ha="right", color=ink, weight=weight)
    if repeat and layer_rows:
        y0, y1 = top - layer_rows[0] * pitch, top - (layer_rows[-1] + 1) * pitch
        ax.plot([0.42, 0.3, 0.3, 0.42], [y0, y0, y1, y1], color="#333333", lw=1.5)
        ax.text(0.16, (y0 + y1) / 2, repeat, fontsize=FONT_PT, rotation=90, va="center", ha="center", weight="bold")
    ax.text(0.15, 0.22, figure_tr(phrase("B batch, T new tokens, S keys seen (cached + T), D head size; "
                                         "shapes read from minimind_ref's configs")),
            fontsize=FONT_PT, va="center", color="#444444")
    use_chinese_font(fig)
    return fig


def map_figures(module: str | int | None = None, config: MiniMindConfig | None = None) -> list[Figure]:
    """The two pictures as matplotlib Figures (block, then forward pass), for `savefig` in a script.
    `module` ("05", 5 or None) highlights its steps; `config` draws one configuration instead of
    MiniMind2-Small beside MiniMind-3."""
    number = _check_module(module)
    configs = _configs(config)
    names = [name for name, _ in configs]
    blocks = [block_rows(cfg) for _, cfg in configs]
    passes = [forward_steps(cfg) for _, cfg in configs]
    layers = {cfg.num_hidden_layers for _, cfg in configs}
    repeat = (figure_tr(phrase("x {count} layers"), count=layers.pop()) if len(layers) == 1
              else figure_tr(phrase("x N layers")))
    if number and number != "00":
        module, title = number, figure_tr(PLANNED_MODULES[number][1])
        titles = (figure_tr(phrase("MiniMind's decoder: you are here, module {module} ({title})"), module=module,
                            title=title),
                  figure_tr(phrase("Attention, step by step: you are here, module {module} ({title})"),
                            module=module, title=title))
    else:
        titles = (figure_tr(phrase("MiniMind's decoder")), figure_tr(phrase("Attention, step by step")))
    return [_draw(titles[0], names, blocks[0], blocks, number, repeat),
            _draw(titles[1], names, passes[0], passes, number, None)]


def show_map(module: str | int | None = None, config: MiniMindConfig | None = None) -> None:
    """Draw the course map below the cell: MiniMind's decoder block, then the attention forward
    pass with every tensor's shape for MiniMind2-Small and MiniMind-3 (or for `config`) and the module
    that teaches each step. `show_map("05")` highlights module 05's steps."""
    figures = map_figures(module, config)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # no IPython: nothing to show into (use map_figures and savefig)
        return
    if get_ipython() is not None:
        for figure in figures:
            display(figure)
