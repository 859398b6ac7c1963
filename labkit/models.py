"""Models with random weights, for experiments and tests that need a MiniMind but no training.

`MiniMindForCausalLM(config)` initialises like MiniMind (small weights, unit norm gains), which
makes nearly flat logits. `random_minimind` draws every weight from N(0, std) and every norm gain
from U(0.5, 1.5), so logits are spread widely and greedy decoding does not repeat one token
forever: a harder test of "cached decoding equals recomputation", of masks and of oracles.
"""

from __future__ import annotations

import math

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


def random_attention(config: mm.MiniMindConfig) -> mm.Attention:
    """One `Attention` layer in eval mode whose projections are drawn from N(0, 1 / fan_in), drawn
    from torch's current random state (seed it first).

    MiniMind's own initialisation is tuned for a deep network; for one layer studied alone, weights
    of variance 1 / fan_in keep the queries, keys and outputs about as large as the input, so the
    attention weights are neither uniform nor one-hot and every effect under study is visible."""
    layer = mm.Attention(config).eval()
    with torch.no_grad():
        for projection in (layer.q_proj, layer.k_proj, layer.v_proj, layer.o_proj):
            projection.weight.normal_(0.0, projection.in_features ** -0.5)
    return layer


def attention_scores(layer: mm.Attention, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """A layer's scores q . k / sqrt(D) before any mask or softmax, [B, T, C] -> [B, H, T, T].

    The same steps as `Attention.forward` up to the scores (projections, the q/k RMSNorm when the
    layer has one, RoPE with the given tables, key/value heads shared by `n_rep` query heads):
    the layer returns only the weights, and some claims are about the scores."""
    batch, tokens, _ = x.shape
    q = layer.q_proj(x).view(batch, tokens, layer.num_heads, layer.head_dim).transpose(1, 2)  # [B, H, T, D]
    k = layer.k_proj(x).view(batch, tokens, layer.num_kv_heads, layer.head_dim).transpose(1, 2)
    if layer.q_norm is not None:
        q, k = layer.q_norm(q), layer.k_norm(k)
    q, k = mm.apply_rotary_pos_emb(q, k, cos, sin)
    return q @ mm.repeat_kv(k, layer.n_rep).transpose(-2, -1) / math.sqrt(layer.head_dim)
