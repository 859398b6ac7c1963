"""Module 04's default configuration and no unbound large number in the guide. The guide's and the
notebook's numbers are bound facts (tests/facts/04_gqa.py); the quiz's are bound by each question's
`check` (quizzes/04_gqa.json).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import torch

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "modules" / "04_gqa" / "README.md"
NOTEBOOK = ROOT / "notebooks" / "04_gqa.ipynb"


def flat(text: str) -> str:
    """Text with every run of whitespace (line breaks included) made one space."""
    return " ".join(text.split())


def notebook_text(kind: str) -> str:
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    return flat("\n".join(cell.source for cell in cells if cell.cell_type == kind))


DEFAULT = mm.MiniMindConfig()


def test_the_default_configuration_is_the_one_described():
    assert (DEFAULT.hidden_size, DEFAULT.num_hidden_layers, DEFAULT.num_attention_heads,
            DEFAULT.num_key_value_heads, DEFAULT.head_dim) == (512, 8, 8, 2, 64)
    assert DEFAULT.num_key_value_groups == 4
    # which key/value head each query head reads, as repeat_kv pairs them
    kv = torch.arange(DEFAULT.num_key_value_heads, dtype=torch.float32).view(1, -1, 1, 1)
    reads = mm.repeat_kv(kv, DEFAULT.num_key_value_groups)[0, :, 0, 0].tolist()
    assert reads == [0, 0, 0, 0, 1, 1, 1, 1]


def test_quiz_uptraining_steps_are_the_notebooks():
    """The quiz's uptraining steps are the notebook's (the paper's alpha is cited, not computed)."""
    from labkit.quiz import load_quiz
    from labkit.quiz.checks import mentions

    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "04_gqa.json").questions}
    steps = re.search(r"train\(converted\[g\], task, steps=(\d+),", notebook_text("code"))
    assert steps, "the notebook no longer uptrains with train(converted[g], task, steps=...)"
    assert mentions(quiz["uptraining-recipe"].explanation, int(steps.group(1)))


def test_no_unchecked_large_numbers_in_the_guide():
    """Every number of four or more digits in the guide is a bound fact (inside a marker) or one of
    these, which no code computes: papers' arXiv ids and upstream commits."""
    guide = re.sub(r"<!--\s*fact:.*?<!--\s*/fact\s*-->", "", GUIDE.read_text(), flags=re.S)
    allowed = {"2305.13245", "1911.02150", "1706.03762", "2211.05102", "2212.05055", "2307.09288", "2405.04434",
               "2412.19437",
               # upstream commits (checked in test_upstream_citations.py); the regex sees their digits
               "898576"}
    found = set(re.findall(r"\d[\d,.]{3,}\d", guide))
    assert found <= allowed, f"numbers in the guide that no fact binds: {sorted(found - allowed)}"
