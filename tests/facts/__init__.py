"""Facts: the numbers and named behaviours of the course's prose, each bound to the code that computes it.

A guide or a notebook's Markdown marks a fact where it states it, with two HTML comments that
neither GitHub nor Jupyter shows, so the raw file still reads as a sentence:

    MiniMind-3 caches <!-- fact: cache_bytes_per_token_minimind3 -->12,288<!-- /fact --> bytes per token

`tests/facts/NN_slug.py` holds module NN's facts, each a function decorated with `@fact`, named
as the marker names it and returning the value from minimind_ref, labkit or an experiment script.
`tests/course/test_facts.py` finds every marker in every guide (`modules/*/*.md`, any language), in
the root README and in every notebook's Markdown cells, computes each fact once, and compares:

- a number (int or float): the marked text holds exactly one number (`12,288`, `0.125`, `6e-08`,
  `−1`, `53%`, or an English number word from zero to twenty, `once`, `twice`). A float matches when it is the
  computed value rounded to the digits written (`3.2` for 3.2183); an int exactly; `tolerance=`
  (absolute) or `rel=` (relative) replace the rounding rule for a number that is quoted loosely
  ("about 100 MiB"). `spread=` (relative) is the value's spread across machines (float32
  arithmetic, training): the written digits must hold for every value within it, or the text
  quotes more digits than a learner's machine can promise.
- a tuple of numbers: the marked text holds as many numbers, compared in order with the same rule
  (`3.2 to 4.1`, `` `[B, 8, T, 64]` `` → (8, 64)).
- a claim (a bool): it must be True; the marked text is the sentence or phrase it supports, not
  compared (a behaviour with no number: "the same heads put almost no weight on the copy"). A
  fact may also raise AssertionError, with a message, when a premise of its sentence fails.
- a string: the marked text equals it, whitespace collapsed (an exception's name, `-inf`, a
  shape); a tuple of strings: the marked text names each, in order ("1279a616 and c090b69c").
  Mark the language-neutral token, not the sentence around it: a Chinese guide marks the same
  facts with the same names and must write the same token.

Rewording a sentence around a marker changes nothing; changing the code so that a value changes
fails the test, naming the file, the line, the sentence, the text written and the value computed.
A marker naming no fact fails, and so does a fact that no marker uses: delete the fact with the
sentence, or the sentence's protection goes silently. Numbers from papers are cited, not marked.

Markers go outside code spans and math (`<!-- fact: x -->`$4 \\times 64$`<!-- /fact -->` is
fine; a comment inside backticks or `$...$` would be shown).
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FACTS", "Fact", "Marker", "fact", "find_markers", "mismatch", "numbers_in"]

FACTS: dict[str, Fact] = {}


@dataclass(frozen=True)
class Fact:
    name: str
    compute: Callable[[], object]
    module: str  # the facts file that defines it, for messages
    tolerance: float | None = None
    rel: float | None = None
    spread: float | None = None


def fact(function: Callable | None = None, *, tolerance: float | None = None, rel: float | None = None,
         spread: float | None = None):
    """Register `function` as the fact named like it. Used bare (`@fact`) or with options."""

    def register(function: Callable) -> Callable:
        name = function.__name__
        module = function.__module__.rsplit(".", 1)[-1]
        if name in FACTS:
            raise ValueError(f"fact {name!r} is defined twice: in tests/facts/{FACTS[name].module}.py and "
                             f"tests/facts/{module}.py; names are shared by every guide, so rename one")
        FACTS[name] = Fact(name, function, module, tolerance, rel, spread)
        return function

    return register(function) if function is not None else register


# ---------------------------------------------------------------------------- markers in the text

OPEN = re.compile(r"<!--\s*fact:\s*([A-Za-z_][\w]*)\s*-->")
CLOSE = re.compile(r"<!--\s*/fact\s*-->")
ANY_MARKER = re.compile(r"<!--\s*/?fact\b[^>]*-->")


@dataclass(frozen=True)
class Marker:
    where: str  # "modules/04_gqa/README.md:88" or "notebooks/08_flash.ipynb cell 12, line 3"
    name: str
    written: str
    sentence: str


def find_markers(text: str, where: Callable[[int], str]) -> tuple[list[Marker], list[str]]:
    """The markers of `text` and the problems with its markup (a marker not closed, a stray close).

    `where(offset)` names the place of a character offset, for messages."""
    markers, problems, position = [], [], 0
    while True:
        opened = OPEN.search(text, position)
        stray = CLOSE.search(text, position, opened.start() if opened else len(text))
        if stray:
            problems.append(f"{where(stray.start())}: a <!-- /fact --> closes no marker")
        if not opened:
            break
        closed = CLOSE.search(text, opened.end())
        nested = OPEN.search(text, opened.end(), closed.start() if closed else len(text))
        if not closed or nested:
            problems.append(f"{where(opened.start())}: <!-- fact: {opened.group(1)} --> is not closed by "
                            f"<!-- /fact --> before the next marker")
            position = opened.end()
            continue
        written = " ".join(text[opened.end():closed.start()].split())
        markers.append(Marker(where(opened.start()), opened.group(1), written,
                              sentence_around(text, opened.start(), closed.end())))
        position = closed.end()
    malformed = [m for m in ANY_MARKER.finditer(text) if not (OPEN.fullmatch(m.group()) or CLOSE.fullmatch(m.group()))]
    problems += [f"{where(m.start())}: malformed marker {m.group()!r}: write <!-- fact: name -->…<!-- /fact -->"
                 for m in malformed]
    return markers, problems


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence (or list item, or table row) holding text[start:end], markers removed."""
    breaks = ("\n\n", "\n|", "\n- ", "\n* ", "\n#")  # a blank line, a table row, a list item, a heading
    paragraph_start = max([text.rfind(b, 0, start) + 1 for b in breaks if text.rfind(b, 0, start) >= 0], default=0)
    paragraph_end = min([i for i in (text.find(b, end) for b in breaks) if i >= 0], default=len(text))
    sentence_start = paragraph_start + max((m.end() for m in re.finditer(
        r"[.!?]\s+(?=[A-Z`*(\[])", text[paragraph_start:start])), default=0)
    after = re.search(r"[.!?](\s|$)", text[end:paragraph_end])
    sentence_end = end + after.end() if after else paragraph_end
    sentence = ANY_MARKER.sub("", text[sentence_start:sentence_end])
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= 400 else sentence[:400] + " …"


# ---------------------------------------------------------------------------- numbers in the text

WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())} | {"once": 1, "twice": 2}
NUMBER = re.compile(r"(?<![\w.])([-−])?(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?(?:[eE]([-+−]?\d+))?")


@dataclass(frozen=True)
class Written:
    value: float
    half_unit: float  # half of the last digit written: the rounding tolerance
    is_integer: bool


def numbers_in(text: str) -> list[Written]:
    """The numbers written in `text` (the marked span), in order."""
    found = []
    for match in NUMBER.finditer(text.replace("{,}", ",")):  # LaTeX writes 12{,}288
        sign, whole, fraction, exponent = match.groups()
        decimals = len(fraction) - 1 if fraction else 0
        power = int(exponent.replace("−", "-")) if exponent else 0
        value = float(whole.replace(",", "") + (fraction or "")) * 10.0 ** power * (-1 if sign else 1)
        found.append(Written(value, 0.5 * 10.0 ** (power - decimals), not fraction and power >= 0))
    if not found:
        found = [Written(float(WORDS[w]), 0.5, True) for w in re.findall(r"[a-z]+", text.lower()) if w in WORDS]
    return found


def _matches(written: Written, computed: float, rule: Fact) -> bool:
    if rule.tolerance is not None or rule.rel is not None:
        allowed = max(rule.tolerance or 0.0, (rule.rel or 0.0) * abs(computed))
        return abs(written.value - computed) <= allowed * (1 + 1e-12)
    if isinstance(computed, int) and written.is_integer:
        return written.value == computed
    return abs(written.value - computed) <= written.half_unit * (1 + 1e-9) + 1e-300


def mismatch(rule: Fact, computed: object, written: str) -> str | None:
    """Why `written` (a marked span) does not state `computed`, or None when it does."""
    if isinstance(computed, bool):
        return None if computed else f"the claim {rule.name} no longer holds: the code now behaves otherwise"
    if isinstance(computed, str):
        expected = " ".join(computed.split())
        return None if written == expected else f"the text should read {expected!r}"
    if isinstance(computed, tuple | list) and computed and all(isinstance(v, str) for v in computed):
        found = [written.find(token) for token in computed]
        in_order = all(i >= 0 for i in found) and found == sorted(found)
        return None if in_order else f"the text should name {', '.join(map(repr, computed))}, in that order"
    values = list(computed) if isinstance(computed, tuple | list) else [computed]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return f"fact {rule.name} returned {computed!r}: a fact returns a number, a tuple of numbers or a string"
    numbers = numbers_in(written)
    if len(numbers) != len(values):
        return f"the text holds {len(numbers)} number(s), the fact computes {len(values)}: {computed!r}"
    for number, value in zip(numbers, values, strict=True):
        if isinstance(value, float) and not math.isfinite(value):
            return f"fact {rule.name} computed {value!r}: write it as a string fact"
        if not _matches(number, value, rule):
            return f"computed {value!r}"
        if rule.spread:
            for nearby in (value * (1 - rule.spread), value * (1 + rule.spread)):
                if not _matches(number, nearby, rule):
                    return (f"computed {value!r}, but another machine may compute {nearby!r} (relative spread "
                            f"{rule.spread:g}), which does not round to what is written: quote fewer digits")
    return None


# ---------------------------------------------------------------------------- the facts files

def _discover() -> None:
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if re.fullmatch(r"\d\d_\w+", path.stem):
            importlib.import_module(f"{__name__}.{path.stem}")


_discover()
