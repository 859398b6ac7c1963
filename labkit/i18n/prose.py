"""What counts as English words in a text the Chinese edition shows, and what counts as English prose.

A Chinese learner may meet code in a line (identifiers, calls, shapes, numbers, dtypes, units and
formulas: `masked_fill(fill)`, `q.k / sqrt(d_k)`, `torch.float32`, `(2, 6, 64)`, `12 ms`), and data
quoted as data ('the cat sat'). None of that is English to translate. An **English word** is a
run of letters that is written as a word (all lower case, or Capitalised) and stands apart from
code: not part of an identifier (`d_k`, `x.shape`, `f(x)`), not inside a quotation or a code span,
not an acronym (SDPA, GQA, NaN), and not one of the few names that code and formulas use as words
(log, exp, sqrt, softmax, max, min, nan, inf, dtype, torch, True, ...). Two-letter words count only
when they are English words (of, to, in, ...), so a variable such as `dk` or `Px` does not.

**English prose** is two or more English words in a row (separated by spaces): what a Chinese
line must not hold. A single English word may be a name (a head's name, a header kept as the
code's); a figure's own texts are held to the stricter rule of no English word at all
(tests/kit/test_output_translation.py tests both definitions).

A template needs a translation (it is a unit of a catalog) when its words hold an English word.
"""

from __future__ import annotations

import re

__all__ = ["english_prose", "english_words"]

# Names that code and formulas write as words: not English to translate.
NEUTRAL = frozenset("""
log ln exp sqrt softmax argmax argmin max min nan inf dtype dtypes torch numpy cpu cuda mps ms us ns
true false none sin cos tanh relu silu gelu rms rmsnorm layernorm vs eps
logit logits token tokens batch cache dropout
rad acc
""".split())  # the third line: glossary terms the Chinese edition writes in English (docs/glossary.json);
# the last: a unit of angle on the figures (rad), and FlashAttention's running accumulator (acc, with m and l)
TWO_LETTER_WORDS = frozenset("of to in is on at by as an or if no it be we so do up us my he am".split())

_QUOTED = re.compile(r"`[^`\n]*`|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])|\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」")
_CODE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\([^()\n]*\)"  # a call: f(x), masked_fill(fill)
                   r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # a dotted name: torch.float32, x.shape
                   r"|\w*_\w*"  # snake_case, d_k
                   r"|(?:\w+-)*\w*\d\w*(?:-\w+)*"  # a word with digits, hyphened parts too: float16, MiniMind2-Small
                   r"|\w+=\S*"  # key=value
                   r"|\w+\[[^\]\n]*\]"  # an index: out[0], x[:, 1]
                   r"|(?<![\w-])[-+]+\w+")  # a flag or a sign: --rows, -inf (not the hook of pre-hook)
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


def english_words(text: str) -> list[str]:
    """The English words of `text`, in order (see the module's docstring for what counts)."""
    text = _CODE.sub(" \0 ", _QUOTED.sub(" \0 ", text))
    words = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        bare = word.split("'")[0]
        if not (bare.islower() or (bare[0].isupper() and bare[1:].islower())):
            continue  # an acronym or camelCase: SDPA, NaN, KiB
        if len(bare) < 2 or (len(bare) == 2 and bare.lower() not in TWO_LETTER_WORDS):
            continue
        if bare.lower() in NEUTRAL:
            continue
        words.append(word)
    return words


def english_prose(text: str) -> list[str]:
    """Each run of two or more English words in a row (separated by spaces, punctuation aside) in `text`."""
    text = _CODE.sub(" \0 ", _QUOTED.sub(" \0 ", text))
    runs, current = [], []
    for token in text.split():
        bare = token.strip(",.;:!?()[]")
        if bare and english_words(bare) == [bare]:
            current.append(bare)
            continue
        if len(current) >= 2:
            runs.append(" ".join(current))
        current = []
    if len(current) >= 2:
        runs.append(" ".join(current))
    return runs
