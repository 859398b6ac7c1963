"""Module 05's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from experiment_scripts import load_experiment

import minimind_ref as mm
from minimind_ref.masks import sliding_window_mask


def _keys_seen_by_torch_is_causal(key_len: int = 8) -> int:
    """Measured: q = 0 spreads the weight evenly over the visible keys, v = identity returns it."""
    q = torch.zeros(1, 1, 1, key_len)
    k = torch.randn(1, 1, key_len, key_len, generator=torch.Generator().manual_seed(0))
    v = torch.eye(key_len)[None, None]
    weights = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0, 0, 0]
    return int((weights > 0).sum())


def _empty_rows(attention_mask=(0, 0, 0, 1, 1)) -> int:
    mask = mm.combined_mask(torch.tensor([attention_mask]), len(attention_mask), len(attention_mask))
    return int((~mask[0, 0].any(dim=-1)).sum())


def _finite_fill_weight(keys: int = 4) -> float:
    scores = torch.randn(keys, generator=torch.Generator().manual_seed(0))
    hidden = torch.ones(keys, dtype=torch.bool)
    weights = torch.softmax(scores.masked_fill(hidden, torch.finfo(torch.float32).min), dim=-1)
    assert torch.allclose(weights, weights[0].expand(keys)), "an all-hidden row is spread evenly"
    return weights[0].item()


def _float16_overflow_score() -> float:
    """The score closest to 0 at which finfo.min + score is -inf in float16, over every float16."""
    patterns = torch.arange(-(2 ** 15), 0, dtype=torch.int32).to(torch.int16)  # sign bit set: negatives
    scores = patterns.view(torch.float16)
    scores = scores[torch.isfinite(scores)]
    overflows = torch.isneginf(torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16) + scores)
    return scores[overflows].max().item()


def _unmasked_floor() -> float:
    """The floor as exp3_training_without_mask computes it from its own sizes."""
    script = load_experiment("05", "exp3_training_without_mask")
    assert (script.LENGTH, script.VOCAB) == (16, 16), "the question describes 16 tokens from a vocabulary of 16"
    return script.cheating_floor()


ANSWERS = {
    "causal-entries": lambda: int(mm.causal_mask(3, 8).sum()),
    "torch-is-causal-one-query": _keys_seen_by_torch_is_causal,
    "empty-row-count": _empty_rows,
    "finite-fill-empty-row": _finite_fill_weight,
    "float16-overflow-score": _float16_overflow_score,
    "sliding-entries": lambda: int(sliding_window_mask(6, 6, 3).sum()),
    "unmasked-floor": _unmasked_floor,
}
