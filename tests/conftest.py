"""Shared fixtures for the minimind_ref unit tests."""

import pytest

import minimind_ref as mm

TINY_FIELDS = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   vocab_size=128, max_position_embeddings=256)


@pytest.fixture
def tiny_config():
    """A factory `(**overrides) -> MiniMindConfig`: hidden 64, 2 layers, 4 heads sharing 2 KV heads
    (head_dim 16), vocab 128, 256 positions; any field can be overridden."""

    def make(**overrides) -> mm.MiniMindConfig:
        return mm.MiniMindConfig(**{**TINY_FIELDS, **overrides})

    return make
