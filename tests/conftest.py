"""Shared fixtures for the minimind_ref unit tests (plain helpers live in model_factory.py)."""

import functools

import pytest
from model_factory import small_config


@pytest.fixture
def tiny_config():
    """A factory `(**overrides) -> MiniMindConfig`: hidden 64, 2 layers, 4 heads sharing 2 KV heads
    (head_dim 16), vocab 128, 256 positions; any field can be overridden."""
    return functools.partial(small_config, max_position_embeddings=256)
