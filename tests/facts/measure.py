"""Measurements that several modules' facts make on minimind_ref: a model's parameters, counted on a
model built on the meta device (shapes only), and the bytes per token that minimind_ref's KVCache
holds once every layer stored a few positions (the cache itself, not the formula the guides teach)."""

from __future__ import annotations

import torch

import minimind_ref as mm


def parameters(config: mm.MiniMindConfig) -> int:
    with torch.device("meta"):  # shapes only: nothing allocated or initialised
        model = mm.MiniMindForCausalLM(config)
    return sum(p.numel() for p in model.parameters())


def attention_parameters(config: mm.MiniMindConfig) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in mm.Attention(config).parameters())


def cache_bytes_per_token(config: mm.MiniMindConfig, dtype: torch.dtype, tokens: int = 3) -> float:
    """Bytes per token of minimind_ref's KVCache after every layer stored `tokens` positions."""
    cache = mm.KVCache(config, batch_size=1)
    for layer in range(config.num_hidden_layers):
        keys = torch.zeros(1, config.num_key_value_heads, tokens, config.head_dim, dtype=dtype)
        cache.update(layer, keys, keys.clone())
    return cache.nbytes() / tokens
