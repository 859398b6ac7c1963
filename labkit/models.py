"""Models with random weights, for experiments and tests that need a MiniMind but no training.

`MiniMindForCausalLM(config)` initialises like MiniMind (small weights, unit norm gains), which
makes nearly flat logits. `random_minimind` draws every weight from N(0, std) and every norm gain
from U(0.5, 1.5), so logits are spread widely and greedy decoding does not repeat one token
forever: a harder test of "cached decoding equals recomputation", of masks and of oracles.
"""

from __future__ import annotations

import torch

import minimind_ref as mm
from minimind_ref._checks import check_arguments, check_attention_layer

from .arguments import real, whole


def random_minimind(config: mm.MiniMindConfig, seed: int = 0, std: float = 0.1) -> mm.MiniMindForCausalLM:
    """A MiniMind in eval mode whose every parameter is random, reproducibly from `seed`."""
    check_arguments("random_minimind", config, mm.MiniMindConfig)
    seed = whole("random_minimind", "seed", seed, low=0, high=2**64 - 1)
    std = real("random_minimind", "std", std, low=0)
    torch.manual_seed(seed)
    model = mm.MiniMindForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.uniform_(0.5, 1.5)
            else:
                param.normal_(0.0, std)
    return model.eval()


def random_attention(config: mm.MiniMindConfig) -> mm.Attention:
    """One `Attention` layer in eval mode whose projections are drawn from N(0, 1 / fan_in), drawn
    from torch's current random state (seed it first).

    MiniMind's own initialisation is tuned for a deep network; for one layer studied alone, weights
    of variance 1 / fan_in keep the queries, keys and outputs about as large as the input, so the
    attention weights are neither uniform nor one-hot and every effect under study is visible."""
    check_arguments("random_attention", config, mm.MiniMindConfig)
    layer = mm.Attention(config).eval()
    with torch.no_grad():
        for projection in (layer.q_proj, layer.k_proj, layer.v_proj, layer.o_proj):
            projection.weight.normal_(0.0, projection.in_features ** -0.5)
    return layer


def attention_scores(layer: mm.Attention, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """A layer's scores q . k / sqrt(D) before any mask or softmax, [B, T, C] -> [B, H, T, T]:
    the layer's own steps up to `scores` (the layer returns only the weights, and some claims
    are about the scores)."""
    if not isinstance(layer, mm.Attention):
        raise TypeError(f"attention_scores: layer must be a minimind_ref Attention layer (model.model.layers[i]"
                        f".self_attn, or random_attention(config)), got {type(layer).__name__}.")
    check_attention_layer(layer, x, (cos, sin))  # the layer's own rules for what it is given
    q, k, _ = layer.split_heads(x)  # [B, H, T, D], [B, H_kv, T, D]
    if layer.q_norm is not None:
        q, k = layer.normalise(q, k)
    q, k = layer.rotate(q, k, cos, sin)
    return layer.scores(q, layer.share_kv(k))

