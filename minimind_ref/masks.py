"""Attention masks: which keys each query may look at (module 05).

Every mask here is boolean with torch's convention: True means "may attend", False means "hidden".
Shapes broadcast against attention scores [B, H, T, S] (T queries, S keys).

- causal: a token sees itself and the past, never the future.
- padding: no token looks at a pad token (1 = real token, 0 = padding, as tokenizers return it).
- both: a real token of a padded batch sees the real tokens of its past.
- sliding window: causal, but only the most recent `window` keys (Mistral's local attention).

When there are fewer queries than keys (decoding with a KV cache: T new tokens after S - T cached
ones), query i sits at absolute position S - T + i, so the causal mask is aligned to the bottom
right: query i sees keys 0 .. S - T + i. torch's `is_causal=True` aligns it to the top left
instead, which is wrong for decoding; module 05 shows the difference.
"""

from __future__ import annotations

import torch


def causal_mask(query_len: int, key_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """[T, S] bool, bottom-right aligned: query i may see key j when j <= i + (S - T)."""
    if query_len < 0 or key_len < query_len:
        raise ValueError(
            f"causal_mask needs 0 <= query_len <= key_len (queries are the last tokens of the keys), "
            f"got query_len={query_len}, key_len={key_len}.")
    offset = key_len - query_len
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).tril(diagonal=offset)


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, S] of 1 (token) / 0 (padding) -> [B, 1, 1, S] bool: no query looks at a pad key."""
    check_attention_mask(attention_mask)
    return attention_mask.bool()[:, None, None, :]


def check_attention_mask(attention_mask: torch.Tensor, batch_size: int | None = None,
                         key_len: int | None = None, cached: int = 0) -> None:
    """Refuse a padding mask that cannot be right, saying what was expected."""
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor of 0/1, got {type(attention_mask).__name__}.")
    if attention_mask.dim() != 2:
        raise ValueError(
            f"attention_mask must be 2-D [batch, key_len] of 1 (token) / 0 (padding), got shape "
            f"{tuple(attention_mask.shape)}.")
    if batch_size is not None and attention_mask.shape[0] != batch_size:
        raise ValueError(
            f"attention_mask has batch size {attention_mask.shape[0]} but input_ids has {batch_size}.")
    if key_len is not None and attention_mask.shape[1] != key_len:
        if cached:
            raise ValueError(
                f"attention_mask covers {attention_mask.shape[1]} positions but attention sees {key_len} keys "
                f"({cached} cached + {key_len - cached} new tokens): with a KV cache, the mask must cover the "
                f"cached tokens too.")
        raise ValueError(
            f"attention_mask covers {attention_mask.shape[1]} positions but there are {key_len} tokens: "
            f"it needs one 1/0 entry per token of input_ids.")
    if attention_mask.dtype != torch.bool and not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (token).")


def combined_mask(attention_mask: torch.Tensor | None, query_len: int, key_len: int,
                  causal: bool = True) -> torch.Tensor | None:
    """The one mask a forward pass needs, [B, 1, T, S] bool, or None when nothing is hidden
    beyond plain causality (the fast path can then use `is_causal`)."""
    if attention_mask is not None:
        check_attention_mask(attention_mask, key_len=key_len, cached=key_len - query_len)
    return padding_and_causal(attention_mask, query_len, key_len, causal)


def padding_and_causal(attention_mask: torch.Tensor | None, query_len: int, key_len: int,
                       causal: bool = True) -> torch.Tensor | None:
    """combined_mask on a mask already checked: what the model runs at every step."""
    if attention_mask is not None:
        if bool(attention_mask.bool().all()):
            attention_mask = None
    if attention_mask is None:
        return None
    mask = padding_mask(attention_mask)  # [B, 1, 1, S]
    if causal:
        mask = mask & causal_mask(query_len, key_len, device=attention_mask.device)  # [B, 1, T, S]
    return mask.expand(-1, -1, query_len, -1)


def sliding_window_mask(query_len: int, key_len: int, window: int,
                        device: torch.device | str | None = None) -> torch.Tensor:
    """[T, S] bool, bottom-right aligned like `causal_mask`, and each query sees only the `window`
    most recent keys, itself included (module 05): query i, at absolute position p = S - T + i,
    may see key j when p - window < j <= p.

    This is the sliding-window attention of Mistral 7B (arXiv 2310.06825), with the window
    counted as transformers counts it (`kv_idx > q_idx - sliding_window`). A stack of L such
    layers still carries information up to L * (window - 1) positions back, one hop per layer.
    With window >= key_len it is the plain causal mask.
    """
    for name, value in (("query_len", query_len), ("key_len", key_len), ("window", window)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"sliding_window_mask: {name} must be an int, got {type(value).__name__}.")
    if query_len < 1 or key_len < query_len:
        raise ValueError(
            f"sliding_window_mask needs 1 <= query_len <= key_len (queries are the last tokens of the "
            f"keys), got query_len={query_len}, key_len={key_len}.")
    if window < 1:
        raise ValueError(
            f"sliding_window_mask needs window >= 1 (the number of keys each query sees, itself "
            f"included), got window={window}.")
    offset = key_len - query_len
    visible = torch.ones(query_len, key_len, dtype=torch.bool, device=device)
    # keep j <= p (the causal part) and drop j <= p - window (older than the window)
    return visible.tril(diagonal=offset) & ~visible.tril(diagonal=offset - window)
