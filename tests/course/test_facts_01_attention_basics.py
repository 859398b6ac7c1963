"""Module 01's quiz explanations state the overflow thresholds that torch's dtypes give.

The guide's and the notebook's numbers are bound facts (tests/facts/01_attention_basics.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def overflow_threshold(dtype: torch.dtype) -> float:
    """The logit past which exp overflows: ln of the dtype's largest finite number."""
    return math.log(torch.finfo(dtype).max)


def test_module_01_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = load_quiz(ROOT / "quizzes" / "01_attention_basics.json")
    overflow = next(q for q in quiz.questions if q.id == "float16-overflow")
    f16, f32, f64 = (overflow_threshold(d) for d in (torch.float16, torch.float32, torch.float64))
    assert f"ln({torch.finfo(torch.float16).max:.0f}) = {f16:.2f}" in overflow.explanation
    assert f"float32 lasts until about {f32:.1f}, float64 until about {f64:.1f}" in overflow.explanation
    assert f"as small as {math.ceil(f16)} is already inf" in overflow.explanation
