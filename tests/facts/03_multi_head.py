"""Module 03's facts: MiniMind2-Small's attention weights counted on minimind_ref's layer, the notebook's toy
sizes from its own code, and exp1's and exp3's defaults."""

from __future__ import annotations

import argparse

import minimind_ref as mm
from facts import fact, sources

CONFIG = mm.MiniMindConfig()
TOY_CELL = "a6c2208e"  # the toy layer's sizes
LABELLED_CELL = "e50e4aa2"  # the labelled tensor and its two splits
TOPIC_CELL = "8f659a22"  # the topic task's sizes
MODEL_CELL = "d91356c7"  # build_model: the topic task's MiniMind
ONE_HEAD_CELL = "9a5bf732"  # the one-head model, trained


def counts(**changes) -> dict[str, int]:
    layer = mm.Attention(mm.MiniMindConfig(**changes))
    return {name: layer.get_submodule(name).weight.numel() for name in ("q_proj", "k_proj", "v_proj", "o_proj")}


def exp3_defaults() -> argparse.Namespace:
    return sources.defaults("03", "exp3_heads_specialise")


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
    heads = (1, 8, 64)
    totals = {sum(counts(num_attention_heads=h, num_key_value_heads=h).values()) for h in heads}
    assert len(totals) == 1
    return (*heads, CONFIG.hidden_size, totals.pop())


@fact
def minimind2_kv_heads_03():
    return CONFIG.num_key_value_heads


@fact
def exp1_head_counts():
    return sources.experiment("03", "exp1_heads_are_concatenated").HEAD_COUNTS


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
    toy = sources.run_cells("03", TOY_CELL, torch=__import__("torch"), print=lambda *a, **k: None)
    return (*toy["x"].shape[1:], toy["H"], toy["D"])


def _labelled():
    """The cell's labelled tensor ([1, T, features], entry 10 t + feature) and its right split."""
    import torch

    cell = sources.run_cells("03", LABELLED_CELL, torch=torch, print=lambda *a, **k: None)
    return cell["labelled"], cell["right"]  # [1, T, H*D], [1, H, T, D]


@fact
def labelled_split_sizes():
    """3 tokens of 4 features, split into 2 heads of 2."""
    labelled, right = _labelled()
    _, heads, tokens, width = right.shape
    return tokens, labelled.shape[-1], heads, width


@fact
def labelled_heads_own_features():
    """Head 0 owns features 0 and 1, head 1 owns features 2 and 3: read off the labels of token 0."""
    _, right = _labelled()
    return tuple(n for h in range(right.shape[1]) for n in (h, *right[0, h, 0].int().tolist()))


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
    K, tokens = sources.read("03", TOPIC_CELL, r"^K, SEQ = (\d+), (\d+)$")
    assert (K, tokens) == (exp3_defaults().symbols, exp3_defaults().tokens), "the notebook's task is exp3's"
    return K


@fact
def topic_classes():
    K = topic_symbols()
    return K, K, K * K


def _topic_model() -> tuple[int, int]:
    """(hidden size, training steps) of the notebook's topic model."""
    hidden = sources.read("03", MODEL_CELL, r"config = mm\.MiniMindConfig\(hidden_size=(\d+),")
    steps = sources.read("03", ONE_HEAD_CELL, r"^log_one = train\(.*steps=(\d+),")
    return hidden, steps


@fact
def topic_model():
    """hidden size 64 and 2 heads of 32, trained for 300 steps (the notebook's code, as exp3's defaults)."""
    args = exp3_defaults()
    hidden, steps = _topic_model()
    assert (hidden, steps) == (args.hidden, args.steps), "the notebook's model is no longer exp3's"
    return hidden, args.heads, hidden // args.heads, steps


@fact
def single_head_width():
    """The one-head model is the notebook's topic model with one head: the width of that head."""
    assert "build_model(heads=1," in sources.cell("03", ONE_HEAD_CELL)
    return _topic_model()[0]
