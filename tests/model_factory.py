"""Models with every weight random, for comparing against oracles.

A freshly initialised MiniMind has all RMSNorm gains at 1.0, so a bug that drops or misplaces a
norm would go unseen; here every parameter, gains included, is drawn at random.
"""

import minimind_ref as mm
from labkit.models import random_minimind


def small_config(**overrides) -> mm.MiniMindConfig:
    """Small enough for fast tests, with every feature of the default one (GQA by default)."""
    fields = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=128, max_position_embeddings=512)
    fields.update(overrides)
    return mm.MiniMindConfig(**fields)


# A MiniMind whose every parameter is random: shared with the experiments.
random_model = random_minimind
