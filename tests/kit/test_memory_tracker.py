"""TensorMemory (labkit.memory) against oracles it did not write: tensors of known
sizes created and freed in a known order, and torch.profiler's own record of every allocation and
free (`profile_memory=True`)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import minimind_ref as mm
from labkit.memory import TensorMemory
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
