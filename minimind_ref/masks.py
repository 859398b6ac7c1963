"""Attention masks: which keys each query may look at (module 05).

Every mask here is boolean with torch's convention: True means "may attend", False means "hidden".
Shapes broadcast against attention scores [B, H, T, S] (T queries, S keys): causal (a token sees
itself and the past), padding (no token looks at a pad token), both, and sliding window (causal, but
only the most recent `window` keys).

When there are fewer queries than keys (decoding with a KV cache: T new tokens after S - T cached
ones), query i sits at absolute position S - T + i, so the causal mask is aligned to the bottom
right: query i sees keys 0 .. S - T + i. torch's `is_causal=True` aligns it to the top left
instead, which is wrong for decoding; module 05 shows the difference.
"""

from __future__ import annotations

import torch

from ._checks import check_attention_mask, check_mask_lengths


def causal_mask(query_len: int, key_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """[T, S] bool, bottom-right aligned: query i may see key j when j <= i + (S - T)."""
    check_mask_lengths(query_len, key_len, device=device)
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).tril(diagonal=key_len - query_len)


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, S] of 1 (token) / 0 (padding) -> [B, 1, 1, S] bool: no query looks at a pad key."""
    check_attention_mask(attention_mask)
    return attention_mask.bool()[:, None, None, :]


def combined_mask(attention_mask: torch.Tensor | None, query_len: int, key_len: int,
                  causal: bool = True) -> torch.Tensor | None:
    """The one mask a forward pass needs, [B, 1, T, S] bool: padding, and causality unless
    `causal=False`; None when nothing is padded (attention is then plain causal)."""
    check_mask_lengths(query_len, key_len, causal=causal, caller="combined_mask")
    if attention_mask is not None:
        check_attention_mask(attention_mask, key_len=key_len, cached=key_len - query_len)
    if attention_mask is None or bool(attention_mask.all()):
        return None
    mask = attention_mask.bool()[:, None, None, :]  # [B, 1, 1, S]: the padding
    if causal:
        return mask & causal_mask(query_len, key_len, attention_mask.device)  # [B, 1, T, S]
    return mask.expand(-1, -1, query_len, -1)


def sliding_window_mask(query_len: int, key_len: int, window: int,
                        device: torch.device | str | None = None) -> torch.Tensor:
    """[T, S] bool, bottom-right aligned like `causal_mask`, and each query sees only the `window`
    most recent keys, itself included (module 05): query i, at absolute position p = S - T + i,
    may see key j when p - window < j <= p. The sliding-window attention of Mistral 7B (arXiv
    2310.06825), the window counted as transformers counts it (`kv_idx > q_idx - sliding_window`).
    A stack of L such layers still carries information up to L * (window - 1) positions back, one
    hop per layer. With window >= key_len it is the plain causal mask."""
    check_mask_lengths(query_len, key_len, window, caller="sliding_window_mask", least=1, device=device)
    offset = key_len - query_len
    visible = torch.ones(query_len, key_len, dtype=torch.bool, device=device)
    # keep j <= p (the causal part) and drop j <= p - window (older than the window)
    return visible.tril(diagonal=offset) & ~visible.tril(diagonal=offset - window)
