"""Numbers written in module 08's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown and JSON, where nothing else would catch a wrong one. Figures quoted from the papers
(the A100's 312 and 19.5 TFLOP/s, 1.5-2.0 TB/s, 40-80 GB, 192 KB of SRAM per SM; Fig. 2's 66.6 /
75.2 GFLOPs, 40.3 / 4.4 GB and 41.7 / 7.3 ms; the 1.7-1.8x causal speed-up) cannot be computed:
the guide cites them (paper, arXiv id, section or figure), and what is derived from them is
computed here, with the rates exp4_io_counts uses.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from pathlib import Path

import nbformat
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from labkit.experiment import Experiment
from labkit.memory import TensorMemory
from labkit.quiz import load_quiz
from minimind_ref.variants import flash_attention
from minimind_ref.variants.flash_attention import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, key_tiles

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "08_flash" / "README.md").read_text()
HEADS, HEAD_DIM = 8, 64
HBM_HIGH_BYTES_PER_S = 2.0e12  # the top of the A100's 1.5-2.0 TB/s (arXiv 2205.14135, section 2.1)


def flat(text: str) -> str:
    return " ".join(text.split())


def markdown_of(notebook: str) -> str:
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return flat("\n".join(cell.source for cell in cells if cell.cell_type == "markdown"))


@functools.lru_cache(maxsize=None)
def experiment(name: str):
    """One of this module's experiment scripts, loaded once for this file."""
    return load_experiment("08", name)


# -- the IO counts of Algorithms 0 and 1 --------------------------------------------------------

def standard_accesses(n, d):
    return 4 * n * d + 4 * n * n


def flash_accesses(n, d, sram):
    block_c = math.ceil(sram / (4 * d))
    return 2 * n * d + math.ceil(n / block_c) * (3 * n * d + 4 * n)


SRAM = 100 * 1024 // 2  # 100 KB of fp16 elements
LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]


def test_io_counts_in_the_guide():
    exp4 = experiment("exp4_io_counts")
    assert exp4.standard_accesses(1024, 64) == standard_accesses(1024, 64)
    assert exp4.flash_accesses(1024, 64, SRAM) == flash_accesses(1024, 64, SRAM)
    ratios = [standard_accesses(n, 64) / flash_accesses(n, 64, SRAM) for n in LENGTHS]
    n = 4096
    steps = exp4.standard_steps(n, 64)
    assert sum(elements for _, elements, _ in steps.values()) == standard_accesses(n, 64)
    intensity = 2 * n * n * 64 / ((2 * n * 64 + n * n) * exp4.BYTES_PER_ELEMENT)
    assert exp4.flops_per_byte(n, 64) == intensity
    ridge = exp4.MATMUL_FLOPS_PER_S / exp4.HBM_BYTES_PER_S
    assert exp4.RIDGE == ridge
    memory_bound = [standard_accesses(n, 64) * exp4.BYTES_PER_ELEMENT / exp4.HBM_BYTES_PER_S
                    / (4 * n * n * 64 / exp4.MATMUL_FLOPS_PER_S) for n in LENGTHS]
    block_c = math.ceil(SRAM / (4 * 64))
    guide = flat(GUIDE)
    assert all(elements * exp4.BYTES_PER_ELEMENT / exp4.HBM_BYTES_PER_S > operations / rate
               for operations, elements, rate in steps.values())
    assert "every one of the three steps takes longer to move its data than to compute" in guide
    assert f"only about {intensity:.0f} FLOPs per byte it moves at `N = {n}`" in guide
    # the ridge point over the paper's whole bandwidth range, 1.5 to 2.0 TB/s (exp4 prices at 1.5)
    ridge_fast_hbm = exp4.MATMUL_FLOPS_PER_S / HBM_HIGH_BYTES_PER_S
    assert f"an A100 needs {ridge_fast_hbm:.0f} to {ridge:.0f} to keep its matrix units busy" in guide
    assert intensity < ridge_fast_hbm  # memory-bound at either end of the range
    # the rates the guide quotes are the ones exp4 computes with (the guide cites where they come from)
    assert (f"({exp4.MATMUL_FLOPS_PER_S / 1e12:.0f} TFLOP/s of fp16 matrix products over "
            f"{HBM_HIGH_BYTES_PER_S / 1e12:.1f} to {exp4.HBM_BYTES_PER_S / 1e12:g} TB/s of HBM; the counts below "
            f"price at the low end, {exp4.HBM_BYTES_PER_S / 1e12:g} TB/s)") in guide
    assert f"{exp4.OTHER_FLOPS_PER_S / 1e12:g} TFLOP/s of fp32 for everything else" in guide
    assert f"(B_c = {block_c})" in guide
    assert (f"FlashAttention's count is {min(ratios):.1f} to {max(ratios):.1f} times smaller for "
            f"N = {LENGTHS[0]} to {LENGTHS[-1]}") in guide
    assert f"standard attention spends {min(memory_bound):.1f} to {max(memory_bound):.1f} times longer moving" in guide
    assert f"in elements of 2 bytes `M` is {SRAM:,}" in guide
    assert f"the asymptotic ratio `M / d^2` is {SRAM / 64 ** 2:g}" in guide
    assert f"`4 B_c / 3d`, about {round(4 * block_c / (3 * 64))}" in guide
    assert all(3 <= r < 4.5 for r in ratios) and round(ratios[-1]) == 4
    assert "about four times fewer accesses than Algorithm 0 at every length" in guide


def test_paper_figures_are_cited_and_their_ratios_computed():
    guide = flat(GUIDE)
    for source in ("(FlashAttention, arXiv 2205.14135, section 2.1)",
                   "(FlashAttention-2, arXiv 2307.08691, section 3.1)",
                   "arXiv 2205.14135, Fig. 2)", "(arXiv 2307.08691, section 3.1)"):
        assert source in guide, source
    # Fig. 2 of arXiv 2205.14135: 40.3 / 4.4 GB of HBM traffic, 41.7 / 7.3 ms, 66.6 / 75.2 GFLOPs
    assert f"{40.3 / 4.4:.1f} times fewer bytes moved (40.3 GB against 4.4 GB)" in guide
    assert f"{41.7 / 7.3:.1f} times shorter runtime (7.3 ms against 41.7 ms)" in guide
    assert f"{round(100 * (75.2 / 66.6 - 1))}% more FLOPs (75.2 GFLOPs against 66.6" in guide


def test_bench_targets_quoted_in_the_guide():
    source = (ROOT / "benchmarks" / "bench_flash.py").read_text()
    targets = {name: float(bound) for name, bound in
               re.findall(r'Target\("([^"]+)",.*?at_(?:least|most)=([\d.]+)\)', source, re.S)}
    faster = targets["flash_attention_fast vs explicit attention, speed"]
    against_sdpa = targets["flash_attention_fast time / torch SDPA time"]
    memory = targets["explicit peak memory / flash_attention_fast peak memory"]
    assert (f"at least {faster:g} times faster than explicit attention, at most {against_sdpa:g} times the time of "
            f"torch's SDPA, and at most 1/{memory:g} of explicit attention's peak memory") in flat(GUIDE)


# -- memory ---------------------------------------------------------------------------------------

def peak(fn, length):
    """TensorMemory (as in exp2 and the notebook) of one call of fn on random q, k, v [1, H, length, D]."""
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM) for _ in range(3))
    with TensorMemory() as memory:
        fn(q, k, v)
    return memory


def test_memory_numbers():
    mib = 2 ** 20
    explicit = peak(lambda q, k, v: mm.scaled_dot_product_attention(q, k, v, is_causal=True), 2048)
    flash = peak(lambda q, k, v: flash_attention(q, k, v, is_causal=True), 2048)
    matrix = HEADS * 2048 ** 2 * 4
    output = HEADS * 2048 * HEAD_DIM * 4
    assert abs(explicit.peak - (3 * matrix + output)) < mib  # three [H, T, T] tensors at once, and the output
    guide = flat(GUIDE)
    assert (f"({explicit.peak / mib:.0f} MiB at T = 2048, with the full {matrix / mib:.0f} MiB score matrix among its "
            f"tensors) while `flash_attention`'s at most doubles ({flash.peak / mib:.1f} MiB, largest tensor about "
            f"{round(flash.largest / mib)} MiB)") in guide
    tile = HEADS * DEFAULT_BLOCK_Q * DEFAULT_BLOCK_K * 4
    text = markdown_of("08_flash.ipynb")
    assert f"`[8, {DEFAULT_BLOCK_Q}, {DEFAULT_BLOCK_K}]` ({tile // mib} MiB)" in text
    at_8192 = 3 * HEADS * 8192 ** 2 * 4 + HEADS * 8192 * HEAD_DIM * 4  # the same count at T = 8192
    assert round(at_8192 / 2**30) == 6 and "(about 6 GB for one call)" in text
    print_mib = HEADS * 8192 ** 2 * 4 / 2**30
    assert print_mib == 2  # the quiz's score-matrix question, and its explanation's 2^31 bytes
    assert HEADS * 8192 ** 2 * 4 == 2 ** 31


@functools.lru_cache(maxsize=None)
def flop_ratio(length=1024):
    """flash_attention's matrix-multiply FLOPs over explicit attention's, forward + backward (exp3)."""
    exp3 = experiment("exp3_recomputation")
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, HEADS, length, HEAD_DIM)
    _, explicit_flops = exp3.gradients_and_flops("explicit", q, k, v, grad)
    _, flash_flops = exp3.gradients_and_flops("flash_attention", q, k, v, grad)
    return flash_flops / explicit_flops


def test_recomputation_numbers():
    torch.manual_seed(0)
    length = 1024
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, requires_grad=True) for _ in range(3))

    def saved_mib(fn):
        saved = {}

        def keep(t):
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
            fn(q, k, v)
        return sum(saved.values()) / 2 ** 20

    explicit = saved_mib(lambda q, k, v: mm.scaled_dot_product_attention(q, k, v))
    flash = saved_mib(lambda q, k, v: flash_attention(q, k, v))
    ratio = flop_ratio(length)
    guide = flat(GUIDE)
    assert (f"`flash_attention` ({flash:.2f} MiB at T = 1024) against {explicit:.0f} MiB for explicit "
            "attention") in guide
    assert f"measures {100 * (ratio - 1):.1f}% more matrix-multiply FLOPs" in guide
    assert abs(ratio - 7 / 6) < 1e-3  # the readable flash_attention: exactly one recomputed product
    assert "Forward and backward then do 7 matrix products instead of 6: about 1/6 more" in guide


# -- tiles ----------------------------------------------------------------------------------------

def visited_fraction(length, block_q, block_k):
    computed = sum((min(row + block_q, length) - row) * (end - start)
                   for row in range(0, length, block_q)
                   for start, end, _ in key_tiles(row, min(row + block_q, length), length, length, block_k, True))
    return computed / length ** 2


def test_tile_numbers():
    text = markdown_of("08_flash.ipynb")
    code = "\n".join(cell.source for cell in nbformat.read(ROOT / "notebooks" / "08_flash.ipynb", as_version=4).cells
                     if cell.cell_type == "code")
    call = r"tile_map\((\d+), (\d+), (\d+), (\d+)\)"
    maps = re.search(rf"prefill, decode = {call}, {call}", code)
    tokens, _, block_q, block_k, new, keys, _, _ = map(int, maps.groups())
    assert block_q == block_k
    assert (f"for {tokens} tokens in tiles of {block_q} queries and {block_k} keys, and for {new} new tokens after "
            f"{keys - new} cached ones") in text
    assert visited_fraction(16, 4, 4) == 0.625  # printed by the notebook cell below that sentence


# -- the quiz's explanations ------------------------------------------------------------------------

def test_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "08_flash.json").questions}
    n, d = 1024, 64
    hbm = quiz["standard-hbm"].explanation
    assert f"4Nd + 4N^2 = {4 * n * d:,} + {4 * n * n:,} = {standard_accesses(n, d):,}$".replace(",", "{,}") in hbm
    assert f"is {n // d} times the $4Nd$" in hbm
    length = 4096  # the question's T = S
    fraction = visited_fraction(length, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K)
    causal = quiz["causal-visited"]
    assert f"`block_q = {DEFAULT_BLOCK_Q}` queries and `block_k = {DEFAULT_BLOCK_K}` keys" in causal.question
    assert f"$T = S = {length}$" in causal.question and causal.answer == fraction
    visited = causal.explanation
    assert f"$1/2 + {DEFAULT_BLOCK_Q} / (2 \\times {length}) = {fraction:g}$" in visited
    assert fraction == 1 / 2 + DEFAULT_BLOCK_Q / (2 * length)
    assert f"The other {round(100 * (1 - fraction))}% of the tiles are skipped" in visited
    assert f"each of the {length // DEFAULT_BLOCK_Q} row tiles" in visited
    online = quiz["online-rescale"]
    m, ell, tile_max = 2, 3, 5  # the question's running maximum, running sum, and the tile's largest score
    assert f"$m = {m}$" in online.question and f"$\\ell = {ell}$" in online.question
    assert f"largest score is {tile_max}" in online.question
    assert f"$\\ell \\leftarrow {ell} e^{{{m - tile_max}}}$" in online.explanation
    assert online.choices[online.answer] == f"$e^{{{m - tile_max}}}$"
    flops = quiz["recompute-flops"]
    length = 1024
    assert f"measures {flop_ratio(length) - 1:.3f} with torch's" in flops.explanation.replace("`", "")
    assert f"(with heads of {HEAD_DIM}, at $T = {length}$)" in flops.explanation
    # Fig. 2 of arXiv 2205.14135 (cited in the explanation): what is derived from its figures
    assert "Fig. 2 (arXiv 2205.14135)" in flops.explanation
    assert (f"GFLOPs ({round(100 * (75.2 / 66.6 - 1))}% more), but {round(40.3 / 4.4)} times less "
            "memory") in flops.explanation
    bound = quiz["memory-bound"].explanation
    exp4 = experiment("exp4_io_counts")
    assert f"about {exp4.flops_per_byte(4096, 64):.0f} FLOPs per byte" in bound
    ridge_fast_hbm = exp4.MATMUL_FLOPS_PER_S / HBM_HIGH_BYTES_PER_S
    assert f"needs {ridge_fast_hbm:.0f} to {exp4.RIDGE:.0f} to be compute-bound" in bound
    assert (f"({exp4.MATMUL_FLOPS_PER_S / 1e12:.0f} TFLOP/s over {HBM_HIGH_BYTES_PER_S / 1e12:.1f} to "
            f"{exp4.HBM_BYTES_PER_S / 1e12:g} TB/s)") in bound
    merge = quiz["merge-weight"]
    lse = (math.log(3), 0.0)  # the question's two halves: ln 3 and ln 1 = 0
    assert "log-sum-exp $\\ln 3$" in merge.question and "$\\ln 1 = 0$" in merge.question
    mass = [round(math.exp(x)) for x in lse]  # each half's softmax mass, e^lse
    total = sum(mass)
    assert f"{mass[0]} and {mass[1]}, of a total {total}" in merge.explanation
    assert f"$\\ln {total}$" in merge.explanation and math.isclose(math.log(total), math.log(sum(map(math.exp, lse))))
    assert math.isclose(merge.answer, mass[0] / total)


def test_exact_to_the_tolerance_the_prose_gives():
    """The guide and notebook say flash_attention equals SDPA within 1e-5 and explicit attention's
    output up to rounding 'below 1e-6'."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, 300, HEAD_DIM) for _ in range(3))
    out = flash_attention(q, k, v, is_causal=True)
    assert (out - torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max() <= 1e-5
    assert (out - mm.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max() < 1e-6
    assert "(here below 1e-6)" in flat(GUIDE)
    assert re.search(r"equal to torch's SDPA within\s+1e-5", markdown_of("08_flash.ipynb"))


def test_defaults_and_settings_quoted_in_prose():
    import argparse

    guide, text = flat(GUIDE), markdown_of("08_flash.ipynb")
    signature = f"block_q={DEFAULT_BLOCK_Q}, block_k={DEFAULT_BLOCK_K}, return_lse=False)"
    assert signature in guide and signature in text
    defaults = {}
    for name in ("exp1_online_softmax", "exp2_memory", "exp3_recomputation", "exp4_io_counts"):
        parser = argparse.ArgumentParser()
        experiment(name).add_arguments(parser)
        defaults[name] = vars(parser.parse_args([]))
    assert defaults["exp1_online_softmax"]["keys"] == 1000
    assert "one row of 1000 scores" in guide and "for tile sizes from 1 to 1000" in guide
    assert defaults["exp2_memory"]["lengths"] == [256, 512, 1024, 2048]
    exp2 = experiment("exp2_memory")
    assert f"at T = 256 to 2048 (H = {exp2.HEADS}, D = {exp2.HEAD_DIM})" in guide
    assert defaults["exp3_recomputation"]["lengths"] == [128, 256, 512, 1024] and "at T = 128 to 1024" in guide
    assert defaults["exp4_io_counts"]["head_dim"] == 64 and defaults["exp4_io_counts"]["sram_kb"] == 100.0
    assert "for d = 64 and M = 100 KB of fp16" in guide
    assert "(the tests of `minimind_ref/variants/flash_attention.py` raise the maximum by 1000 at every tile)" in guide
    tests = (ROOT / "tests" / "model" / "test_flash.py").read_text()
    assert "* 1000 / block_k  # +1000 per tile of keys" in tests


def test_sdpa_backends_as_the_guide_describes_them():
    """The guide's snippet runs, and what it says torch's SDPA calls on a CPU is what it calls."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    guide = GUIDE
    requirements = (ROOT / "requirements.txt").read_text()
    pinned = re.search(r"^torch==(\d+\.\d+)", requirements, re.M).group(1)
    assert (f"With torch {pinned} on a CPU the default is one call to "
            "`_scaled_dot_product_flash_attention_for_cpu`") in flat(guide)
    if not torch.__version__.startswith(pinned + "."):
        import pytest

        pytest.skip(f"the guide describes torch {pinned}; this is torch {torch.__version__}")
    after = guide.split("Which one ran shows in the operators it called", 1)[1]
    snippet = textwrap.dedent(re.search(r"\n\n((?:    .*\n|\n)+)", after).group(1))
    namespace = {"torch": torch, "F": torch.nn.functional, "print": lambda *args: None}
    exec(snippet, namespace)
    CalledOps, x = namespace["CalledOps"], namespace["x"]
    assert namespace["called"].names == ["aten._scaled_dot_product_flash_attention_for_cpu.default"]

    def called(run):
        with CalledOps() as ops:
            run()
        return [name for name in ops.names if any(word in name for word in ("attention", "bmm", "softmax"))]

    with sdpa_kernel(SDPBackend.MATH):
        math_ops = called(lambda: torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True))
    assert math_ops == ["aten.bmm.default", "aten._safe_softmax.default", "aten.bmm.default"]
    assert "(`bmm`, `_safe_softmax`, `bmm`)" in guide
    dropout = called(lambda: torch.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=0.1))
    assert dropout == math_ops
    try:
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            torch.nn.functional.scaled_dot_product_attention(x, x, x)
        raised = False
    except RuntimeError:
        raised = True
    assert raised
    assert "Held to a backend with no CPU implementation (`EFFICIENT_ATTENTION`), the call raises" in flat(guide)


def test_flash_attention_1_writes_o_l_and_m_in_every_outer_pass():
    """Correction (issue 16): FlashAttention-1 never writes S or P, but it is not "writes only O":
    Algorithm 1 rewrites O, l and m once per outer pass, and that is its Theta(N^2 d^2 / M)."""
    guide = flat(GUIDE)
    assert "writes only `O`" not in guide
    assert "never writes `S` or `P` to HBM" in guide
    assert "reads back and rewrites all of `O` and the row statistics `l` and `m`" in guide
    # the count exp4 uses: the O, l, m traffic grows with the number of outer passes N / B_c
    exp4 = experiment("exp4_io_counts")
    n, d = 4096, 64
    small, large = exp4.flash_accesses(n, d, SRAM), exp4.flash_accesses(n, d, 4 * SRAM)
    assert small > large  # fewer, wider outer passes (more SRAM) move fewer elements


def test_rabe_and_staats_claims_are_quoted_not_linear_memory():
    """Correction (issue 16): arXiv 2112.05682's abstract claims O(1) memory for one query,
    O(log n) for self-attention and O(sqrt n) for the practical implementation."""
    guide = flat(GUIDE)
    assert "chunks with linear memory" not in guide
    assert ("`O(1)` memory for a single query, `O(log n)` for self-attention, and `O(sqrt n)` for their "
            "practical implementation") in guide


def test_fully_masked_row_conventions():
    """Correction (issue 16): minimind_ref gives an empty row lse -inf (as its explicit attention's
    log-sum-exp); FlashAttention-2's CUDA forward stores +inf there, -inf only when split over KV."""
    q, k, v = (torch.randn(1, 2, n, 8) for n in (5, 3, 3))
    out, lse = flash_attention(q, k, v, attn_mask=torch.ones(5, 3, dtype=torch.bool).tril(-2), return_lse=True)
    empty = slice(0, 2)  # the mask hides every key from rows 0 and 1
    assert torch.equal(out[..., empty, :], torch.zeros_like(out[..., empty, :]))
    assert torch.isneginf(lse[..., empty]).all()
    assert torch.isneginf(torch.logsumexp(torch.full((3,), -math.inf), dim=0))  # the explicit convention
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "08_flash.json").questions}
    text = quiz["no-key-row"].explanation
    assert "`minimind_ref`'s convention" in text
    assert "log-sum-exp of $+\\infty$ on their ordinary forward ($-\\infty$ only on the split-KV path)" in text
    guide = flat(GUIDE)
    assert "their ordinary forward stores `lse = +inf` for such a row" in guide
    assert "`csrc/flash_attn/src/softmax.h`" in guide and "at commit 765fbd92" in guide


def test_what_flash_attention_2_changed_and_what_the_course_follows():
    """The guide's three changes (arXiv 2307.08691) and the two it says the course follows, checked
    on the code: only lse is saved for the backward, and query tiles form the outer loop, so each
    tile's rows of O are written once."""
    import importlib

    fa = importlib.import_module("minimind_ref.variants.flash_attention")  # the module, not the function
    guide = flat(GUIDE)
    for change in ("*Fewer non-matmul FLOPs*", "*Parallelism over the sequence*",
                   "*Work partitioning between warps*"):
        assert change in guide
    q, k, v = (torch.randn(1, 2, 40, 8, requires_grad=True) for _ in range(3))
    out = fa.flash_attention(q, k, v, is_causal=True, block_q=16, block_k=8)
    saved = out.grad_fn.saved_tensors
    assert len(saved) == 5 and saved[-1].shape == (1, 2, 40)  # q, k, v, O and lse: no m, no l
    calls = []
    real = fa.key_tiles

    def recording(row_start, *rest):
        calls.append(row_start)
        return real(row_start, *rest)

    fa.key_tiles = recording
    try:
        with torch.no_grad():
            fa.flash_attention(q, k, v, is_causal=True, block_q=16, block_k=8)
    finally:
        fa.key_tiles = real
    assert calls == [0, 16, 32]  # one sweep over the key tiles per query tile, in order


def test_attention_dropout_paragraph_and_exp5_defaults():
    """The guide's description of exp5_attention_dropout uses its defaults, and its formulas hold:
    a kept weight is w / (1 - p), a row of weights w has variance p / (1 - p) sum w^2."""
    exp5 = experiment("exp5_attention_dropout")
    parser = Experiment.parser(exp5.__doc__, exp5.__file__, exp5.add_arguments)
    defaults = parser.parse_args([])
    guide = flat(GUIDE)
    assert f"attention dropout at `p = {defaults.p}` (`--p`)" in guide
    assert f"over {defaults.draws} draws the last row's sum averages 1 within 5 standard errors" in guide
    assert "(arXiv 2205.14135, Appendix B, Algorithm 2)" in guide
    # the variance formula, against many draws of torch's own dropout on one row
    torch.manual_seed(0)
    w = torch.softmax(torch.randn(16), dim=0)
    p = defaults.p
    sums = torch.nn.functional.dropout(w.expand(20000, 16), p=p).sum(-1)
    assert abs(sums.var().item() - p / (1 - p) * w.pow(2).sum().item()) < 0.1 * p / (1 - p) * w.pow(2).sum().item()
    kept = torch.nn.functional.dropout(w.expand(4, 16), p=p)
    assert torch.allclose(kept[kept != 0], w.expand(4, 16)[kept != 0] / (1 - p))
