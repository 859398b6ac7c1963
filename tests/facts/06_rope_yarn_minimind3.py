"""Module 06's facts about YaRN on MiniMind-3's 96-wide heads beside MiniMind2-Small's 64-wide ones (issue
25): the boundary pairs, the kept, ramped and divided spans, from minimind_ref.rope, and transformers'
own YaRN on the same configs. (A file of its own beside the module's others: the facts loader reads
every file here.)"""

from __future__ import annotations

import math
from fractions import Fraction

import torch
from transformers.modeling_rope_utils import _compute_yarn_parameters

import minimind_ref as mm
from facts import fact
from minimind_ref.oracles import hf_config
from minimind_ref.rope import rope_inverse_frequencies, yarn_correction_dim, yarn_inverse_frequencies, yarn_ramp

CONFIGS = {"MiniMind2": mm.MiniMindConfig(inference_rope_scaling=True),
           "MiniMind-3": mm.MiniMindConfig.minimind3(num_hidden_layers=1, inference_rope_scaling=True)}


def boundary(name: str, beta: str) -> float:
    config = CONFIGS[name]
    scaling = config.rope_scaling
    return yarn_correction_dim(scaling[beta], config.head_dim, config.rope_theta,
                               scaling["original_max_position_embeddings"])


def span(name: str, kind: str) -> list[int]:
    config = CONFIGS[name]
    ramp = yarn_ramp(config.head_dim, config.rope_theta, config.rope_scaling).tolist()
    test = {"kept": lambda r: r == 0, "divided": lambda r: r == 1, "ramp": lambda r: 0 < r < 1}[kind]
    return [i for i, r in enumerate(ramp) if test(r)]


def ramp_step(name: str) -> Fraction:
    """The ramp rises by 1 / (high - low) per pair, high and low the rounded boundaries."""
    step = 1 / (math.ceil(boundary(name, "beta_slow")) - math.floor(boundary(name, "beta_fast")))
    config = CONFIGS[name]
    ramp = yarn_ramp(config.head_dim, config.rope_theta, config.rope_scaling)
    assert torch.allclose(ramp[1:] - ramp[:-1], torch.where((ramp[1:] > 0) & (ramp[:-1] < 1), step, 0.0))
    return Fraction(step).limit_denominator(100)


@fact
def yarn_minimind3_head():
    config = CONFIGS["MiniMind-3"]
    other = CONFIGS["MiniMind2"]
    assert (config.rope_theta, config.rope_scaling) == (other.rope_theta, other.rope_scaling)
    return config.head_dim, config.head_dim // 2


@fact
def yarn_fast_boundaries():
    return boundary("MiniMind-3", "beta_fast"), boundary("MiniMind2", "beta_fast"), CONFIGS["MiniMind2"].head_dim


@fact
def yarn_slow_boundaries():
    return boundary("MiniMind-3", "beta_slow"), boundary("MiniMind2", "beta_slow")


def kept(name: str):
    pairs = span(name, "kept")
    return pairs[0], pairs[-1], len(pairs), CONFIGS[name].head_dim // 2


def ramped(name: str):
    pairs, step = span(name, "ramp"), ramp_step(name)
    assert step.numerator == 1
    return pairs[0], pairs[-1], len(pairs), 1, step.denominator


def divided(name: str):
    pairs = span(name, "divided")
    return pairs[0], pairs[-1], len(pairs)


@fact
def yarn_kept_minimind3():
    return kept("MiniMind-3")


@fact
def yarn_ramp_minimind3():
    return ramped("MiniMind-3")


@fact
def yarn_divided_minimind3():
    return (*divided("MiniMind-3"), CONFIGS["MiniMind-3"].rope_scaling["factor"])


@fact
def yarn_kept_minimind2():
    return kept("MiniMind2")


@fact
def yarn_ramp_minimind2():
    return ramped("MiniMind2")


@fact
def yarn_divided_minimind2():
    return divided("MiniMind2")


@fact
def yarn_first_divided_pairs():
    """The first divided pair of each head turns at the same frequency."""
    first3, first2 = span("MiniMind-3", "divided")[0], span("MiniMind2", "divided")[0]
    d3, d2 = CONFIGS["MiniMind-3"].head_dim, CONFIGS["MiniMind2"].head_dim
    assert Fraction(2 * first3, d3) == Fraction(2 * first2, d2)
    return first3, d3, first2, d2


@fact
def yarn_first_divided_turns():
    config = CONFIGS["MiniMind2"]
    trained = config.rope_scaling["original_max_position_embeddings"]
    theta = rope_inverse_frequencies(config.head_dim, config.rope_theta).double()
    return (trained * theta[span("MiniMind2", "divided")[0]] / (2 * math.pi)).item(), trained


@fact
def yarn_matches_transformers():
    for config in CONFIGS.values():
        ours = yarn_inverse_frequencies(config.head_dim, config.rope_theta, config.rope_scaling)
        theirs, _ = _compute_yarn_parameters(hf_config(config))
        if not torch.allclose(ours, theirs, rtol=1e-6):
            return False
    return True
