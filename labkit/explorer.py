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

from .arguments import shown, whole
from .figures import figure_tr, use_chinese_font
from .heatmaps import show_heatmaps
from .i18n import phrase, tr
from .widgets import show_in

__all__ = ["AttentionExplorer", "explore", "top_keys"]

ALL = "all"
TOP_K_MOST = 10  # the top-keys box's largest value: more keys than that no longer read as a list


def top_keys(row: torch.Tensor, labels: Sequence[str], k: int = 3) -> list[tuple[int, str, float]]:
    """The k keys one query weighs most: [(position, label, weight)], largest first (all S of them
    when k > S). row: [S], real numbers."""
    if not isinstance(row, torch.Tensor) or row.is_complex() or row.device.type == "meta" \
            or row.layout != torch.strided or row.is_nested:
        kind = (f"a {row.dtype} tensor on {row.device.type}" + ("" if row.layout == torch.strided and not row.is_nested
                                                                 else ", not dense")
                if isinstance(row, torch.Tensor) else type(row).__name__)
        raise TypeError(f"top_keys: row must be a dense tensor of real weights [S], got {kind}.")
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise TypeError(f"top_keys: labels must be a list of the keys' labels, one per weight, got "
                        f"{type(labels).__name__} {shown(labels)}.")
    if row.dim() != 1 or row.shape[0] != len(labels):
        raise ValueError(f"top_keys: row must be one query's weights [S] with S = len(labels) = {len(labels)}, "
                         f"got shape {tuple(row.shape)}.")
    k = min(whole("top_keys", "k", k, low=1), row.shape[0])
    weights, positions = torch.topk(row.detach().float(), k)  # ties: the earlier position first, as topk returns it
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
        config = _config_of(model)
        if isinstance(tokenizer, (str, bytes)) or not callable(getattr(tokenizer, "encode", None)):
            raise TypeError(f"explore: tokenizer must have encode(text) -> ids (the tiny model's ByteTokenizer, "
                            f"or transformers' tokenizer), got {type(tokenizer).__name__}.")
        if not isinstance(prompt, str):
            raise TypeError(f"explore: prompt must be a string, got {type(prompt).__name__} {shown(prompt)}.")
        layer = _index_or_all("layer", layer, config.num_hidden_layers)
        head = _index_or_all("head", head, config.num_attention_heads)
        query = None if query is None else whole("explore", "query", query, low=0)
        top_k = whole("explore", "top_k", top_k, 1, TOP_K_MOST)
        # longer prompts are cut, to max_tokens and to the positions the model has
        max_tokens = min(whole("explore", "max_tokens", max_tokens, low=1), config.max_position_embeddings)
        self.model, self.tokenizer, self.max_tokens = model, tokenizer, max_tokens
        ids = self._ids(prompt)
        if ids is None:
            raise ValueError(f"explore: the prompt {shown(prompt)} has no tokens: give at least one character.")
        if query is not None and query >= len(ids):
            raise ValueError(f"explore: query must be a position of the prompt's {len(ids)} tokens, 0 to "
                             f"{len(ids) - 1} (or None for the last), got {query}.")
        self.num_layers, self.num_heads = config.num_hidden_layers, config.num_attention_heads
        self.prompt = widgets.Text(value=prompt, description=tr("prompt"), continuous_update=False,
                                   layout=widgets.Layout(width="60%"))
        layer_options = [(tr("all layers"), ALL)] + [(tr("layer {index}", index=i), i) for i in range(self.num_layers)]
        self.layer = widgets.Dropdown(options=layer_options,
                                      value=layer, description=tr("layer"))
        head_options = [(tr("all heads"), ALL)] + [(tr("head {index}", index=i), i) for i in range(self.num_heads)]
        self.head = widgets.Dropdown(options=head_options, value=head, description=tr("head"))
        self.query = widgets.IntSlider(value=0, min=0, max=0, description=tr("query"), continuous_update=False)
        self.top_k = widgets.BoundedIntText(value=top_k, min=1, max=TOP_K_MOST, description=tr("top keys"),
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
        self._compute(ids, query)
        self.prompt.observe(lambda change: self._new_prompt(), names="value")
        for control in (self.layer, self.head, self.query, self.top_k):
            control.observe(lambda change: self.redraw(), names="value")
        self.redraw()

    # ------------------------------------------------------------------------------- state

    def _ids(self, prompt: str) -> list[int] | None:
        """The prompt's token ids, cut to max_tokens; None when it has none."""
        try:
            encoded = self.tokenizer.encode(prompt)
        except UnicodeError as error:  # a lone surrogate ('\ud800') has no UTF-8 bytes
            raise ValueError(f"explore: the prompt cannot be encoded ({error.reason}); type it again.") from None
        if isinstance(encoded, torch.Tensor) and encoded.dim() == 1:
            encoded = encoded.tolist()
        if not isinstance(encoded, (list, tuple)):
            raise TypeError(f"explore: tokenizer.encode(prompt) must return a list of token ids, got "
                            f"{type(encoded).__name__} {shown(encoded)}.")
        ids = list(encoded)[: self.max_tokens]
        vocab = getattr(self.model.config, "vocab_size", None)
        for i in ids:  # the model's own check would name input_ids, which the learner never passed
            whole("explore", "each token id tokenizer.encode(prompt) returns", i, low=0,
                  high=vocab - 1 if isinstance(vocab, int) else None)
        return [int(i) for i in ids] or None

    def _new_prompt(self) -> None:
        """The text box changed: recompute, or say why not and keep showing the last prompt's maps."""
        try:
            ids = self._ids(self.prompt.value)
        except (TypeError, ValueError) as error:
            ids, why = None, str(error)
        else:
            why = tr("This prompt has no tokens: type at least one character.")
        if ids is None:
            self.top_keys_html.value = f"<pre>{_escape(why)}</pre>"
            return
        self._compute(ids, None)

    def _compute(self, ids: list[int], query: int | None) -> None:
        """Run the model on the prompt's ids once; keep its weights [L, H, T, T] and labels."""
        with torch.no_grad():
            out = self.model(torch.tensor([ids]), output_attentions=True)
        self.weights = torch.stack(out.attentions)[:, 0].float()  # L x [1, H, T, T] -> [L, H, T, T]
        self.labels = _token_labels(self.tokenizer, ids)
        last = len(ids) - 1
        self._computing = True  # moving the slider's range must not redraw half-updated state
        try:
            self.query.max = last
            self.query.value = last if query is None else query
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


def _config_of(model: Any) -> Any:
    config = getattr(model, "config", None)
    if not all(isinstance(getattr(config, name, None), int) for name in
               ("num_hidden_layers", "num_attention_heads", "max_position_embeddings")):
        raise TypeError(f"explore: model must be a MiniMind model (MiniMindForCausalLM, or load_tiny_model()'s), "
                        f"got {type(model).__name__}.")
    if any(p.device.type == "meta" for p in model.parameters()):
        raise ValueError("explore: model is on the meta device: it has shapes but no weights to attend with; "
                         "load its weights first (load_tiny_model(), or model.to_empty(device='cpu') and a "
                         "state dict).")
    return config


def _index_or_all(name: str, value: Any, count: int) -> int | str:
    """A layer or head: "all", or an index in [0, count)."""
    if isinstance(value, str) and value == ALL:
        return ALL
    if isinstance(value, str):
        raise TypeError(f'explore: {name} must be "all" or an int from 0 to {count - 1}, got the string {shown(value)}'
                        f"{f' (write {value.strip()} without quotes)' if value.strip().isdigit() else ''}.")
    try:
        return whole("explore", name, value, 0, count - 1)
    except (TypeError, ValueError) as error:
        raise type(error)(f'{error} ("all" shows every {name}.)') from None


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def explore(model, tokenizer, prompt: str = "", layer: int | str = ALL, head: int | str = ALL,
            query: int | None = None, top_k: int = 3, max_tokens: int = 64) -> AttentionExplorer:
    """An interactive view of `model`'s attention on `prompt` (see the module docstring).

    tokenizer: has `encode(text) -> ids` (and `labels(ids)`, or `decode([id])`, for the axis
    labels). layer, head: an index or "all". query: the outlined query (default the last token).
    top_k: how many keys to list, 1 to 10. max_tokens: longer prompts are cut to this many tokens
    (and to the model's max_position_embeddings), so the maps stay readable. A wrong argument is
    named (TypeError for a wrong type, ValueError for a value out of range)."""
    return AttentionExplorer(model, tokenizer, prompt, layer, head, query, top_k, max_tokens)
