"""Module 01's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import math

import torch

import minimind_ref as mm

from .estimate import Estimate


def _score_variance(d_k: int = 64, samples: int = 200_000) -> Estimate:
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(samples, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(samples, d_k, generator=generator, dtype=torch.float64)
    scores = (q * k).sum(-1)
    # The sample variance of n draws has a standard error of about var * sqrt(2 / n); allow 5 of them.
    return Estimate(scores.var().item(), 5 * d_k * math.sqrt(2 / samples))


def _equal_scores_weight(query: int = 3, length: int = 6) -> float:
    q = torch.zeros(1, 1, length, 4)  # all scores q . k are 0, hence equal
    k = torch.randn(1, 1, length, 4)
    _, weights = mm.scaled_dot_product_attention(q, k, k, is_causal=True, return_weights=True)
    visible = weights[0, 0, query, : query + 1]
    assert torch.allclose(visible, visible[0].expand_as(visible)), "equal scores give equal weights"
    return visible[0].item()


ANSWERS = {
    "causal-entries": lambda: int(mm.causal_mask(6, 6).sum()),
    "float16-overflow": lambda: math.log(torch.finfo(torch.float16).max),
    "score-variance": _score_variance,
    "minimind-scale": lambda: 1 / math.sqrt(mm.MiniMindConfig().head_dim),
    "equal-scores": _equal_scores_weight,
}
