"""Module 01's facts: softmax overflow thresholds, MiniMind2-Small's score scale, the trained heads."""

from __future__ import annotations

import math

import torch

import minimind_ref as mm
from facts import fact, once, sources

SPAN_CELL = "ef1c2c82"  # the notebook's cell that runs the trained model on a string written twice


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


def score_scale(config: mm.MiniMindConfig) -> float:
    """The factor minimind_ref's attention multiplies q . k by, measured on MiniMind2-Small's head width: one
    query against two keys whose dot products differ by 1, so the log-ratio of their weights is it."""
    d = config.head_dim
    q = torch.zeros(1, 1, 1, d, dtype=torch.float64)
    q[..., 0] = 1.0
    k = torch.zeros(1, 1, 2, d, dtype=torch.float64)
    k[..., 0, 0] = 1.0  # q . k = 1 for key 0, 0 for key 1
    _, weights = mm.scaled_dot_product_attention(q, k, torch.zeros_like(k), return_weights=True)
    return math.log(weights[0, 0, 0, 0] / weights[0, 0, 0, 1])


@fact
def minimind2_score_scale():
    """`1/8 = 0.125`: the measured scale, written as 1 over sqrt(D)."""
    scale = score_scale(mm.MiniMindConfig())
    return 1, round(1 / scale), scale


@fact
def minimind2_score_scale_of_sqrt():
    """`1/sqrt(64) = 0.125`: the head width, and the measured scale."""
    config = mm.MiniMindConfig()
    scale = score_scale(config)
    assert math.isclose(scale, 1 / math.sqrt(config.head_dim), rel_tol=1e-12), "the scale is no longer 1/sqrt(D)"
    return 1, config.head_dim, scale


# ---------------------------------------------------------------------------- the trained heads, section 8's glimpse

@once
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


@once
def _span():
    """The notebook's random-looking string, its run, and attention spread evenly for comparison."""
    span = sources.read("01", SPAN_CELL, r'^span = "([^"]+)"$', str)
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
