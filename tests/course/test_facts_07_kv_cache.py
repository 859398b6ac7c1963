"""Module 07's quiz explanations state the numbers code computes.

The guide's and the notebook's numbers are bound facts (tests/facts/07_kv_cache.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from labkit.quiz import load_quiz

ROOT = Path(__file__).resolve().parents[2]
MINIMIND2 = mm.MiniMindConfig()
FLOAT32 = torch.finfo(torch.float32).bits // 8


@pytest.fixture(scope="module")
def quiz():
    return {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}


def minimind2_bytes(kv_heads=None, dtype_bytes=FLOAT32):
    return (2 * MINIMIND2.num_hidden_layers * (kv_heads or MINIMIND2.num_key_value_heads) * MINIMIND2.head_dim
            * dtype_bytes)


def test_quiz_cache_sizes(quiz):
    memory = load_experiment("07", "exp3_cache_memory")
    assert f"= {minimind2_bytes()}$" in quiz["minimind2-bytes"].explanation
    mha = minimind2_bytes(kv_heads=MINIMIND2.num_attention_heads)
    assert f"= {mha}$, 4 times more" in quiz["mha-instead"].explanation
    llama3 = memory.cache_bytes(32, 8, 128, 2)
    explanation = quiz["llama3-8k"].explanation
    assert f"= {llama3}$ bytes ({llama3 // 1024} KiB)" in explanation
    assert llama3 * 8192 == 2**30 and "is $2^{30}$ bytes, 1 GiB" in explanation
    assert "Llama 2 7B, with 32 KV heads, needs 4 times as much" in explanation


def test_quiz_costs_and_growth(quiz):
    cost = load_experiment("07", "exp2_cost_per_token")
    crossover = cost.attention_crossover(MINIMIND2)
    assert f"equals the rest of the step at about {crossover:.0f} keys" in quiz["cached-step-cost"].explanation
    assert "logits within about 1e-5" in quiz["why-cacheable"].explanation
    assert f"\\frac{{n+1}}{{2}} = {(1000 + 1) / 2:g}$" in quiz["cat-vs-prealloc"].explanation


def test_quiz_explanation_counts(quiz):
    n = 100
    assert (f"${n} \\times {n + 1} / 2 = {n * (n + 1) // 2}$ positions, against {n} with a cache"
            in quiz["forwards-without-cache"].explanation)
    layers, kv_heads, head_dim = MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim
    assert (f"$2 \\times {layers} \\times {kv_heads} \\times {head_dim} \\times {FLOAT32} = "
            f"{minimind2_bytes()}$") in quiz["minimind2-bytes"].explanation
    gqa = quiz["gqa-what-is-cached"]
    heads, kv = 32, 8  # the question's model
    assert f"{heads} query heads and {kv} key/value heads" in gqa.question
    assert f"{heads} / {kv} = {heads // kv} times fewer" in gqa.explanation
    text = quiz["doubling"].explanation
    assert "sum to c (2^k - 1) < 2n" in text and "under 3 b n" in text
