"""Module 03's facts: MiniMind2's attention weights counted on minimind_ref's layer, the notebook's toy
sizes from its own code, and exp1's and exp3's defaults."""

from __future__ import annotations

import argparse
import re
from functools import cache
from pathlib import Path

import nbformat
from experiment_scripts import load_experiment

import minimind_ref as mm
from facts import fact

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "03_multi_head.ipynb"
CONFIG = mm.MiniMindConfig()


def counts(**changes) -> dict[str, int]:
    layer = mm.Attention(mm.MiniMindConfig(**changes))
    return {name: layer.get_submodule(name).weight.numel() for name in ("q_proj", "k_proj", "v_proj", "o_proj")}


@cache
def code() -> str:
    return "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code")


@cache
def exp3_defaults() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    load_experiment("03", "exp3_heads_specialise").add_arguments(parser)
    return parser.parse_args([])


@fact
def minimind2_sizes_03():
    """(`C = 512`, `H = 8`, `H_kv = 2`, `D = 64`)."""
    return CONFIG.hidden_size, CONFIG.num_attention_heads, CONFIG.num_key_value_heads, CONFIG.head_dim


@fact
def minimind2_q_and_o_proj_weights():
    gqa = counts()
    assert gqa["q_proj"] == gqa["o_proj"]
    return gqa["q_proj"]


@fact
def minimind2_k_and_v_proj_weights():
    gqa = counts()
    assert gqa["k_proj"] == gqa["v_proj"]
    return gqa["k_proj"]


@fact
def minimind2_attention_weights_per_layer():
    return sum(counts().values())


@fact
def mha_attention_weights_and_saving():
    """With 8 key/value heads `4 C^2` weights; sharing saves the difference."""
    mha, gqa = sum(counts(num_key_value_heads=CONFIG.num_attention_heads).values()), sum(counts().values())
    assert mha == 4 * CONFIG.hidden_size ** 2
    return 4, 2, mha, mha - gqa


@fact
def head_count_does_not_change_the_weights():
    """1, 8 or 64 heads of a 512-wide layer all have 1,048,576 weights."""
    totals = {sum(counts(num_attention_heads=h, num_key_value_heads=h).values()) for h in (1, 8, 64)}
    assert len(totals) == 1
    return 1, 8, 64, CONFIG.hidden_size, totals.pop()


@fact
def minimind2_kv_heads_03():
    return CONFIG.num_key_value_heads


@fact
def exp1_head_counts():
    return load_experiment("03", "exp1_heads_are_concatenated").HEAD_COUNTS


@fact
def exp3_steps_and_batch():
    return exp3_defaults().steps, exp3_defaults().batch


@fact
def minimind2_heads_and_slices():
    """MiniMind runs 8 heads, each on its own 64-wide slice of the 512 features."""
    return CONFIG.num_attention_heads, CONFIG.head_dim, CONFIG.hidden_size


@fact
def toy_layer_sizes():
    """`T = 4` tokens of `C = 8` features, `H = 2` heads of `D = 4`."""
    T, C, H = map(int, re.search(r"^T, C, H = (\d+), (\d+), (\d+)$", code(), re.M).groups())
    return T, C, H, C // H


@fact
def labelled_split_sizes():
    """3 tokens of 4 features, split into 2 heads of 2."""
    tokens, heads, width = map(int, re.search(r"right = labelled\.view\(1, (\d+), (\d+), (\d+)\)", code()).groups())
    return tokens, heads * width, heads, width


@fact
def labelled_heads_own_features():
    """Head 0 owns features 0 and 1, head 1 owns features 2 and 3."""
    _, heads, width = map(int, re.search(r"right = labelled\.view\(1, (\d+), (\d+), (\d+)\)", code()).groups())
    return tuple(n for h in range(heads) for n in (h, *range(h * width, (h + 1) * width)))


@fact
def minimind2_sizes_notebook_03():
    """hidden size `C = 512`, `H = 8` query heads of `D = 64`, and only `H_kv = 2`."""
    return CONFIG.hidden_size, CONFIG.num_attention_heads, CONFIG.head_dim, CONFIG.num_key_value_heads


@fact
def minimind2_query_group():
    return CONFIG.num_attention_heads // CONFIG.num_key_value_heads


@fact
def sharing_saves_three_quarters():
    """Sharing keys and values across groups of 4 saves `k_proj` and `v_proj` three quarters."""
    return 1 - counts()["k_proj"] / counts(num_key_value_heads=CONFIG.num_attention_heads)["k_proj"] == 3 / 4


@fact
def topic_symbols():
    K = exp3_defaults().symbols
    assert re.search(rf"^K, SEQ = {K}, {exp3_defaults().tokens}$", code(), re.M)
    return K


@fact
def topic_classes():
    K = exp3_defaults().symbols
    return K, K, K * K


@fact
def topic_model():
    """hidden size 64 and 2 heads of 32, trained for 300 steps (the notebook's code, as exp3's defaults)."""
    args = exp3_defaults()
    assert f"steps={args.steps}" in code() and f"hidden_size={args.hidden}" in code()
    return args.hidden, args.heads, args.hidden // args.heads, args.steps


@fact
def single_head_width():
    return exp3_defaults().hidden
