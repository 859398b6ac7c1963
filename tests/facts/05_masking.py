"""Module 05's facts: float16's edges for the three fill values, torch's top-left `is_causal`,
upstream MiniMind2's two paths on a chunk after a cache (labkit.upstream), the word-repeat data of
exp3 and its two loss floors, and the experiments' defaults. The float16 padding lesson's facts are
in 05_masking_float16_padding.py.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F

import minimind_ref as mm
from facts import fact, once, sources
from labkit import upstream

FILL_CELL = "35486cda"  # the fill table: each dtype and fill over random rows
PADDED_CELL = "869b881e"  # padded decoding of two prompts


def default_of(name: str, flag: str):
    """The default value of a module-05 script's command-line flag."""
    return vars(sources.defaults("05", name))[flag.lstrip("-").replace("-", "_")]


def exp3():
    return sources.experiment("05", "exp3_training_without_mask")


# ------------------------------------------------------------------------------ fill values


@fact
def float16_largest():
    return int(torch.finfo(torch.float16).max)


@fact
def minus_1e9_is_minus_inf_in_float16():
    return bool(torch.isneginf(torch.tensor(-1e9).to(torch.float16)))


@fact
def float16_finfo_min_overflow_score():
    """The score closest to 0 for which finfo.min + score is -inf in float16, over every float16."""
    scores = torch.arange(-(2 ** 15), 0, dtype=torch.int32).to(torch.int16).view(torch.float16)
    scores = scores[torch.isfinite(scores)]
    lowest = torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16)
    return scores[torch.isneginf(lowest + scores)].max().item()


@fact
def masked_fill_float16_overflow_message():
    """torch's own message when masked_fill gets -1e9 on a float16 tensor."""
    try:
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
    except RuntimeError as error:
        return "`" + re.search(r"value cannot be converted to type \S+ without overflow", str(error)).group() + "`"
    raise AssertionError("masked_fill accepted -1e9 in float16")


@fact
def masking_exp1_fill_rows_default():
    return default_of("exp1_fill_values", "--rows")


@fact
def notebook05_fill_rows():
    """The random rows of the notebook's fill table, read off its code."""
    return sources.read("05", FILL_CELL, r"torch\.randn\((\d+), 6\)")


# ------------------------------------------------------------------------- causal alignment


@fact
def is_causal_single_new_token_sees_key():
    """torch's is_causal=True with one query over 8 keys: the only key with weight is key 0 (top left)."""
    weights = F.scaled_dot_product_attention(torch.zeros(1, 1, 1, 8), torch.randn(1, 1, 8, 8),
                                             torch.eye(8)[None, None], is_causal=True)[0, 0, 0]
    seen = (weights > 0).nonzero().flatten().tolist()
    assert len(seen) == 1, f"one new token sees keys {seen}"
    return seen[0]


@fact
def is_causal_newest_of_two_after_four_sees():
    """(newest position, keys it sees): two new tokens after four cached ones under is_causal=True."""
    keys = torch.randn(1, 1, 6, 6)
    seen = F.scaled_dot_product_attention(torch.zeros(1, 1, 2, 6), keys, torch.eye(6)[None, None],
                                          is_causal=True)[0, 0, -1]
    return (keys.shape[-2] - 1, *(seen > 0).nonzero().flatten().tolist())


@fact(magnitude=True, spread=0.5,
      why="'agree to about 1e-7', an order of magnitude: 0.91e-7 here, 1.09e-7 with torch's portable kernels, a "
          "relative spread of 0.2 (python -m facts.spread; last-bit noise cannot build torch's CausalBias), and the "
          "power of ten holds within 0.5")
def bottom_right_paths_agree_with_float64():
    """The largest error of exp2's bottom-right ways against the float64 truth, as exp2 measures it
    with its defaults (seed 0)."""
    exp2 = sources.experiment("05", "exp2_causal_alignment")
    args = sources.defaults("05", "exp2_causal_alignment")
    with sources.seeded(0):
        errors = exp2.every_way_of_attending(args.keys, args.head_dim, sorted({1, 2, args.keys // 2, args.keys}))
    return max(error for (name, _), error in errors.items() if name != "torch SDPA, is_causal=True")


@once
def upstream_verdicts() -> dict[tuple[str, int, int, bool], str]:
    """(model, past, new, flash) -> right / wrong / error, for a prompt, a single step and a chunk."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=generator) for _ in range(3))
    full = mm.scaled_dot_product_attention(q, k, v, is_causal=True)
    verdicts = {}
    for model, path in (("minimind2", upstream.minimind2_attention), ("minimind3", upstream.minimind3_attention)):
        for past, new in ((0, 6), (5, 1), (4, 2)):
            for flash in (True, False):
                try:
                    out = path(q[:, :, past:past + new], k[:, :, :past + new], v[:, :, :past + new],
                               cached=past > 0, flash=flash)
                except RuntimeError:
                    verdicts[model, past, new, flash] = "error"
                    continue
                right = torch.allclose(out, full[:, :, past:past + new], atol=1e-5)
                verdicts[model, past, new, flash] = "right" if right else "wrong"
    return verdicts


@fact
def minimind2_sdpa_chunk_after_cache_wrong():
    return upstream_verdicts()["minimind2", 4, 2, True] == "wrong"


@fact
def minimind2_explicit_chunk_after_cache_errors():
    return upstream_verdicts()["minimind2", 4, 2, False] == "error"


@fact
def minimind2_right_on_prompt_and_single_steps():
    """MiniMind2 agrees on a prompt and a single step; MiniMind-3 (the fix) is right at every step."""
    verdicts = upstream_verdicts()
    return (all(verdicts["minimind2", past, new, flash] == "right" for past, new in ((0, 6), (5, 1))
                for flash in (True, False))
            and all(v == "right" for (model, *_), v in verdicts.items() if model == "minimind3"))


# ---------------------------------------------------------------------- training without mask


@fact
def masking_exp3_data():
    """(tokens, vocabulary, random targets, targets) of exp3's word-repeat data."""
    e = exp3()
    return (e.LENGTH, e.VOCAB, e.LENGTH - 1 - e.WORD, e.LENGTH - 1)


@fact
def masking_exp3_notebook_data():
    """(tokens, vocabulary, word length, gap) as the notebook describes the data."""
    e = exp3()
    return (e.LENGTH, e.VOCAB, e.WORD, e.GAP)


@fact
def masking_exp3_random_of_targets():
    """(vocabulary, random targets, targets): `ln V` for R of the T targets."""
    e = exp3()
    return (e.VOCAB, e.LENGTH - 1 - e.WORD, e.LENGTH - 1)


@fact
def masking_exp3_honest_floor():
    e = exp3()
    random_targets, targets = e.LENGTH - 1 - e.WORD, e.LENGTH - 1
    assert math.isclose(e.honest_floor(), random_targets / targets * math.log(e.VOCAB))
    return e.honest_floor()


@fact
def masking_exp3_honest_floor_formula():
    """`R/T ln V = floor`."""
    e = exp3()
    return (e.LENGTH - 1 - e.WORD, e.LENGTH - 1, e.VOCAB, masking_exp3_honest_floor())


@fact
def masking_exp3_cheating_floor():
    return exp3().cheating_floor()


@fact
def masking_exp3_cheating_floor_formula():
    """`ln V / T = floor`."""
    e = exp3()
    return (e.VOCAB, e.LENGTH - 1, e.cheating_floor())


@fact
def masking_exp3_look_back():
    """The causal model's pattern: target t + 1 is token t + 1 - SECOND, key t - (SECOND - 1)."""
    return exp3().SECOND - 1


@fact
def masking_exp3_decode_prefix():
    """The tokens given before decoding: the word and the noise, up to the second copy."""
    e = exp3()
    assert e.SECOND == e.WORD + e.GAP
    return e.SECOND


@fact
def masking_exp3_word_length():
    return exp3().WORD


# ------------------------------------------------------------------------------ padding side


@fact
def masking_exp4_prompts_default():
    return default_of("exp4_padding_side", "--prompts")


@fact
def masking_exp4_prompt_lengths():
    """Prompts stop inside the word's second copy: SECOND to SECOND + WORD - 1 tokens."""
    e = exp3()
    return (e.SECOND, e.SECOND + e.WORD - 1)


@fact
def notebook05_padded_prompt_lengths():
    """The two prompts of the notebook's padded-decoding demo, read off its code."""
    return sources.read("05", PADDED_CELL, r"held_out\[0, :(\d+)\], held_out\[1, :(\d+)\]")
