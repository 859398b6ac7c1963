"""Attention: softmax(Q K^T / sqrt(d)) V, explicit and fused (modules 01 to 05 and 08).

Two paths compute the same thing, and tests hold them equal:
- `scaled_dot_product_attention` below writes every step out (scores, mask, softmax, weights @ V)
  and can return the weights, which is where every heatmap in the course comes from;
- torch's fused `torch.nn.functional.scaled_dot_product_attention` (FlashAttention-style kernels
  on GPU, a fused C++ kernel on CPU) never hands the weights back but is faster and leaner.

`Attention` is MiniMind's attention layer: project to queries, keys and values, split into heads,
(optionally) RMS-normalise q and k per head, rotate them with RoPE, append to the KV cache, let
groups of query heads share key/value heads, attend, and project back.

A row whose keys are all masked (a pad query in a left-padded batch sees only pad keys) has no
meaningful softmax. Both paths return zero weights and a zero output for it, never NaN; torch's
fused kernel does the same.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention_inputs import check_attention_args, compute_dtype, default_scale
from .config import MiniMindConfig
from .gqa import repeat_kv
from .kv_cache import KVCache
from .masks import causal_mask
from .norm import RMSNorm
from .rope import apply_rotary_pos_emb


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    enable_gqa: bool = False,
    return_weights: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Attention written out, with torch's argument names. q: [B, H, T, D]; k: [B, H_kv, S, D];
    v: [B, H_kv, S, D_v], where D_v may differ from D (as in DeepSeek's MLA; torch allows it too).

    attn_mask: bool (True = may attend) or float (added to the scores), broadcastable to
    [B, H, T, S]. is_causal: hide the future, aligned to the bottom right (query i is the token at
    position S - T + i, so T <= S; torch's own `is_causal` aligns to the top left). It may be
    combined with attn_mask. enable_gqa: allow H_kv < H, each KV head serving H / H_kv query heads.
    float16 and bfloat16 inputs are computed in float32 and rounded back, as torch does on the CPU.
    Returns the output [B, H, T, D_v], and the weights [B, H, T, S] if asked. What it accepts and
    refuses: attention_inputs.py.
    """
    check_attention_args("scaled_dot_product_attention", q, k, v, attn_mask, is_causal, scale, dropout_p,
                         enable_gqa)
    return explicit_attention(q, k, v, attn_mask, is_causal, scale, dropout_p, return_weights)


def explicit_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, dropout_p=0.0, return_weights=False):
    """scaled_dot_product_attention on arguments already checked: what the `Attention` layer runs
    for every token (its inputs were checked once, by the model's forward)."""
    batch, heads, query_len, head_dim = q.shape
    key_len = k.shape[-2]
    input_dtype, dtype = q.dtype, compute_dtype(q.dtype)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    if k.shape[1] != heads:
        k, v = repeat_kv(k, heads // k.shape[1]), repeat_kv(v, heads // k.shape[1])  # [B, H, S, D]

    scores = (q @ k.transpose(-2, -1)) * default_scale(scale, head_dim)  # [B, H, T, S]: query-key match
    visible = _visibility(attn_mask, is_causal, query_len, key_len, q.device)
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        scores = scores + attn_mask.to(dtype)  # additive mask: 0 keeps, -inf hides (a large negative only dims)
    if visible is not None:
        # finfo.min rather than -inf: a row with nothing visible then softmaxes to a uniform row
        # (no NaN, also in the backward pass), which is zeroed just below.
        scores = scores.masked_fill(~visible, torch.finfo(dtype).min)
    weights = torch.softmax(scores, dim=-1)  # [B, H, T, S], each row sums to 1
    if visible is not None:
        weights = weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    output = weights @ v  # [B, H, T, D_v]: each query's weighted average of the values
    output, weights = output.to(input_dtype), weights.to(input_dtype)
    return (output, weights) if return_weights else output


def _visibility(attn_mask, is_causal, query_len, key_len, device):
    """The bool "may attend" mask implied by attn_mask and is_causal, or None if all visible."""
    visible = None
    if attn_mask is not None:
        # a bool mask hides a key with False, a float mask with -inf
        visible = attn_mask if attn_mask.dtype == torch.bool else ~torch.isneginf(attn_mask)
    if is_causal:
        causal = causal_mask(query_len, key_len, device=device)  # [T, S]
        visible = causal if visible is None else visible & causal
    return visible


def fused_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, dropout_p=0.0, enable_gqa=False):
    """torch's fused SDPA with the course's conventions: bottom-right causal alignment, and the same
    arguments and checks as `scaled_dot_product_attention`. q: [B, H, T, D]; k, v: [B, H_kv, S, D];
    attn_mask: bool, float or None."""
    check_attention_args("fused_attention", q, k, v, attn_mask, is_causal, scale, dropout_p, enable_gqa)
    return torch_fused_attention(q, k, v, attn_mask, is_causal, scale, dropout_p)


def torch_fused_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, dropout_p=0.0):
    """fused_attention on arguments already checked (what the `Attention` layer runs per token)."""
    query_len, key_len = q.shape[-2], k.shape[-2]
    enable_gqa = k.shape[1] != q.shape[1]
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        attn_mask = attn_mask.to(q.dtype)  # torch wants a float mask in the queries' dtype
    if is_causal and query_len == 1 and attn_mask is None:
        is_causal = False  # one new token after the cache: it may see every key
    elif is_causal and (query_len != key_len or attn_mask is not None):
        causal = causal_mask(query_len, key_len, device=q.device)  # bottom right, not torch's top left
        if attn_mask is None:
            attn_mask = causal
        elif attn_mask.dtype == torch.bool:
            attn_mask = attn_mask & causal
        else:
            attn_mask = attn_mask.masked_fill(~causal, -math.inf)
        is_causal = False
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, is_causal=is_causal, dropout_p=dropout_p,
        scale=None if scale is None else default_scale(scale, q.shape[-1]), enable_gqa=enable_gqa)


class Attention(nn.Module):
    """MiniMind's self-attention layer: MHA, GQA or MQA depending on `num_key_value_heads`."""

    def __init__(self, config: MiniMindConfig, layer_idx: int = 0):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.n_rep = self.num_heads // self.num_kv_heads  # query heads per KV head
        self.head_dim = config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)
        if config.qk_norm:  # MiniMind3 / Qwen3: keeps q . k from growing with the weights
            self.q_norm = RMSNorm(self.head_dim, eps=config.rms_norm_eps)
            self.k_norm = RMSNorm(self.head_dim, eps=config.rms_norm_eps)
        else:
            self.q_norm = self.k_norm = None
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)
        self.use_fused = config.flash_attn

    def forward(
        self,
        x: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        attn_mask: torch.Tensor | None = None,
        past_key_values: KVCache | None = None,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: [B, T, C]; position_embeddings: (cos, sin) for the T new positions; attn_mask: the
        whole bool mask [B, 1, T, S], causality included (see masks.combined_mask), or None for
        plain causal attention. Returns ([B, T, C], weights [B, H, T, S] or None); the weights
        come back when asked, which runs the explicit path for this call."""
        batch, seq_len, _ = x.shape
        # [B, T, C] -> [B, T, H, D] -> [B, H, T, D]: each head gets its own slice of the projection
        q = self.q_proj(x).view(batch, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if past_key_values is not None:
            k, v = past_key_values.update(self.layer_idx, k, v)  # [B, H_kv, S, D], S = cached + T

        dropout_p = self.dropout if self.training else 0.0
        is_causal = attn_mask is None
        weights = None
        if self.use_fused and not output_attentions:
            out = torch_fused_attention(q, k, v, attn_mask, is_causal=is_causal, dropout_p=dropout_p)
        else:
            out, weights = explicit_attention(q, k, v, attn_mask, is_causal=is_causal, dropout_p=dropout_p,
                                              return_weights=True)
        out = out.transpose(1, 2).reshape(batch, seq_len, self.num_heads * self.head_dim)  # [B, T, H*D]
        out = self.o_proj(out)
        return (self.resid_dropout(out) if self.training else out), weights  # identity in eval
