"""Scores that name what a head does, measured on its attention weights (module 09).

A trained model's heads specialise, and three kinds are easy to see in a heatmap and to score. All
three show on one kind of prompt: BOS, a span of n random characters, then the same span again
(`repeated_probe`), T = 2n + 1 tokens.

- A **previous-token head** puts its weight on the token just before the query: a bright stripe
  just below the diagonal. Score: the mean weight on key t - 1, over the queries t = 1 .. T - 1.
- An **induction head** looks at the token *after* the earlier occurrence of the current token:
  what came next last time, so what probably comes next now. In the second copy, query i holds the
  same character as i - n, so it looks at key i - n + 1: a stripe n - 1 below the diagonal, in the
  lower half. Score: the mean weight on key i - n + 1 over the queries i = n + 1 .. 2n.
- A **first-token (sink) head** parks its weight on position 0, the BOS token: a bright first
  column. A softmax must put its weight somewhere; a head with nothing to do puts it where it
  does no harm. Score: the mean weight on key 0 over the queries t = 1 .. T - 1 (query 0 can only
  see itself).

Every score is an average of attention weights, so it lies in [0, 1]: 1 means every query of every
sequence puts all its weight on that one key.

The weights come from `attention_weights(model, ids)`: [B, L, H, T, T] for a batch of B sequences
(L layers, H heads). The score functions take weights with any leading dimensions [..., T, T] and
average over the queries; average over a batch yourself (`.mean(0)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .tiny_data import BOS, PRINTABLE, held_out_text, text_windows

Head = tuple[int, int]  # (layer, head)


@torch.no_grad()
def attention_weights(model, ids: torch.Tensor) -> torch.Tensor:
    """The attention weights of every layer and head: ids [B, T] (or [T]) -> [B, L, H, T, T]."""
    if ids.dim() == 1:
        ids = ids[None]
    out = model(ids, output_attentions=True)
    return torch.stack(out.attentions, dim=1)  # L x [B, H, T, T] -> [B, L, H, T, T]


def _check_square(weights: torch.Tensor) -> None:
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be self-attention maps [..., T, T], got shape {tuple(weights.shape)}.")


def previous_token_scores(weights: torch.Tensor) -> torch.Tensor:
    """Mean weight each query t >= 1 puts on key t - 1: [..., T, T] -> [...]."""
    _check_square(weights)
    return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean(-1)  # the stripe below the diagonal


def first_token_scores(weights: torch.Tensor, last_query: int | None = None) -> torch.Tensor:
    """Mean weight the queries 1 .. last_query (default: all, T - 1) put on key 0: [..., T, T] -> [...]."""
    _check_square(weights)
    T = weights.shape[-1]
    last_query = T - 1 if last_query is None else last_query
    if not 1 <= last_query <= T - 1:
        raise ValueError(f"last_query must be in [1, T - 1] = [1, {T - 1}], got {last_query}.")
    return weights[..., 1:last_query + 1, 0].mean(-1)


def induction_scores(weights: torch.Tensor, span: int) -> torch.Tensor:
    """Mean weight each query i >= span + 1 puts on key i - span + 1, for sequences made of BOS and
    a span of `span` tokens repeated: [..., T, T] -> [...]."""
    _check_square(weights)
    T = weights.shape[-1]
    if not 2 <= span <= T - 2:
        raise ValueError(f"span must be in [2, T - 2] = [2, {T - 2}] for maps of {T} tokens, got {span}.")
    # key i - span + 1 for query i: the diagonal span - 1 below the main one, from query span + 1 on
    return torch.diagonal(weights, offset=-(span - 1), dim1=-2, dim2=-1)[..., 2:].mean(-1)


# ------------------------------------------------------------------------- probe sequences


def repeated_probe(count: int = 16, span: int = 24, seed: int = 0) -> torch.Tensor:
    """`count` sequences [count, 1 + 2 * span]: BOS, a span of distinct random printable
    characters, then the same span again."""
    generator = torch.Generator().manual_seed(seed)
    alphabet = torch.tensor(PRINTABLE)
    rows = []
    for _ in range(count):
        chars = alphabet[torch.randperm(len(PRINTABLE), generator=generator)[:span]]
        rows.append(torch.cat([torch.tensor([BOS]), chars, chars]))
    return torch.stack(rows)


def text_probe(count: int = 16, length: int = 64, seed: int = 0) -> torch.Tensor:
    """`count` windows [count, length] of held-out code (never trained on), each after a BOS."""
    return text_windows(held_out_text(), count, length, torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- head scores


@dataclass
class HeadScores:
    """Every head's three scores, each [L, H], measured on repeated random spans (see the module
    docstring): `previous` and `first` over every query, `induction` over the second copy."""

    previous: torch.Tensor
    induction: torch.Tensor
    first: torch.Tensor

    @staticmethod
    def _argmax(scores: torch.Tensor) -> Head:
        index = int(scores.argmax())
        return divmod(index, scores.shape[1])

    @property
    def previous_token_head(self) -> Head:
        return self._argmax(self.previous)

    @property
    def induction_head(self) -> Head:
        return self._argmax(self.induction)

    @property
    def sink_head(self) -> Head:
        return self._argmax(self.first)

    def induction_heads(self, threshold: float = 0.5) -> list[Head]:
        """Heads whose induction score is above `threshold`, in (layer, head) order."""
        return [tuple(pair) for pair in (self.induction > threshold).nonzero().tolist()]

    def rows(self) -> list[list]:
        """[layer, head, previous, induction, first] for every head, for a printed table."""
        L, H = self.previous.shape
        return [[layer, head, self.previous[layer, head].item(), self.induction[layer, head].item(),
                 self.first[layer, head].item()] for layer in range(L) for head in range(H)]


def measure_head_scores(model, seed: int = 0, count: int = 16, span: int = 24) -> HeadScores:
    """The three scores of every head of `model`, averaged over `count` repeated-span probes."""
    weights = attention_weights(model, repeated_probe(count, span, seed)).mean(0)  # [L, H, T, T]
    return HeadScores(previous=previous_token_scores(weights), induction=induction_scores(weights, span),
                      first=first_token_scores(weights))


# ------------------------------------------------------------------------------- ablation


ABLATIONS = ("mean", "zero")


@contextmanager
def ablated(model, heads: Iterable[Head], mode: str = "mean") -> Iterator[None]:
    """Within the block, the given heads are switched off: their slice of the attention output is
    replaced before the output projection o_proj mixes the heads together. The weights are not
    touched; leaving the block restores the model.

    mode="zero" writes zeros: the head adds nothing. mode="mean" writes the slice's mean over the
    batch and the positions of the input being run: the head adds what it adds on average, but no
    longer anything that depends on the tokens. Zeros can break a model for a reason that has
    nothing to do with what the head computes (a head whose output is nearly the same everywhere
    acts as a constant that later layers rely on); the mean keeps that constant.
    """
    if mode not in ABLATIONS:
        raise ValueError(f"mode must be one of {ABLATIONS}, got {mode!r}.")
    by_layer = {}
    for layer, head in heads:
        layer, head = int(layer), int(head)
        if not 0 <= layer < len(model.model.layers) or not 0 <= head < model.config.num_attention_heads:
            raise ValueError(f"no head ({layer}, {head}) in a model of {len(model.model.layers)} layers "
                             f"x {model.config.num_attention_heads} heads.")
        by_layer.setdefault(layer, []).append(head)
    handles = []
    try:
        for layer, heads_here in by_layer.items():
            attention = model.model.layers[layer].self_attn
            hook = _switch_off(heads_here, attention.head_dim, mode)
            handles.append(attention.o_proj.register_forward_pre_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _switch_off(heads: list[int], head_dim: int, mode: str):
    def hook(module, inputs):
        (x,) = inputs  # [B, T, H * D]: the heads' outputs side by side
        x = x.clone()
        for head in heads:
            part = x[..., head * head_dim:(head + 1) * head_dim]  # [B, T, D]
            x[..., head * head_dim:(head + 1) * head_dim] = 0.0 if mode == "zero" else part.mean(dim=(0, 1))
        return (x,)

    return hook


@torch.no_grad()
def repeat_loss(model, ids: torch.Tensor, span: int) -> float:
    """Mean next-token loss on the second copy of the span (the part induction can predict), for
    `repeated_probe` sequences ids [B, 1 + 2 * span]; the first token of the copy is left out, since
    nothing before it says what it is."""
    logits = model(ids).logits  # [B, T, V]
    first = span + 1  # the query that predicts the second token of the second copy
    return F.cross_entropy(logits[:, first:-1].reshape(-1, logits.shape[-1]), ids[:, first + 1:].reshape(-1)).item()
