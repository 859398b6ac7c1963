"""Module 02's quiz explanations state the numbers code computes.

The guide's and the notebook's numbers are bound facts (tests/facts/02_qkv.py).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import nbformat
from quiz_answers import RECOMPUTED

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]
# The experiment scripts' own constants (loaded as tests/quiz_answers/02_qkv.py loads them).
answers_02 = importlib.import_module("quiz_answers.02_qkv")
EXP2 = answers_02.experiment("exp2_kv_retrieval")
EXP3 = answers_02.experiment("exp3_tied_cannot_look_away")


def flat(text: str) -> str:
    return " ".join(text.split())


def notebook_cells():
    return nbformat.read(ROOT / "notebooks" / "02_qkv.ipynb", as_version=4).cells


def markdown_of_notebook() -> str:
    return flat("\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "markdown"))


def code_of_notebook() -> str:
    return "\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "code")


def minimind_sizes():
    config = mm.MiniMindConfig()
    layer = mm.Attention(config)
    sizes = {name: p.numel() for name, p in layer.named_parameters()}
    return config, sizes


def default_of(script, flag: str):
    """The default of one of an experiment script's own flags, read from its parser."""
    parser = argparse.ArgumentParser()
    script.add_arguments(parser)
    return parser.parse_args([]).__dict__[flag]


def test_module_02_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "02_qkv.json").questions}
    config, sizes = minimind_sizes()
    H, H_kv, D, C = config.num_attention_heads, config.num_key_value_heads, config.head_dim, config.hidden_size

    text = quiz["kproj-width"].explanation
    assert f"$H_{{kv}} \\cdot D = {H_kv} \\times {D} = {H_kv * D}$" in text
    assert f"$H \\cdot D = {H} \\times {D} = {H * D}$" in text
    assert f"a group of {H // H_kv} query heads" in text

    text = quiz["attention-weights-count"].explanation
    def tex(n):
        return f"{n:,}".replace(",", "{,}")
    assert f"`q_proj` ${H * D} \\times {C} = {tex(sizes['q_proj.weight'])}$" in text
    assert f"${H_kv * D} \\times {C} = {tex(sizes['k_proj.weight'])}$ each" in text
    assert f"`o_proj` ${C} \\times {H * D} = {tex(sizes['o_proj.weight'])}$" in text
    assert f"${tex(sum(sizes.values()))}$ in all" in text
    mha = mm.Attention(config.replace(num_key_value_heads=H))
    assert f"With {H} key/value heads" in text
    assert f"$4 \\times {tex(sizes['q_proj.weight'])} = {tex(sum(p.numel() for p in mha.parameters()))}$" in text

    cross = quiz["cross-count"]
    shape = (2, 8, 3, 7)  # the question's batch, heads, queries and keys
    assert "batch 2, 8 heads, 3 queries and 7 keys" in cross.question
    count = RECOMPUTED["02_qkv"]["cross-count"]()
    assert count == shape[0] * shape[1] * shape[2] * shape[3]
    assert f"$2 \\times 8 \\times 3 \\times 7 = {count}$" in cross.explanation

    values = EXP2.NUM_VALUES
    assert f"1/{values} = {1 / values:g}" in quiz["lookup-chance"].explanation

    text = quiz["tied-ceiling"].explanation
    values = EXP3.NUM_VALUES
    assert f"1/2 + 1/2 x 1/{values} = 1/2 + 1/{2 * values} = {0.5 + 0.5 / values:g}" in text
