"""Behaviours the glossary's glosses state (docs/glossary.json, rendered into docs/glossary.md and
its Chinese twin) and notebook 00 repeats, each computed on torch, minimind_ref or labkit (issue 35,
corrections 1, 3, 4, 7).

Each was a wrong gloss once: `view` "needs a contiguous layout", a fully masked row where "MiniMind
gives zeros", long-range decay of the score, NTK-by-parts "after NTK-aware base scaling".
"""

from __future__ import annotations

import torch

import minimind_ref as mm
from facts import fact
from labkit import upstream
from labkit.rope_paper import rope_decay_bound
from minimind_ref.rope import precompute_freqs_cis, rope_inverse_frequencies, yarn_inverse_frequencies, yarn_ramp


@fact
def view_needs_compatible_strides():
    """A transposed (not contiguous) tensor: `view` splits a dimension or adds a size-1 one over the
    same memory, and refuses to merge the two swapped dimensions into one."""
    x = torch.arange(6).view(2, 3).t()  # [3, 2], strides (1, 3)
    split, added = x.view(3, 2, 1), x.view(3, 1, 2)
    shares = split.data_ptr() == added.data_ptr() == x.data_ptr()
    try:
        x.view(6)
    except RuntimeError:
        flattened = False
    else:
        flattened = True
    return not x.is_contiguous() and shares and torch.equal(split[..., 0], x) and not flattened


def _left_padded(dtype: torch.dtype):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 4, 8, generator=generator).to(dtype) for _ in range(3))
    return q, k, v, torch.tensor([[0, 0, 1, 1]])  # two pads, then two tokens


@fact
def fully_masked_row_outputs():
    """A query that sees no key: zeros from minimind_ref; from upstream's padding path (-1e9 added),
    an even row over the pads it sees in float32, NaN in float16 where the add is in place."""
    q, k, v, mask = _left_padded(torch.float32)
    visible = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    visible[..., 2:, :] = torch.tril(torch.ones(4, 4, dtype=torch.bool))[2:]  # rows 0 and 1 see nothing
    ours = mm.scaled_dot_product_attention(q, k, v, attn_mask=visible)
    zeros = bool((ours[..., :2, :] == 0).all()) and bool((ours[..., 2:, :] != 0).any())
    out32 = upstream.minimind3_attention(q, k, v, cached=False, flash=True, attention_mask=mask)
    even = torch.allclose(out32[0, 0, 1], v[0, 0, :2].mean(0), atol=1e-6)  # pad query 1 sees pads 0 and 1
    out16 = upstream.minimind3_attention(*(t.half() for t in (q, k, v)), cached=False, flash=True, attention_mask=mask)
    return zeros and even and bool(torch.isnan(out16[0, 0, :2]).all())


@fact
def long_range_decay_is_the_bounds():
    """RoFormer's bound falls with distance (MiniMind2-Small's heads, base 1e6), yet the score of a
    fixed query and key at a distance of thousands exceeds its score at distance 1."""
    d, base, far = mm.MiniMindConfig().head_dim, mm.MiniMindConfig().rope_theta, 8192
    bound = rope_decay_bound(torch.arange(far), d, base)
    falls = bound[far // 2:].mean() < bound[:16].mean()
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 1, 1, d, generator=generator)
    cos, sin = precompute_freqs_cis(d, far, base)
    rotated_q, _ = mm.apply_rotary_pos_emb(q.expand(1, 1, far, d), q.expand(1, 1, far, d), cos, sin)
    scores = (rotated_q[0, 0] @ k[0, 0, 0]).abs()  # query at position p, key at 0: distance p
    return bool(falls) and bool(scores[1000:].max() > scores[1])


@fact
def ntk_by_parts_keeps_the_base():
    """MiniMind's YaRN frequencies: the kept pairs equal plain RoPE's at the same base, the divided
    ones are plain RoPE's over the factor; a changed base would move every pair but the first."""
    config = mm.MiniMindConfig(inference_rope_scaling=True)
    scaling, d, base = config.rope_scaling, config.head_dim, config.rope_theta
    ramp, plain = yarn_ramp(d, base, scaling).double(), rope_inverse_frequencies(d, base).double()
    yarn = yarn_inverse_frequencies(d, base, scaling).double()
    kept, divided = ramp == 0, ramp == 1
    return (bool(kept.any() and divided.any())
            and torch.allclose(yarn[kept], plain[kept], rtol=1e-6)
            and torch.allclose(yarn[divided], plain[divided] / scaling["factor"], rtol=1e-6))
