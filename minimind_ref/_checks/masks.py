"""What the mask functions accept: lengths, windows and padding masks."""

from __future__ import annotations

from .model import check_attention_mask
from .values import is_int


def check_mask_lengths(query_len, key_len, window=0, caller: str = "causal_mask", least: int = 0) -> None:
    for name, value in (("query_len", query_len), ("key_len", key_len), ("window", window)):
        if not is_int(value):
            raise TypeError(f"{caller}: {name} must be an int, got {type(value).__name__} {value!r}.")
    if query_len < least or key_len < query_len:
        raise ValueError(
            f"{caller} needs {least} <= query_len <= key_len (the queries are the last tokens of the keys), "
            f"got query_len={query_len}, key_len={key_len}.")
    if caller == "sliding_window_mask" and window < 1:
        raise ValueError(
            f"{caller} needs window >= 1 (the number of keys each query sees, itself included), "
            f"got window={window}.")


def check_padding_mask(attention_mask) -> None:
    check_attention_mask(attention_mask)


def check_combined_mask(attention_mask, query_len, key_len, causal) -> None:
    check_mask_lengths(query_len, key_len, caller="combined_mask")
    if not isinstance(causal, bool):
        raise TypeError(f"combined_mask: causal must be True or False, got {causal!r}.")
    if attention_mask is not None:
        check_attention_mask(attention_mask, key_len=key_len, cached=key_len - query_len)
