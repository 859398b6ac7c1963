"""Models with every weight random, for comparing against oracles.

A freshly initialised MiniMind has all RMSNorm gains at 1.0, so a bug that drops or misplaces a
norm would go unseen; here every parameter, gains included, is drawn at random.
"""

import torch

import minimind_ref as mm


def small_config(**overrides) -> mm.MiniMindConfig:
    """Small enough for fast tests, with every feature of the default one (GQA by default)."""
    fields = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=128, max_position_embeddings=512)
    fields.update(overrides)
    return mm.MiniMindConfig(**fields)


def random_model(config: mm.MiniMindConfig, seed: int = 0, std: float = 0.1) -> mm.MiniMindForCausalLM:
    """A MiniMind model in eval mode whose every parameter is random (norm gains around 1)."""
    torch.manual_seed(seed)
    model = mm.MiniMindForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.uniform_(0.5, 1.5)
            else:
                param.normal_(0.0, std)
    return model.eval()
