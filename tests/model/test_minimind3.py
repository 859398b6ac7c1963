"""MiniMindConfig.minimind3(): MiniMind-3's sizes, checked against upstream's formulas and against
transformers' Qwen3ForCausalLM loaded with the same weights (strict=True).

Upstream (github jingyaogong/minimind, `model/model_minimind.py` at 101d7df2, the "minimind-3"
commit, and dddedc68) computes its defaults in its config's constructor; the formulas are
repeated here from that source, not from minimind_ref, so a slip in the preset shows up.
"""

import math

import pytest
import torch
from model_factory import random_model

import minimind_ref as mm
from minimind_ref.oracles import hf_twin

TOL = 1e-4


def test_sizes_are_upstreams():
    config = mm.MiniMindConfig.minimind3()
    hidden, heads = 768, 8
    assert (config.hidden_size, config.num_hidden_layers) == (hidden, 8)
    assert (config.num_attention_heads, config.num_key_value_heads) == (heads, 4)
    assert config.head_dim == hidden // heads == 96
    assert config.intermediate_size == math.ceil(hidden * math.pi / 64) * 64 == 2432
    assert config.vocab_size == 6400 and config.max_position_embeddings == 32768
    assert config.rms_norm_eps == 1e-6 and config.rope_theta == 1e6
    assert config.tie_word_embeddings and config.qk_norm and config.rope_scaling is None
    # MiniMind2 stays the default
    assert mm.MiniMindConfig().hidden_size == 512 and not mm.MiniMindConfig().qk_norm


def test_overrides_apply_and_width_follows_hidden():
    short = mm.MiniMindConfig.minimind3(num_hidden_layers=2)
    assert short.num_hidden_layers == 2 and short.num_key_value_heads == 4
    narrow = mm.MiniMindConfig.minimind3(hidden_size=512)
    assert narrow.head_dim == 64 and narrow.intermediate_size == math.ceil(512 * math.pi / 64) * 64


def closed_form_parameters(config: mm.MiniMindConfig) -> int:
    """Tied embedding, and per layer: q/o projections, k/v projections, two head-wide norms,
    SwiGLU's three matrices and two hidden-wide norms; one final norm."""
    c, d, f = config.hidden_size, config.head_dim, config.intermediate_size
    attention = 2 * c * config.num_attention_heads * d + 2 * c * config.num_key_value_heads * d + 2 * d
    layer = attention + 3 * c * f + 2 * c
    return config.vocab_size * c + config.num_hidden_layers * layer + c


def test_parameter_count():
    """63,912,192 parameters (upstream's README calls MiniMind-3 "64M"); the guides quote it."""
    config = mm.MiniMindConfig.minimind3()
    model = mm.MiniMindForCausalLM(config)
    counted = sum(p.numel() for p in model.parameters())  # the tied matrix counted once
    assert counted == closed_form_parameters(config) == 63_912_192


@pytest.fixture(scope="module")
def full_size():
    return random_model(mm.MiniMindConfig.minimind3(), std=0.02)


def test_full_size_loads_strictly_into_qwen3_with_equal_logits(full_size):
    twin = hf_twin(full_size)  # strict=True inside
    assert type(twin).__name__ == "Qwen3ForCausalLM"
    assert sum(p.numel() for p in twin.parameters()) == 63_912_192
    ids = torch.randint(0, 6400, (2, 17), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = full_size(ids).logits, twin(ids).logits
    assert ours.shape == theirs.shape == (2, 17, 6400)
    assert (ours - theirs).abs().max().item() <= TOL


def test_full_size_cached_greedy_generation_equals_transformers(full_size):
    """Full size, all 8 layers: a prompt through the cache, then 24 greedy tokens."""
    twin = hf_twin(full_size)
    prompt = torch.randint(0, 6400, (1, 7), generator=torch.Generator().manual_seed(1))
    ours = full_size.generate(prompt, 24, use_cache=True)
    with torch.no_grad():
        theirs = twin.generate(prompt, max_new_tokens=24, min_new_tokens=24, do_sample=False,
                               eos_token_id=None, pad_token_id=0)
    assert torch.equal(ours, theirs)
    assert len(set(ours[0, 7:].tolist())) > 1  # a continuation that does not repeat one token
