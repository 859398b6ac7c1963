"""The contract's inputs, and the ways a layer ignores them.

The model gives every attention layer what it needs: the RoPE angles of the new tokens' positions
(`position_embeddings`, computed once for all layers), the whole mask (`attn_mask`, causality and
padding included, or None for plain causal attention) and the cache (`past_key_values`, whose
`update` stores the new keys and values and returns them all). A layer that builds its own angles,
or applies causality again to the mask it is given, computes right numbers on the inputs it
imagines and wrong ones on the inputs it gets; the grader's first stage, whose angles are zero and
whose mask shows every key, catches both, where a learner would look for a mistake in the scores.

So when a stage fails, the grader also runs the reference on the inputs as such a layer reads
them (`Misread.reads`), and when the learner's results are those, it says which input was ignored
and what the contract gives. (A layer that ignores the cache is caught at its first cached call
by the cache itself, ladder._cache_grew; one that rotates in the wrong layout is the catalogue's
"RoPE on interleaved pairs".)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import minimind_ref as mm
from labkit.i18n import phrase

from .ladder import Call

CONTRACT_TEXT = phrase('modules/10_capstone/README.md, "The contract" (notebook 10, section 2)')


@dataclass(frozen=True)
class Misread:
    key: str
    title: str
    diagnosis: str  # what the layer did, and what the contract gives instead
    reads: Callable[[Call, mm.MiniMindConfig], Call]  # a call's inputs, as such a layer reads them


def _own_angles(call: Call, config: mm.MiniMindConfig) -> Call:
    """The angles a layer computes for itself: positions counted from the cache's length."""
    cos, sin = mm.precompute_freqs_cis(config.head_dim, config.max_position_embeddings, config.rope_theta)
    span = slice(call.first_position, call.first_position + call.x.shape[1])
    return dataclasses.replace(call, cos=cos[span], sin=sin[span])


def _causality_again(call: Call, config: mm.MiniMindConfig) -> Call:
    """The given mask with the causal mask (bottom-right) applied on top of it."""
    if call.attn_mask is None:
        return call
    length = call.x.shape[1]
    return dataclasses.replace(call, attn_mask=call.attn_mask & mm.causal_mask(length, call.first_position + length))


CONTRACT: tuple[Misread, ...] = (
    Misread("own_angles", phrase("RoPE angles of its own"),
            phrase("Your layer rotates q and k with angles it computes itself, not with the position_embeddings "
                   "(cos, sin) it is given: the model computes them once, for the positions the tokens really have "
                   "(stage 1 gives cos = 1 and sin = 0, no rotation at all; a padded batch gives each sequence its "
                   "own positions); rotate with the cos and sin you receive."), _own_angles),
    Misread("causality_again", phrase("causality applied again to the given mask"),
            phrase("Your layer hides keys that the attn_mask it is given shows: it builds a causal mask of its own, "
                   "or applies causality on top of attn_mask; the given mask is already the whole mask (causality "
                   "and padding included, and in stage 1 every key visible), so use it as it is and build the "
                   "causal mask only when attn_mask is None."), _causality_again),
)
