"""Module 04's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import torch

import minimind_ref as mm
from minimind_ref.variants.mla import DEEPSEEK_V2, LatentCache


def _kv_head_of_query(query_head: int = 6) -> int:
    config = mm.MiniMindConfig()
    # key/value head j holds the number j everywhere; repeat_kv shows which one each query head gets
    kv = torch.arange(config.num_key_value_heads, dtype=torch.float32).view(1, -1, 1, 1)
    return int(mm.repeat_kv(kv, config.num_key_value_groups)[0, query_head, 0, 0])


def _attention_params(num_key_value_heads: int | None = None) -> int:
    config = mm.MiniMindConfig()
    if num_key_value_heads is not None:
        config = config.replace(num_key_value_heads=num_key_value_heads)
    return sum(p.numel() for p in mm.Attention(config).parameters())


def _model_params(num_key_value_heads: int) -> int:
    with torch.device("meta"):  # the shapes are all that is counted: no memory, no initialisation
        model = mm.MiniMindForCausalLM(mm.MiniMindConfig(num_key_value_heads=num_key_value_heads))
    return sum(p.numel() for p in model.parameters())


def cache_bytes_per_token(num_key_value_heads: int, dtype: torch.dtype, tokens: int = 4) -> float:
    """KVCache.nbytes() per token after a forward pass of MiniMind's default model with use_cache."""
    torch.manual_seed(0)
    model = mm.MiniMindForCausalLM(mm.MiniMindConfig(num_key_value_heads=num_key_value_heads)).to(dtype).eval()
    with torch.no_grad():
        cache = model(torch.arange(tokens)[None], use_cache=True).past_key_values
    return cache.nbytes() / tokens


def _repeat_bytes() -> int:
    k = torch.zeros(1, 2, 1024, 64)
    return mm.repeat_kv(k, 4).untyped_storage().nbytes()


def _mla_cache_numbers(tokens: int = 3) -> float:
    """Numbers per token in one layer's LatentCache at DeepSeek-V2's sizes (float32: 4 bytes each)."""
    config = DEEPSEEK_V2.replace(num_hidden_layers=1)
    cache = LatentCache(config, batch_size=1)
    cache.update(0, torch.zeros(1, tokens, config.kv_lora_rank), torch.zeros(1, 1, tokens, config.qk_rope_head_dim))
    return cache.nbytes() / tokens / 4


def _mla_gqa_groups() -> float:
    """The groups g at which GQA's 2 g d_h numbers per token and layer equal MLA's cache."""
    return _mla_cache_numbers() / (2 * DEEPSEEK_V2.qk_nope_head_dim)


ANSWERS = {
    "kv-head-of-query": _kv_head_of_query,
    "attn-params-gqa": _attention_params,
    "params-saved": lambda: _model_params(8) - _model_params(mm.MiniMindConfig().num_key_value_heads),
    "cache-per-token-bf16": lambda: cache_bytes_per_token(mm.MiniMindConfig().num_key_value_heads, torch.bfloat16),
    "mha-cache-mib": lambda: cache_bytes_per_token(8, torch.bfloat16) * 8192 / 2 ** 20,
    "repeat-bytes": _repeat_bytes,
    "mla-cache-numbers": _mla_cache_numbers,
    "mla-gqa-groups": _mla_gqa_groups,
}
