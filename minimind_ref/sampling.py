"""Choosing the next token from the last position's logits: greedy, temperature, top-k, top-p."""

from __future__ import annotations

import torch


def check_sampling_args(temperature: float, top_k: int | None, top_p: float | None, vocab_size: int) -> None:
    """Refuse sampling settings that would be silently wrong or fail deep inside torch."""
    is_number = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
    if not (is_number and 0.0 <= temperature < float("inf")):
        raise ValueError(f"temperature must be >= 0 and finite (0 means greedy), got {temperature!r}.")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab_size):
        raise ValueError(f"top_k must be an integer in [1, vocab_size={vocab_size}] or None, got {top_k!r}.")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}.")


def select_next_token(
    logits: torch.Tensor,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """logits [B, V] -> next token ids [B].

    temperature 0 is greedy (argmax; top_k and top_p change nothing). Otherwise the logits are
    divided by the temperature, cut to the `top_k` most likely tokens and to the smallest set
    whose probability reaches `top_p` (the most likely token always stays), and sampled.
    """
    check_sampling_args(temperature, top_k, top_p, logits.shape[-1])
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        best = torch.topk(logits, top_k, dim=-1)  # exactly k survive, even with ties
        logits = torch.full_like(logits, float("-inf")).scatter(-1, best.indices, best.values)
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        cumulative = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        # drop a token when the tokens ranked above it already reach top_p
        drop_sorted = (cumulative - torch.softmax(sorted_logits, dim=-1)) >= top_p
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)
