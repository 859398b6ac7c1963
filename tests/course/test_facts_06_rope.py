"""Module 06's prose names MiniMind's RoPE settings; these are the settings it names.

The numbers and behaviours typed into the guide and the notebook's Markdown are bound facts
(tests/facts/06_rope.py and 06_rope_yarn_minimind3.py, checked by tests/course/test_facts.py);
printed outputs are re-checked by nbval, and the experiments check their own claims.
"""

from __future__ import annotations

import minimind_ref as mm

YARN = mm.MINIMIND_YARN


def test_minimind_settings_that_the_prose_names():
    config = mm.MiniMindConfig()
    assert (config.head_dim, config.rope_theta, config.max_position_embeddings) == (64, 1e6, 32768)
    assert YARN == {"type": "yarn", "beta_fast": 32, "beta_slow": 1, "factor": 16,
                    "original_max_position_embeddings": 2048, "attention_factor": 1.0}
    assert mm.MiniMindConfig(inference_rope_scaling=True).rope_scaling == YARN
    assert YARN["factor"] * YARN["original_max_position_embeddings"] == config.max_position_embeddings
