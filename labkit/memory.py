"""TensorMemory: the peak bytes of the tensors a block of torch code creates (module 08, section 4);
BytesWritten: the bytes that a block of torch code writes (module 07, section 6).

    with TensorMemory() as memory:
        out = mm.scaled_dot_product_attention(q, k, v, is_causal=True)
    memory.peak      # most bytes alive at once, the output included, q, k, v not
    memory.largest   # the largest single tensor created
    memory.now       # bytes still alive (here: the output's)

How it works. A `TorchDispatchMode` sees every operation that reaches torch's dispatcher, with its
inputs and outputs. An output that shares its storage with one of the op's inputs allocated
nothing: it is a view (`transpose`, `view`, slicing), an in-place result (`mul_`) or an `out=`
result. Any other output is a new allocation: its storage's bytes are added to `now` (and `peak`
follows the maximum). A `weakref.finalize` on each tensor counts how many tensors use a storage;
when the last of them is freed (its last reference, Python or C++, is gone) its bytes leave `now`.
So tensors that existed before the block (inputs, weights) are never counted, and a view of one of
them neither.

What it does not count:
- memory a kernel allocates and frees inside one op: a fused C++ kernel such as torch's
  `scaled_dot_product_attention` shows only its output, not its scratch buffers (torch.profiler
  with `profile_memory=True` sees those: tests/kit/test_memory_tracker.py shows the difference);
- what the allocator keeps beyond the tensors' bytes: on a GPU, the caching allocator's rounding
  of each block and the blocks it reserves but leaves unused (this count is close to
  `torch.cuda.max_memory_allocated`, not to `max_memory_reserved`); and everything else the
  operating system sees (the Python process, libraries, freed memory not yet returned);
- tensors built before the dispatcher sees them: `torch.tensor(data)` and `torch.from_numpy`
  hand over a tensor that already exists.
`make bench` measures memory from the operating system's side instead.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["BytesWritten", "NaiveConcatCache", "TensorMemory"]


class TensorMemory(TorchDispatchMode):
    """Bytes of the tensors created inside a `with` block: `peak` alive at once, `now` alive at the
    moment, `largest` single tensor. Tensors from before the block and views of them are not counted."""

    def __init__(self):
        super().__init__()
        self.alive = {}  # storage address -> [tensors using that storage, its bytes]
        self.now = self.peak = self.largest = 0

    def _release(self, address):
        entry = self.alive[address]
        entry[0] -= 1
        if entry[0] == 0:                       # the storage's last tensor is gone: so are its bytes
            self.now -= entry[1]
            del self.alive[address]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        input_ids = {id(a) for a in inputs}
        input_storages = {a.untyped_storage().data_ptr() for a in inputs}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or id(t) in input_ids:
                continue                        # an in-place or out= op returns its input
            storage = t.untyped_storage()
            address = storage.data_ptr()
            if address not in self.alive:
                if address in input_storages:
                    continue                    # a view of a tensor from before the block
                self.alive[address] = [0, storage.nbytes()]   # a new allocation
                self.now += storage.nbytes()
                self.peak = max(self.peak, self.now)
                self.largest = max(self.largest, storage.nbytes())
            self.alive[address][0] += 1         # a new tensor, or a view of one created in the block
            weakref.finalize(t, self._release, address)
        return out


aten = torch.ops.aten


class BytesWritten(TorchDispatchMode):
    """Counts the bytes that tensor operations write inside a `with` block (module 07).

    An operation that makes a new tensor (torch.cat, clone, ...) is charged for that tensor's
    bytes, and counted as an allocation; one that works in place (copy_, which is what a slice
    assignment `a[...] = b` runs) is charged for the tensor it modifies, here the slice. Views
    (slicing, transposing) and torch.empty write nothing; torch.empty counts as an allocation."""

    ALLOCATE_ONLY = (aten.empty, aten.empty_strided, aten.empty_like, aten.new_empty)

    def __init__(self):
        super().__init__()
        self.bytes = 0
        self.allocations = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.is_view:
            return out
        if func.overloadpacket in self.ALLOCATE_ONLY:
            self.allocations += 1
            return out
        if func._schema.is_mutable:  # in place: the first argument is the tensor written to
            written = [args[0]]
        else:
            written = [t for t in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(t, torch.Tensor)]
            self.allocations += len(written)
        self.bytes += sum(t.numel() * t.element_size() for t in written)
        return out


class NaiveConcatCache:
    """The naive baseline of module 07 (for teaching only): per layer, keys and values
    [B, H_kv, t, D] that grow by torch.cat, which allocates a new tensor and copies everything at
    every step. It has the `update` of minimind_ref's KVCache, so the two can be compared."""

    def __init__(self, config, batch_size: int, dtype=torch.float32):
        empty = (batch_size, config.num_key_value_heads, 0, config.head_dim)
        self.keys = [torch.empty(empty, dtype=dtype) for _ in range(config.num_hidden_layers)]
        self.values = [torch.empty(empty, dtype=dtype) for _ in range(config.num_hidden_layers)]

    def update(self, layer_idx: int, k: torch.Tensor, v: torch.Tensor):
        self.keys[layer_idx] = torch.cat([self.keys[layer_idx], k], dim=2)  # copies old + new
        self.values[layer_idx] = torch.cat([self.values[layer_idx], v], dim=2)
        return self.keys[layer_idx], self.values[layer_idx]
