"""The KV cache's constructor, and whether a cache fits the input it is given."""

from __future__ import annotations

from .values import require_int


class CacheError(ValueError):
    """A KV cache used with inputs it cannot hold; the message says which and why."""


def check_cache_args(name: str, config, batch_size, capacity, default_capacity: int, config_type=None) -> None:
    from ..config import MiniMindConfig

    config_type = config_type or MiniMindConfig
    if not isinstance(config, config_type):
        raise TypeError(f"{name} needs a {config_type.__name__} (the model's config), got {type(config).__name__}.")
    require_int(f"{name} ", "batch_size", batch_size, 1, error=CacheError)
    if capacity is not None:
        try:
            require_int(f"{name} ", "capacity", capacity, 1, error=CacheError)
        except CacheError as error:
            raise CacheError(f"{str(error)[:-1]} (or None for {default_capacity}).") from None



def check_cache_fits(cache, config, batch_size: int, new_tokens: int) -> None:
    """Refuse, before any layer runs, a cache built for another model or batch, or a length past
    the model's positions."""
    from ..kv_cache import KVCache

    if not isinstance(cache, KVCache):
        raise TypeError(f"past_key_values must be a minimind_ref.KVCache or None, got {type(cache).__name__}.")
    built, model = ((cache.num_layers, cache.num_kv_heads, cache.head_dim),
                    (config.num_hidden_layers, config.num_key_value_heads, config.head_dim))
    if built != model:
        raise CacheError(
            f"this KV cache was built for (num_hidden_layers, num_key_value_heads, head_dim) = {built}, "
            f"but the model has {model}: build it with the model's config, KVCache(model.config, batch).")
    if batch_size != cache.batch_size:
        raise CacheError(
            f"this KV cache was built for batch size {cache.batch_size}, but the input has batch "
            f"size {batch_size}: a cache belongs to one batch of sequences; start a new one "
            f"(past_key_values=None) for a different batch.")
    if len(cache) + new_tokens > cache.max_length:
        raise CacheError(
            f"the KV cache holds {len(cache)} positions and {new_tokens} more would pass "
            f"max_position_embeddings ({cache.max_length}).")
