"""The references that the notebooks' exercise checks compare a learner's answer with.

They live here, not in the notebooks, because a check cell stays in the student copy (`make
student`): a reference written out there is an answer the learner can read one cell below the
exercise. Where `minimind_ref` computes the thing itself, the check uses it directly; these are
the rest. Each takes another route than the notebook's worked solution (a cumulative sum for a
matrix product, complex numbers for cos/sin, a brute-force mask for corner tests), so that a check
compares two independent computations. tests/kit/test_student_copies.py holds the copies to this.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import minimind_ref as mm
from minimind_ref.rope import rope_inverse_frequencies, yarn_inverse_frequencies
from minimind_ref.variants.flash_attention import flash_attention


# 01_attention_basics
def causal_average(x: torch.Tensor) -> torch.Tensor:
    """Row t is the mean of rows 0..t: a running sum divided by the count."""
    counts = torch.arange(1, x.shape[0] + 1, dtype=x.dtype).reshape(-1, *([1] * (x.dim() - 1)))
    return x.cumsum(dim=0) / counts


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """minimind_ref's attention on one unbatched head."""
    return mm.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None], is_causal=causal)[0, 0]


def importance_average(x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Row t: sum_j<=t exp(a_j) x_j / sum_j<=t exp(a_j), as two running sums (shifted by max(a))."""
    e = (a - a.max()).exp()
    return (e[:, None] * x).cumsum(dim=0) / e.cumsum(dim=0)[:, None]


def distance_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slope: float) -> torch.Tensor:
    """minimind_ref's attention with the distance penalty and the causal mask as one additive float
    mask (ALiBi's form, arXiv 2108.12409)."""
    back = torch.arange(q.shape[0])[:, None] - torch.arange(k.shape[0])[None, :]  # i - j
    bias = torch.where(back >= 0, -slope * back.to(q.dtype), torch.tensor(float("-inf"), dtype=q.dtype))
    return mm.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None], attn_mask=bias)[0, 0]


# 02_qkv
def qkv_heads(x, q_weight, k_weight, v_weight, num_heads, num_kv_heads):
    """Each weight split into its heads first, then one einsum per projection: [B, heads, T, D]."""
    head_dim = q_weight.shape[0] // num_heads

    def heads(weight, count):
        return torch.einsum("btc,hdc->bhtd", x, weight.view(count, head_dim, x.shape[-1]))
    return heads(q_weight, num_heads), heads(k_weight, num_kv_heads), heads(v_weight, num_kv_heads)


def cross_attention(x, memory, q_weight, k_weight, v_weight):
    """torch's SDPA on the projections (minimind_ref's needs values as wide as the keys)."""
    q, k, v = F.linear(x, q_weight), F.linear(memory, k_weight), F.linear(memory, v_weight)
    return F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None])[0, 0]


def cosine_lookup(queries, keys, values, sharpness):
    """torch's SDPA on unit-length queries and keys (F.normalize), with the sharpness as its scale."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    return F.scaled_dot_product_attention(q[None, None], k[None, None], values[None, None], scale=sharpness)[0, 0]


def pick_value(queries, keys, values):
    """Nearly hard attention: scores times 1e4, so the best key takes (almost) all the weight."""
    return F.scaled_dot_product_attention(queries[None, None], keys[None, None], values[None, None],
                                          scale=1e4)[0, 0]


# 03_multi_head
def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """[B, T, H*D] -> [B, H, T, D]: the features cut into H chunks, stacked on a new head axis."""
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, D] -> [B, T, H*D]: the heads laid side by side again."""
    return torch.cat(x.unbind(dim=1), dim=-1)


def head_contribution(layer, x, cos, sin, h):
    """The layer's own output with every head but h zeroed before o_proj (a forward pre-hook)."""
    def keep_one(module, inputs):
        kept = torch.zeros_like(inputs[0])
        rows = slice(h * layer.head_dim, (h + 1) * layer.head_dim)
        kept[..., rows] = inputs[0][..., rows]
        return (kept,)
    handle = layer.o_proj.register_forward_pre_hook(keep_one)
    try:
        return layer(x, (cos, sin))[0]
    finally:
        handle.remove()


# 04_gqa
def latent_scores(q_nope, w_uk, c_kv):
    """The decompressed route: every head's keys W_UK c_j built, then the dot products."""
    keys = torch.einsum("hdc,bsc->bhsd", w_uk, c_kv)  # [B, H, S, d_h]
    return q_nope @ keys.transpose(-2, -1)


# 05_masking
def causal_padding_mask(attention_mask: torch.Tensor, query_len: int) -> torch.Tensor:
    """minimind_ref's padding mask and causal mask, combined as booleans: [B, 1, T, S]."""
    return mm.padding_mask(attention_mask) & mm.causal_mask(query_len, attention_mask.shape[1])


def masked_softmax(scores: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """minimind_ref's attention weights with the scores as queries, identity keys and values and a
    scale of 1, so that q k^T is the scores themselves."""
    eye = torch.eye(scores.shape[-1])[None, None]
    _, weights = mm.scaled_dot_product_attention(scores[None, None], eye, eye, attn_mask=visible, scale=1.0,
                                                 return_weights=True)
    return weights[0, 0]


# 06_rope
def rotate_pairs(pairs: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Each pair as a complex number, multiplied by e^(i angle)."""
    z = torch.view_as_complex(pairs.contiguous()) * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(z)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """minimind_ref's RoPE on one unbatched head."""
    out, _ = mm.apply_rotary_pos_emb(x[None, None], x[None, None], cos, sin)
    return out[0, 0]


def yarn_scale(dim, base, factor, beta_fast, beta_slow, original_max):
    """minimind_ref's YaRN frequencies over its plain ones."""
    settings = {"factor": factor, "beta_fast": beta_fast, "beta_slow": beta_slow,
                "original_max_position_embeddings": original_max}
    return yarn_inverse_frequencies(dim, base, settings) / rope_inverse_frequencies(dim, base)


# 07_kv_cache
def write_into_cache(storage_k, storage_v, length, k, v):
    """What the cache holds afterwards, by concatenation (a copy: the exercise must not copy)."""
    keys = torch.cat([storage_k[:, :, :length], k], dim=2)
    values = torch.cat([storage_v[:, :, :length], v], dim=2)
    return keys, values, length + k.shape[2]


def rope_for_new_tokens(model, past_len, new_tokens):
    """The cos/sin rows of positions past_len .. past_len + new_tokens - 1, recomputed from the
    model's config for the whole prefix and the new tokens together."""
    config = model.config
    cos, sin = mm.precompute_freqs_cis(config.head_dim, past_len + new_tokens, config.rope_theta)
    return cos.narrow(0, past_len, new_tokens), sin.narrow(0, past_len, new_tokens)


# 08_flash
def online_softmax_step(m, l, acc, scores, values):
    """The running state and the tile merged as (output, log-sum-exp) pairs, FlashAttention's way
    of merging two halves, then written back as (m, l, acc); the worked solution rescales instead.
    The state before any tile, (-inf, 0, 0), has log-sum-exp -inf and weighs nothing."""
    seen = m + torch.log(l)                                  # log of the sum so far
    tile = torch.logsumexp(scores, dim=0)
    total = torch.logaddexp(seen, tile)
    out = acc * torch.exp(m - total) + torch.softmax(scores, dim=0) @ values * torch.exp(tile - total)
    m_new = torch.maximum(m, scores.max())
    l_new = torch.exp(total - m_new)
    return m_new, l_new, out * l_new


def merge(o1, lse1, o2, lse2, q, k, v):
    """The attention of q over both halves' keys at once: what merging the halves must give."""
    return flash_attention(q, k, v, return_lse=True)


def tile_kind(row_start, row_end, key_start, key_end, T, S):
    """The tile of the full causal mask, looked at whole."""
    sees = torch.ones(T, S, dtype=torch.bool).tril(S - T)[row_start:row_end, key_start:key_end]
    return "skip" if not sees.any() else "full" if sees.all() else "mask"


# 10_capstone (split_heads and merge_heads above serve it too)
def scaled_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q k^T / sqrt(D) for every query and key, as one einsum over the head dimension."""
    return torch.einsum("...td,...sd->...ts", q, k) * q.shape[-1] ** -0.5


def rope_heads(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """minimind_ref's RoPE on a [B, H, T, D] tensor (cos, sin: [T, D] or [B, T, D])."""
    return mm.apply_rotary_pos_emb(x, x, cos, sin)[0]


def attend_scores(scores: torch.Tensor, visible: torch.Tensor, v: torch.Tensor):
    """(output, weights) of given scores: minimind_ref's attention with the scores as the queries,
    the identity as the keys and scale 1, so that q k^T is the scores themselves."""
    eye = torch.eye(scores.shape[-1], dtype=scores.dtype).expand(*scores.shape[:2], -1, -1)
    return mm.scaled_dot_product_attention(scores, eye, v, attn_mask=visible, scale=1.0, return_weights=True)
