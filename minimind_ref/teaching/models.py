"""Models with random weights, for experiments and tests that need a MiniMind but no training.

`MiniMindForCausalLM(config)` initialises like MiniMind (small weights, unit norm gains), which
makes nearly flat logits. `random_minimind` draws every weight from N(0, std) and every norm gain
from U(0.5, 1.5), so logits are spread widely and greedy decoding does not repeat one token
forever: a harder test of "cached decoding equals recomputation", of masks and of oracles.
"""

from __future__ import annotations

import torch

import minimind_ref as mm


def random_minimind(config: mm.MiniMindConfig, seed: int = 0, std: float = 0.1) -> mm.MiniMindForCausalLM:
    """A MiniMind in eval mode whose every parameter is random, reproducibly from `seed`."""
    torch.manual_seed(seed)
    model = mm.MiniMindForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.uniform_(0.5, 1.5)
            else:
                param.normal_(0.0, std)
    return model.eval()
