"""The catalogue of known mistakes: each one planted in MiniMind's attention by one small class.

Every entry is data (a key, a title, a one-sentence diagnosis, the module that teaches the step,
the stage of the ladder that should first catch it) plus `plant`, a subclass of
`minimind_ref.Attention` (whose forward is one method per step) that overrides exactly one step
(two where a step moves: q/k norm after RoPE), or wraps `forward` where a mistake needs what no
step is given (the angles, for the values; the cache, for the positions). The grader runs
the planted classes on the stage a learner fails and names those whose output the learner's
matches; the guide of module 10 shows this table, and the tests plant every entry and require
the grader to name it, at its stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import minimind_ref as mm
from labkit.i18n import phrase, tr
from minimind_ref import Attention


@dataclass(frozen=True)
class Mistake:
    key: str
    title: str
    diagnosis: str  # one sentence: what is wrong and what is right
    module: str  # the module that teaches the step, NN_slug
    stage: str  # the key of the stage that should first catch it
    plant: type  # a minimind_ref.Attention with exactly this mistake

    @property
    def teaches(self) -> str:
        return tr("module {number} (modules/{module}/README.md)", number=self.module[:2], module=self.module)


class Planted(Attention):
    """minimind_ref's Attention that always runs its steps one by one. With `flash_attn` on, the
    reference hands scores, mask and softmax to torch's fused kernel whenever the weights are not
    asked for (the whole-model stage's logits and generation), which would skip the very step a
    mistake overrides."""

    def __init__(self, config: mm.MiniMindConfig, layer_idx: int = 0):
        super().__init__(config, layer_idx)
        self.use_fused = False


# -- scores and softmax ---------------------------------------------------------------------------

class UnscaledScores(Planted):
    def scores(self, q, k):
        return q @ k.transpose(-2, -1)


class ScaledByD(Planted):
    def scores(self, q, k):
        return (q @ k.transpose(-2, -1)) / self.head_dim


class KeysNotTransposed(Planted):
    def scores(self, q, k):
        return (q @ k) / self.head_dim ** 0.5


class SoftmaxOverQueries(Planted):
    def softmax(self, scores, visible):
        weights = torch.softmax(scores.float(), dim=-2).type_as(scores)
        return weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)


# -- masks ----------------------------------------------------------------------------------------

class TopLeftCausal(Planted):
    def visible(self, attn_mask, query_len, key_len, device):
        if attn_mask is not None:
            return attn_mask
        return torch.ones(query_len, key_len, dtype=torch.bool, device=device).tril()  # torch's is_causal


class NoMaskAfterCache(Planted):
    def visible(self, attn_mask, query_len, key_len, device):
        if attn_mask is None and query_len < key_len:  # "after a cache every key is in the past"
            return torch.ones(query_len, key_len, dtype=torch.bool, device=device)
        return super().visible(attn_mask, query_len, key_len, device)


class MaskAfterSoftmax(Planted):
    def mask(self, scores, visible):
        return scores

    def softmax(self, scores, visible):
        return torch.softmax(scores.float(), dim=-1).type_as(scores).masked_fill(~visible, 0.0)


class MinusBillionFill(Planted):
    def mask(self, scores, visible):
        return scores.masked_fill(~visible, -1e9)


class MinusInfinityFill(Planted):
    def mask(self, scores, visible):
        return scores.masked_fill(~visible, float("-inf"))

    def softmax(self, scores, visible):
        return torch.softmax(scores.float(), dim=-1).type_as(scores)


# -- positions ------------------------------------------------------------------------------------

class RopeOnValues(Planted):
    """rotate(q, k, cos, sin) never sees the values: they are rotated as they are split off, by the
    angles forward was given."""

    def forward(self, x, position_embeddings, *args, **kwargs):
        self.angles = position_embeddings
        return super().forward(x, position_embeddings, *args, **kwargs)

    def split_heads(self, x):
        q, k, v = super().split_heads(x)
        return q, k, mm.apply_rotary_pos_emb(v, v, *self.angles)[0]


def rotate_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on neighbour pairs (x0, x1), (x2, x3), ... with the angles meant for pairs (i, i + D/2)."""
    if cos.dim() == 3:
        cos, sin = cos[:, None], sin[:, None]
    half = x.shape[-1] // 2
    c, s = cos[..., :half], sin[..., :half]
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2)


class InterleavedRope(Planted):
    def rotate(self, q, k, cos, sin):
        return rotate_interleaved(q, cos, sin), rotate_interleaved(k, cos, sin)


class PositionsFromZero(Planted):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        if past_key_values is not None and past_key_values.get_seq_length(self.layer_idx) > 0:
            # the angles of positions 0 .. T-1, as if the new tokens started the sequence
            position_embeddings = mm.precompute_freqs_cis(self.head_dim, x.shape[1], self.config.rope_theta)
        return super().forward(x, position_embeddings, attn_mask, past_key_values, output_attentions)


class QKNormSkipped(Planted):
    def normalise(self, q, k):
        return q, k


class QKNormAfterRope(Planted):
    def normalise(self, q, k):
        return q, k

    def rotate(self, q, k, cos, sin):
        q, k = super().rotate(q, k, cos, sin)
        if self.q_norm is None:
            return q, k
        return self.q_norm(q), self.k_norm(k)


# -- heads ----------------------------------------------------------------------------------------

class RepeatTiled(Planted):
    def share_kv(self, kv):
        return kv.repeat(1, self.n_rep, 1, 1)


class MergeWithoutTranspose(Planted):
    def merge_heads(self, out):
        batch, heads, seq_len, head_dim = out.shape
        return out.reshape(batch, seq_len, heads * head_dim)


class ViewNonContiguous(Planted):
    def merge_heads(self, out):
        batch, heads, seq_len, head_dim = out.shape
        return out.transpose(1, 2).view(batch, seq_len, heads * head_dim)


# -- the cache ------------------------------------------------------------------------------------

class CacheOnHeadsAxis(Planted):
    def append_to_cache(self, cache, k, v):
        if cache.get_seq_length(self.layer_idx) == 0:
            return cache.update(self.layer_idx, k, v)
        old_k, old_v = cache.layer(self.layer_idx)
        cache.update(self.layer_idx, k, v)  # keeps the cache's count of positions right
        return torch.cat([old_k, k], dim=1), torch.cat([old_v, v], dim=1)


class OneCacheSlot(Planted):
    def append_to_cache(self, cache, k, v):
        return cache.update(0, k, v)


# -- the backward pass: each forward below is right, its gradients are not -----------------------

class DetachedKeys(Planted):
    def scores(self, q, k):
        return (q @ k.detach().transpose(-2, -1)) / self.head_dim ** 0.5


class SoftmaxSumDetached(Planted):
    def softmax(self, scores, visible):
        shifted = torch.exp(scores.float() - scores.float().amax(dim=-1, keepdim=True))
        weights = (shifted / shifted.sum(dim=-1, keepdim=True).detach()).type_as(scores)
        return weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)


class ScaledUnderNoGrad(Planted):
    def scores(self, q, k):
        scores = q @ k.transpose(-2, -1)
        with torch.no_grad():  # "the scale is a constant, autograd need not see it"
            scores /= self.head_dim ** 0.5
        return scores


class SoftmaxZeroedInPlace(Planted):
    def softmax(self, scores, visible):
        weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
        return weights.masked_fill_(~visible.any(dim=-1, keepdim=True), 0.0)


CATALOGUE: tuple[Mistake, ...] = (
    Mistake("unscaled", phrase("scores not scaled"),
            phrase("The scores q·k are not divided by sqrt(d): the softmax comes out too sharp; divide by "
                   "sqrt(head_dim)."),
            "01_attention_basics", "one_head", UnscaledScores),
    Mistake("scaled_by_d", phrase("scores scaled by d"),
            phrase("The scores are divided by d instead of sqrt(d): the softmax comes out too flat; divide by "
                   "sqrt(head_dim)."),
            "01_attention_basics", "one_head", ScaledByD),
    Mistake("keys_not_transposed", phrase("keys not transposed"),
            phrase("q is multiplied by k itself, not by k transposed: the shapes only line up by accident; use q @ "
                   "k.transpose(-2, -1)."),
            "01_attention_basics", "one_head", KeysNotTransposed),
    Mistake("softmax_over_queries", phrase("softmax over the wrong axis"),
            phrase("The softmax normalises over the queries (dim=-2) instead of over the keys (dim=-1): each query's "
                   "weights must sum to 1."),
            "01_attention_basics", "one_head", SoftmaxOverQueries),
    Mistake("view_non_contiguous", phrase("view on a non-contiguous tensor"),
            phrase(".view after .transpose fails because the transposed tensor is not contiguous: use .reshape (or "
                   ".contiguous().view)."),
            "03_multi_head", "all_heads", ViewNonContiguous),
    Mistake("merge_without_transpose", phrase("heads merged without transposing back"),
            phrase("[B, H, T, D] is reshaped to [B, T, H*D] without moving the heads axis back next to D first, which "
                   "mixes tokens with heads: transpose(1, 2) before the reshape."),
            "03_multi_head", "all_heads", MergeWithoutTranspose),
    Mistake("repeat_tiled", phrase("repeat_kv in the wrong order"),
            phrase("The key/value heads are tiled (0, 1, 0, 1) with repeat where each must serve a block of "
                   "consecutive query heads (0, 0, 1, 1): use repeat_interleave, or minimind_ref's repeat_kv."),
            "04_gqa", "grouped_kv", RepeatTiled),
    Mistake("rope_on_values", phrase("RoPE applied to values"),
            phrase("The values are rotated too: RoPE belongs on queries and keys only, so that position changes who "
                   "attends to whom, not what is carried."),
            "06_rope", "rope", RopeOnValues),
    Mistake("rope_interleaved", phrase("RoPE on interleaved pairs"),
            phrase("Neighbouring dimensions (2i, 2i+1) are rotated together, but MiniMind's angles are laid out for "
                   "rotate-half pairs (i, i + D/2): use rotate_half."),
            "06_rope", "rope", InterleavedRope),
    Mistake("mask_after_softmax", phrase("mask applied after the softmax"),
            phrase("The mask zeroes weights after the softmax, so each row no longer sums to 1: hide the keys in the "
                   "scores, before the softmax."),
            "05_masking", "causal", MaskAfterSoftmax),
    Mistake("minus_inf_fill", phrase("-inf fill leaves NaN rows"),
            phrase("Hidden keys are filled with -inf and a query that sees no key at all (a pad token) gets a NaN "
                   "row, which spreads to every token in the next layer: fill with finfo.min and zero such rows."),
            "05_masking", "padded", MinusInfinityFill),
    Mistake("minus_billion_fp16", phrase("-1e9 filled in float16"),
            phrase("-1e9 does not fit in float16 (its largest magnitude is 65504), so masked_fill fails: fill with "
                   "torch.finfo(scores.dtype).min."),
            "05_masking", "padded", MinusBillionFill),
    Mistake("top_left_causal", phrase("causal mask aligned top-left"),
            phrase("With fewer queries than keys the causal mask must be aligned bottom-right (query i sits at "
                   "position S - T + i), not top-left as torch's is_causal: use causal_mask(T, S)."),
            "05_masking", "prefill_decode", TopLeftCausal),
    Mistake("positions_from_zero", phrase("positions restart at 0 after a cache"),
            phrase("The new tokens are rotated as if they started the sequence at position 0 instead of continuing "
                   "after the cached tokens: their angles must start at the cache's length."),
            "07_kv_cache", "prefill_decode", PositionsFromZero),
    Mistake("cache_on_heads_axis", phrase("cache appended on the wrong axis"),
            phrase("The new keys and values are concatenated on the heads axis (dim 1) instead of the positions axis "
                   "(dim 2 of [B, H_kv, S, D])."),
            "07_kv_cache", "prefill_decode", CacheOnHeadsAxis),
    Mistake("no_mask_after_cache", phrase("no causal mask after a cache"),
            phrase("Every cached and new key is left visible, which is right for one new token but lets a step of "
                   "several tokens see its own future: keep the causal mask, aligned bottom-right."),
            "07_kv_cache", "multi_token_step", NoMaskAfterCache),
    Mistake("qk_norm_skipped", phrase("q/k norm not applied"),
            phrase("The config asks for q/k norm (MiniMind3) and the layer has q_norm and k_norm, but never applies "
                   "them: normalise each head's q and k before RoPE."),
            "02_qkv", "qk_norm", QKNormSkipped),
    Mistake("qk_norm_after_rope", phrase("q/k norm after RoPE"),
            phrase("q and k are normalised after RoPE instead of before: the norm's per-dimension gains do not "
                   "commute with the rotation."),
            "02_qkv", "qk_norm", QKNormAfterRope),
    Mistake("one_cache_slot", phrase("every layer writes cache slot 0"),
            phrase("The layer passes 0 instead of its own layer_idx to past_key_values.update, so all layers pile "
                   "their keys into one slot: each layer passes self.layer_idx."),
            "07_kv_cache", "whole_model", OneCacheSlot),
    Mistake("detached_keys", phrase("keys detached from the graph"),
            phrase("The keys are detached before the scores (k.detach()), which leaves the forward unchanged but cuts "
                   "every gradient through them, so k_proj and k_norm never learn: detach nothing inside a layer that "
                   "is trained."),
            "10_capstone", "backward", DetachedKeys),
    Mistake("softmax_sum_detached", phrase("softmax normaliser detached"),
            phrase("A softmax written by hand divides by a detached row sum, which gives the right weights but drops "
                   "the sum's share of their gradient, so q and k get wrong gradients: use torch.softmax, or keep the "
                   "sum in the graph."),
            "10_capstone", "backward", SoftmaxSumDetached),
    Mistake("scaled_under_no_grad", phrase("scale applied in place under no_grad"),
            phrase("The scores are divided by sqrt(d) in place inside torch.no_grad(), which autograd does not "
                   "record, so the forward is right and the gradients of q and k are sqrt(d) times too large: scale "
                   "out of place, with autograd on."),
            "10_capstone", "backward", ScaledUnderNoGrad),
    Mistake("softmax_zeroed_in_place", phrase("softmax output changed in place"),
            phrase("Empty rows are zeroed with masked_fill_ on the softmax's own output, which its backward needs, so "
                   "the forward is right and the backward raises: use the out-of-place masked_fill."),
            "10_capstone", "backward", SoftmaxZeroedInPlace),
)

BY_KEY = {mistake.key: mistake for mistake in CATALOGUE}
