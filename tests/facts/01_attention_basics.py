"""Module 01's facts: softmax overflow thresholds, MiniMind2's score scale, the trained heads."""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path

import nbformat
import torch

import minimind_ref as mm
from facts import fact

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "01_attention_basics.ipynb"


def overflow_threshold(dtype: torch.dtype) -> float:
    """The logit past which exp overflows: ln of the dtype's largest finite number."""
    return math.log(torch.finfo(dtype).max)


@fact
def overflow_logit_float16():
    return overflow_threshold(torch.float16)


@fact
def overflow_logit_bfloat16_and_float32():
    """One threshold for both: they share float32's exponent range."""
    bf16, f32 = overflow_threshold(torch.bfloat16), overflow_threshold(torch.float32)
    assert round(bf16, 2) == round(f32, 2), "bfloat16 and float32 no longer overflow at the same score"
    return f32


@fact
def overflow_logit_float64():
    return overflow_threshold(torch.float64)


@fact
def float32_max_and_its_log():
    """`ln(3.4e38) ≈ 88.7`."""
    return torch.finfo(torch.float32).max, overflow_threshold(torch.float32)


@fact
def minimind2_head_width():
    """`512 / 8 = 64`: hidden size over query heads is the head width."""
    config = mm.MiniMindConfig()
    assert config.hidden_size // config.num_attention_heads == config.head_dim
    return config.hidden_size, config.num_attention_heads, config.head_dim


@fact
def minimind2_head_dim():
    return mm.MiniMindConfig().head_dim


@fact
def minimind2_score_scale():
    """`1/8 = 0.125`: 1/sqrt(D)."""
    head = mm.MiniMindConfig().head_dim
    return 1, math.isqrt(head), 1 / math.sqrt(head)


@fact
def minimind2_score_scale_of_sqrt():
    """`1/sqrt(64) = 0.125`."""
    head = mm.MiniMindConfig().head_dim
    return 1, head, 1 / math.sqrt(head)


# ---------------------------------------------------------------------------- the trained heads, section 8's glimpse

def _notebook_code() -> str:
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "code")


@cache
def _tiny():
    from labkit.tiny_model import load_tiny_model

    return load_tiny_model()


def _run(line: str):
    """The tiny model on `line` written twice: ids, weights [L, H, T, T], share of the copy predicted right."""
    from labkit.tiny_model import fixed_threads

    model, tokenizer = _tiny()
    ids = torch.tensor([tokenizer.encode(line + line)])  # BOS, the line, the line again
    with torch.no_grad(), fixed_threads():
        out = model(ids, output_attentions=True)
    n = len(line)
    weights = torch.stack(out.attentions)[:, 0]
    right = (out.logits[0, n + 1:-1].argmax(-1) == ids[0, n + 2:]).float().mean().item()
    return ids[0], weights, right


@cache
def _span():
    """The notebook's random-looking string, its run, and attention spread evenly for comparison."""
    span = re.search(r'^span = "([^"]+)"$', _notebook_code(), re.M).group(1)
    ids, weights, right = _run(span)
    T = len(ids)
    even = torch.tril(torch.ones(T, T))
    return span, ids, weights, right, even / even.sum(-1, keepdim=True)


def _heads_above(scores: torch.Tensor) -> list[tuple[int, int]]:
    return [tuple(h) for h in (scores > 0.5).nonzero().tolist()]


@fact
def tiny_model_layers():
    return _tiny()[0].config.num_hidden_layers


@fact
def tiny_model_heads():
    return _tiny()[0].config.num_attention_heads


@fact
def tiny_previous_token_head():
    """The one head that looks at the token before: its argmax is the previous position."""
    from labkit import tiny_heads as th

    _, ids, weights, _, even = _span()
    previous = th.previous_token_scores(weights)
    heads = _heads_above(previous)
    assert len(heads) == 1, f"previous-token heads: {heads}"
    layer, head = heads[0]
    assert torch.equal(weights[layer, head, 1:].argmax(-1), torch.arange(len(ids) - 1))
    assert previous[layer, head] > 3 * th.previous_token_scores(even)
    return layer, head


@fact
def tiny_induction_heads():
    """Layer and heads whose argmax in the second copy is the token after the query's first occurrence."""
    from labkit import tiny_heads as th

    span, ids, weights, right, even = _span()
    n = len(span)
    heads = _heads_above(th.induction_scores(weights, n))
    layers = {layer for layer, _ in heads}
    assert len(layers) == 1, f"induction heads in several layers: {heads}"
    second = torch.arange(n + 1, len(ids))
    for layer, head in heads:
        assert torch.equal(weights[layer, head, n + 1:].argmax(-1), second - n + 1)
        assert th.induction_scores(weights, n)[layer, head] > 3 * th.induction_scores(even, n)
    assert right == 1.0, "the model continues the repeated string without a mistake"
    return (heads[0][0], *(head for _, head in heads))


@fact
def tiny_sink_head():
    """The head that parks most of every query's weight on <s>."""
    from labkit import tiny_heads as th

    *_, weights, _, even = _span()
    first = th.first_token_scores(weights)
    layer, head = divmod(first.argmax().item(), first.shape[1])
    assert weights[layer, head, :, 0].min() > 0.5
    assert first[layer, head] > 3 * th.first_token_scores(even)
    return layer, head
