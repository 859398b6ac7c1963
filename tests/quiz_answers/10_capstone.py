"""Module 10's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py).

The parameter count comes from a real layer's state dict, the tiled heads from labelling each
key/value head and repeating it both ways, the keys a new query sees from minimind_ref's causal mask.
"""

from __future__ import annotations

import torch

import minimind_ref as mm


def _layer_parameters() -> int:
    config = mm.MiniMindConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                               qk_norm=True, vocab_size=8)
    return sum(p.numel() for p in mm.Attention(config).parameters())


def _tiled_heads_right(heads: int = 8, kv_heads: int = 2) -> int:
    """Key/value head j holds the value j everywhere; compare which one each query head reads."""
    labels = torch.arange(kv_heads, dtype=torch.float32).view(1, kv_heads, 1, 1)
    right = mm.repeat_kv(labels, heads // kv_heads)
    tiled = labels.repeat(1, heads // kv_heads, 1, 1)
    return int((right == tiled).sum())


def _keys_seen_by_first_new_query(cached: int = 5, new: int = 3) -> int:
    return int(mm.causal_mask(new, cached + new)[0].sum())


ANSWERS = {
    "layer-parameters": _layer_parameters,
    "tiled-heads-right": _tiled_heads_right,
    "float16-max": lambda: int(torch.finfo(torch.float16).max),
    "first-query-keys": _keys_seen_by_first_new_query,
}
