"""Module 03's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import minimind_ref as mm


def _attention_weights(**changes) -> int:
    """The weights of one MiniMind attention layer (q, k, v and o projections), counted."""
    layer = mm.Attention(mm.MiniMindConfig(**changes))
    return sum(p.numel() for p in layer.parameters())


def _query_weights_of_one_head() -> int:
    config = mm.MiniMindConfig()
    q_proj = mm.Attention(config).q_proj.weight  # [H*D, C]
    return q_proj[: config.head_dim].numel()  # head 0's rows


ANSWERS = {
    "minimind-attention-params": _attention_weights,
    "mha-params": lambda: _attention_weights(num_key_value_heads=8),
    "sixteen-heads": lambda: _attention_weights(num_attention_heads=16, num_key_value_heads=16),
    "per-head-query-weights": _query_weights_of_one_head,
}
