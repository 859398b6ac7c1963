"""Module 05's facts about upstream MiniMind's float16 padding bug (issue 25), computed on
labkit.upstream's restatement of upstream's padding path and on upstream's model-file history
(tests/facts/upstream.py). Running upstream's own file at each commit is a measurement the guide
reports and cites; it needs upstream's code, which the tests do not download. (A file of its own
beside the module's others: the facts loader reads every file here.)"""

from __future__ import annotations

import torch

import minimind_ref as mm
from facts import fact
from facts.upstream import MINIMIND3_RELEASE, last_before
from labkit import upstream

LEFT = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])  # a left-padded batch: two pads before "a dog"


def qkv(dtype):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(2, 2, 4, 8, generator=generator).to(dtype) for _ in range(3)]


def nan_rows(out):
    return torch.isnan(out).any(-1).any(1)  # [B, T]


@fact
def padding_in_place_first():
    assert upstream.IN_PLACE_PADDING_COMMIT == MINIMIND3_RELEASE
    return upstream.IN_PLACE_PADDING_COMMIT


@fact
def padding_out_of_place_last():
    return last_before(upstream.IN_PLACE_PADDING_COMMIT)


@fact
def padding_out_of_place_promotes():
    """float16 + float32 is float32, where -1e9 is finite; MiniMind2's path stays finite in float16."""
    out = upstream.minimind2_attention(*qkv(torch.float16), cached=False, flash=True, attention_mask=LEFT)
    promoted = torch.zeros(1, dtype=torch.float16) + torch.full((1,), upstream.UPSTREAM_FILL)
    return promoted.dtype == torch.float32 and bool(torch.isfinite(promoted).all()) and not nan_rows(out).any()


@fact
def padding_in_place_nan_float16():
    """In place: float16 kept, -1e9 is -inf, the pad rows (no visible key) NaN; a second layer makes
    every row of that sequence NaN, and float32 stays finite."""
    stays_half = torch.zeros(1, dtype=torch.float16)
    stays_half += torch.full((1,), upstream.UPSTREAM_FILL)
    first = upstream.minimind3_attention(*qkv(torch.float16), cached=False, flash=True, attention_mask=LEFT)
    empty = ~mm.combined_mask(LEFT, 4, 4)[:, 0].any(-1)  # [B, T]: queries that see no key
    second = upstream.minimind3_attention(first, first, first, cached=False, flash=True, attention_mask=LEFT)
    in_float32 = upstream.minimind3_attention(*qkv(torch.float32), cached=False, flash=True, attention_mask=LEFT)
    return (stays_half.dtype == torch.float16 and bool(torch.isinf(stays_half).all())
            and torch.equal(nan_rows(first), empty) and bool(nan_rows(second)[1].all())
            and not nan_rows(second)[0].any() and not nan_rows(in_float32).any())


@fact
def padding_bfloat16_no_overflow():
    out = upstream.minimind3_attention(*qkv(torch.bfloat16), cached=False, flash=True, attention_mask=LEFT)
    return torch.finfo(torch.bfloat16).max > 1e9 and not nan_rows(out).any()
