"""Numbers written in module 08's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown and JSON, where nothing else would catch a wrong one. Figures quoted from the papers
(the A100's 312 TFLOP/s, 1.5-2.0 TB/s, 192 KB of SRAM per SM; Fig. 2's 66.6 / 75.2 GFLOPs, 40.3 /
4.4 GB and 41.7 / 7.3 ms; the 1.7-1.8x causal speed-up) cannot be computed: what is derived from
them is.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import nbformat
import torch

import minimind_ref as mm
from minimind_ref.variants import flash_attention
from minimind_ref.variants.flash_attention import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, key_tiles
from labkit.memory import TensorMemory
from experiment_scripts import load_experiment

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "modules" / "08_flash" / "README.md").read_text()
HEADS, HEAD_DIM = 8, 64


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


def test_io_counts_in_the_guide_and_the_notebook():
    exp4 = experiment("exp4_io_counts")
    assert exp4.standard_accesses(1024, 64) == standard_accesses(1024, 64)
    assert exp4.flash_accesses(1024, 64, SRAM) == flash_accesses(1024, 64, SRAM)
    assert exp4.HBM_BYTES_PER_S == 1.5e12 and exp4.MATMUL_FLOPS_PER_S == 312e12
    ratios = [standard_accesses(n, 64) / flash_accesses(n, 64, SRAM) for n in LENGTHS]
    n = 4096
    intensity = 2 * n * n * 64 / ((2 * n * 64 + n * n) * 2)
    ridge = 312e12 / 1.5e12
    memory_bound = [standard_accesses(n, 64) * 2 / 1.5e12 / (4 * n * n * 64 / 312e12) for n in LENGTHS]
    block_c = math.ceil(SRAM / (4 * 64))
    guide = flat(GUIDE)
    assert f"about {intensity:.0f} FLOPs per byte it moves at `N = 4096`" in guide
    assert f"needs about {ridge:.0f} to be busy" in guide
    assert f"(B_c = {block_c})" in guide
    assert f"FlashAttention's count is {min(ratios):.1f} to {max(ratios):.1f} times smaller for N = 512 to 16384" in guide
    assert f"standard attention spends {min(memory_bound):.1f} to {max(memory_bound):.1f} times longer moving" in guide
    text = markdown_of("08_flash.ipynb")
    assert f"in elements of 2 bytes that is {SRAM:,}" in text
    assert f"the asymptotic ratio `M / d²` is {SRAM / 64 ** 2:g}" in text
    assert f"`4 B_c / 3d`, about {round(4 * block_c / (3 * 64))}" in text
    assert round(ratios[-1]) == 4 and "About four times fewer by this count" in text


def test_paper_ratios_quoted_in_prose():
    text, guide = markdown_of("08_flash.ipynb"), flat(GUIDE)
    assert f"{40.3 / 4.4:.1f} times fewer bytes for a whole forward and backward pass (40.3 GB against 4.4 GB" in text
    assert f"{41.7 / 7.3:.1f} times shorter runtime" in text
    assert f"{round(100 * (75.2 / 66.6 - 1))}% more FLOPs (66.6 → 75.2 GFLOPs), {round(40.3 / 4.4)} times less memory" in text
    assert "7.3 ms instead of 41.7 ms" in text
    assert "HBM, figures from the two papers" in guide


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
    assert (f"`flash_attention` ({flash:.2f} MiB at T = 1024) against {explicit:.0f} MiB for explicit attention") in guide
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
    assert "for 16 tokens in tiles of 4 queries and 4 keys, and for 4 new tokens after 12 cached ones" in text
    assert visited_fraction(16, 4, 4) == 0.625  # printed by the notebook cell below that sentence


# -- the quiz's explanations ------------------------------------------------------------------------

def test_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "08_flash.json").questions}
    n, d = 1024, 64
    hbm = quiz["standard-hbm"].explanation
    assert f"4Nd + 4N^2 = {4 * n * d:,} + {4 * n * n:,} = {standard_accesses(n, d):,}$".replace(",", "{,}") in hbm
    assert f"is {n // d} times the $4Nd$" in hbm
    fraction = visited_fraction(4096, 256, 512)
    visited = quiz["causal-visited"].explanation
    assert f"$1/2 + 256 / (2 \\times 4096) = {fraction:g}$" in visited
    assert f"The other {round(100 * (1 - fraction))}% of the tiles are skipped" in visited
    assert "each of the 16 row tiles" in visited and 4096 // 256 == 16
    rescale = quiz["online-rescale"].explanation
    assert "$\\ell \\leftarrow 3 e^{-3}$" in rescale and 2 - 5 == -3
    flops = quiz["recompute-flops"]
    assert f"measures {flop_ratio(1024) - 1:.3f} with torch's" in flops.explanation.replace("`", "")
    assert "(with heads of 64, at $T = 1024$)" in flops.explanation
    assert f"GFLOPs ({round(100 * (75.2 / 66.6 - 1))}% more), but {round(40.3 / 4.4)} times less memory" in flops.explanation
    bound = quiz["memory-bound"].explanation
    intensity = 2 * 4096 * 4096 * 64 / ((2 * 4096 * 64 + 4096 * 4096) * 2)
    assert f"about {intensity:.0f} FLOPs per byte" in bound and f"needs about {312e12 / 1.5e12:.0f}" in bound
    merge = quiz["merge-weight"].explanation
    assert "3 and 1, of a total 4" in merge and "$\\ln 4$" in merge


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
    assert defaults["exp2_memory"]["lengths"] == [256, 512, 1024, 2048] and "at T = 256 to 2048 (H = 8, D = 64)" in guide
    assert defaults["exp3_recomputation"]["lengths"] == [128, 256, 512, 1024] and "at T = 128 to 1024" in guide
    assert defaults["exp4_io_counts"]["head_dim"] == 64 and defaults["exp4_io_counts"]["sram_kb"] == 100.0
    assert "for d = 64 and M = 100 KB of fp16" in guide
    assert "(the tests of `minimind_ref/variants/flash_attention.py` raise the maximum by 1000 at every tile)" in guide
    tests = (ROOT / "tests" / "test_flash.py").read_text()
    assert "* 1000 / block_k  # +1000 per tile of keys" in tests
    requirements = (ROOT / "requirements.txt").read_text()
    assert "With torch 2.13 on this CPU" in text and re.search(r"^torch==2\.13", requirements, re.M)
