"""Facts: the numbers and named behaviours of the course's prose, each bound to the code that computes it.

A guide or a notebook's Markdown marks a fact where it states it, with two HTML comments that
neither GitHub nor Jupyter shows, so the raw file still reads as a sentence:

    MiniMind-3 caches <!-- fact: cache_bytes_per_token_minimind3 -->12,288<!-- /fact --> bytes per token

`tests/facts/NN_slug.py` holds module NN's facts, each a function decorated with `@fact`, named
as the marker names it and returning the value from minimind_ref, labkit or an experiment script.
`tests/course/test_facts.py` finds every marker in every guide (`modules/*/*.md`, any language), in
the root README and in every notebook's Markdown cells, computes each fact once, and compares:

- a number (int or float): the marked text holds exactly one number (`12,288`, `0.125`, `6e-08`,
  `−1`, `53%`, or an English number word from zero to twenty, `once`, `twice`; a span may mix
  them, so keep words like "one head" out of a span that a tuple fact reads). A float matches when it is the
  computed value rounded to the digits written (`3.2` for 3.2183); an int exactly; `tolerance=`
  (absolute) or `rel=` (relative) replace the rounding rule for a number that is quoted loosely
  ("about 100 MiB"). `spread=` (relative) is the value's spread across machines (float32
  arithmetic, training): the written digits must hold for every value within it, or the text
  quotes more digits than a learner's machine can promise. `below=` and `magnitude=` are below.
- a tuple of numbers: the marked text holds as many numbers, compared in order with the same rule
  (`3.2 to 4.1`, `` `[B, 8, T, 64]` `` → (8, 64)).
- a claim (a bool): it must be True; the marked text is the sentence or phrase it supports, not
  compared (a behaviour with no number: "the same heads put almost no weight on the copy"). A
  fact may also raise AssertionError, with a message, when a premise of its sentence fails.
- a string: the marked text equals it, whitespace collapsed (an exception's name, `-inf`, a
  shape); a tuple of strings: the marked text names each, in order ("1279a616 and c090b69c").
  Mark the language-neutral token, not the sentence around it: a Chinese guide marks the same
  facts with the same names and must write the same token.

A fact is computed from what its sentence is about, as a learner would check it: a count read off
minimind_ref, a measurement of labkit's code, an experiment script's constant, default or function
(`sources.experiment`), a notebook's cell read by its id (`sources.cell`, `sources.run_cells`), a
data file. Never a constant typed in, and never a closed form where the sentence states what code
does. tests/course/test_facts_construction.py fails on a fact that returns a literal or reads
nothing from the project, and tests/course/test_fact_sabotage.py changes the code behind each
module's facts and checks that they fail. A measurement that costs time is computed once per
session with `@once` (not functools.cache: the sabotage suite clears every `@once` with `forget()`).

Every comparison looser than the rounding rule says why, beside it (`why=`): the spread measured
across machines (`python -m facts.spread NAME`, under last-bit noise and the stand-ins of `make
portability`), or how loosely the sentence quotes. The options:

- `tolerance=` (absolute) or `rel=` (relative): a number quoted loosely ("about 3,200"); a tuple
  gives one per number of a tuple fact (None: the rounding rule for that one);
- `spread=` (relative): the value's spread across machines, anything from value / (1 + spread) to
  value x (1 + spread); the digits written must hold for every value within it;
- `below=True`: the marked number is a bound the measured value stays under ("below 1e-6"): it must
  be above the value (and every value within `spread`) and at most ten times it, or it says nothing;
- `magnitude=True`: the marked number is the value's order of magnitude ("about 1e-5"): the power
  of ten nearest to it, for every value within `spread`.

Rewording a sentence around a marker changes nothing; changing the code so that a value changes
fails the test, naming the file, the line, the sentence, the text written and the value computed.
A marker naming no fact fails, and so does a fact that no marker uses: delete the fact with the
sentence, or the sentence's protection goes silently. Numbers from papers are cited, not marked.

Markers go outside code spans and math (`<!-- fact: x -->`$4 \\times 64$`<!-- /fact -->` is
fine; a comment inside backticks or `$...$` would be shown).
"""

from __future__ import annotations

import functools
import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FACTS", "Fact", "Marker", "fact", "find_markers", "forget", "mismatch", "numbers_in", "once"]

FACTS: dict[str, Fact] = {}

Tolerance = float | tuple[float | None, ...] | None


@dataclass(frozen=True)
class Fact:
    name: str
    compute: Callable[[], object]
    module: str  # the facts file that defines it, for messages
    tolerance: Tolerance = None
    rel: Tolerance = None
    spread: float | None = None
    below: bool = False
    magnitude: bool = False
    why: str | None = None  # why a comparison looser than the rounding rule is right


def fact(function: Callable | None = None, *, tolerance: Tolerance = None, rel: Tolerance = None,
         spread: float | None = None, below: bool = False, magnitude: bool = False, why: str | None = None):
    """Register `function` as the fact named like it. Used bare (`@fact`) or with options, each of
    which needs its reason, `why=` (the spread measured across machines, or how loosely the sentence
    quotes the number)."""

    def register(function: Callable) -> Callable:
        name = function.__name__
        module = function.__module__.rsplit(".", 1)[-1]
        if name in FACTS:
            raise ValueError(f"fact {name!r} is defined twice: in tests/facts/{FACTS[name].module}.py and "
                             f"tests/facts/{module}.py; names are shared by every guide, so rename one")
        loose = {"tolerance": tolerance, "rel": rel, "spread": spread, "below": below, "magnitude": magnitude}
        if any(v not in (None, False) for v in loose.values()) and not (why and why.strip()):
            options = ", ".join(k for k, v in loose.items() if v not in (None, False))
            raise ValueError(f"fact {name!r} (tests/facts/{module}.py) compares with {options} but says not why: "
                             f"give why='...', the spread measured across machines (python -m facts.spread "
                             f"{name}) or how loosely the sentence quotes the number")
        FACTS[name] = Fact(name, function, module, tolerance, rel, spread, below, magnitude, why)
        return function

    return register(function) if function is not None else register


# ---------------------------------------------------------------------------- measured once

_MEASUREMENTS: list = []


def once(function: Callable) -> Callable:
    """`functools.cache`, remembered so that `forget()` can clear it: a measurement that several
    facts share is made once per session, and again after the sabotage suite changed the code."""
    cached = functools.cache(function)
    _MEASUREMENTS.append(cached)
    return cached


def forget() -> None:
    """Clear every measurement made with `@once` (the sabotage suite calls it around each change)."""
    for cached in _MEASUREMENTS:
        cached.cache_clear()


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
    """The numbers written in `text` (the marked span), in order: numerals and number words."""
    found = []
    text = text.replace("{,}", ",")  # LaTeX writes 12{,}288
    for match in re.finditer(rf"{NUMBER.pattern}|\b({'|'.join(WORDS)})\b", text, re.IGNORECASE):
        sign, whole, fraction, exponent, word = match.groups()
        if word:
            found.append(Written(float(WORDS[word.lower()]), 0.5, True))
            continue
        decimals = len(fraction) - 1 if fraction else 0
        power = int(exponent.replace("−", "-")) if exponent else 0
        value = float(whole.replace(",", "") + (fraction or "")) * 10.0 ** power * (-1 if sign else 1)
        found.append(Written(value, 0.5 * 10.0 ** (power - decimals), not fraction and power >= 0))
    return found


def _one(option: Tolerance, index: int) -> float | None:
    return option[index] if isinstance(option, tuple) else option


def _matches(written: Written, computed: float, rule: Fact, index: int = 0) -> bool:
    if rule.below:
        return computed < written.value <= 10 * computed
    if rule.magnitude:
        return computed > 0 and written.value == 10.0 ** round(math.log10(computed))
    tolerance, rel = _one(rule.tolerance, index), _one(rule.rel, index)
    if tolerance is not None or rel is not None:
        allowed = max(tolerance or 0.0, (rel or 0.0) * abs(computed))
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
    for index, (number, value) in enumerate(zip(numbers, values, strict=True)):
        if isinstance(value, float) and not math.isfinite(value):
            return f"fact {rule.name} computed {value!r}: write it as a string fact"
        if not _matches(number, value, rule, index):
            kind = " (a bound: above the value, at most ten times it)" if rule.below else \
                " (its power of ten)" if rule.magnitude else ""
            return f"computed {value!r}{kind}"
        if rule.spread:
            # another machine computes anything from value / (1 + spread) to value * (1 + spread); a bound
            # must stay above the largest, a quoted number hold for both
            nearby_values = [value * (1 + rule.spread)] if rule.below else [value / (1 + rule.spread),
                                                                          value * (1 + rule.spread)]
            for nearby in nearby_values:
                fits = number.value > nearby if rule.below else _matches(number, nearby, rule, index)
                if not fits:
                    return (f"computed {value!r}, but another machine may compute {nearby!r} (relative spread "
                            f"{rule.spread:g}), which does not match what is written: "
                            + ("quote a looser bound" if rule.below else "quote fewer digits"))
    return None


# ---------------------------------------------------------------------------- the facts files

def _discover() -> None:
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if re.fullmatch(r"\d\d_\w+", path.stem):
            importlib.import_module(f"{__name__}.{path.stem}")


_discover()
