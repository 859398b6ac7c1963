"""Numbers written in module 03's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown and JSON, where nothing else would catch a wrong one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat

import minimind_ref as mm
from experiment_scripts import load_experiment

ROOT = Path(__file__).resolve().parents[1]


def one_line(text: str) -> str:
    return " ".join(text.split())


def notebook_cells(kind: str) -> str:
    cells = nbformat.read(ROOT / "notebooks" / "03_multi_head.ipynb", as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == kind)


def attention_counts(**changes) -> dict:
    layer = mm.Attention(mm.MiniMindConfig(**changes))
    return {name: layer.get_submodule(name).weight.numel() for name in ("q_proj", "k_proj", "v_proj", "o_proj")}


def defaults(module) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args([])


def test_minimind2_attention_counts():
    config = mm.MiniMindConfig()
    assert (config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (512, 8, 2, 64)
    gqa, mha = attention_counts(), attention_counts(num_key_value_heads=8)
    assert (gqa["q_proj"], gqa["o_proj"], gqa["k_proj"], gqa["v_proj"]) == (262_144, 262_144, 65_536, 65_536)
    assert sum(gqa.values()) == 2 * 512 * 64 * (8 + 2) == 655_360
    assert sum(mha.values()) == 4 * 512 ** 2 == 1_048_576
    assert sum(mha.values()) - sum(gqa.values()) == 393_216
    for heads in (1, 8, 16, 64):  # "1, 8 or 64 heads ... all have 1,048,576"; 16 heads of 32 in the quiz
        assert sum(attention_counts(num_attention_heads=heads, num_key_value_heads=heads).values()) == 1_048_576
    # "three quarters" of k_proj and v_proj saved; "an eighth" of q_proj per head
    assert 1 - gqa["k_proj"] / mha["k_proj"] == 3 / 4
    assert gqa["q_proj"] // config.num_attention_heads == config.head_dim * config.hidden_size == 32_768


def test_module_03_guide_numbers():
    guide = one_line((ROOT / "modules" / "03_multi_head" / "README.md").read_text())
    for text in ("(`C = 512`, `H = 8`, `H_kv = 2`, `D = 64`)", "262,144 weights each", "65,536 each",
                 "655,360 per layer", "1,048,576, so sharing key/value heads saves 393,216 weights per layer",
                 "1, 8 or 64 heads of a 512-wide layer all have 1,048,576 weights", "MiniMind's 2 KV heads"):
        assert text in guide, text
    exp1 = load_experiment("03", "exp1_heads_are_concatenated")
    exp3 = load_experiment("03", "exp3_heads_specialise")
    assert "MHA with 1, 2, 4 and 8 heads" in guide and exp1.HEAD_COUNTS == (1, 2, 4, 8)
    args = defaults(exp3)
    assert f"({args.steps} steps of {args.batch} sequences)" in guide and (args.steps, args.batch) == (300, 64)
    assert (args.heads, args.hidden) == (2, 64), "the guide and the notebook describe a 2-head, 64-wide model"


def test_module_03_notebook_prose_numbers():
    text, code = one_line(notebook_cells("markdown")), notebook_cells("code")
    config = mm.MiniMindConfig()
    assert (f"MiniMind runs {config.num_attention_heads} heads in every layer, each on its own "
            f"{config.head_dim}-wide slice of the {config.hidden_size} features") in text
    assert "`T = 4` tokens of `C = 8` features, `H = 2` heads of `D = 4`" in text and "T, C, H = 4, 8, 2" in code
    assert "Head 0 owns features 0 and 1, head 1 owns features 2 and 3" in text
    assert "labelled = (10 * torch.arange(3)[:, None] + torch.arange(4))" in code  # 3 tokens, 2 heads of 2
    assert (f"hidden size `C = {config.hidden_size}`, `H = {config.num_attention_heads}` query heads of "
            f"`D = {config.head_dim}`, and only `H_kv = {config.num_key_value_heads}`") in text
    group = config.num_attention_heads // config.num_key_value_heads
    assert f"across groups of {group} query heads saves `k_proj` and `v_proj` three quarters" in text
    assert 1 - 1 / group == 3 / 4
    assert "one of `K = 6`" in text and "`6 x 6 = 36` classes" in text and "K, SEQ = 6, 12" in code
    args = defaults(load_experiment("03", "exp3_heads_specialise"))
    assert (args.symbols, args.tokens, args.hidden, args.heads, args.steps) == (6, 12, 64, 2, 300)
    assert "hidden size 64 and 2 heads of 32, trained for 300 steps" in text
    assert "steps=300" in code and "hidden_size=64" in code
    assert "a single head of width 64" in text


def test_module_03_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "03_multi_head.json").questions}
    gqa, mha = attention_counts(), attention_counts(num_key_value_heads=8)
    explanation = quiz["minimind-attention-params"].explanation
    assert f"each ({gqa['q_proj']:,})" in explanation and f"each ({gqa['k_proj']:,})" in explanation
    assert "$512 \\times 512$" in explanation and "$512 \\times 128$" in explanation
    assert "2 \\cdot 512 \\cdot 64 \\cdot (8 + 2) = 655{,}360" in explanation and sum(gqa.values()) == 655_360
    assert "4 \\cdot 512^2 = 1{,}048{,}576" in quiz["mha-params"].explanation
    assert f"saves {sum(mha.values()) - sum(gqa.values()):,} weights" in quiz["mha-params"].explanation
    assert "4 \\cdot 512^2 = 1{,}048{,}576" in quiz["sixteen-heads"].explanation
    per_head = quiz["per-head-query-weights"].explanation
    assert "rows `64h .. 64h + 63`" in per_head and "$64 \\times 512 = 32{,}768$" in per_head
    assert 64 * 512 == 32_768 == gqa["q_proj"] // 8
