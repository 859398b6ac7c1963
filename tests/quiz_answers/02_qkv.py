"""Module 02's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import math

import torch
from experiment_scripts import load_experiment

import minimind_ref as mm


def experiment(stem: str):
    """One of module 02's experiment scripts as a module (test_02_qkv_tasks.py and
    test_facts_02_qkv.py load theirs through this too)."""
    return load_experiment("02", stem)


def _k_proj_width() -> int:
    return mm.Attention(mm.MiniMindConfig()).k_proj.out_features


def _attention_weights() -> int:
    layer = mm.Attention(mm.MiniMindConfig())
    return sum(p.numel() for name, p in layer.named_parameters() if name.endswith("proj.weight"))


def _cross_attention_weights(batch: int = 2, heads: int = 8, queries: int = 3, keys: int = 7) -> int:
    q = torch.randn(batch, heads, queries, 4)
    k = torch.randn(batch, heads, keys, 4)
    _, weights = mm.scaled_dot_product_attention(q, k, k, return_weights=True)
    return weights.numel()


def _lookup_chance() -> float:
    return 1 / experiment("exp2_kv_retrieval").NUM_VALUES


def _tied_ceiling(sequences: int = 50_000) -> float:
    """1/2 + 1/(2 V), checked against a simulation of the strategy on exp3's own data: name one of
    the two values (own or partner's) at random."""
    script = experiment("exp3_tied_cannot_look_away")
    exact = 0.5 + 0.5 / script.NUM_VALUES
    generator = torch.Generator().manual_seed(0)
    (symbols, values), answers = script.make_sequences(sequences, 4, generator)
    own_or_partner = torch.rand(values.shape, generator=generator) < 0.5
    guesses = torch.where(own_or_partner, values, answers)
    simulated = (guesses == answers).float().mean().item()
    standard_error = math.sqrt(exact * (1 - exact) / (sequences * 4))  # one guess per couple is independent
    assert abs(simulated - exact) <= 5 * standard_error, (simulated, exact)
    return exact


ANSWERS = {
    "kproj-width": _k_proj_width,
    "attention-weights-count": _attention_weights,
    "cross-count": _cross_attention_weights,
    "lookup-chance": _lookup_chance,
    "tied-ceiling": _tied_ceiling,
}
