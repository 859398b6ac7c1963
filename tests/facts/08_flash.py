"""Module 08's facts: IO counts of the paper's Algorithms 0 and 1 (exp4_io_counts' counts, rates and
table), memory and recomputation measured on flash_attention by exp2's and exp3's own functions,
tiles read off the notebook, defaults, torch's SDPA backends.

Figures quoted from the papers (the A100's 312 and 19.5 TFLOP/s, 1.5-2.0 TB/s, 40-80 GB, 192 KB of
SRAM per SM; Fig. 2's 66.6 / 75.2 GFLOPs, 40.3 / 4.4 GB and 41.7 / 7.3 ms; the 1.7-1.8x causal
speed-up) cannot be computed: the guide cites them, exp4 holds the A100's (with the citation), and
what is derived from them is a fact here.
"""

from __future__ import annotations

import argparse
import math
import re
import textwrap

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import minimind_ref as mm
from facts import fact, once, sources
from labkit.experiment import Experiment
from minimind_ref.variants import flash_attention
from minimind_ref.variants.flash_attention import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q

MIB = 2 ** 20
TILE_MAP_CELL = "343f0879"  # the two tile maps: a prefill and a decoding step
EQUALS_CELL = "af9e3128"  # flash_attention against explicit attention and torch's SDPA


def experiment(name: str):
    return sources.experiment("08", name)


def defaults(name: str) -> argparse.Namespace:
    return sources.defaults("08", name)


def head_dim() -> int:
    """exp4's d."""
    return defaults("exp4_io_counts").head_dim


def sram_elements() -> int:
    """exp4's default M (100 KB) in half-precision elements."""
    exp4 = experiment("exp4_io_counts")
    return int(defaults("exp4_io_counts").sram_kb * 1024 / exp4.BYTES_PER_ELEMENT)


def block_c() -> int:
    return experiment("exp4_io_counts").block_sizes(sram_elements(), head_dim())[0]


def io_table() -> dict:
    """exp4's table at its defaults: N -> (standard, flash accesses, matmul s, standard s, flash s)."""
    return experiment("exp4_io_counts").io_table(head_dim(), sram_elements())


# ---------------------------------------------------------------------------- IO counts

@fact
def standard_attention_steps_all_memory_bound():
    """At exp4's N of the step-by-step table, each of Algorithm 0's three kernels moves its data longer
    than it computes."""
    exp4 = experiment("exp4_io_counts")
    steps = exp4.standard_steps(exp4.N_STEPS, head_dim())
    assert sum(elements for _, elements, _ in steps.values()) == exp4.standard_accesses(exp4.N_STEPS, head_dim())
    return all(elements * exp4.BYTES_PER_ELEMENT / exp4.HBM_BYTES_PER_S > operations / rate
               for operations, elements, rate in steps.values())


@fact
def qk_flops_per_byte_at_4096():
    """(intensity, N): S = Q K^T's FLOPs per byte moved at exp4's N = 4096, d = 64."""
    exp4 = experiment("exp4_io_counts")
    intensity = exp4.flops_per_byte(exp4.N_STEPS, head_dim())
    assert intensity < exp4.MATMUL_FLOPS_PER_S / max(exp4.HBM_RANGE_BYTES_PER_S)  # memory-bound at either end
    return intensity, exp4.N_STEPS


@fact
def a100_ridge_range():
    """FLOPs per byte an A100 needs to keep its matrix units busy, at 2.0 and at 1.5 TB/s."""
    exp4 = experiment("exp4_io_counts")
    low, high = sorted(exp4.MATMUL_FLOPS_PER_S / rate for rate in exp4.HBM_RANGE_BYTES_PER_S)
    assert high == exp4.RIDGE, "exp4 prices at the low end of the bandwidth"
    return low, high


@fact
def exp4_a100_rates():
    """The rates exp4 prices with, as the guide quotes them: TFLOP/s, TB/s high and low, TB/s used."""
    exp4 = experiment("exp4_io_counts")
    low, high = sorted(exp4.HBM_RANGE_BYTES_PER_S)
    return exp4.MATMUL_FLOPS_PER_S / 1e12, high / 1e12, low / 1e12, exp4.HBM_BYTES_PER_S / 1e12


@fact
def exp4_other_tflops():
    return experiment("exp4_io_counts").OTHER_FLOPS_PER_S / 1e12


@fact
def exp4_block_c():
    return block_c()


@fact
def io_ratio_range():
    """Standard over FlashAttention accesses, smallest and largest, and the lengths they span
    (exp4's table, d = 64, M = 100 KB). The ratio grows with N (towards 4 B_c / 3d)."""
    table = io_table()
    ratios = [standard / flash for standard, flash, *_ in table.values()]
    assert ratios == sorted(ratios), "the ratio no longer grows with N"
    return min(ratios), max(ratios), min(table), max(table)


@fact
def io_memory_over_compute_range():
    """How much longer standard attention moves memory than it multiplies, over exp4's table."""
    times = [standard_s / compute_s for _, _, compute_s, standard_s, _ in io_table().values()]
    return min(times), max(times)


@fact
def sram_in_elements():
    return sram_elements()


@fact
def sram_over_d_squared():
    return sram_elements() / head_dim() ** 2


@fact
def io_ratio_limit():
    """4 B_c / 3d, the limit of the ratio for large N ("about 4"), the formula the sentence states."""
    return 4 * block_c() / (3 * head_dim())


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

def _bench() -> str:
    return sources.text("benchmarks/bench_flash.py")


def _bench_targets() -> dict[str, float]:
    return {name: float(bound) for name, bound in
            re.findall(r'Target\("([^"]+)",.*?at_(?:least|most)=([\d.]+)\)', _bench(), re.S)}


@fact
def bench_flash_targets():
    """At least x times faster than explicit, at most y times SDPA's time, at most 1/z of the memory."""
    targets = _bench_targets()
    return (targets["flash_attention_fast vs explicit attention, speed"],
            targets["flash_attention_fast time / torch SDPA time"], 1,
            targets["explicit peak memory / flash_attention_fast peak memory"])


# ---------------------------------------------------------------------------- memory

@once
def exp2_run() -> dict:
    """What exp2 measures at its default lengths (its own `measure`, on inputs drawn as it draws them,
    seed 0): per path, the peak and the largest tensor at each length; the largest difference between
    flash_attention and explicit attention."""
    exp2, lengths = experiment("exp2_memory"), defaults("exp2_memory").lengths
    peak, largest, difference = {}, {}, 0.0
    with sources.seeded(0):
        for length in lengths:
            q, k, v = (torch.randn(1, exp2.HEADS, length, exp2.HEAD_DIM) for _ in range(3))
            outs = {}
            for name in ("explicit", "flash_attention"):
                outs[name], peak[name, length], largest[name, length] = exp2.measure(name, q, k, v)
            difference = max(difference, (outs["flash_attention"] - outs["explicit"]).abs().max().item())
    return {"lengths": lengths, "peak": peak, "largest": largest, "difference": difference}


@fact
def exp2_explicit_peak_and_matrix_mib():
    """Explicit attention's peak at exp2's longest T (H = 8, D = 64), the length, and its largest tensor,
    the full [H, T, T] score matrix, in MiB."""
    run, exp2 = exp2_run(), experiment("exp2_memory")
    last = run["lengths"][-1]
    assert run["largest"]["explicit", last] == exp2.HEADS * last * last * 4, "the largest tensor is the score matrix"
    return run["peak"]["explicit", last] / MIB, last, run["largest"]["explicit", last] / MIB


@fact
def exp2_flash_peak_mib():
    run = exp2_run()
    return run["peak"]["flash_attention", run["lengths"][-1]] / MIB


@fact
def exp2_flash_largest_tensor_mib():
    run = exp2_run()
    return run["largest"]["flash_attention", run["lengths"][-1]] / MIB


@fact
def exp2_lengths_and_sizes():
    """exp2's lengths (first and last) and its heads and width."""
    lengths = defaults("exp2_memory").lengths
    exp2 = experiment("exp2_memory")
    return lengths[0], lengths[-1], exp2.HEADS, exp2.HEAD_DIM


class Shapes(TorchDispatchMode):
    """The shape and bytes of every tensor the operations inside the block create."""

    def __init__(self):
        super().__init__()
        self.created: list[tuple[tuple[int, ...], int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else [out]:
            if isinstance(t, torch.Tensor) and not func.is_view:
                self.created.append((tuple(t.shape), t.numel() * t.element_size()))
        return out


@fact
def flash_largest_score_tile():
    """`[8, 256, 512]` (4 MiB): the largest temporary flash_attention creates at exp2's longest T with
    the default tiles (the output, the same size there, left out), measured."""
    exp2, length = experiment("exp2_memory"), defaults("exp2_memory").lengths[-1]
    q, k, v = (torch.randn(1, exp2.HEADS, length, exp2.HEAD_DIM) for _ in range(3))
    with Shapes() as shapes:
        out = flash_attention(q, k, v, is_causal=True)
    shape, size = max((c for c in shapes.created if c[0] != tuple(out.shape)), key=lambda c: c[1])
    assert shape[-2:] == (DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K), f"the largest temporary is {shape}, not a score tile"
    return (*shape[-3:], size / MIB)


@fact
def explicit_attention_gb_at_8192():
    """Explicit attention's peak at the benchmark's memory length T = 8192, in GiB ("about 6 GB"): exp2's
    peaks are a T^2 term (the [H, T, T] tensors) plus a T term (the output), so two measured lengths
    give both, and the benchmark's length follows (one call at 8192 would need those 6 GB here)."""
    run = exp2_run()
    length = int(re.search(r'"--memory-seq", type=int, default=(\d+)', _bench()).group(1))
    t1, t2 = run["lengths"][:2]
    p1, p2 = run["peak"]["explicit", t1], run["peak"]["explicit", t2]
    quadratic = (p2 / t2 - p1 / t1) / (t2 - t1)  # p = a T^2 + b T
    linear = p1 / t1 - quadratic * t1
    assert all(abs(quadratic * t * t + linear * t - run["peak"]["explicit", t]) < 1e-6 * run["peak"]["explicit", t]
               for t in run["lengths"]), "explicit attention's peak is no longer a T^2 term plus a T term"
    return (quadratic * length ** 2 + linear * length) / 2 ** 30


# ---------------------------------------------------------------------------- recomputation

def _exp3_inputs(length: int, grad: bool = True):
    exp3 = experiment("exp3_recomputation")
    return [torch.randn(1, exp3.HEADS, length, exp3.HEAD_DIM, requires_grad=grad) for _ in range(3)]


def _exp3_length() -> int:
    return defaults("exp3_recomputation").lengths[-1]


@once
def _flop_ratio():
    """flash_attention's matrix-multiply FLOPs over explicit attention's, forward + backward, at exp3's
    longest T (exp3's own count)."""
    exp3 = experiment("exp3_recomputation")
    q, k, v = _exp3_inputs(_exp3_length())
    grad = torch.randn_like(q)
    _, explicit_flops = exp3.gradients_and_flops("explicit", q, k, v, grad)
    _, flash_flops = exp3.gradients_and_flops("flash_attention", q, k, v, grad)
    return flash_flops / explicit_flops


class MatrixProducts(TorchDispatchMode):
    """How many matrix products the operations inside the block run."""

    PRODUCTS = {"mm", "bmm", "baddbmm", "addmm", "matmul"}

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += func.overloadpacket.__name__.rstrip("_") in self.PRODUCTS
        return func(*args, **(kwargs or {}))


def matrix_products(path: str) -> int:
    """Matrix products of forward + backward through exp3's `path`, on one tile of queries and keys."""
    exp3 = experiment("exp3_recomputation")
    q, k, v = _exp3_inputs(min(DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K) // 4)
    with MatrixProducts() as products:
        exp3.forward_backward(path, q, k, v, torch.randn_like(q))
    return products.count


@fact
def exp3_flash_saved_mib():
    """What autograd keeps for flash_attention at exp3's longest T: (MiB, T)."""
    exp3 = experiment("exp3_recomputation")
    return exp3.saved_bytes("flash_attention", *_exp3_inputs(_exp3_length())) / MIB, _exp3_length()


@fact
def exp3_explicit_saved_mib():
    exp3 = experiment("exp3_recomputation")
    return exp3.saved_bytes("explicit", *_exp3_inputs(_exp3_length())) / MIB


@fact
def recompute_extra_flops_percent():
    return 100 * (_flop_ratio() - 1)


@fact
def recompute_matrix_products():
    """7 matrix products instead of 6: counted on one tile, forward and backward; the FLOPs agree."""
    flash, explicit = matrix_products("flash_attention"), matrix_products("explicit")
    assert abs(_flop_ratio() - flash / explicit) < 1e-3, "the extra FLOPs are not one product in six"
    return flash, explicit


@fact
def exp3_lengths():
    lengths = defaults("exp3_recomputation").lengths
    return lengths[0], lengths[-1]


# ---------------------------------------------------------------------------- tiles and empty rows

@fact
def tile_map_sizes():
    """The notebook's two tile maps: tokens, tile of queries, tile of keys; new tokens, cached ones."""
    call = r"tile_map\((\d+), (\d+), (\d+), (\d+)\)"
    found = sources.read("08", TILE_MAP_CELL, rf"prefill, decode = {call}, {call}")
    tokens, _, block_q, block_k, new, keys, _, _ = found
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


@once
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

@fact(below=True, spread=0.5,
      why="'here below 2e-6', a bound: the largest difference is 8.3e-7 here, 7.2e-7 to 1.2e-6 on the stand-ins of "
          "make portability and under last-bit noise (python -m facts.spread): a relative spread of 0.43")
def flash_equals_explicit_below():
    """'(here below 1e-6)': the largest difference exp2's runs measure between the two."""
    return exp2_run()["difference"]


@fact
def flash_equals_sdpa_within():
    """'equal to torch's SDPA within 1e-5': the tolerance the notebook's comparison uses, which holds."""
    atol = sources.read("08", EQUALS_CELL, r"torch\.allclose\(out, torch_out, atol=([\d.e-]+)\)", float)
    cell = sources.run_cells("08", EQUALS_CELL, torch=torch, F=torch.nn.functional, math=math, mm=mm,
                             flash_attention=flash_attention, print=lambda *a, **k: None)
    assert torch.allclose(cell["out"], cell["torch_out"], atol=atol), "flash_attention is not SDPA's within it"
    return atol


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
    tests = sources.text("tests/model/test_flash.py")
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
    p = defaults("exp5_attention_dropout").p
    with sources.seeded(0):
        w = torch.softmax(torch.randn(16), dim=0)
        sums = torch.nn.functional.dropout(w.expand(20000, 16), p=p).sum(-1)
        kept = torch.nn.functional.dropout(w.expand(4, 16), p=p)
    predicted = p / (1 - p) * w.pow(2).sum().item()
    return (abs(sums.var().item() - predicted) < 0.1 * predicted
            and torch.allclose(kept[kept != 0], w.expand(4, 16)[kept != 0] / (1 - p)))


# ---------------------------------------------------------------------------- torch's SDPA on a CPU

def _pinned_torch() -> str:
    return re.search(r"^torch==(\d+\.\d+)", sources.text("requirements.txt"), re.M).group(1)


@fact
def torch_version_described():
    return _pinned_torch()


def _called(run):
    guide = sources.text("modules/08_flash/README.md")
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
    return exp4.flash_accesses(exp4.N_STEPS, head_dim(), m) > exp4.flash_accesses(exp4.N_STEPS, head_dim(), 4 * m)
