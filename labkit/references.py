"""The references that the notebooks' exercise checks compare a learner's answer with.

They live here, not in the notebooks, because a check cell stays in the learner's copy (made in
workspace/ by `make lab`): a reference written out there is an answer the learner can read one
cell below the exercise. Where `minimind_ref` computes the thing itself, the check uses it directly; these are
the rest. Each takes another route than the notebook's worked solution (a cumulative sum for a
matrix product, complex numbers for cos/sin, a brute-force mask for corner tests), so that a check
compares two independent computations. tests/kit/test_student_copies.py holds the copies to this.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import minimind_ref as mm
from minimind_ref.rope import interleaved_to_half_permutation, rope_inverse_frequencies, yarn_inverse_frequencies


# 01_attention_basics
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


# 03_multi_head
def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """[B, T, H*D] -> [B, H, T, D]: the features cut into H chunks, stacked on a new head axis."""
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, D] -> [B, T, H*D]: the heads laid side by side again."""
    return torch.cat(x.unbind(dim=1), dim=-1)


def attention_without_rope(layer, x: torch.Tensor) -> torch.Tensor:
    """minimind_ref.Attention's own causal output with RoPE switched off (cos = 1, sin = 0)."""
    positions = (torch.ones(x.shape[1], layer.head_dim), torch.zeros(x.shape[1], layer.head_dim))
    return layer(x, positions)[0]


def fused_qkv_heads(x: torch.Tensor, in_proj_weight: torch.Tensor, num_heads: int):
    """q, k, v as [B, H, T, D] from one stacked weight [3*H*D, C]: three separate projections,
    each split by minimind_ref's own Attention.split_heads layout (chunks of the features)."""
    w_q, w_k, w_v = in_proj_weight.chunk(3, dim=0)
    return tuple(split_heads(x @ w.T, num_heads) for w in (w_q, w_k, w_v))


def head_contributions(attended: torch.Tensor, o_weight: torch.Tensor) -> torch.Tensor:
    """[B, H, T, C]: o_proj applied to one head at a time, every other head's features zeroed."""
    heads = attended.shape[1]
    merged = merge_heads(attended)  # [B, T, H*D]
    width = merged.shape[-1] // heads
    parts = []
    for h in range(heads):
        kept = torch.zeros_like(merged)
        kept[..., h * width:(h + 1) * width] = merged[..., h * width:(h + 1) * width]
        parts.append(kept @ o_weight.T)
    return torch.stack(parts, dim=1)


# 04_gqa
def grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention without a mask where q has H heads and k, v have H_kv: torch's own SDPA."""
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def cache_bytes_from_config(config: dict, tokens: int, batch: int) -> int:
    """KV-cache bytes of `batch` sequences of `tokens` tokens for a transformers-style config.json,
    measured: minimind_ref's KVCache filled with keys and values of the shape the config implies.
    transformers' defaults: no num_key_value_heads means one per query head (MHA); no head_dim
    means hidden_size / num_attention_heads; no torch_dtype means float32."""
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    dtype = getattr(torch, config.get("torch_dtype") or "float32")
    layers = config["num_hidden_layers"]
    shape = mm.MiniMindConfig(hidden_size=kv_heads * head_dim, num_attention_heads=kv_heads,
                              num_key_value_heads=kv_heads, head_dim=head_dim, num_hidden_layers=layers,
                              vocab_size=16, max_position_embeddings=max(tokens, 1))
    cache = mm.KVCache(shape, batch_size=batch, capacity=tokens)
    keys = torch.zeros(batch, kv_heads, tokens, head_dim, dtype=dtype)
    for layer in range(layers):
        cache.update(layer, keys, keys)
    return cache.nbytes()


def keys_of_pooled_model(model, tokens, groups: int) -> torch.Tensor:
    """Layer 0's cached keys [B, groups, S, D] of `model` turned into GQA with `groups` key/value
    heads: each group's k_proj and v_proj rows averaged (by a loop over the groups here), the model
    rebuilt from its state dict and run on `tokens`."""
    config = model.config
    rep, d = config.num_key_value_heads // groups, config.head_dim
    state = {}
    for name, weight in model.state_dict().items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            weight = torch.cat([weight[g * rep * d:(g + 1) * rep * d].view(rep, d, -1).mean(0) for g in range(groups)])
        state[name] = weight
    pooled = mm.MiniMindForCausalLM(config.replace(num_key_value_heads=groups))
    pooled.load_state_dict(state)
    with torch.no_grad():
        return pooled.eval()(tokens, use_cache=True).past_key_values.layer(0)[0]


def latent_values(weights: torch.Tensor, c_kv: torch.Tensor, w_uv: torch.Tensor) -> torch.Tensor:
    """The decompressed route: every head's values W_UV c_j built, then the weighted average."""
    values = torch.einsum("hvc,bsc->bhsv", w_uv, c_kv)  # [B, H, S, d_v]
    return weights @ values


# 05_masking
def masked_softmax(scores: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """minimind_ref's attention weights with the scores as queries, identity keys and values and a
    scale of 1, so that q k^T is the scores themselves."""
    eye = torch.eye(scores.shape[-1])[None, None]
    _, weights = mm.scaled_dot_product_attention(scores[None, None], eye, eye, attn_mask=visible, scale=1.0,
                                                 return_weights=True)
    return weights[0, 0]


def attend_new_tokens(q_new: torch.Tensor, k_all: torch.Tensor, v_all: torch.Tensor) -> torch.Tensor:
    """minimind_ref's attention, whose is_causal is aligned bottom-right (the new tokens are the last)."""
    return mm.scaled_dot_product_attention(q_new, k_all, v_all, is_causal=True)


def _mask_from_rule(query_len: int, key_len: int, sees) -> torch.Tensor:
    """A [T, S] bool mask filled one entry at a time from sees(position, key), query i sitting at
    absolute position S - T + i: a brute-force route, unlike the tensor ops a learner writes."""
    mask = torch.zeros(query_len, key_len, dtype=torch.bool)
    for i in range(query_len):
        for j in range(key_len):
            mask[i, j] = bool(sees(key_len - query_len + i, j))
    return mask


def prefix_lm_mask(length: int, prefix_len: int) -> torch.Tensor:
    """A key is visible when it is in the prompt prefix, or not in the query's future."""
    return _mask_from_rule(length, length, lambda position, key: key < prefix_len or key <= position)


def packed_causal_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    """Causal, and only within the query's own document."""
    ids = doc_ids.tolist()
    return _mask_from_rule(len(ids), len(ids), lambda position, key: key <= position and ids[key] == ids[position])


def window_with_sinks(query_len: int, key_len: int, window: int, sinks: int) -> torch.Tensor:
    """Causal; a key is visible when it is among the `window` most recent or the first `sinks`."""
    return _mask_from_rule(query_len, key_len,
                           lambda position, key: key <= position and (key > position - window or key < sinks))


# 06_rope
def _as_complex_halves(x: torch.Tensor) -> torch.Tensor:
    """Rotate-half pairs (i, i + D/2) as complex numbers x_i + j x_{i+D/2}: [..., D/2]."""
    half = x.shape[-1] // 2
    return torch.complex(x[..., :half].double(), x[..., half:].double())


def _from_complex_halves(z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.cat([z.real, z.imag], dim=-1).to(dtype)


def unrope(x_rot: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Each rotate-half pair divided by e^(j angle), the angle read off the tables (float64)."""
    half = x_rot.shape[-1] // 2
    turn = torch.complex(cos[..., :half].double(), sin[..., :half].double())
    return _from_complex_halves(_as_complex_halves(x_rot) / turn, x_rot.dtype)


def rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The paper's layout through minimind_ref: permute the neighbour pairs into halves, rotate,
    permute back."""
    perm = interleaved_to_half_permutation(x.shape[-1])
    rotated, _ = mm.apply_rotary_pos_emb(x[..., perm][None, None], x[..., perm][None, None], cos, sin)
    return rotated[0, 0][..., torch.argsort(perm)]


def partial_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """minimind_ref's RoPE on the first R = cos.shape[-1] dimensions; the rest passed through."""
    rotary = cos.shape[-1]
    rotated, _ = mm.apply_rotary_pos_emb(x[..., :rotary][None, None], x[..., :rotary][None, None], cos, sin)
    return torch.cat([rotated[0, 0], x[..., rotary:]], dim=-1)


def rope_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor,
                   sin: torch.Tensor) -> torch.Tensor:
    """MiniMind's attention core: RoPE on the queries and keys, causal attention over the values."""
    q_rot, k_rot = mm.apply_rotary_pos_emb(q, k, cos, sin)
    return mm.scaled_dot_product_attention(q_rot, k_rot, v, is_causal=True)


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


def longest_context(config, dtype, budget_bytes, batch=1):
    """The most tokens per sequence whose cache fits in budget_bytes, measured: the bytes per token
    of a real KVCache of this config holding one token, not the formula."""
    cache = mm.KVCache(config, batch_size=1, capacity=1)
    one = torch.zeros(1, config.num_key_value_heads, 1, config.head_dim, dtype=dtype)
    for layer in range(config.num_hidden_layers):
        cache.update(layer, one, one)
    return budget_bytes // (cache.nbytes() * batch)


@torch.no_grad()
def new_entries_bytes(function, storage_k, storage_v, length, k, v) -> int:
    """What writing the new tokens must cost, and no more: their keys' and values' bytes."""
    return k.nbytes + v.nbytes


def prefix_length(model, prefix, suffixes, new_tokens) -> int:
    """How many positions the prefix's cache holds after continuing from it: the prefix's own."""
    return prefix.shape[1]


def longest_suffix(model, prefix, suffixes, new_tokens) -> int:
    """The most tokens one forward needs once the prefix is cached: the longest suffix."""
    return max(suffix.shape[1] for suffix in suffixes)


def continue_after_prefix(model, prefix, suffixes, new_tokens):
    """Each suffix's greedy continuation after the shared prefix, with no cache at all."""
    out = []
    for suffix in suffixes:
        ids = torch.cat([prefix, suffix], dim=1)
        out.append(model.generate(ids, new_tokens, use_cache=False)[:, ids.shape[1]:])
    return out


# 08_flash
def masked_row_attention(scores, values, visible, tile):
    """One row's attention over its visible keys, by minimind_ref's explicit attention (all at
    once, no tiles; a row with no visible key gives 0, minimind_ref's convention)."""
    out = attend_scores(scores[None, None, None], visible[None, None, None], values[None, None])[0]
    return out[0, 0, 0]


def tile_kind(row_start, row_end, key_start, key_end, T, S):
    """The tile of the full causal mask, looked at whole."""
    sees = torch.ones(T, S, dtype=torch.bool).tril(S - T)[row_start:row_end, key_start:key_end]
    return "skip" if not sees.any() else "full" if sees.all() else "mask"


# 09_reading_heads
def tiny_head_roles(model) -> dict:
    """The heads of a trained tiny MiniMind by role, measured by their scores over the repeated-span
    prompts of labkit.tiny_heads (16 prompts, spans of 24): the best previous-token head, every head
    with an induction score above 0.5, and the head that parks most of its weight on BOS."""
    from labkit import tiny_heads

    scores = tiny_heads.measure_head_scores(model)
    return {"previous": scores.previous_token_head, "induction": scores.induction_heads(0.5),
            "sink": scores.sink_head}


def tiny_head_role(model, role: str):
    """One role's heads from tiny_head_roles: "previous", "induction" or "sink"."""
    return tiny_head_roles(model)[role]


def induction_score_by_tokens(weights: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The induction score of any prompt, read from its tokens: for each query whose token occurred
    before, the weight on every key that directly follows an earlier occurrence, summed; averaged
    over those queries. weights [..., T, T], ids [T] -> [...]. Built as a mask of (query, key)
    pairs, where the notebook's worked answer loops over the queries."""
    T = ids.shape[-1]
    # [i, j]: key j comes before query i and holds the same token
    earlier_same = (ids[:, None] == ids[None, :]) & torch.ones(T, T, dtype=torch.bool).tril(-1)
    follows = torch.zeros(T, T, dtype=torch.bool)
    follows[:, 1:] = earlier_same[:, :-1]  # [i, j + 1]: the key just after an earlier occurrence
    repeats = earlier_same.any(-1)  # the queries whose token occurred before
    return (weights * follows).sum(-1)[..., repeats].mean(-1)


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
