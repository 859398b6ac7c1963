"""join_sentences: sentences side by side, spaced as their language writes them.

English puts a space between two sentences; Chinese puts none after its full-width punctuation
(。！？：；）), so "正确！答案是 B" and not "正确！ 答案是 B". Standard library only.
"""

from __future__ import annotations

import unicodedata

__all__ = ["join_sentences"]


def join_sentences(*parts: str) -> str:
    """The non-empty `parts` in order: with a space between two, except after a full-width character."""
    out = ""
    for part in parts:
        if not part:
            continue
        if out and not out[-1].isspace() and unicodedata.east_asian_width(out[-1]) not in "WF":
            out += " "
        out += part
    return out
