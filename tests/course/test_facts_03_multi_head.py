"""MiniMind2's attention weights as module 03 counts them, and the quiz explanations' numbers.

The guide's and the notebook's numbers are bound facts (tests/facts/03_multi_head.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat

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
