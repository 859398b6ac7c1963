"""TensorMemory (labkit.memory) against oracles it did not write: tensors of known
sizes created and freed in a known order, and torch.profiler's own record of every allocation and
free (`profile_memory=True`). BytesWritten against the entries an op changes, as torch counts them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.profiler import ProfilerActivity, profile

import minimind_ref as mm
from labkit.memory import BytesWritten, TensorMemory
from minimind_ref.variants import flash_attention

MIB = 2 ** 20


def byte_tensor(n):
    return torch.empty(n, dtype=torch.uint8)  # exactly n bytes


def profiled(fn):
    """Runs fn under TensorMemory inside torch.profiler. Returns the tracker, its bytes alive at the
    end (fn's result), and the profiler's peak and final bytes, added up from its allocation (+) and
    free (-) events in time order; fn's result is freed before returning."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with TensorMemory() as memory:
            out = fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    assert events, "the profiler recorded no allocation"
    now = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        now += event.nbytes()
        peak = max(peak, now)
    alive = memory.now
    del out
    return memory, alive, peak, now


def known_order():
    a = byte_tensor(1000)
    b = byte_tensor(2000)   # 3000 alive: the peak
    del a                   # 2000
    c = byte_tensor(500)    # 2500
    return b, c


def test_known_sizes_in_a_known_order():
    with TensorMemory() as memory:
        kept = known_order()
    assert (memory.peak, memory.now, memory.largest) == (3000, 2500, 2000)
    del kept
    assert memory.now == 0  # freed after the block: still subtracted


def test_freed_tensors_are_subtracted():
    # ten 1 MiB tensors, each freed before the next: a tracker that forgot to subtract counts more
    with TensorMemory() as memory:
        for _ in range(10):
            t = byte_tensor(MIB)
            del t
    assert memory.peak == MIB and memory.now == 0


def test_views_in_place_and_out_allocate_nothing():
    x = torch.randn(1000)   # 4000 bytes, from before the block
    target = torch.empty(1000)
    with TensorMemory() as memory:
        x[10:20].t()                  # views of a tensor from before: nothing
        torch.add(x, 1, out=target)   # out=: nothing
        b = x * 2                     # 4000 new
        c = b.view(10, 100)           # a view: nothing, and it keeps b's storage alive
        del b
        assert memory.now == 4000
        c.mul_(3)                     # in place: nothing
        d = c.t().contiguous()        # 4000 new
        assert memory.now == memory.peak == 8000
        del c
    assert memory.now == 4000 and memory.largest == 4000
    del d
    assert memory.now == 0


def test_weights_from_before_are_not_counted():
    layer = torch.nn.Linear(1000, 1000)   # a 4 MB weight; F.linear takes a view of its transpose
    with TensorMemory() as memory:
        layer(torch.randn(1, 1000))
    assert memory.peak == 2 * 1000 * 4    # the random input and the output, never the weight


def test_a_tensor_kept_by_autograd_is_still_alive():
    for requires_grad in (False, True):
        x = torch.randn(1000, requires_grad=requires_grad)
        with TensorMemory() as memory:
            total = x.exp().sum()     # exp saves its result for the backward pass
        assert memory.peak == 4004
        assert memory.now == (4004 if requires_grad else 4), requires_grad
        del total


QKV = [torch.randn(1, 8, 128, 64, generator=torch.Generator().manual_seed(i)) for i in range(3)]
with torch.random.fork_rng():           # leave the global generator to the other tests
    LAYER = torch.nn.Linear(64, 256)    # its weights exist before the block
CASES = {
    "known order": known_order,
    "explicit attention": lambda: mm.scaled_dot_product_attention(*QKV, is_causal=True),
    "flash_attention": lambda: flash_attention(*QKV, is_causal=True),
    "softmax(q k^T) v": lambda: torch.softmax(QKV[0] @ QKV[1].transpose(-1, -2), dim=-1) @ QKV[2],
    "linear": lambda: LAYER(QKV[0]),
}


@pytest.mark.parametrize("name", CASES)
def test_agrees_with_the_profiler(name):
    memory, alive, peak, now = profiled(CASES[name])
    assert memory.peak == peak, f"{name}: tracker {memory.peak} bytes, profiler {peak}"
    assert alive == now > 0 and memory.now == 0


def test_a_fused_kernel_shows_only_its_output():
    # torch's SDPA runs in one C++ kernel: the profiler sees its scratch buffers, the tracker cannot
    memory, _, peak, _ = profiled(lambda: F.scaled_dot_product_attention(*QKV, is_causal=True))
    outputs = 8 * 128 * 64 * 4 + 8 * 128 * 4   # the output and its log-sum-exp per row
    assert memory.peak == outputs and peak > outputs


# ----------------------------------------------------------------------------------- BytesWritten

def _ops(rows: int, cols: int, picked: list[int], mask: torch.Tensor):
    """Writes into `target` [rows, cols] (zeros) with values that are never zero, each as a learner
    might write it: in place, into some entries only, or into an out= tensor. The inputs are made
    here, before the count starts."""
    index = torch.tensor(picked)
    source, values = torch.rand(len(picked), cols) + 1, torch.rand(len(picked)) + 1
    ones, left, right, row = torch.ones(rows, cols), torch.ones(rows, 2), torch.ones(2, cols), torch.ones(1, cols)
    rows_of = index[:, None].expand(len(picked), cols)
    columns = torch.tensor(sorted({p % cols for p in picked}))
    return {
        "slice assignment": lambda t: t.__setitem__(slice(picked[0], picked[0] + 1), 1.0),
        "index_copy_": lambda t: t.index_copy_(0, index, source),
        "index_add_": lambda t: t.index_add_(0, index, source),
        "index_fill_ on columns": lambda t: t.index_fill_(1, columns, 2.0),
        "a[idx] = b (index_put_)": lambda t: t.__setitem__(index, source),
        "a[mask] = 3 (a bool mask)": lambda t: t.__setitem__(mask, 3.0),
        "masked_fill_": lambda t: t.masked_fill_(mask, 4.0),
        "scatter_": lambda t: t.scatter_(0, rows_of, source),
        "put_": lambda t: t.put_(index, values),
        "fill_diagonal_": lambda t: t.fill_diagonal_(5.0),
        "fill_diagonal_ wrapped": lambda t: t.fill_diagonal_(5.0, wrap=True),
        "add, out=": lambda t: torch.add(ones, 1, out=t),
        "matmul, out=": lambda t: torch.matmul(left, right, out=t),
        "cat, out=": lambda t: torch.cat([row] * rows, out=t),
        "clamp_ (all)": lambda t: t.clamp_(min=1.0),
    }


@settings(derandomize=True, database=None, deadline=None, max_examples=120,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rows=st.integers(1, 6), cols=st.integers(1, 6))
def test_bytes_written_are_the_entries_an_op_changes(data, rows, cols):
    """The oracle: a target of zeros, values that are never zero, and the entries that are no longer
    zero afterwards, counted by torch.count_nonzero (each op writes each entry at most once here)."""
    picked = data.draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=rows, unique=True))
    flags = data.draw(st.lists(st.booleans(), min_size=rows * cols, max_size=rows * cols))
    mask = torch.tensor(flags).reshape(rows, cols)
    name, op = data.draw(st.sampled_from(sorted(_ops(rows, cols, picked, mask).items())))
    target = torch.zeros(rows, cols)
    counter = BytesWritten()
    with counter:
        op(target)
    assert counter.bytes == int(target.count_nonzero()) * target.element_size(), name
    assert counter.allocations == 0, name


def test_meta_tensors_write_and_allocate_nothing():
    counter = BytesWritten()
    with counter:
        x = torch.zeros(1000, 1000, device="meta")
        y = (x @ x).clone()
        y.add_(1)
        torch.add(x, 1, out=torch.empty(1000, 1000, device="meta"))
    assert (counter.bytes, counter.allocations) == (0, 0)
    with TensorMemory() as memory:
        keep = [torch.zeros(1000, device="meta") for _ in range(3)]
    assert (memory.peak, memory.now) == (0, 0) and len(keep) == 3


def test_shape_only_ops_and_aliases_write_nothing():
    a = torch.zeros(4, 8)
    counter = BytesWritten()
    with counter:
        a.t().reshape(-1)               # a copy: 128 bytes, counted once (not again for its _unsafe_view)
        a.unsqueeze_(0).squeeze_(0)     # shape only
        torch.empty(0).set_(a.untyped_storage())  # points at memory that exists
        torch.tensor([1.0, 2.0])        # built before the dispatcher sees it
        a.new_empty_strided((4, 8), (8, 1))
    assert counter.bytes == 128 and counter.allocations == 3  # the copy, torch.empty(0), new_empty_strided
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]), (2, 2))
    with counter:
        (sparse * 2)                    # a sparse result: its indices and values
    assert counter.bytes == 128 + 2 * 2 * 8 + 2 * 4
    with TensorMemory() as memory:
        doubled = sparse * 2
    assert memory.peak == 2 * 2 * 8 + 2 * 4 and doubled.is_sparse


def test_ops_on_lists_of_tensors_are_charged_for_each():
    """An optimiser's step runs _foreach ops: a list in, a list out (or each written in place)."""
    params = [torch.ones(4), torch.ones(2, 3)]
    counter = BytesWritten()
    with counter:
        torch._foreach_add(params, 1.0)   # two new tensors: 16 + 24 bytes
        torch._foreach_mul_(params, 2.0)  # both written in place
    assert (counter.bytes, counter.allocations) == (2 * (16 + 24), 2)
