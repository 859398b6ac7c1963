"""The cheat-sheet's facts (docs/cheatsheet.md): MiniMind2-Small's, MiniMind2's and MiniMind-3's
numbers as minimind_ref builds them, and every shape of the attention forward pass as the course map
states it for MiniMind2-Small and MiniMind-3 (the map's own tests hold those shapes to a real forward
pass, tests/kit/test_course_map.py).

Names: cheatsheet_<quantity>_small / _mm2 / _mm3 (MiniMind2-Small, upstream's 104M MiniMind2,
MiniMind-3), cheatsheet_shape_<step>_small / _mm3."""

from __future__ import annotations

import math

import torch

import minimind_ref as mm
from facts import fact
from labkit.course_map import forward_steps
from labkit.roofline import matmul_flops

CONFIGS = {"small": mm.MiniMindConfig(), "mm2": mm.MiniMindConfig.minimind2(), "mm3": mm.MiniMindConfig.minimind3()}
MAPPED = ("small", "mm3")  # the course map's two configurations: the shapes table


def _parameters(config: mm.MiniMindConfig) -> int:
    with torch.device("meta"):  # shapes only
        model = mm.MiniMindForCausalLM(config)
    return sum(p.numel() for p in model.parameters())


def _cache_bytes_per_token(config: mm.MiniMindConfig, dtype: torch.dtype, tokens: int = 3) -> float:
    """Measured on minimind_ref's KVCache after every layer stored `tokens` positions."""
    cache = mm.KVCache(config, batch_size=1)
    for layer in range(config.num_hidden_layers):
        k = torch.zeros(1, config.num_key_value_heads, tokens, config.head_dim, dtype=dtype)
        cache.update(layer, k, k.clone())
    return cache.nbytes() / tokens


QUANTITIES = {
    "hidden": lambda c: c.hidden_size,
    "layers": lambda c: c.num_hidden_layers,
    "heads": lambda c: c.num_attention_heads,
    "kv_heads": lambda c: c.num_key_value_heads,
    "n_rep": lambda c: c.num_key_value_groups,
    "head_dim": lambda c: c.head_dim,
    "ffn": lambda c: c.intermediate_size,
    "vocab": lambda c: c.vocab_size,
    "rope_theta": lambda c: c.rope_theta,
    "positions": lambda c: c.max_position_embeddings,
    "eps": lambda c: c.rms_norm_eps,
    "qk_norm": lambda c: "yes" if c.qk_norm else "no",
    "tied": lambda c: "yes" if c.tie_word_embeddings else "no",
    "parameters": _parameters,
    "scale": lambda c: 1 / math.sqrt(c.head_dim),
    "cache_bf16": lambda c: _cache_bytes_per_token(c, torch.bfloat16),
    "cache_fp32": lambda c: _cache_bytes_per_token(c, torch.float32),
}


def _register(name: str, compute) -> None:
    compute.__name__ = name
    compute.__module__ = __name__
    fact(compute)


for _key, _config in CONFIGS.items():
    for _quantity, _rule in QUANTITIES.items():
        _register(f"cheatsheet_{_quantity}_{_key}", lambda rule=_rule, config=_config: rule(config))
    for _step in forward_steps(_config) if _key in MAPPED else ():
        # the numbers of the step's shapes, in order (the symbols B, T, S are not numbers)
        _register(f"cheatsheet_shape_{_step.key}_{_key}",
                  lambda step=_step: tuple(n for _, shape in step.tensors for n in shape if isinstance(n, int))
                  or "not in this model")


@fact
def cheatsheet_attention_flops_per_pair():
    """Q K^T and P V: 4 T S D FLOPs per query head, so 4 D per query-key pair."""
    return matmul_flops(1, 1, 1)


@fact
def cheatsheet_yarn():
    """MiniMind's YaRN: (factor, trained positions)."""
    yarn = mm.MiniMindConfig(inference_rope_scaling=True).rope_scaling
    return yarn["factor"], yarn["original_max_position_embeddings"]
