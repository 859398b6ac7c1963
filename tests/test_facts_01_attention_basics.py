"""Numbers written in module 01's prose (guide and notebook text) are the ones code computes.

Printed outputs of notebooks are re-checked by nbval; this file covers the numbers typed into
Markdown, where nothing else would catch a wrong one.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import torch

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[1]


def markdown_of(notebook: str) -> str:
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")


def overflow_threshold(dtype: torch.dtype) -> float:
    """The logit past which exp overflows: ln of the dtype's largest finite number."""
    return math.log(torch.finfo(dtype).max)


def test_module_01_guide_numbers():
    guide = (ROOT / "modules" / "01_attention_basics" / "README.md").read_text()
    f16, bf16, f32, f64 = (overflow_threshold(d) for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    assert f"about {f16:.2f} in\nfloat16, {f32:.2f} in bfloat16 and float32, {f64:.2f} in float64" in guide
    assert round(bf16, 2) == round(f32, 2), "the guide gives bfloat16 and float32 one threshold"
    config = mm.MiniMindConfig()
    head = config.hidden_size // config.num_attention_heads
    assert head == config.head_dim
    assert (f"`{config.hidden_size} / {config.num_attention_heads} = {head}` wide, so it multiplies scores by "
            f"`1/{math.isqrt(head)} = {1 / math.sqrt(head):g}`") in guide.replace("\n", " ")


def test_module_01_notebook_prose_numbers():
    text = markdown_of("01_attention_basics.ipynb").replace("\n", " ")
    f32_max = torch.finfo(torch.float32).max
    f16, f32 = overflow_threshold(torch.float16), overflow_threshold(torch.float32)
    assert f"past `ln({f32_max:.1e}) ≈ {f32:.1f}`".replace("e+", "e") in text
    assert f"float16 overflows past a score of about {round(f16)}, float32 past about {f32:.1f}" in text
    assert f"overflows at a score of only about {round(f16)}" in text
    head = mm.MiniMindConfig().head_dim
    assert f"heads are {head} wide, so it multiplies scores by `1/sqrt({head}) = {1 / math.sqrt(head):g}`" in text


def test_module_01_quiz_explanation_numbers():
    from minimind_ref.teaching.quiz import load_quiz

    quiz = load_quiz(ROOT / "quizzes" / "01_attention_basics.json")
    overflow = next(q for q in quiz.questions if q.id == "float16-overflow")
    f16, f32, f64 = (overflow_threshold(d) for d in (torch.float16, torch.float32, torch.float64))
    assert f"ln({torch.finfo(torch.float16).max:.0f}) = {f16:.2f}" in overflow.explanation
    assert f"float32 lasts until about {f32:.1f}, float64 until about {f64:.1f}" in overflow.explanation
    assert f"as small as {math.ceil(f16)} is already inf" in overflow.explanation
