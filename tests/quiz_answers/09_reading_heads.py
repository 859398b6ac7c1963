"""Module 09's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import math

import torch

from labkit import tiny_heads as th
from labkit.tiny_data import VOCAB_SIZE
from labkit.tiny_model import build_model, parameter_count


def _induction_key(query: int = 30, span: int = 24) -> int:
    """The key an induction map puts its weight on for `query`, found on a planted map."""
    T = 2 * span + 1
    planted = torch.zeros(T, T)
    second = torch.arange(span + 1, T)
    planted[second, second - span + 1] = 1.0
    assert th.induction_scores(planted, span).item() == 1.0  # the planted map is what the score measures
    ids = th.repeated_probe(count=1, span=span)[0]
    key = int(planted[query].argmax())
    assert ids[key] == ids[query + 1]  # the token there is the one that comes next
    return key


def _even_previous(T: int = 9) -> float:
    even = torch.tril(torch.ones(T, T, dtype=torch.float64))
    even = even / even.sum(-1, keepdim=True)
    return th.previous_token_scores(even).item()


ANSWERS = {
    "induction-key": _induction_key,
    "chance-loss": lambda: math.log(VOCAB_SIZE),
    "even-previous": _even_previous,
    "tiny-parameters": lambda: parameter_count(build_model()),
}
