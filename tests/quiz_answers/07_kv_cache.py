"""Module 07's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py).

Cache sizes are read from real KVCache objects filled with keys and values, the torch.cat ratio
from the bytes each strategy writes, and the positions of generation without a cache by counting
what a model's embedding layer is fed during generate(use_cache=False).
"""

from __future__ import annotations

import torch

import minimind_ref as mm


def _cache_bytes_per_token(layers: int, heads: int, kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
    """Fill a KVCache for these attention shapes with one token and read its nbytes()."""
    config = mm.MiniMindConfig(hidden_size=heads * head_dim, num_hidden_layers=layers, num_attention_heads=heads,
                               num_key_value_heads=kv_heads, head_dim=head_dim, vocab_size=8)
    cache = mm.KVCache(config, batch_size=1, capacity=1)
    for layer in range(layers):
        one = torch.zeros(1, kv_heads, 1, head_dim, dtype=dtype)
        cache.update(layer, one, one)
    return cache.nbytes()


def _minimind2_bytes(kv_heads: int | None = None) -> int:
    default = mm.MiniMindConfig()
    return _cache_bytes_per_token(default.num_hidden_layers, default.num_attention_heads,
                                  kv_heads or default.num_key_value_heads, default.head_dim, torch.float32)


def _llama3_gib(tokens: int = 8192) -> float:
    return _cache_bytes_per_token(32, 32, 8, 128, torch.bfloat16) * tokens / 2**30


def _cat_over_preallocated(n: int = 1000) -> float:
    """Bytes written to cache n one-token steps: every torch.cat output, against the slices a
    preallocated KVCache writes (the size of each new token's keys and values)."""
    config = mm.MiniMindConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                               vocab_size=8, max_position_embeddings=n)
    token = torch.zeros(1, 1, 1, 8)
    keys, cat_bytes = torch.zeros(1, 1, 0, 8), 0
    cache, written = mm.KVCache(config, batch_size=1, capacity=n), 0
    for _ in range(n):
        keys = torch.cat([keys, token], dim=2)
        cat_bytes += keys.nbytes  # torch.cat writes its whole output
        cache.update(0, token, token)
        written += token.nbytes  # the slice assignment writes the new token only
    assert cache.allocated_nbytes() == 2 * written, "preallocated: never grown"
    return cat_bytes / written


def _positions_without_cache(new_tokens: int = 100) -> int:
    """Token positions fed to the model while generating without a cache from a 1-token prompt."""
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                               vocab_size=16, max_position_embeddings=256)
    model = mm.MiniMindForCausalLM(config).eval()
    fed = []
    hook = model.model.embed_tokens.register_forward_hook(lambda module, args, out: fed.append(args[0].shape[1]))
    try:
        model.generate(torch.zeros(1, 1, dtype=torch.long), new_tokens, use_cache=False)
    finally:
        hook.remove()
    return sum(fed)


ANSWERS = {
    "minimind2-bytes": _minimind2_bytes,
    "mha-instead": lambda: _minimind2_bytes(kv_heads=mm.MiniMindConfig().num_attention_heads),
    "llama3-8k": _llama3_gib,
    "cat-vs-prealloc": _cat_over_preallocated,
    "forwards-without-cache": _positions_without_cache,
}
