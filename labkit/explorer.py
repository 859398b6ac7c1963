"""explore(): type a prompt and look at every head of a model attending to it (module 09).

    from labkit.explorer import explore
    from labkit.tiny_model import load_tiny_model

    model, tokenizer = load_tiny_model()
    explore(model, tokenizer, prompt="abcdefabcdef")     # the last line of a notebook cell

The widget has a text box for the prompt, a layer menu and a head menu (each with an "all"
entry, so one head, the heads of one layer, one head across layers or the whole grid can be
shown), and a query slider. The maps are drawn by `show_heatmaps`, the course's one heatmap
function, with the prompt's tokens on both axes; the chosen query's row is outlined in red, and
the text under the maps lists the keys that query weighs most in each map shown, with their
weights. (A static image has no hover, so the top keys are printed instead.)

The weights are computed once per prompt (a forward pass with output_attentions=True); moving
the menus and the slider only redraws, always from the latest state of the controls, whatever
order their events arrive in (`redraw`), and the figure's title names the selection it shows.
Every widget is an attribute (`prompt`, `layer`, `head`, `query`, `top_k`), so code and tests
can drive it as a learner would; `figure` is the latest figure, `drawn_state` the state it was
drawn from, and `top_keys_text` the latest top-keys text.

Its labels and texts are in the current language (labkit.i18n); the figure's titles too, where a
font can draw them (`labkit.figures.figure_tr`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from .figures import figure_tr, use_chinese_font
from .heatmaps import show_heatmaps
from .i18n import phrase, tr
from .widgets import show_in

__all__ = ["AttentionExplorer", "explore", "top_keys"]

ALL = "all"


def top_keys(row: torch.Tensor, labels: Sequence[str], k: int = 3) -> list[tuple[int, str, float]]:
    """The k keys one query weighs most: [(position, label, weight)], largest first. row: [S]."""
    if row.dim() != 1 or row.shape[0] != len(labels):
        raise ValueError(f"row must be one query's weights [S] with S = len(labels) = {len(labels)}, "
                         f"got shape {tuple(row.shape)}.")
    k = max(1, min(int(k), row.shape[0]))
    weights, positions = torch.topk(row.float(), k)  # ties: the earlier position first, as topk returns it
    return [(int(p), labels[int(p)], float(w)) for w, p in zip(weights, positions)]


def _token_labels(tokenizer: Any, ids: list[int]) -> list[str]:
    if hasattr(tokenizer, "labels"):
        return list(tokenizer.labels(ids))
    return [tokenizer.decode([i]) for i in ids]  # any tokenizer with decode (transformers' too)


class AttentionExplorer(widgets.VBox):
    """The widget behind `explore()`; see the module docstring."""

    def __init__(self, model, tokenizer, prompt: str = "", layer: int | str = ALL,
                 head: int | str = ALL, query: int | None = None, top_k: int = 3,
                 max_tokens: int = 64):
        config = model.config
        self.model, self.tokenizer, self.max_tokens = model, tokenizer, max_tokens
        self.num_layers, self.num_heads = config.num_hidden_layers, config.num_attention_heads
        self.prompt = widgets.Text(value=prompt, description=tr("prompt"), continuous_update=False,
                                   layout=widgets.Layout(width="60%"))
        layer_options = [(tr("all layers"), ALL)] + [(tr("layer {index}", index=i), i) for i in range(self.num_layers)]
        self.layer = widgets.Dropdown(options=layer_options,
                                      value=layer, description=tr("layer"))
        head_options = [(tr("all heads"), ALL)] + [(tr("head {index}", index=i), i) for i in range(self.num_heads)]
        self.head = widgets.Dropdown(options=head_options, value=head, description=tr("head"))
        self.query = widgets.IntSlider(value=0, min=0, max=0, description=tr("query"), continuous_update=False)
        self.top_k = widgets.BoundedIntText(value=top_k, min=1, max=10, description=tr("top keys"),
                                            layout=widgets.Layout(width="160px"))
        self.output = widgets.Output()
        self.top_keys_html = widgets.HTML()
        self.figure = None
        self.top_keys_text = ""
        self.weights = self.labels = None  # [L, H, T, T] and T token labels of the current prompt
        super().__init__([self.prompt, widgets.HBox([self.layer, self.head, self.top_k]), self.query,
                          self.output, self.top_keys_html])
        self._computing = self._drawing = self._stale = False
        self.drawn_state: tuple | None = None  # the state the figure on show was drawn from
        self._compute(query)
        self.prompt.observe(lambda change: self._compute(None), names="value")
        for control in (self.layer, self.head, self.query, self.top_k):
            control.observe(lambda change: self.redraw(), names="value")
        self.redraw()

    # ------------------------------------------------------------------------------- state

    def _compute(self, query: int | None) -> None:
        """Run the model on the prompt once; keep its weights [L, H, T, T] and labels."""
        ids = self.tokenizer.encode(self.prompt.value)[: self.max_tokens]
        with torch.no_grad():
            out = self.model(torch.tensor([ids]), output_attentions=True)
        self.weights = torch.stack(out.attentions)[:, 0].float()  # L x [1, H, T, T] -> [L, H, T, T]
        self.labels = _token_labels(self.tokenizer, ids)
        last = len(ids) - 1
        self._computing = True  # moving the slider's range must not redraw half-updated state
        try:
            self.query.max = last
            self.query.value = last if query is None else max(0, min(int(query), last))
        finally:
            self._computing = False
        if self.figure is not None:
            self.redraw()

    def _chosen(self) -> tuple[list[int], list[int]]:
        layers = range(self.num_layers) if self.layer.value == ALL else [self.layer.value]
        heads = range(self.num_heads) if self.head.value == ALL else [self.head.value]
        return list(layers), list(heads)

    def _map_titles(self, translate=figure_tr) -> list[str]:
        """One title per map chosen: on the figure (`figure_tr`), or in the text below it (`tr`)."""
        layers, heads = self._chosen()
        return [translate(phrase("layer {layer}, head {head}"), layer=l, head=h) for l in layers for h in heads]

    def selection(self) -> tuple[torch.Tensor, list[str]]:
        """The maps chosen by the menus, in show_heatmaps' layout, and one title per map."""
        layers, heads = self._chosen()
        maps = self.weights[layers][:, heads]  # [l, h, T, T]
        titles = self._map_titles()
        if self.layer.value != ALL:
            maps = maps[0]  # [h, T, T]: a row of maps
        elif self.head.value != ALL:
            maps = maps[:, 0]  # [l, T, T]: one head, down the layers, drawn as a row
        if maps.dim() == 3 and maps.shape[0] == 1:
            maps = maps[0]  # one map
        return maps, titles

    # ------------------------------------------------------------------------------ drawing

    def state(self) -> tuple:
        """What the figure shows: the prompt and every control's value."""
        return (self.prompt.value, self.layer.value, self.head.value, self.query.value, self.top_k.value)

    def title(self) -> str:
        """The figure's title: the selection it shows, so that a figure can be checked against the
        controls (and a stale one would be seen)."""
        layer = (figure_tr(phrase("all layers")) if self.layer.value == ALL
                 else figure_tr(phrase("layer {index}"), index=self.layer.value))
        head = (figure_tr(phrase("all heads")) if self.head.value == ALL
                else figure_tr(phrase("head {index}"), index=self.head.value))
        return figure_tr(phrase("{layer}, {head}: query {query} ({token}) outlined in red"), layer=layer, head=head,
                         query=self.query.value, token=self.labels[self.query.value])

    def redraw(self) -> None:
        """Draw the latest state. A change that arrives while a figure is being drawn (a front end
        can deliver events in any order, and a slow figure lets several pile up) is not lost: the
        figure is drawn again until the state it shows is the state of the controls."""
        if self._computing:
            return
        if self._drawing:
            self._stale = True  # the drawing in progress will see it and draw again
            return
        self._drawing = True
        try:
            while True:
                self._stale = False
                drawn = self.state()
                self._draw()
                if not self._stale and self.state() == drawn:
                    break
        finally:
            self._drawing = False
        self.drawn_state = drawn
        self._show()

    def _draw(self) -> None:
        maps, titles = self.selection()
        query = self.query.value
        self.top_keys_text = self._describe_query(maps, self._map_titles(tr), query)
        if self.figure is not None:
            plt.close(self.figure)
        self.figure = show_heatmaps(maps, x_labels=self.labels, titles=titles if len(titles) > 1 else titles[0],
                                    suptitle=self.title(), xlabel=figure_tr(phrase("key")),
                                    ylabel=figure_tr(phrase("query")))
        for ax in self.figure.axes:
            if ax.images:  # the maps, not the colour bar
                ax.add_patch(Rectangle((-0.5, query - 0.5), len(self.labels), 1.0, fill=False,
                                       edgecolor="red", linewidth=1.5))
        use_chinese_font(self.figure)

    def _show(self) -> None:
        """Put the figure in the output area, written into the widget's state (interact.py says
        why); outside IPython (a script, a test) there is no output area to fill."""
        from IPython import get_ipython

        self.top_keys_html.value = f"<pre>{_escape(self.top_keys_text)}</pre>"
        if get_ipython() is None:
            return
        show_in(self.output, self.figure)

    def _describe_query(self, maps: torch.Tensor, titles: list[str], query: int) -> str:
        rows = maps.reshape(-1, *maps.shape[-2:])[:, query]  # [maps, S]: the query's row in each map
        lines = [tr("query {query} {token}: the {count} keys it weighs most", query=query,
                    token=repr(self.labels[query]), count=self.top_k.value)]
        for title, row in zip(titles, rows):
            keys = ", ".join(f"{p} {label!r} {w:.2f}" for p, label, w in top_keys(row, self.labels, self.top_k.value))
            lines.append("  " + tr("{title}: {top}", title=title, top=keys))
        return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def explore(model, tokenizer, prompt: str = "", layer: int | str = ALL, head: int | str = ALL,
            query: int | None = None, top_k: int = 3, max_tokens: int = 64) -> AttentionExplorer:
    """An interactive view of `model`'s attention on `prompt` (see the module docstring).

    tokenizer: has `encode(text) -> ids` (and `labels(ids)`, or `decode([id])`, for the axis
    labels). layer, head: an index or "all". query: the outlined query (default the last token).
    top_k: how many keys to list. max_tokens: longer prompts are cut to this many tokens, so the
    maps stay readable."""
    if isinstance(layer, int) and not 0 <= layer < model.config.num_hidden_layers:
        raise ValueError(f"layer must be 'all' or in [0, {model.config.num_hidden_layers}), got {layer}.")
    if isinstance(head, int) and not 0 <= head < model.config.num_attention_heads:
        raise ValueError(f"head must be 'all' or in [0, {model.config.num_attention_heads}), got {head}.")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}.")
    return AttentionExplorer(model, tokenizer, prompt, layer, head, query, top_k, max_tokens)
