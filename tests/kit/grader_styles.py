"""Correct attention layers written in styles unlike minimind_ref's, for tests/kit/test_grader_styles.py:
the grader must pass every one of them. Each keeps only the contract (constructor, parameter
names, forward's signature and return)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import minimind_ref as mm


class _Projections(nn.Module):
    """The contract's parameters; dropout as modules, which eval() turns off."""

    def __init__(self, config, layer_idx=0):
        super().__init__()
        self.layer_idx = layer_idx
        self.h, self.kv, self.d = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.kv * self.d, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, config.hidden_size, bias=False)
        norm = (lambda: mm.RMSNorm(self.d, eps=config.rms_norm_eps)) if config.qk_norm else (lambda: None)
        self.q_norm, self.k_norm = norm(), norm()
        self.p = config.dropout


class EinsumAttention(_Projections):
    """Heads kept as [B, T, H, D] until after RoPE, einsum for both products, zero rows by a product."""

    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d)
        k = self.k_proj(x).view(b, t, self.kv, self.d)
        v = self.v_proj(x).view(b, t, self.kv, self.d)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        cos, sin = (angle.unsqueeze(-2) for angle in position_embeddings)  # over the heads axis

        def rotate(u):
            first, second = u.chunk(2, dim=-1)
            return (u * cos + torch.cat((-second, first), dim=-1) * sin).type_as(u)

        q, k, v = rotate(q).transpose(1, 2), rotate(k).transpose(1, 2), v.transpose(1, 2)
        if past_key_values is not None:
            k, v = past_key_values.update(self.layer_idx, k, v)
        s = k.shape[2]
        k, v = (u.repeat_interleave(self.h // self.kv, dim=1) for u in (k, v))
        scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(self.d)
        visible = attn_mask if attn_mask is not None else torch.ones(t, s, dtype=torch.bool).tril(s - t)
        scores = scores.masked_fill(~visible, torch.finfo(scores.dtype).min)
        weights = scores.float().softmax(dim=-1).type_as(scores) * visible.any(dim=-1, keepdim=True)
        dropped = F.dropout(weights, self.p, training=self.training)
        out = torch.einsum("bhts,bhsd->bthd", dropped, v).reshape(b, t, self.h * self.d)
        return F.dropout(self.o_proj(out), self.p, self.training), (weights if output_attentions else None)


class LoopAttention(_Projections):
    """One query of one head at a time, with a softmax written by hand (the sum kept in the graph)."""

    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = mm.apply_rotary_pos_emb(q, k, *position_embeddings)
        if past_key_values is not None:
            k, v = past_key_values.update(self.layer_idx, k, v)
        s = k.shape[2]
        mask = (attn_mask.expand(b, 1, t, s) if attn_mask is not None else
                torch.ones(t, s, dtype=torch.bool).tril(s - t).expand(b, 1, t, s))
        group = self.h // self.kv
        rows = []
        for batch in range(b):
            heads = []
            for head in range(self.h):
                queries = []
                for query in range(t):
                    seen = mask[batch, 0, query]
                    if not seen.any():  # a pad query sees nothing: zero weights
                        queries.append(torch.zeros(s, dtype=x.dtype))
                        continue
                    score = (k[batch, head // group] @ q[batch, head, query]).float() / math.sqrt(self.d)
                    score = score.masked_fill(~seen, float("-inf"))
                    e = torch.exp(score - score.max())
                    queries.append((e / e.sum()).to(x.dtype))
                heads.append(torch.stack(queries))
            rows.append(torch.stack(heads))
        weights = torch.stack(rows)  # [B, H, T, S]
        out = torch.stack([weights[:, head] @ v[:, head // group] for head in range(self.h)], dim=2)  # [B, T, H, D]
        return self.o_proj(out.reshape(b, t, self.h * self.d)), (weights if output_attentions else None)


class SdpaAttention(_Projections):
    """torch's fused SDPA (is_causal where torch's top-left alignment is right) when the weights are
    not asked for; the weights written out when they are."""

    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        b, t, _ = x.shape
        q = self.q_proj(x).unflatten(-1, (self.h, self.d)).transpose(1, 2)
        k = self.k_proj(x).unflatten(-1, (self.kv, self.d)).transpose(1, 2)
        v = self.v_proj(x).unflatten(-1, (self.kv, self.d)).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = mm.apply_rotary_pos_emb(q, k, *position_embeddings)
        if past_key_values is not None:
            k, v = past_key_values.update(self.layer_idx, k, v)
        s = k.shape[2]
        p = self.p if self.training else 0.0
        weights = None
        if output_attentions:
            k, v = mm.repeat_kv(k, self.h // self.kv), mm.repeat_kv(v, self.h // self.kv)
            out, weights = mm.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=attn_mask is None,
                                                           return_weights=True)
        elif attn_mask is None and t == s:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p, enable_gqa=True)
        else:
            mask = attn_mask if attn_mask is not None else torch.ones(t, s, dtype=torch.bool).tril(s - t)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).flatten(2)), weights


STYLES = (EinsumAttention, LoopAttention, SdpaAttention)
