"""Module 08's quiz explanations state the numbers code computes, and flash_attention keeps what
the guide says it keeps. The guide's and the notebook's numbers are bound facts
(tests/facts/08_flash.py); the papers' figures are cited (tests/course/test_paper_citations.py).

Figures quoted from the papers
(the A100's 312 and 19.5 TFLOP/s, 1.5-2.0 TB/s, 40-80 GB, 192 KB of SRAM per SM; Fig. 2's 66.6 /
75.2 GFLOPs, 40.3 / 4.4 GB and 41.7 / 7.3 ms; the 1.7-1.8x causal speed-up) cannot be computed:
the guide cites them (paper, arXiv id, section or figure), and what is derived from them is
computed here, with the rates exp4_io_counts uses.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import nbformat
import torch
from experiment_scripts import load_experiment

from labkit.quiz import load_quiz
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


@functools.lru_cache(maxsize=None)
def flop_ratio(length=1024):
    """flash_attention's matrix-multiply FLOPs over explicit attention's, forward + backward (exp3)."""
    exp3 = experiment("exp3_recomputation")
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, HEADS, length, HEAD_DIM)
    _, explicit_flops = exp3.gradients_and_flops("explicit", q, k, v, grad)
    _, flash_flops = exp3.gradients_and_flops("flash_attention", q, k, v, grad)
    return flash_flops / explicit_flops


# -- tiles ----------------------------------------------------------------------------------------

def visited_fraction(length, block_q, block_k):
    computed = sum((min(row + block_q, length) - row) * (end - start)
                   for row in range(0, length, block_q)
                   for start, end, _ in key_tiles(row, min(row + block_q, length), length, length, block_k, True))
    return computed / length ** 2


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




def test_quiz_no_key_row_explanation():
    """The quiz's explanation of an empty row: minimind_ref's convention, and FlashAttention-2's CUDA
    one (cited in the guide, tests/course/test_paper_citations.py)."""
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "08_flash.json").questions}
    text = quiz["no-key-row"].explanation
    assert "`minimind_ref`'s convention" in text
    assert "log-sum-exp of $+\\infty$ on their ordinary forward ($-\\infty$ only on the split-KV path)" in text
