"""Module 08's facts: IO counts of the paper's Algorithms 0 and 1 (with exp4_io_counts' formulas and
rates), memory and recomputation measured on flash_attention, tiles, defaults, torch's SDPA backends.

Figures quoted from the papers (the A100's 312 and 19.5 TFLOP/s, 1.5-2.0 TB/s, 40-80 GB, 192 KB of
SRAM per SM; Fig. 2's 66.6 / 75.2 GFLOPs, 40.3 / 4.4 GB and 41.7 / 7.3 ms; the 1.7-1.8x causal
speed-up) cannot be computed: the guide cites them, and what is derived from them is a fact here.
"""

from __future__ import annotations

import argparse
import math
import re
import textwrap
from functools import cache
from pathlib import Path

import nbformat
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from facts import fact
from labkit.experiment import Experiment
from labkit.memory import TensorMemory
from minimind_ref.variants import flash_attention
from minimind_ref.variants.flash_attention import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "modules" / "08_flash" / "README.md"
NOTEBOOK = ROOT / "notebooks" / "08_flash.ipynb"
HEADS, HEAD_DIM = 8, 64
HBM_HIGH_BYTES_PER_S = 2.0e12  # the top of the A100's 1.5-2.0 TB/s (arXiv 2205.14135, section 2.1)
LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]  # exp4_io_counts' table
MIB = 2 ** 20


@cache
def experiment(name: str):
    return load_experiment("08", name)


def defaults(name: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    experiment(name).add_arguments(parser)
    return parser.parse_args([])


def sram_elements() -> int:
    """exp4's default M (100 KB) in half-precision elements."""
    exp4 = experiment("exp4_io_counts")
    return int(defaults("exp4_io_counts").sram_kb * 1024 / exp4.BYTES_PER_ELEMENT)


def block_c() -> int:
    return experiment("exp4_io_counts").block_sizes(sram_elements(), HEAD_DIM)[0]


def io_ratios() -> list[float]:
    exp4 = experiment("exp4_io_counts")
    return [exp4.standard_accesses(n, HEAD_DIM) / exp4.flash_accesses(n, HEAD_DIM, sram_elements()) for n in LENGTHS]


# ---------------------------------------------------------------------------- IO counts

@fact
def standard_attention_steps_all_memory_bound():
    """At N = 4096, each of Algorithm 0's three kernels moves its data longer than it computes."""
    exp4 = experiment("exp4_io_counts")
    steps = exp4.standard_steps(4096, HEAD_DIM)
    assert sum(elements for _, elements, _ in steps.values()) == exp4.standard_accesses(4096, HEAD_DIM)
    return all(elements * exp4.BYTES_PER_ELEMENT / exp4.HBM_BYTES_PER_S > operations / rate
               for operations, elements, rate in steps.values())


@fact
def qk_flops_per_byte_at_4096():
    """(intensity, N): S = Q K^T's FLOPs per byte moved at N = 4096, d = 64."""
    exp4 = experiment("exp4_io_counts")
    n = 4096
    intensity = 2 * n * n * HEAD_DIM / ((2 * n * HEAD_DIM + n * n) * exp4.BYTES_PER_ELEMENT)
    assert exp4.flops_per_byte(n, HEAD_DIM) == intensity
    assert intensity < exp4.MATMUL_FLOPS_PER_S / HBM_HIGH_BYTES_PER_S  # memory-bound at either end
    return intensity, n


@fact
def a100_ridge_range():
    """FLOPs per byte an A100 needs to keep its matrix units busy, at 2.0 and at 1.5 TB/s."""
    exp4 = experiment("exp4_io_counts")
    assert exp4.RIDGE == exp4.MATMUL_FLOPS_PER_S / exp4.HBM_BYTES_PER_S
    return exp4.MATMUL_FLOPS_PER_S / HBM_HIGH_BYTES_PER_S, exp4.RIDGE


@fact
def exp4_a100_rates():
    """The rates exp4 prices with, as the guide quotes them: TFLOP/s, TB/s high and low, TB/s used."""
    exp4 = experiment("exp4_io_counts")
    return (exp4.MATMUL_FLOPS_PER_S / 1e12, HBM_HIGH_BYTES_PER_S / 1e12, exp4.HBM_BYTES_PER_S / 1e12,
            exp4.HBM_BYTES_PER_S / 1e12)


@fact
def exp4_other_tflops():
    return experiment("exp4_io_counts").OTHER_FLOPS_PER_S / 1e12


@fact
def exp4_block_c():
    return block_c()


@fact
def io_ratio_range():
    """Standard over FlashAttention accesses, smallest and largest, and the lengths they span
    (exp4's formulas, d = 64, M = 100 KB). The ratio grows with N (towards 4 B_c / 3d)."""
    ratios = io_ratios()
    assert ratios == sorted(ratios), "the ratio no longer grows with N"
    return min(ratios), max(ratios), LENGTHS[0], LENGTHS[-1]


@fact
def io_memory_over_compute_range():
    """How much longer standard attention moves memory than it multiplies, at exp4's lengths."""
    exp4 = experiment("exp4_io_counts")
    times = [exp4.standard_accesses(n, HEAD_DIM) * exp4.BYTES_PER_ELEMENT / exp4.HBM_BYTES_PER_S
             / (4 * n * n * HEAD_DIM / exp4.MATMUL_FLOPS_PER_S) for n in LENGTHS]
    return min(times), max(times)


@fact
def sram_in_elements():
    return sram_elements()


@fact
def sram_over_d_squared():
    return sram_elements() / HEAD_DIM ** 2


@fact(tolerance=0.5)
def io_ratio_limit():
    """4 B_c / 3d, the limit of the ratio for large N ("about 4")."""
    return 4 * block_c() / (3 * HEAD_DIM)


@fact
def paper_fig2_bytes_ratio():
    """arXiv 2205.14135, Fig. 2: 40.3 GB against 4.4 GB (the figures are cited; the ratio is computed)."""
    return 40.3 / 4.4


@fact
def paper_fig2_runtime_ratio():
    return 41.7 / 7.3


@fact
def paper_fig2_extra_flops_percent():
    return 100 * (75.2 / 66.6 - 1)


@fact
def exp4_sram_and_head_dim():
    """exp4's defaults, as the guide describes it: d and M in KB."""
    exp4 = defaults("exp4_io_counts")
    return exp4.head_dim, exp4.sram_kb


# ---------------------------------------------------------------------------- the benchmark's targets

def _bench_targets() -> dict[str, float]:
    source = (ROOT / "benchmarks" / "bench_flash.py").read_text()
    return {name: float(bound) for name, bound in
            re.findall(r'Target\("([^"]+)",.*?at_(?:least|most)=([\d.]+)\)', source, re.S)}


@fact
def bench_flash_targets():
    """At least x times faster than explicit, at most y times SDPA's time, at most 1/z of the memory."""
    targets = _bench_targets()
    return (targets["flash_attention_fast vs explicit attention, speed"],
            targets["flash_attention_fast time / torch SDPA time"], 1,
            targets["explicit peak memory / flash_attention_fast peak memory"])


# ---------------------------------------------------------------------------- memory

def _peak(fn, length):
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM) for _ in range(3))
    with TensorMemory() as memory:
        fn(q, k, v)
    return memory


@cache
def _memory_at_2048():
    explicit = _peak(lambda q, k, v: mm.scaled_dot_product_attention(q, k, v, is_causal=True), 2048)
    flash = _peak(lambda q, k, v: flash_attention(q, k, v, is_causal=True), 2048)
    matrix = HEADS * 2048 ** 2 * 4
    output = HEADS * 2048 * HEAD_DIM * 4
    assert abs(explicit.peak - (3 * matrix + output)) < MIB  # three [H, T, T] tensors at once, and the output
    return explicit, flash, matrix


@fact
def exp2_explicit_peak_and_matrix_mib():
    """Explicit attention's peak at T = 2048 (H = 8, D = 64), the length, and the score matrix, in MiB."""
    explicit, _, matrix = _memory_at_2048()
    return explicit.peak / MIB, 2048, matrix / MIB


@fact
def exp2_flash_peak_mib():
    return _memory_at_2048()[1].peak / MIB


@fact(tolerance=0.5)
def exp2_flash_largest_tensor_mib():
    return _memory_at_2048()[1].largest / MIB


@fact
def exp2_lengths_and_sizes():
    """exp2's lengths (first and last) and its heads and width."""
    lengths = defaults("exp2_memory").lengths
    exp2 = experiment("exp2_memory")
    return lengths[0], lengths[-1], exp2.HEADS, exp2.HEAD_DIM


@fact
def flash_largest_score_tile():
    """`[8, 256, 512]` (4 MiB): the largest temporary flash_attention makes, at the default tiles."""
    return HEADS, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K, HEADS * DEFAULT_BLOCK_Q * DEFAULT_BLOCK_K * 4 // MIB


@fact(tolerance=0.5)
def explicit_attention_gb_at_8192():
    """Three [8, 8192, 8192] float32 tensors and the output, in GiB ("about 6 GB")."""
    return (3 * HEADS * 8192 ** 2 * 4 + HEADS * 8192 * HEAD_DIM * 4) / 2 ** 30


# ---------------------------------------------------------------------------- recomputation

@cache
def _flop_ratio(length=1024):
    """flash_attention's matrix-multiply FLOPs over explicit attention's, forward + backward (exp3)."""
    exp3 = experiment("exp3_recomputation")
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, HEADS, length, HEAD_DIM)
    _, explicit_flops = exp3.gradients_and_flops("explicit", q, k, v, grad)
    _, flash_flops = exp3.gradients_and_flops("flash_attention", q, k, v, grad)
    return flash_flops / explicit_flops


def _saved_mib(fn, length=1024) -> float:
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, requires_grad=True) for _ in range(3))
    saved = {}

    def keep(t):
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        fn(q, k, v)
    return sum(saved.values()) / MIB


@fact
def exp3_flash_saved_mib():
    """What autograd keeps for flash_attention at T = 1024: (MiB, T)."""
    return _saved_mib(lambda q, k, v: flash_attention(q, k, v)), 1024


@fact
def exp3_explicit_saved_mib():
    return _saved_mib(lambda q, k, v: mm.scaled_dot_product_attention(q, k, v))


@fact
def recompute_extra_flops_percent():
    return 100 * (_flop_ratio() - 1)


@fact
def recompute_matrix_products():
    """7 matrix products instead of 6: the readable flash_attention recomputes exactly one."""
    assert abs(_flop_ratio() - 7 / 6) < 1e-3
    return 7, 6


@fact
def exp3_lengths():
    lengths = defaults("exp3_recomputation").lengths
    return lengths[0], lengths[-1]


# ---------------------------------------------------------------------------- tiles and empty rows

@fact
def tile_map_sizes():
    """The notebook's two tile maps: tokens, tile of queries, tile of keys; new tokens, cached ones."""
    code = "\n".join(cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.cell_type == "code")
    call = r"tile_map\((\d+), (\d+), (\d+), (\d+)\)"
    found = re.search(rf"prefill, decode = {call}, {call}", code)
    tokens, _, block_q, block_k, new, keys, _, _ = map(int, found.groups())
    return tokens, block_q, block_k, new, keys - new


@fact
def flash_causal_more_queries_than_keys():
    """What `flash_attention(q, k, v, is_causal=True)` does with 5 queries over 3 keys: the name of
    the error it raises, the same from minimind_ref's other paths."""
    q, k, v = torch.randn(1, 1, 5, 8), torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8)
    raised = set()
    for path in (flash_attention, mm.scaled_dot_product_attention):
        try:
            path(q, k, v, is_causal=True)
            raised.add("no error")
        except Exception as error:  # noqa: BLE001 - the fact is which error
            raised.add(type(error).__name__)
    assert len(raised) == 1, f"the attention paths disagree: {raised}"
    return f"`{raised.pop()}`"


@cache
def _empty_rows():
    q, k, v = (torch.randn(1, 2, n, 8) for n in (5, 3, 3))
    out, lse = flash_attention(q, k, v, attn_mask=torch.ones(5, 3, dtype=torch.bool).tril(-2), return_lse=True)
    return out[..., :2, :], lse[..., :2]  # the mask hides every key from rows 0 and 1


@fact
def flash_empty_row_output():
    return _empty_rows()[0].abs().max().item()


@fact
def flash_empty_row_lse():
    lse = _empty_rows()[1]
    assert torch.isneginf(torch.logsumexp(torch.full((3,), -math.inf), dim=0))  # explicit attention's convention
    values = set(lse.flatten().tolist())
    assert len(values) == 1
    return f"`lse = {values.pop()}`"


# ---------------------------------------------------------------------------- tolerances and defaults

@cache
def _errors():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, 300, HEAD_DIM) for _ in range(3))
    out = flash_attention(q, k, v, is_causal=True)
    sdpa = (out - torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max().item()
    explicit = (out - mm.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max().item()
    return sdpa, explicit


@fact
def flash_equals_explicit_below():
    """'(here below 1e-6)': the bound holds."""
    return _errors()[1] < 1e-6


@fact
def flash_equals_sdpa_within():
    """'equal to torch's SDPA within 1e-5': the bound holds."""
    return _errors()[0] <= 1e-5


@fact
def flash_attention_signature():
    """The signature as the code guide and the notebook write it, defaults included."""
    import inspect

    parameters = inspect.signature(flash_attention).parameters.items()
    shown = ", ".join(f"{n}={p.default!r}" if p.default is not p.empty else n for n, p in parameters)
    return f"`flash_attention({shown})`"


@fact
def exp1_keys():
    return defaults("exp1_online_softmax").keys


@fact
def flash_tests_raise_the_maximum_per_tile():
    """The tests of flash_attention raise the maximum by 1000 at every tile of keys."""
    tests = (ROOT / "tests" / "model" / "test_flash.py").read_text()
    return float(re.search(r"\* (\d+) / block_k  # \+\1 per tile of keys", tests).group(1))


@fact
def exp5_p():
    return defaults("exp5_attention_dropout").p


@fact
def exp5_draws():
    exp5 = experiment("exp5_attention_dropout")
    return Experiment.parser(exp5.__doc__, exp5.__file__, exp5.add_arguments).parse_args([]).draws


@fact
def dropout_row_sum_variance():
    """A row of weights w, dropped at p, has sum variance p/(1 - p) sum w^2; a kept weight is w / (1 - p)."""
    torch.manual_seed(0)
    w = torch.softmax(torch.randn(16), dim=0)
    p = defaults("exp5_attention_dropout").p
    sums = torch.nn.functional.dropout(w.expand(20000, 16), p=p).sum(-1)
    predicted = p / (1 - p) * w.pow(2).sum().item()
    kept = torch.nn.functional.dropout(w.expand(4, 16), p=p)
    return (abs(sums.var().item() - predicted) < 0.1 * predicted
            and torch.allclose(kept[kept != 0], w.expand(4, 16)[kept != 0] / (1 - p)))


# ---------------------------------------------------------------------------- torch's SDPA on a CPU

def _pinned_torch() -> str:
    return re.search(r"^torch==(\d+\.\d+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)


@fact
def torch_version_described():
    return _pinned_torch()


def _called(run):
    guide = GUIDE.read_text()
    after = guide.split("Which one ran shows in the operators it called", 1)[1]
    snippet = textwrap.dedent(re.search(r"\n\n((?:    .*\n|\n)+)", after).group(1))
    namespace = {"torch": torch, "F": torch.nn.functional, "print": lambda *args: None}
    exec(snippet, namespace)  # the guide's own snippet
    CalledOps = namespace["CalledOps"]
    with CalledOps() as ops:
        run(namespace["x"])
    return namespace["called"].names, [n for n in ops.names if any(w in n for w in ("attention", "bmm", "softmax"))]


def _on_pinned_torch():
    import pytest

    if not torch.__version__.startswith(_pinned_torch() + "."):
        pytest.skip(f"the guide describes torch {_pinned_torch()}; this is torch {torch.__version__}")


@fact
def sdpa_cpu_default_kernel():
    """The one operator the guide's snippet sees torch's SDPA call on a CPU."""
    _on_pinned_torch()
    default, _ = _called(lambda x: None)
    assert len(default) == 1
    return f"`{default[0].removeprefix('aten.').removesuffix('.default')}`"


@fact
def sdpa_math_kernels():
    """The math path's operators, (`bmm`, `_safe_softmax`, `bmm`); dropout on a CPU takes the same path."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    _on_pinned_torch()
    with sdpa_kernel(SDPBackend.MATH):
        _, math_ops = _called(lambda x: torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True))
    _, dropout = _called(lambda x: torch.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=0.1))
    assert dropout == math_ops
    return "(" + ", ".join(f"`{n.removeprefix('aten.').removesuffix('.default')}`" for n in math_ops) + ")"


@fact
def sdpa_efficient_backend_raises_on_cpu():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    x = torch.randn(1, 2, 4, 8)
    try:
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            torch.nn.functional.scaled_dot_product_attention(x, x, x)
    except RuntimeError:
        return True
    return False


# ---------------------------------------------------------------------------- what Algorithm 1 writes

@fact
def flash_1_rewrites_o_l_m_every_pass():
    """Algorithm 1 rewrites O, l and m once per outer pass: more SRAM, fewer passes, fewer accesses."""
    exp4 = experiment("exp4_io_counts")
    m = sram_elements()
    return exp4.flash_accesses(4096, HEAD_DIM, m) > exp4.flash_accesses(4096, HEAD_DIM, 4 * m)
