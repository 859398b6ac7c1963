"""MiniMind's attention cut into the steps a learner writes, one method per step (module 10).

`SteppedAttention` computes exactly what `minimind_ref.Attention` computes on its explicit path,
from the same parameters (`q_proj`, `k_proj`, `v_proj`, `o_proj`, and `q_norm`, `k_norm` when the
config asks for them), and with minimind_ref's own pieces: `apply_rotary_pos_emb`, `repeat_kv`,
`causal_mask` and the `KVCache`. What it adds is the cut: each step is a method, so a known
mistake is one overridden method (see `catalogue.py`), and nothing else about the layer changes.
The grader's tests hold it to the reference on every stage of the ladder.
"""

from __future__ import annotations

import math

import torch

import minimind_ref as mm


class SteppedAttention(mm.Attention):
    """minimind_ref's Attention, its forward written as a sequence of overridable steps."""

    def __init__(self, config: mm.MiniMindConfig, layer_idx: int = 0):
        super().__init__(config, layer_idx)
        self.config = config  # a planted mistake may need the sizes (its own RoPE table, say)

    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        batch, seq_len, _ = x.shape
        q = self.split_heads(self.q_proj(x), self.num_heads)  # [B, H, T, D]
        k = self.split_heads(self.k_proj(x), self.num_kv_heads)  # [B, H_kv, T, D]
        v = self.split_heads(self.v_proj(x), self.num_kv_heads)
        if self.q_norm is not None:
            q, k = self.normalise(q, k)
        cos, sin = position_embeddings
        q, k, v = self.rotate(q, k, v, cos, sin, past_key_values)
        if past_key_values is not None:
            k, v = self.append_to_cache(past_key_values, k, v)  # [B, H_kv, S, D]
        k, v = self.share_kv(k), self.share_kv(v)  # [B, H, S, D]
        visible = self.visible(attn_mask, seq_len, k.shape[2], x.device)  # bool, [.., T, S]
        weights = self.softmax(self.mask(self.scores(q, k), visible), visible)  # [B, H, T, S]
        out = self.merge_heads(weights @ v)  # [B, T, H * D]
        return self.o_proj(out), (weights if output_attentions else None)

    # -- the steps -----------------------------------------------------------------------------

    def split_heads(self, projected: torch.Tensor, heads: int) -> torch.Tensor:
        """[B, T, heads * D] -> [B, heads, T, D]."""
        batch, seq_len, _ = projected.shape
        return projected.view(batch, seq_len, heads, self.head_dim).transpose(1, 2)

    def normalise(self, q, k):
        """MiniMind3 (qk_norm): RMSNorm over each head's D dimensions, before RoPE."""
        return self.q_norm(q), self.k_norm(k)

    def rotate(self, q, k, v, cos, sin, cache):
        """RoPE on queries and keys (rotate-half pairs); values keep their content."""
        q, k = mm.apply_rotary_pos_emb(q, k, cos, sin)
        return q, k, v

    def append_to_cache(self, cache, k, v):
        """The new keys and values go after the cached ones, along the positions axis."""
        return cache.update(self.layer_idx, k, v)

    def share_kv(self, kv: torch.Tensor) -> torch.Tensor:
        """Each key/value head serves a block of n_rep consecutive query heads."""
        return mm.repeat_kv(kv, self.n_rep)

    def scores(self, q, k):
        """q k^T / sqrt(D): [B, H, T, S]."""
        return (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)

    def visible(self, attn_mask, query_len: int, key_len: int, device) -> torch.Tensor:
        """The given bool mask (causality included), or the causal mask aligned bottom-right."""
        if attn_mask is not None:
            return attn_mask
        return mm.causal_mask(query_len, key_len, device=device)

    def mask(self, scores, visible):
        """Hidden keys get the lowest finite score: no NaN even where a row hides every key."""
        return scores.masked_fill(~visible, torch.finfo(scores.dtype).min)

    def softmax(self, scores, visible):
        """Softmax over the keys, in float32 at least; a row with no visible key becomes zeros."""
        weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
        return weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)

    def merge_heads(self, out: torch.Tensor) -> torch.Tensor:
        """[B, H, T, D] -> [B, T, H * D]: transpose back, then join the heads."""
        batch, heads, seq_len, head_dim = out.shape
        return out.transpose(1, 2).reshape(batch, seq_len, heads * head_dim)
