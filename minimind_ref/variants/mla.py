"""Multi-head latent attention (MLA): cache one small latent per token, not keys and values.

Not part of MiniMind: MiniMind shrinks its KV cache with grouped-query attention. MLA is DeepSeek's
other answer (DeepSeek-V2, arXiv 2405.04434, section 2.1; kept in DeepSeek-V3, arXiv 2412.19437),
and module 04 compares it with MHA, GQA and MQA.

Per token t and layer, with h_t the hidden state [C] (the paper's notation):

    c_t   = W_DKV h_t                  the latent, d_c numbers (then RMS-normalised)   CACHED
    k_R_t = RoPE_t(W_KR h_t)           one rotated key part of d_R numbers, shared by
                                       all heads                                       CACHED
    k_C_t,i = W_UK_i c_t               head i's key, d_h numbers ("nope": no position)
    v_C_t,i = W_UV_i c_t               head i's value, d_v numbers
    q_t,i = [q_C_t,i ; RoPE_t(q_R_t,i)]  head i's query: a nope part and a rotated part
    score(t, j, i) = (q_C_t,i . k_C_j,i + q_R_t,i . k_R_j) / sqrt(d_h + d_R)

So the cache holds d_c + d_R numbers per token and layer, whatever the number of heads, against
2 n_h d_h for multi-head attention and 2 n_g d_h for GQA with n_g groups.

Two ways to compute the same output, both here:
- naive (`attend_naive`): decompress the cached latents into every head's keys and values, then
  ordinary attention. Simple, but it rebuilds [B, H, S, d_h + d_v] numbers at every step.
- absorbed (`attend_absorbed`): q_C . (W_UK c) = (W_UK^T q_C) . c, so fold W_UK into the query
  and score the latents directly; and sum_j a_j W_UV c_j = W_UV (sum_j a_j c_j), so average the
  latents and apply W_UV after. Attention then runs over the cache as it is stored: one key
  "head" [c ; k_R] of d_c + d_R numbers and one value "head" c, shared by all query heads, which is
  multi-query attention on the latent. This is why only the latent needs caching.

Why the RoPE part is separate: if the whole key were rotated, k_j = R_j W_UK c_j, the score would be
q_t^T R_t^T R_j W_UK c_j = q_t^T R_(j-t) W_UK c_j: a matrix that depends on the distance sits
between the query and W_UK, so W_UK cannot be folded into the query once for all keys. The
decoupled layout rotates only the small shared k_R, and W_UK is never rotated.

Parameter names are those of transformers' `DeepseekV3Attention` (and `DeepseekV2Attention`), so a
state dict loads there with strict=True (tests/model/test_mla.py compares the outputs):

    q_proj               [n_h (d_h + d_R), C]   (without query compression, q_lora_rank=None)
    q_a_proj, q_a_layernorm, q_b_proj            (with it: C -> d_c' -> n_h (d_h + d_R))
    kv_a_proj_with_mqa   [d_c + d_R, C]         W_DKV and W_KR stacked
    kv_a_layernorm       [d_c]                  RMSNorm of the latent, before it is cached
    kv_b_proj            [n_h (d_h + d_v), d_c] per head: d_h rows of W_UK, then d_v rows of W_UV
    o_proj               [C, n_h d_v]

Left out: biases, dropout, padding masks and YaRN's softmax rescaling (DeepSeek's long-context
models multiply the scale by an `mscale`); attention here is causal, over one batch of sequences
that start together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch
from torch import nn

from .._checks import BOOL, POSITIVE, ConfigError, check_arguments, check_fields, integer, number
from ..attention import scaled_dot_product_attention
from ..kv_cache import DEFAULT_CAPACITY, CacheError
from ..norm import RMSNorm
from ..rope import apply_rotary_pos_emb, interleaved_to_half_permutation, precompute_freqs_cis


@dataclass(frozen=True)
class MLAConfig:
    """Sizes of an MLA layer, with transformers' DeepSeek field names (the paper's symbols in the comments).

    The defaults put MLA at MiniMind2-Small's attention sizes (hidden 512, 8 heads of 64), with the
    ratios DeepSeek-V2 chose: d_c = 4 d_h and d_R = d_h / 2. `rope_interleave`: the rotary part of
    q and k pairs neighbouring dimensions (0, 1), (2, 3), ... as DeepSeek's checkpoints do
    (transformers' DeepseekV3Config defaults to True); False pairs (i, i + d_R/2), the rotate-half
    layout of `minimind_ref.rope`.
    """

    hidden_size: int = 512                # C
    num_attention_heads: int = 8          # n_h
    kv_lora_rank: int = 256               # d_c: the cached latent
    qk_nope_head_dim: int = 64            # d_h: per-head key/query part without position
    qk_rope_head_dim: int = 32            # d_R: the rotary part (one shared key, a query per head)
    v_head_dim: int = 64                  # d_v
    q_lora_rank: int | None = None        # d_c': query compression, None for a plain q_proj
    num_hidden_layers: int = 1            # layers (only the cache needs it)
    max_position_embeddings: int = 4096
    rope_theta: float = 10000.0
    rope_interleave: bool = False
    rms_norm_eps: float = 1e-6            # transformers builds kv_a_layernorm with its default 1e-6

    def __post_init__(self) -> None:
        check_fields(self, MLA_FIELDS, "MLAConfig.")  # every field's type and range, in the table below
        if self.qk_rope_head_dim % 2:
            raise ConfigError(f"MLAConfig.qk_rope_head_dim ({self.qk_rope_head_dim}) must be even: RoPE rotates "
                              f"pairs of dimensions.")

    @property
    def qk_head_dim(self) -> int:
        """d_h + d_R: the width of a query and a key head, whose square root scales the scores."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    def cache_elements_per_token(self) -> int:
        """Numbers cached per token and layer: the latent and the shared rotary key, d_c + d_R."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def replace(self, **changes) -> MLAConfig:
        """A copy with some fields changed, validated again."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


MLA_FIELDS = {
    "hidden_size": integer(), "num_attention_heads": integer(), "kv_lora_rank": integer(),
    "qk_nope_head_dim": integer(), "qk_rope_head_dim": integer(), "v_head_dim": integer(),
    "q_lora_rank": integer(what="a positive integer (the compressed query size d_c')",
                           optional="no query compression: a plain q_proj"),
    "num_hidden_layers": integer(), "max_position_embeddings": integer(),
    "rope_theta": number(lambda v: v > 1, "a finite number greater than 1"), "rope_interleave": BOOL,
    "rms_norm_eps": POSITIVE,
}


# DeepSeek-V2's attention sizes, as its paper gives them (arXiv 2405.04434, section 3.1) and its
# released config.json holds them: 60 layers, hidden size 5120, n_h = 128 heads of d_h = 128 (values
# too), KV compression d_c = 512, query compression d_c' = 1536, decoupled rotary part d_R = 64. The
# MLA sizes are also the defaults of transformers' DeepseekV3Config (DeepSeek-V3 kept them; the tests
# compare). Its checkpoints store the rotary dimensions interleaved.
DEEPSEEK_V2 = MLAConfig(hidden_size=5120, num_attention_heads=128, kv_lora_rank=512, qk_nope_head_dim=128,
                        qk_rope_head_dim=64, v_head_dim=128, q_lora_rank=1536, num_hidden_layers=60,
                        rope_interleave=True)


class LatentCache:
    """MLA's cache: per layer and token, the latent c (d_c numbers) and the rotated shared key k_R
    (d_R numbers), side by side in one preallocated row [B, capacity, d_c + d_R] that doubles when
    full (as `KVCache` does, module 07). Nothing per head is stored."""

    def __init__(self, config: MLAConfig, batch_size: int, capacity: int | None = None):
        check_arguments("LatentCache(config, batch_size, capacity)", config, MLAConfig, CacheError,
                        batch_size=batch_size, capacity=capacity)
        self.config = config
        self.batch_size = int(batch_size)
        self.initial_capacity = min(int(capacity or DEFAULT_CAPACITY), config.max_position_embeddings)
        self.rows: list[torch.Tensor | None] = [None] * config.num_hidden_layers  # [B, capacity, d_c + d_R]
        self.lengths = [0] * config.num_hidden_layers

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.lengths[layer_idx]

    def __len__(self) -> int:
        return self.get_seq_length()

    def update(self, layer_idx: int, c_kv: torch.Tensor, k_rope: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append one layer's new latents c_kv [B, T, d_c] and rotated keys k_rope [B, 1, T, d_R];
        return everything cached so far, [B, S, d_c] and [B, 1, S, d_R] (views, no copy)."""
        d_c, d_r = self.config.kv_lora_rank, self.config.qk_rope_head_dim
        new = c_kv.shape[1] if c_kv.dim() == 3 else -1
        if tuple(c_kv.shape) != (self.batch_size, new, d_c) or tuple(k_rope.shape) != (self.batch_size, 1, new, d_r):
            raise CacheError(
                f"LatentCache.update expects c_kv [batch, new_tokens, d_c] and k_rope [batch, 1, new_tokens, d_R] "
                f"with batch {self.batch_size}, d_c {d_c}, d_R {d_r}; got {tuple(c_kv.shape)} and "
                f"{tuple(k_rope.shape)}. A cache belongs to one batch of sequences and one config.")
        start = self.lengths[layer_idx]
        end = start + new
        if end > self.config.max_position_embeddings:
            raise CacheError(
                f"the latent cache would hold {end} positions, past max_position_embeddings "
                f"({self.config.max_position_embeddings}).")
        row = self.rows[layer_idx]
        if row is None or end > row.shape[1]:
            capacity = self.initial_capacity if row is None else row.shape[1]
            while capacity < end:
                capacity *= 2
            grown = c_kv.new_empty(self.batch_size, min(capacity, self.config.max_position_embeddings), d_c + d_r)
            if row is not None:
                grown[:, :start] = row[:, :start]  # growing copies what was held (rarely: capacity doubles)
            self.rows[layer_idx] = row = grown
        row[:, start:end, :d_c] = c_kv
        row[:, start:end, d_c:] = k_rope[:, 0]
        self.lengths[layer_idx] = end
        return row[:, :end, :d_c], row[:, None, :end, d_c:]

    def nbytes(self) -> int:
        """Bytes of the cached positions: layers x B x length x (d_c + d_R) x bytes per number."""
        return sum(row.shape[0] * length * row.shape[2] * row.element_size()
                   for row, length in zip(self.rows, self.lengths) if row is not None)

    def allocated_nbytes(self) -> int:
        """Bytes the storage takes, spare capacity included."""
        return sum(row.nbytes for row in self.rows if row is not None)

    def __repr__(self) -> str:
        return (f"LatentCache(layers={len(self.rows)}, batch={self.batch_size}, d_c={self.config.kv_lora_rank}, "
                f"d_R={self.config.qk_rope_head_dim}, length={len(self)})")


def absorb_query(q_nope: torch.Tensor, w_uk: torch.Tensor) -> torch.Tensor:
    """Fold W_UK into the queries: q_latent = W_UK^T q_C per head, so that q_latent . c = q_C . (W_UK c).
    q_nope [B, H, T, d_h], w_uk [H, d_h, d_c] -> [B, H, T, d_c]."""
    return q_nope @ w_uk  # [B, H, T, d_h] @ [H, d_h, d_c] (broadcast over B)


def expand_output(o_latent: torch.Tensor, w_uv: torch.Tensor) -> torch.Tensor:
    """Apply W_UV after attention: sum_j a_j W_UV c_j = W_UV (sum_j a_j c_j).
    o_latent [B, H, T, d_c], w_uv [H, d_v, d_c] -> [B, H, T, d_v]."""
    return o_latent @ w_uv.transpose(-2, -1)  # [B, H, T, d_c] @ [H, d_c, d_v]


def rotate_from(q: torch.Tensor, k: torch.Tensor, start: int, rope_theta: float,
                interleave: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE for tokens at positions start .. start + T - 1: q [B, H, T, d], k [B, H_k, T, d], d even.

    interleave=True: the input pairs neighbouring dimensions (0, 1), (2, 3), ... as DeepSeek's
    checkpoints do. Gathering the even dimensions, then the odd ones, turns pair i into (i, i + d/2),
    and the rotate-half RoPE of `minimind_ref.rope` is then the same rotation. Queries and keys are
    reordered alike, so their dot products are unchanged; transformers' DeepSeek-V3
    `apply_rotary_pos_emb_interleave` returns this same reordered layout.
    """
    dim = q.shape[-1]
    if interleave:
        perm = interleaved_to_half_permutation(dim).to(q.device)
        q, k = q[..., perm], k[..., perm]
    cos, sin = precompute_freqs_cis(dim, start + q.shape[2], rope_theta)  # [start + T, d]
    return apply_rotary_pos_emb(q, k, cos[start:].to(q.dtype), sin[start:].to(q.dtype))


class MultiHeadLatentAttention(nn.Module):
    """An MLA self-attention layer (causal) with a `LatentCache`; `absorbed` picks the computation."""

    def __init__(self, config: MLAConfig, layer_idx: int = 0):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        c, h = config.hidden_size, config.num_attention_heads
        d_c, d_r = config.kv_lora_rank, config.qk_rope_head_dim
        d_nope, d_v = config.qk_nope_head_dim, config.v_head_dim
        if config.q_lora_rank is None:
            self.q_proj = nn.Linear(c, h * (d_nope + d_r), bias=False)
        else:  # DeepSeek-V2's query compression: C -> d_c' -> heads (saves activations in training)
            self.q_a_proj = nn.Linear(c, config.q_lora_rank, bias=False)
            self.q_a_layernorm = RMSNorm(config.q_lora_rank, eps=config.rms_norm_eps)
            self.q_b_proj = nn.Linear(config.q_lora_rank, h * (d_nope + d_r), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(c, d_c + d_r, bias=False)  # W_DKV and W_KR
        self.kv_a_layernorm = RMSNorm(d_c, eps=config.rms_norm_eps)
        self.kv_b_proj = nn.Linear(d_c, h * (d_nope + d_v), bias=False)  # W_UK and W_UV
        self.o_proj = nn.Linear(h * d_v, c, bias=False)
        self.scale = 1.0 / math.sqrt(config.qk_head_dim)  # the full query width, in both computations

    # -- the pieces ------------------------------------------------------------------------------
    def queries(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, T, C] -> q_nope [B, H, T, d_h] and q_rope [B, H, T, d_R] (not rotated yet)."""
        cfg = self.config
        batch, seq_len, _ = x.shape
        q = self.q_proj(x) if cfg.q_lora_rank is None else self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(batch, seq_len, cfg.num_attention_heads, cfg.qk_head_dim).transpose(1, 2)  # [B, H, T, d_h + d_R]
        return q.split([cfg.qk_nope_head_dim, cfg.qk_rope_head_dim], dim=-1)

    def latents(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, T, C] -> the latent c_kv [B, T, d_c] (normalised) and k_rope [B, 1, T, d_R] (not rotated)."""
        widths = [self.config.kv_lora_rank, self.config.qk_rope_head_dim]
        c_kv, k_rope = self.kv_a_proj_with_mqa(x).split(widths, dim=-1)
        return self.kv_a_layernorm(c_kv), k_rope[:, None]  # k_rope: one "head", shared by all query heads

    def up_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W_UK [H, d_h, d_c] and W_UV [H, d_v, d_c], views of kv_b_proj.weight (per head: d_h key rows,
        then d_v value rows)."""
        cfg = self.config
        w = self.kv_b_proj.weight.view(cfg.num_attention_heads, cfg.qk_nope_head_dim + cfg.v_head_dim, cfg.kv_lora_rank)
        return w.split([cfg.qk_nope_head_dim, cfg.v_head_dim], dim=1)

    def rotate(self, q_rope: torch.Tensor, k_rope: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE at positions start .. start + T - 1 on q_rope [B, H, T, d_R] and k_rope [B, 1, T, d_R]."""
        cfg = self.config
        end = start + q_rope.shape[2]
        if end > cfg.max_position_embeddings:
            raise ValueError(f"the sequence reaches position {end - 1}, past max_position_embeddings "
                             f"({cfg.max_position_embeddings}).")
        return rotate_from(q_rope, k_rope, start, cfg.rope_theta, cfg.rope_interleave)

    # -- the two computations --------------------------------------------------------------------
    def attend_naive(self, q_nope, q_rope, c_kv, k_rope):
        """Decompress, then attend. q_nope [B, H, T, d_h], q_rope [B, H, T, d_R] (rotated), c_kv
        [B, S, d_c], k_rope [B, 1, S, d_R] (rotated) -> [B, H, T, d_v]."""
        cfg = self.config
        batch, seq = c_kv.shape[:2]
        kv = self.kv_b_proj(c_kv).view(batch, seq, cfg.num_attention_heads, -1).transpose(1, 2)  # [B, H, S, d_h + d_v]
        k_nope, v = kv.split([cfg.qk_nope_head_dim, cfg.v_head_dim], dim=-1)  # [B, H, S, d_h], [B, H, S, d_v]
        k = torch.cat([k_nope, k_rope.expand(-1, cfg.num_attention_heads, -1, -1)], dim=-1)  # [B, H, S, d_h + d_R]
        q = torch.cat([q_nope, q_rope], dim=-1)  # [B, H, T, d_h + d_R]
        return scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)  # [B, H, T, d_v]

    def attend_absorbed(self, q_nope, q_rope, c_kv, k_rope):
        """Attend over the cached latents as they are; same arguments and result as attend_naive."""
        w_uk, w_uv = self.up_weights()
        q = torch.cat([absorb_query(q_nope, w_uk), q_rope], dim=-1)  # [B, H, T, d_c + d_R]
        k = torch.cat([c_kv[:, None], k_rope], dim=-1)  # [B, 1, S, d_c + d_R]: one key head for all
        v = c_kv[:, None]  # [B, 1, S, d_c]: the latent is also the (one) value head
        # [B, H, T, d_c]
        o_latent = scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale, enable_gqa=True)
        return expand_output(o_latent, w_uv)  # [B, H, T, d_v]

    def forward(self, x: torch.Tensor, cache: LatentCache | None = None, absorbed: bool = False) -> torch.Tensor:
        """x [B, T, C] -> [B, T, C]. With `cache`, the new tokens follow the ones it holds (their
        positions continue from its length) and their latents are appended to it."""
        check_mla_inputs(self.config, x, cache, absorbed)
        batch, seq_len, _ = x.shape
        q_nope, q_rope = self.queries(x)
        c_kv, k_rope = self.latents(x)
        start = 0 if cache is None else cache.get_seq_length(self.layer_idx)
        q_rope, k_rope = self.rotate(q_rope, k_rope, start)
        if cache is not None:
            c_kv, k_rope = cache.update(self.layer_idx, c_kv, k_rope)  # [B, S, d_c], [B, 1, S, d_R]
        attend = self.attend_absorbed if absorbed else self.attend_naive
        out = attend(q_nope, q_rope, c_kv, k_rope)  # [B, H, T, d_v]
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq_len, -1))  # [B, T, C]


def check_mla_inputs(config: MLAConfig, x, cache, absorbed) -> None:
    """MultiHeadLatentAttention.forward's: hidden states [B, T, C] and this layer's own kind of cache."""
    if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point:
        raise TypeError(f"MultiHeadLatentAttention expects hidden states (floating point) [batch, seq, "
                        f"hidden_size], got {x.dtype if isinstance(x, torch.Tensor) else type(x).__name__}: "
                        f"token ids go through an embedding first.")
    if x.dim() != 3 or x.shape[-1] != config.hidden_size or 0 in x.shape:
        raise ValueError(f"MultiHeadLatentAttention expects x as [batch, seq, hidden_size="
                         f"{config.hidden_size}] with at least one token, got shape {tuple(x.shape)}.")
    if cache is not None and not isinstance(cache, LatentCache):
        raise TypeError(f"MultiHeadLatentAttention's cache must be a LatentCache (it stores latents, not keys "
                        f"and values), got {type(cache).__name__}.")
    if cache is not None and (cache.config.kv_lora_rank, cache.config.qk_rope_head_dim) != \
            (config.kv_lora_rank, config.qk_rope_head_dim):
        raise CacheError("this LatentCache was built for another MLAConfig (its d_c or d_R differs).")
    if not isinstance(absorbed, bool):
        raise TypeError(f"MultiHeadLatentAttention: absorbed must be True or False, got {absorbed!r}.")
