"""Numbers written in module 03's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown and JSON, where nothing else would catch a wrong one.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
from experiment_scripts import load_experiment

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]


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
    assert (config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
            config.head_dim) == (512, 8, 2, 64)
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
    config = mm.MiniMindConfig()
    C, H, H_kv, D = config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim
    gqa, mha = attention_counts(), attention_counts(num_key_value_heads=H)
    same = {sum(attention_counts(num_attention_heads=h, num_key_value_heads=h).values()) for h in (1, 8, 64)}
    assert same == {sum(mha.values())}
    for text in (f"(`C = {C}`, `H = {H}`, `H_kv = {H_kv}`, `D = {D}`)", f"{gqa['q_proj']:,} weights each",
                 f"{gqa['k_proj']:,} each", f"{sum(gqa.values()):,} per layer",
                 f"{sum(mha.values()):,}, so sharing key/value heads saves {sum(mha.values()) - sum(gqa.values()):,} "
                 "weights per layer",
                 f"1, 8 or 64 heads of a {C}-wide layer all have {sum(mha.values()):,} weights",
                 f"MiniMind's {H_kv} KV heads"):
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
    assert "labelled = (10 * torch.arange(3)[:, None] + torch.arange(4))" in code  # 3 tokens, 4 features
    tokens, heads, width = map(int, re.search(r"right = labelled\.view\(1, (\d+), (\d+), (\d+)\)", code).groups())
    assert f"{tokens} tokens of {heads * width} features, split into {heads} heads of {width}" in text
    owns = [" and ".join(str(f) for f in range(h * width, (h + 1) * width)) for h in range(heads)]
    assert f"Head 0 owns features {owns[0]}, head 1 owns features {owns[1]}" in text
    assert (f"hidden size `C = {config.hidden_size}`, `H = {config.num_attention_heads}` query heads of "
            f"`D = {config.head_dim}`, and only `H_kv = {config.num_key_value_heads}`") in text
    group = config.num_attention_heads // config.num_key_value_heads
    assert f"across groups of {group} query heads saves `k_proj` and `v_proj` three quarters" in text
    assert 1 - 1 / group == 3 / 4
    args = defaults(load_experiment("03", "exp3_heads_specialise"))
    assert (args.symbols, args.tokens, args.hidden, args.heads, args.steps) == (6, 12, 64, 2, 300)
    K = args.symbols
    assert f"K, SEQ = {K}, {args.tokens}" in code
    assert f"one of `K = {K}`" in text and f"`{K} x {K} = {K * K}` classes" in text
    assert (f"hidden size {args.hidden} and {args.heads} heads of {args.hidden // args.heads}, trained for "
            f"{args.steps} steps") in text
    assert f"steps={args.steps}" in code and f"hidden_size={args.hidden}" in code
    assert f"a single head of width {args.hidden}" in text
