"""The KV cache: keep every layer's keys and values so that decoding computes each token once
(module 07).

Without a cache, producing token t+1 re-runs the model over all t tokens before it. With one, the
new token's query attends to keys and values that were stored when the earlier tokens went
through; only the new token's own projections are computed.

Storage: per layer, one preallocated tensor for keys and one for values, [B, H_kv, capacity, D],
filled from the left: writing costs only the new token's bytes, where growing by `torch.cat` would
copy the whole cache at every step (module 07 measures both); full, it doubles. Only the key/value
heads are stored: with GQA, H / H_kv times less memory than one K and V per query head.

Bytes per cached token: 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
"""

from __future__ import annotations

import torch

from ._checks import CacheError, check_arguments, check_cache_update, check_layer_index
from .config import MiniMindConfig

DEFAULT_CAPACITY = 256
__all__ = ["CacheError", "DEFAULT_CAPACITY", "KVCache"]


class KVCache:
    def __init__(self, config: MiniMindConfig, batch_size: int, capacity: int | None = None):
        """An empty cache for `batch_size` sequences of a model with `config`. `capacity`: positions
        to allocate at the first update (default 256; generate passes prompt + new tokens, so it
        never grows); storage is allocated lazily, in the dtype and device of the first keys."""
        check_arguments("KVCache", config, MiniMindConfig, CacheError, batch_size=batch_size, capacity=capacity)
        self.num_layers = config.num_hidden_layers
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.max_length = config.max_position_embeddings
        self.batch_size = int(batch_size)
        self.initial_capacity = min(int(capacity or DEFAULT_CAPACITY), self.max_length)
        self.keys: list[torch.Tensor | None] = [None] * self.num_layers  # [B, H_kv, capacity, D]
        self.values: list[torch.Tensor | None] = [None] * self.num_layers
        self.lengths = [0] * self.num_layers

    @property
    def capacity(self) -> int:
        """Positions the storage holds before it must grow (layer 0's; all layers grow alike)."""
        return self.initial_capacity if self.keys[0] is None else self.keys[0].shape[2]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """How many positions layer `layer_idx` has cached (all layers agree between forwards)."""
        check_layer_index(self, layer_idx)
        return self.lengths[layer_idx]

    def __len__(self) -> int:
        return self.get_seq_length()

    def update(self, layer_idx: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new keys and values [B, H_kv, T, D] of one layer; return all of that layer's
        keys and values so far, [B, H_kv, cached + T, D] (views into the storage, no copy). Keys
        that do not fit this cache, or would take it past max_position_embeddings, are refused."""
        check_cache_update(self, layer_idx, k, v)
        start = self.lengths[layer_idx]
        end = start + k.shape[2]
        stored = self.keys[layer_idx]
        if stored is None or end > stored.shape[2] or (
                stored.dtype != k.dtype and torch.promote_types(stored.dtype, k.dtype) != stored.dtype):
            self._grow(layer_idx, end, like=k)
        self.keys[layer_idx][:, :, start:end] = k
        self.values[layer_idx][:, :, start:end] = v
        self.lengths[layer_idx] = end
        return self.keys[layer_idx][:, :, :end], self.values[layer_idx][:, :, :end]

    def _grow(self, layer_idx: int, needed: int, like: torch.Tensor) -> None:
        """(Re)allocate a layer's storage for at least `needed` positions, doubling, and copy
        what it held. Keys of a wider dtype than the storage's widen it (a float64 key of 1e5
        written into float16 storage would become inf)."""
        old_k, old_v = self.keys[layer_idx], self.values[layer_idx]
        capacity = self.initial_capacity if old_k is None else old_k.shape[2]
        while capacity < needed:
            capacity *= 2
        capacity = min(capacity, self.max_length)  # update refused anything past it
        dtype = like.dtype if old_k is None else torch.promote_types(old_k.dtype, like.dtype)
        shape = (self.batch_size, self.num_kv_heads, capacity, self.head_dim)
        new_k = torch.empty(shape, dtype=dtype, device=like.device)
        new_v = torch.empty(shape, dtype=dtype, device=like.device)
        if old_k is not None:
            held = self.lengths[layer_idx]
            new_k[:, :, :held] = old_k[:, :, :held]
            new_v[:, :, :held] = old_v[:, :, :held]
        self.keys[layer_idx], self.values[layer_idx] = new_k, new_v

    def layer(self, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The cached keys and values of one layer, [B, H_kv, length, D]."""
        check_layer_index(self, layer_idx)
        if self.keys[layer_idx] is None:
            raise CacheError(f"layer {layer_idx} of the KV cache holds nothing yet.")
        end = self.lengths[layer_idx]
        return self.keys[layer_idx][:, :, :end], self.values[layer_idx][:, :, :end]

    def nbytes(self) -> int:
        """Bytes of the cached positions (what the formula in the module docstring counts)."""
        return sum(2 * k.shape[0] * k.shape[1] * length * k.shape[3] * k.element_size()
                   for k, length in zip(self.keys, self.lengths) if k is not None)

    def allocated_nbytes(self) -> int:
        """Bytes the storage actually takes, spare capacity included."""
        return sum(t.nbytes for t in self.keys + self.values if t is not None)

    def __repr__(self) -> str:
        return (f"KVCache(layers={self.num_layers}, batch={self.batch_size}, kv_heads={self.num_kv_heads}, "
                f"head_dim={self.head_dim}, length={len(self)}, capacity={self.capacity})")
