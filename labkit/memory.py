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

import math
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .arguments import whole

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
        input_storages = {address for a in inputs for address, _ in _blocks(a)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or id(t) in input_ids:
                continue                        # an in-place or out= op returns its input
            for address, nbytes in _blocks(t):  # one storage; a sparse tensor's indices and values
                if address not in self.alive:
                    if address in input_storages:
                        continue                # a view of a tensor from before the block
                    self.alive[address] = [0, nbytes]   # a new allocation
                    self.now += nbytes
                    self.peak = max(self.peak, self.now)
                    self.largest = max(self.largest, nbytes)
                self.alive[address][0] += 1     # a new tensor, or a view of one created in the block
                weakref.finalize(t, self._release, address)
        return out


def _blocks(t: torch.Tensor) -> list[tuple[int, int]]:
    """(address, bytes) of each block of memory behind t: its storage; a sparse tensor's indices and
    values; none for a meta tensor (a shape without memory) or an empty one."""
    if t.device.type == "meta":
        return []
    if t.layout == torch.sparse_coo:
        parts = [t._indices(), t._values()]
    elif t.layout in (torch.sparse_csr, torch.sparse_bsr):
        parts = [t.crow_indices(), t.col_indices(), t.values()]
    elif t.layout in (torch.sparse_csc, torch.sparse_bsc):
        parts = [t.ccol_indices(), t.row_indices(), t.values()]
    else:
        storage = t.untyped_storage()
        return [(storage.data_ptr(), storage.nbytes())] if storage.data_ptr() else []
    return [block for part in parts for block in _blocks(part)]


aten = torch.ops.aten


class BytesWritten(TorchDispatchMode):
    """Counts the bytes that tensor operations write inside a `with` block (module 07).

    An operation that makes a new tensor (torch.cat, clone, ...) is charged for that tensor's
    bytes, and counted as an allocation. One that writes into a tensor it is given is charged for
    what it writes there: the tensor an in-place op modifies (copy_, which is what a slice
    assignment `a[...] = b` runs, is charged for the slice), the `out=` tensor of an out= op, and,
    for an op that writes some entries only, those entries (index_copy_ the rows it copies,
    `a[idx] = b` the indexed entries, masked_fill_ the masked ones, scatter_ one per index).
    Views (slicing, transposing), ops that change only a tensor's shape or storage (resize_, set_,
    squeeze_) and torch.empty write nothing; torch.empty counts as an allocation. A meta tensor
    has a shape and no memory: it writes nothing and allocates nothing."""

    ALLOCATE_ONLY = (aten.empty, aten.empty_strided, aten.empty_like, aten.new_empty, aten.new_empty_strided,
                     aten.empty_permuted)
    METADATA_ONLY = (aten.resize_, aten.resize_as_, aten._resize_output_, aten.set_, aten.as_strided_,
                     aten.squeeze_, aten.unsqueeze_, aten.t_, aten.transpose_, aten.swapdims_, aten.swapaxes_,
                     aten.detach_)

    def __init__(self):
        super().__init__()
        self.bytes = 0
        self.allocations = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.is_view:
            return func(*args, **kwargs)
        named = _named_arguments(func, args, kwargs)
        written = [t for arg in func._schema.arguments if arg.alias_info is not None and arg.alias_info.is_write
                   for t in _tensors(named.get(arg.name)) if t.device.type != "meta"]
        before = {id(t): _address(t) for t in written}
        # entries an op writes into a tensor it is given: counted before it runs (a mask's count)
        elements = {id(t): _written_elements(func.overloadpacket, named, t) for t in written}
        out = func(*args, **kwargs)
        packet = func.overloadpacket
        if packet in self.METADATA_ONLY:  # resize_ may move the tensor to new memory; set_ points at old memory
            if packet in (aten.resize_, aten.resize_as_, aten._resize_output_):
                self.allocations += sum(_address(t) != before[id(t)] and _address(t) != 0 for t in written)
            return out
        if packet in self.ALLOCATE_ONLY:
            self.allocations += sum(t.device.type != "meta" for t in _tensors(out))
            return out
        if written:  # in place, or out=: the tensors it was given
            for t in written:
                self.bytes += elements[id(t)] * t.element_size() if elements[id(t)] is not None else _nbytes(t)
                self.allocations += _address(t) != before[id(t)] and _address(t) != 0  # an out= tensor resized
            return out
        inputs = {_address(t) for t in _tensors(tree_flatten((args, kwargs))[0])} - {0}
        for result, returned in _returns(func, out):
            if returned.alias_info is not None or result.device.type == "meta" or _address(result) in inputs:
                continue  # an alias of an input (lift_fresh, _unsafe_view of a fresh copy), or no memory
            self.bytes += _nbytes(result)
            self.allocations += 1
        return out


def _named_arguments(func, args, kwargs) -> dict:
    named = dict(kwargs)
    for argument, value in zip(func._schema.arguments, args):
        named[argument.name] = value
    return named


def _tensors(value) -> list[torch.Tensor]:
    """The tensors in an argument or a result: a tensor, or a list or tuple of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def _returns(func, out) -> list[tuple[torch.Tensor, object]]:
    """Each tensor the op returned, with its declared return (a list return, cat's parts or
    _foreach_add's, gives each of its tensors)."""
    items = out if isinstance(out, tuple) else (out,)
    return [(t, returned) for item, returned in zip(items, func._schema.returns) for t in _tensors(item)]


def _address(t: torch.Tensor) -> int:
    """The address of the memory behind t (0 for none: meta, sparse and empty tensors)."""
    if t.device.type == "meta" or t.layout != torch.strided or t.is_nested:
        return 0
    return t.untyped_storage().data_ptr()


def _nbytes(t: torch.Tensor) -> int:
    """The bytes t's values take: a view's own, not its storage's; a sparse tensor's indices and values."""
    if t.device.type == "meta":
        return 0
    if t.layout == torch.sparse_coo:
        return _nbytes(t._indices()) + _nbytes(t._values())
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return _nbytes(t.crow_indices()) + _nbytes(t.col_indices()) + _nbytes(t.values())
    if t.layout in (torch.sparse_csc, torch.sparse_bsc):
        return _nbytes(t.ccol_indices()) + _nbytes(t.row_indices()) + _nbytes(t.values())
    if t.is_nested:
        return sum(_nbytes(part) for part in t.unbind())
    return t.numel() * t.element_size()


def _written_elements(packet, named: dict, target: torch.Tensor) -> int | None:
    """How many entries of `target` an op that writes some of them writes; None for all of them."""
    if target is not named.get("self"):
        return None  # an out= tensor: written whole
    if packet in (aten.index_copy_, aten.index_add_, aten.index_reduce_):
        return named["source"].numel()
    if packet in (aten.scatter_, aten.scatter_add_, aten.scatter_reduce_, aten.put_):
        return named["index"].numel()
    if packet is aten.index_fill_:
        dim = named["dim"] % max(1, target.dim())
        return named["index"].numel() * (target.numel() // target.shape[dim] if target.dim() else 1)
    if packet in (aten.index_put_, aten._index_put_impl_):
        return _indexed_elements(target, named["indices"])
    if packet in (aten.masked_fill_, aten.masked_scatter_):
        return int(torch.broadcast_to(named["mask"], target.shape).count_nonzero())
    if packet is aten.fill_diagonal_:
        return _diagonal_elements(target.shape, named.get("wrap", False))
    return None


def _indexed_elements(target: torch.Tensor, indices) -> int:
    """The entries of target[indices] (advanced indexing): the index tensors' broadcast shape times
    the dimensions no index takes; a bool mask takes as many dimensions as it has, and picks its Trues."""
    shapes, kept, dim = [], [], 0
    for index in indices:
        if index is None:  # aten's way of writing ':' for a dimension
            kept.append(target.shape[dim])
            dim += 1
        elif index.dtype in (torch.bool, torch.uint8):
            shapes.append((int(index.count_nonzero()),))
            dim += index.dim()
        else:
            shapes.append(tuple(index.shape))
            dim += 1
    kept += target.shape[dim:]
    return math.prod(torch.broadcast_shapes(*shapes)) * math.prod(kept)


def _diagonal_elements(shape, wrap: bool) -> int:
    """Entries on the main diagonal that fill_diagonal_ writes (a tall matrix with wrap=True goes on
    below every (columns + 1)-th row)."""
    if len(shape) == 2 and wrap and shape[0] > shape[1] + 1:
        return len(range(0, shape[0] * shape[1], shape[1] + 1))
    return min(shape)


class NaiveConcatCache:
    """The naive baseline of module 07 (for teaching only): per layer, keys and values
    [B, H_kv, t, D] that grow by torch.cat, which allocates a new tensor and copies everything at
    every step. It has the `update` of minimind_ref's KVCache, so the two can be compared."""

    def __init__(self, config, batch_size: int, dtype=torch.float32):
        from minimind_ref import MiniMindConfig
        from minimind_ref._checks import check_arguments

        check_arguments("NaiveConcatCache", config, MiniMindConfig)
        batch_size = whole("NaiveConcatCache", "batch_size", batch_size, low=1)
        empty = (batch_size, config.num_key_value_heads, 0, config.head_dim)
        self.keys = [torch.empty(empty, dtype=dtype) for _ in range(config.num_hidden_layers)]
        self.values = [torch.empty(empty, dtype=dtype) for _ in range(config.num_hidden_layers)]

    def update(self, layer_idx: int, k: torch.Tensor, v: torch.Tensor):
        layer_idx = whole("NaiveConcatCache.update", "layer_idx", layer_idx, low=0, high=len(self.keys) - 1)
        want = self.keys[layer_idx].shape
        for name, t in (("k", k), ("v", v)):
            if not isinstance(t, torch.Tensor) or t.ndim != 4 or t.shape[:2] != want[:2] or t.shape[3] != want[3] \
                    or t.shape[2] != k.shape[2] or t.dtype != self.keys[layer_idx].dtype:
                raise ValueError(f"NaiveConcatCache.update: {name} must be [batch={want[0]}, kv_heads={want[1]}, new "
                                 f"tokens, head_dim={want[3]}] in {self.keys[layer_idx].dtype}, like k, got "
                                 f"{getattr(t, 'shape', type(t).__name__)} {getattr(t, 'dtype', '')}.")
        self.keys[layer_idx] = torch.cat([self.keys[layer_idx], k], dim=2)  # copies old + new
        self.values[layer_idx] = torch.cat([self.values[layer_idx], v], dim=2)
        return self.keys[layer_idx], self.values[layer_idx]
