"""Choosing the next token from the last position's logits: greedy, temperature, top-k, top-p."""

from __future__ import annotations

import torch

from ._checks import check_logits_values, check_select_next_token


def select_next_token(logits: torch.Tensor, temperature: float = 0.0, top_k: int | None = None,
                      top_p: float | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """logits [B, V] -> next token ids [B].

    temperature 0 is greedy (argmax; top_k and top_p change nothing). Otherwise the logits are
    divided by the temperature, cut to the `top_k` most likely tokens and to the smallest set
    whose probability reaches `top_p` (the most likely token always stays), and sampled. A row
    whose largest logit is not finite (NaN, +inf, every logit -inf) has nothing to choose: refused.
    """
    check_select_next_token(logits, temperature, top_k, top_p, generator)
    best, argmax = logits.max(dim=-1)  # [B]: each row's largest logit, and where it is
    if not torch.isfinite(best).all():
        check_logits_values(logits)  # says which kind of row it is
    if temperature == 0.0:
        return argmax
    # Divided in float64 (a temperature of 1e-300 is 0 in float32), after subtracting the largest
    # logit (the softmax does not change): a tiny temperature then sends the best to 0 and the
    # others to -inf, where dividing first would overflow to inf - inf.
    logits = ((logits.double() - best[:, None]) / temperature).float()
    if top_k is not None and top_k < logits.shape[-1]:
        kept = torch.topk(logits, top_k, dim=-1)  # exactly k survive, even with ties
        logits = torch.full_like(logits, float("-inf")).scatter(-1, kept.indices, kept.values)
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens ranked above it already reach top_p
        drop_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        drop_sorted[:, 0] = False  # the most likely token stays, even when top_p rounds to 0 in float32
        logits = logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)
