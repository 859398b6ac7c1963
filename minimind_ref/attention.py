"""Attention: softmax(Q K^T / sqrt(d)) V, the MiniMind layer and the two functions (modules 01-05, 10).

`Attention` is MiniMind's attention layer, written as the steps a learner writes, one short method
each, read top to bottom in `forward`: split into heads, normalise q and k (MiniMind3), rotate them
with RoPE, append them to the KV cache, share key/value heads, score, mask, softmax, merge the heads
back. Module 10's grader plants each known mistake by overriding one step (labkit/grader/mistakes.py).

It attends by those steps, which hand back the weights (every heatmap in the course comes from them),
when they are asked for or `flash_attn=False`; else by `fused_attention`, torch's fused kernel (one
C++ kernel on CPU, FlashAttention-style on GPU), MiniMind's default, which never makes the weights.
Tests hold the two equal, and the functions of tensors `scaled_dot_product_attention` (written out)
and `fused_attention` to torch's. A row whose keys are all masked (a pad query in a left-padded
batch) gets zero weights and a zero output on every path, never NaN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import Door, check_arguments, check_attention_args, check_attention_layer
from .config import MiniMindConfig
from .gqa import repeat_kv
from .kv_cache import KVCache
from .masks import causal_mask
from .norm import RMSNorm
from .rope import apply_rotary_pos_emb


class Attention(nn.Module):
    """MiniMind's self-attention layer: MHA, GQA or MQA depending on `num_key_value_heads`. Called on
    its own, it checks its inputs at its door, a forward pre-hook, as the model does."""

    def __init__(self, config: MiniMindConfig, layer_idx: int = 0):
        super().__init__()
        check_arguments("Attention(config, layer_idx)", config, MiniMindConfig, layer_idx=layer_idx)
        self.config = config
        self.layer_idx = int(layer_idx)  # which slot of the KV cache is this layer's
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.n_rep = self.num_heads // self.num_kv_heads  # query heads per KV head
        self.head_dim = config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)
        # MiniMind3 / Qwen3 (qk_norm): keeps q . k from growing with the weights
        self.q_norm = RMSNorm(self.head_dim, eps=config.rms_norm_eps) if config.qk_norm else None
        self.k_norm = RMSNorm(self.head_dim, eps=config.rms_norm_eps) if config.qk_norm else None
        self.dropout = config.dropout  # in training only: of the weights, and of the output
        self.use_fused = config.flash_attn  # torch's fused kernel when the weights are not asked for
        self.door = self.register_forward_pre_hook(Door(check_attention_layer), with_kwargs=True)  # a block removes it

    def forward(self, x: torch.Tensor, position_embeddings: tuple[torch.Tensor, torch.Tensor],
                attn_mask: torch.Tensor | None = None, past_key_values: KVCache | None = None,
                output_attentions: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: [B, T, C]; position_embeddings: (cos, sin) for the T new positions; attn_mask: the
        whole bool mask [B, 1, T, S], causality included (masks.combined_mask), or None for plain
        causal attention. Returns ([B, T, C], the weights [B, H, T, S] when asked, else None)."""
        q, k, v = self.split_heads(x)  # [B, H, T, D], [B, H_kv, T, D], [B, H_kv, T, D]
        if self.q_norm is not None:
            q, k = self.normalise(q, k)
        q, k = self.rotate(q, k, *position_embeddings)
        if past_key_values is not None:
            k, v = self.append_to_cache(past_key_values, k, v)  # [B, H_kv, S, D], S = cached + T
        dropout = self.dropout if self.training else 0.0
        if self.use_fused and not output_attentions:  # torch's kernel: every step below in one
            out, weights = fused_attention(q, k, v, attn_mask, attn_mask is None, dropout_p=dropout,
                                           enable_gqa=True), None
        else:
            k, v = self.share_kv(k), self.share_kv(v)  # [B, H, S, D]
            visible = self.visible(attn_mask, q.shape[2], k.shape[2], x.device)  # bool, [.., T, S]
            weights = self.softmax(self.mask(self.scores(q, k), visible), visible)  # [B, H, T, S]
            out = torch.dropout(weights, dropout, self.training) @ v  # [B, H, T, D]: weighted sums of values
        out = self.o_proj(self.merge_heads(out))  # [B, T, C]
        return torch.dropout(out, self.dropout, self.training), weights

    # -- the steps ---------------------------------------------------------------------------
    def split_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Project, then [B, T, heads * D] -> [B, heads, T, D]: each head gets its own slice."""
        batch, seq_len, _ = x.shape
        q = self.q_proj(x).view(batch, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
        return q, k, v

    def normalise(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """MiniMind3 (qk_norm): RMSNorm over each head's D dimensions, before RoPE."""
        return self.q_norm(q), self.k_norm(k)

    def rotate(self, q, k, cos, sin):
        """RoPE on queries and keys (rotate-half pairs); the values are never rotated."""
        return apply_rotary_pos_emb(q, k, cos, sin)

    def append_to_cache(self, cache: KVCache, k, v):
        """The new keys and values go after the cached ones, along the positions axis."""
        return cache.update(self.layer_idx, k, v)

    def share_kv(self, kv: torch.Tensor) -> torch.Tensor:
        """Each key/value head serves a block of n_rep consecutive query heads (module 04)."""
        return repeat_kv(kv, self.n_rep)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """q k^T / sqrt(D): how well each query matches each key, [B, H, T, S]."""
        return (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))

    def visible(self, attn_mask, query_len: int, key_len: int, device) -> torch.Tensor:
        """The given bool mask (causality included), or the causal mask aligned bottom-right."""
        if attn_mask is not None:
            return attn_mask
        return causal_mask(query_len, key_len, device)

    def mask(self, scores: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """Hidden keys get the lowest finite score (not -inf: a row that hides every key then
        softmaxes to a uniform row, no NaN, also in the backward pass)."""
        return scores.masked_fill(~visible, torch.finfo(scores.dtype).min)

    def softmax(self, scores: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """Softmax over the keys, in float32 at least; a row with no visible key becomes zeros."""
        weights = torch.softmax(scores.float(), dim=-1).type_as(scores)  # each row sums to 1
        return weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)

    def merge_heads(self, out: torch.Tensor) -> torch.Tensor:
        """[B, H, T, D] -> [B, T, H * D]: transpose back, then join the heads."""
        batch, heads, seq_len, head_dim = out.shape
        return out.transpose(1, 2).reshape(batch, seq_len, heads * head_dim)


# -- the same attention as functions of tensors ---------------------------------------------------

def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 attn_mask: torch.Tensor | None = None, is_causal: bool = False,
                                 scale: float | None = None, dropout_p: float = 0.0, enable_gqa: bool = False,
                                 return_weights: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Attention written out, with torch's argument names. q: [B, H, T, D]; k: [B, H_kv, S, D];
    v: [B, H_kv, S, D_v], where D_v may differ from D (as in DeepSeek's MLA; torch allows it too).

    attn_mask: bool (True = may attend) or float (added to the scores), broadcastable to
    [B, H, T, S]. is_causal: hide the future, aligned to the bottom right (query i is the token at
    position S - T + i, so T <= S; torch's own `is_causal` aligns to the top left). It may be
    combined with attn_mask. enable_gqa: allow H_kv < H, each KV head serving H / H_kv query heads.
    float16 and bfloat16 inputs are computed in float32 and rounded back, as torch does on the CPU.
    Returns the output [B, H, T, D_v], and the weights [B, H, T, S] if asked.
    """
    check_attention_args("scaled_dot_product_attention", q, k, v, attn_mask, is_causal, scale, dropout_p,
                         enable_gqa)
    input_dtype, dtype = q.dtype, torch.promote_types(q.dtype, torch.float32)  # half: computed in float32
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    heads, key_len = q.shape[1], k.shape[2]
    if k.shape[1] != heads:  # enable_gqa: each key/value head serves a group of query heads
        k, v = repeat_kv(k, heads // k.shape[1]), repeat_kv(v, heads // k.shape[1])
    scores = (q @ k.transpose(-2, -1)) * _scale(scale, q.shape[-1])  # [B, H, T, S]
    visible = None
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        scores = scores + attn_mask.to(dtype)  # additive: 0 keeps, -inf hides (a large negative only dims)
        visible = ~torch.isneginf(attn_mask)
    elif attn_mask is not None:
        visible = attn_mask
    if is_causal:
        causal = causal_mask(q.shape[2], key_len, q.device)
        visible = causal if visible is None else visible & causal
    if visible is not None:
        scores = scores.masked_fill(~visible, torch.finfo(dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if visible is not None:
        weights = weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)
    weights = F.dropout(weights, p=dropout_p) if dropout_p else weights
    output = (weights @ v).to(input_dtype)  # [B, H, T, D_v]
    return (output, weights.to(input_dtype)) if return_weights else output


def fused_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, dropout_p=0.0, enable_gqa=False):
    """torch's fused SDPA with the course's conventions: bottom-right causal alignment, and the same
    arguments and checks as `scaled_dot_product_attention`. q: [B, H, T, D]; k, v: [B, H_kv, S, D];
    attn_mask: bool, float or None. torch aligns `is_causal` to the top left, so a causal mask with
    fewer queries than keys, combined with attn_mask or with a scale of 0 or less (torch's causal
    kernel gives NaN there), is given as a mask instead."""
    check_attention_args("fused_attention", q, k, v, attn_mask, is_causal, scale, dropout_p, enable_gqa)
    query_len, key_len = q.shape[-2], k.shape[-2]
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        attn_mask = attn_mask.to(q.dtype)  # torch wants a float mask in the queries' dtype
    if is_causal and query_len == 1 and attn_mask is None:
        is_causal = False  # one new token after the cache: it may see every key
    elif is_causal and (query_len != key_len or attn_mask is not None or (scale is not None and scale <= 0)):
        causal = causal_mask(query_len, key_len, q.device)  # bottom right
        if attn_mask is None:
            attn_mask = causal
        elif attn_mask.dtype == torch.bool:
            attn_mask = attn_mask & causal
        else:
            attn_mask = attn_mask.masked_fill(~causal, -math.inf)
        is_causal = False
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, is_causal=bool(is_causal), dropout_p=dropout_p,
        scale=None if scale is None else _scale(scale, q.shape[-1]), enable_gqa=k.shape[1] != q.shape[1])


def _scale(scale: float | None, head_dim: int) -> float:
    """1/sqrt(head_dim) unless given. A head_dim of 0 makes every score 0 whatever the scale."""
    return float(scale) if scale is not None else 1.0 / math.sqrt(head_dim) if head_dim else 1.0
