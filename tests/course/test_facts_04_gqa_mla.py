"""The numbers module 04 writes about multi-head latent attention (guide, notebook prose, quiz, the
docstring of exp5_mla) are the ones code computes, and DeepSeek's sizes are the ones transformers'
config classes hold.

DeepSeek-V2's sizes come from its paper (arXiv 2405.04434, section 3.1: 60 layers, hidden size
5120, 128 attention heads of 128, KV compression d_c = 512, query compression d_c' = 1536, decoupled
rotary part d_R = 64), which its released config.json repeats. transformers' DeepseekV3Config
defaults hold DeepSeek-V3's sizes, whose attention is the same; DeepseekV2Config's defaults share the
MLA sizes but not the head count. Both are checked below, so a wrong constant in minimind_ref/variants/mla.py
fails here.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import nbformat
from experiment_scripts import load_experiment

import minimind_ref as mm
from minimind_ref.variants.mla import DEEPSEEK_V2, MLAConfig

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "modules" / "04_gqa" / "README.md"
NOTEBOOK = ROOT / "notebooks" / "04_gqa.ipynb"
SCRIPT = ROOT / "experiments" / "04_gqa" / "exp5_mla.py"

V2 = DEEPSEEK_V2
MINIMIND = mm.MiniMindConfig()
TWIN = MLAConfig()  # MLA at MiniMind2's sizes


def flat(text: str) -> str:
    return " ".join(text.split())


def notebook_markdown() -> str:
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    return flat("\n".join(cell.source for cell in cells if cell.cell_type == "markdown"))


# The cache measurements behind module 04's bound facts: one definition, shared with them.
_FACTS = importlib.import_module("facts.04_gqa")
kv_numbers, mla_numbers = _FACTS.kv_numbers, _FACTS.mla_numbers


# DeepSeek-V2's numbers as the prose uses them, each measured
MHA = kv_numbers(V2.num_attention_heads, V2.qk_nope_head_dim)
MLA = mla_numbers(V2)
GQA2, GQA3, MQA = (kv_numbers(g, V2.qk_nope_head_dim) for g in (2, 3, 1))
GROUPS = MLA / kv_numbers(1, V2.qk_nope_head_dim)
MM_GQA = kv_numbers(MINIMIND.num_key_value_heads, MINIMIND.head_dim)
MM_MHA = kv_numbers(MINIMIND.num_attention_heads, MINIMIND.head_dim)
TWIN_MLA = mla_numbers(TWIN)


def test_deepseek_sizes_are_transformers_config_defaults():
    from transformers import DeepseekV2Config, DeepseekV3Config

    v3 = DeepseekV3Config()
    attention = ("num_attention_heads", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                 "v_head_dim")
    assert {name: getattr(V2, name) for name in attention} == {name: getattr(v3, name) for name in attention}
    v2_defaults = DeepseekV2Config()
    mla_sizes = attention[1:]  # DeepseekV2Config's default head count (32) is not DeepSeek-V2's
    assert {name: getattr(V2, name) for name in mla_sizes} == {name: getattr(v2_defaults, name) for name in mla_sizes}
    assert v3.rope_interleave is True and V2.rope_interleave is True
    # from the paper only (section 3.1), as the module docstring of mla.py quotes it
    assert (V2.num_hidden_layers, V2.hidden_size) == (60, 5120)
    assert (V2.num_attention_heads, V2.qk_nope_head_dim, V2.kv_lora_rank, V2.qk_rope_head_dim) == (128, 128, 512, 64)


def test_the_cache_numbers():
    assert MLA == V2.kv_lora_rank + V2.qk_rope_head_dim == 576
    assert MHA == 2 * 128 * 128 == 32768 and round(MHA / MLA, 1) == 56.9 and round(MHA / MLA) == 57
    assert GROUPS == 2.25 and (GQA2, GQA3, MQA) == (512, 768, 256) and GQA2 < MLA < GQA3
    # DeepSeek's ratios, and MLA at MiniMind2's sizes
    for cfg in (V2, TWIN):
        assert cfg.kv_lora_rank == 4 * cfg.qk_nope_head_dim and cfg.qk_rope_head_dim == cfg.qk_nope_head_dim // 2
    assert (TWIN.hidden_size, TWIN.num_attention_heads, TWIN.qk_nope_head_dim) == (
        MINIMIND.hidden_size, MINIMIND.num_attention_heads, MINIMIND.head_dim)
    assert TWIN_MLA == 288 and MM_GQA == 256 and TWIN_MLA > MM_GQA
    assert MM_MHA / TWIN_MLA == MINIMIND.num_attention_heads / 2.25 and round(MM_MHA / TWIN_MLA, 1) == 3.6
    assert MHA / MLA == V2.num_attention_heads / 2.25


def script_defaults():
    module = load_experiment("04", "exp5_mla")
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args([]), module


def test_script_docstring_numbers():
    """exp5_mla's docstring (its --help) states these numbers; each is checked as the quizzes check an
    explanation's, by `mentions`, so its sentences can be reworded. (Fact markers would show in --help.)"""
    from labkit.quiz.checks import mentions

    _, module = script_defaults()
    doc = module.__doc__
    stated = {"MLA's numbers per token and layer": mentions(doc, MLA),
              "the saving against MHA, 1/N": mentions(doc, round(MHA / MLA)),
              "GQA's equivalent groups": mentions(doc, GROUPS, 2),
              "MiniMind's saving": mentions(doc, MM_MHA / TWIN_MLA, 1),
              **{f"DeepSeek-V2's {name}": mentions(doc, value) for name, value in (
                  ("heads", V2.num_attention_heads), ("head size", V2.qk_nope_head_dim),
                  ("d_c", V2.kv_lora_rank), ("d_R", V2.qk_rope_head_dim), ("layers", V2.num_hidden_layers))}}
    assert all(stated.values()), f"exp5_mla's docstring no longer states: {[k for k, v in stated.items() if not v]}"
