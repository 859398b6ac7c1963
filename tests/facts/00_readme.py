"""The root README's facts: MiniMind2-Small's default configuration and MiniMind-3's, as minimind_ref
builds them (parameters counted on models built on the meta device)."""

from __future__ import annotations

import torch

import minimind_ref as mm
from facts import fact


def parameters(config: mm.MiniMindConfig) -> int:
    with torch.device("meta"):  # shapes only: nothing allocated or initialised
        model = mm.MiniMindForCausalLM(config)
    return sum(p.numel() for p in model.parameters())


@fact
def readme_minimind2_defaults():
    """(hidden size, layers, query heads, key/value heads, head size, SwiGLU width, vocabulary, RoPE base)."""
    c = mm.MiniMindConfig()
    assert c.tie_word_embeddings
    return (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads, c.head_dim,
            c.intermediate_size, c.vocab_size, c.rope_theta)


@fact
def readme_minimind2_parameters():
    return parameters(mm.MiniMindConfig())


@fact
def readme_yarn_factor_over_trained():
    yarn = mm.MiniMindConfig(inference_rope_scaling=True).rope_scaling
    return yarn["factor"], yarn["original_max_position_embeddings"]


@fact
def readme_minimind3_config():
    """(hidden size, query heads, key/value heads, head size, SwiGLU width, rms_norm_eps), q/k norm on."""
    c = mm.MiniMindConfig.minimind3()
    assert c.qk_norm
    return c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.intermediate_size, c.rms_norm_eps


@fact
def readme_minimind3_parameters():
    return parameters(mm.MiniMindConfig.minimind3())
