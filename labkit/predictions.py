"""What the course's predictions say: modules/NN_slug/predictions.json, one file per module.

`predict.py` asks and reveals; this file holds the texts it shows, out of the notebook's source, so
that a learner's copy, which keeps every code cell, holds no answer before the learner commits one.
A file lists the module's predictions in the notebook's order:

    {"module": "05_masking",
     "predictions": [
       {"key": "05-nan-spread",
        "question": "Layer 2 reads layer 1's outputs, whose two pad rows are NaN. ...",
        "choices": [{"text": "none", "when": "none", "why": "A weight of 0 hides a key's score, ..."},
                    {"text": "the two pad rows only", "when": "pad rows", "why": "..."},
                    {"text": "every row", "when": "every row"}],
        "answer": "every row",
        "explanation": "0 × NaN = NaN: ..."},
       {"key": "05-pad-rows",
        "question": "... how many of its 4 queries see no key at all?",
        "number": {"unit": "queries", "rel": 0},
        "low": "...", "high": "...",
        "explanation": "Left padding puts the pads first, ..."}]}

- `key`: the module's number, a dash and a few words (`05-pad-rows`): unique in the course, and
  the only thing the notebook's cells name.
- a choice's `when`: what the reveal cell measures when that choice is the truth (a string, a
  boolean, an integer, or a list of them: a shape is `[4, 5, 3]`). The cell passes what it
  measured (`seen.result(tuple(x.shape))`) and this file maps it to a choice, so the cell's source
  names no answer. `answer` is the choice the explanation is written for: a reveal that measures
  another one fails (the course's claim no longer holds), so nbval checks every choice question.
- `why`: what picking that choice shows about the learner's picture of the idea, said when they
  picked it. The answer has none: its lesson is the `explanation`, which every reveal shows.
- a number: `unit` (may be "") and `rel`, how far from the result still counts as right (0.1 is
  within 10%, 0 exact). `low` and `high` are the `why` of a guess below or above. The number is
  measured by the cell, never typed here.
- Every text may hold `{name}` fields (`{turned:.2f}`), filled by the cell with what it computed
  (`seen.result(ratio, turned=...)`), so that a number a text states is computed, not typed;
  `{result}` is the result as shown. Write a literal brace twice.

`load_predictions` validates a file and names every problem at once (PredictionDataError);
`find_prediction` finds a key's prediction in the course. The Chinese edition translates the texts
in translations/zh-CN/predictions/NN_slug.md, keyed by the English's hash like every catalog.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Choice", "PredictionDataError", "PredictionSpec", "find_prediction", "load_predictions",
           "plain_value", "prediction_files", "texts_of"]

FILE = "predictions.json"
KEY = re.compile(r"^(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*$")
TOP_KEYS = ("module", "predictions")
PREDICTION_KEYS = ("key", "question", "choices", "answer", "number", "low", "high", "explanation")
CHOICE_KEYS = ("text", "when", "why")
NUMBER_KEYS = ("unit", "rel")
DEFAULT_REL = 0.1


class PredictionDataError(ValueError):
    """A predictions.json that breaks the format: one line per problem, each naming the file, the
    prediction and what to change (`problems` holds the lines)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Choice:
    text: str
    when: Any  # what the reveal cell measures when this choice is true (plain_value form)
    why: str  # "" for the answer


@dataclass(frozen=True)
class PredictionSpec:
    """One prediction as its file states it."""

    key: str
    question: str
    explanation: str
    source: Path
    choices: tuple[Choice, ...] = ()  # empty for a number
    answer: str = ""  # the right choice's text; "" for a number
    unit: str = ""
    rel: float = DEFAULT_REL
    low: str = ""
    high: str = ""

    @property
    def number(self) -> bool:
        return not self.choices

    def choice(self, text: str) -> Choice:
        return next(c for c in self.choices if c.text == text)

    def choice_measured(self, value: Any) -> Choice:
        """The choice whose `when` is `value` (already a plain_value); ValueError naming them all."""
        for choice in self.choices:
            if _same(choice.when, value):
                return choice
        expected = ", ".join(f"{json.dumps(c.when, ensure_ascii=False)} ({c.text!r})" for c in self.choices)
        raise ValueError(f"no choice is measured so ({_json(value)}); its choices expect one of: {expected} "
                         f"({_where(self.source)})")

    def fields(self) -> set[str]:
        """The `{name}` fields its texts use, `result` included where one does."""
        return {name for _, text in texts_of(self) for name in _field_names(text)}


def texts_of(spec: PredictionSpec) -> list[tuple[str, str]]:
    """(what, English text) for every text the learner may read, in the order a translator meets them."""
    out = [("question", spec.question)]
    if spec.unit:
        out.append(("unit", spec.unit))
    for choice in spec.choices:
        out.append(("choice", choice.text))
        if choice.why:
            out.append((f"why {choice.text!r}", choice.why))
    if spec.number:
        out += [("low", spec.low), ("high", spec.high)]
    out.append(("explanation", spec.explanation))
    return out


# ------------------------------------------------------------------------------------ values

def plain_value(value: Any) -> Any:
    """`value` as the JSON of a `when` would hold it: a tuple or torch.Size as a list, a 0-d tensor
    or numpy scalar as its Python value. TypeError for anything a choice cannot be measured as
    (a float: round it into a category first)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0 and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, (bool, str)) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain_value(item) for item in value]
    raise TypeError(f"a choice is measured as a string, a boolean, an integer, or a tuple of them; got "
                    f"{type(value).__name__} {value!r}: turn the measurement into one (compare a float with a "
                    f"threshold, name a category)")


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: True is not 1, [1, 2] is (1, 2)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _field_names(text: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]


# ------------------------------------------------------------------------------------ loading

def _where(path: Path) -> str:
    from labkit.syllabus import CourseError, find_course_root

    try:
        return path.resolve().relative_to(find_course_root()).as_posix()
    except (CourseError, ValueError):
        return str(path)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (write a number, or leave the key out)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    seen = [key for key, _ in pairs]
    twice = sorted({key for key in seen if seen.count(key) > 1})
    if twice:
        raise ValueError(f"the key(s) {twice} are given twice in one object (JSON keeps only the last)")
    return dict(pairs)


_CACHE: dict[Path, tuple[tuple[int, int], dict[str, PredictionSpec]]] = {}


def load_predictions(path: str | Path) -> dict[str, PredictionSpec]:
    """Read and validate one predictions.json: key -> PredictionSpec, in the file's order. Every
    problem comes at once, as one PredictionDataError. Re-read only when the file changes."""
    path = Path(path).resolve()
    try:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
    except OSError as error:
        raise PredictionDataError([f"{_where(path)}: cannot be read ({error.strerror or error})"]) from None
    cached = _CACHE.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_pairs,
                          parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise PredictionDataError([f"{_where(path)}: not valid JSON: {error}"]) from None
    specs = _validate(data, path)
    _CACHE[path] = (stamp, specs)
    return specs


def _validate(data: Any, path: Path) -> dict[str, PredictionSpec]:
    where = _where(path)
    problems: list[str] = []
    if not isinstance(data, dict):
        raise PredictionDataError([f"{where}: the file must hold one object, "
                                   f"{{\"module\": ..., \"predictions\": [...]}}"])
    module = path.parent.name
    problems += [f"{where}: unknown key {k!r} (the file has {', '.join(TOP_KEYS)})" for k in data if k not in TOP_KEYS]
    if data.get("module") != module:
        problems.append(f"{where}: \"module\" must be {module!r}, the name of its folder; it is {data.get('module')!r}")
    listed = data.get("predictions")
    if not isinstance(listed, list) or not listed:
        problems.append(f"{where}: \"predictions\" must be a list of at least one prediction")
        listed = []
    specs: dict[str, PredictionSpec] = {}
    for index, entry in enumerate(listed):
        spec, found = _prediction(entry, index, module[:2], path, where)
        problems += found
        if spec is not None:
            if spec.key in specs:
                problems.append(f"{where}: prediction {index + 1}: the key {spec.key!r} is used twice; a key names "
                                f"one prediction")
            specs[spec.key] = spec
    if problems:
        raise PredictionDataError(problems)
    return specs


def _text(entry: dict, name: str, problem) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or not value.strip():
        problem(f"{name!r} must be a text that is not blank; it is {value!r}")
        return ""
    try:
        fields = list(string.Formatter().parse(value))
    except ValueError as error:
        problem(f"{name!r}: {error} (a field is {{name}}; write a literal brace twice, {{{{ or }}}})")
        return value
    for _, field, _, _ in fields:
        if field is not None and not field.isidentifier():
            problem(f"{name!r}: the field {{{field}}} must be a name, such as {{turned}}: the reveal cell fills "
                    f"it with seen.result(..., turned=...)")
    return value


def _prediction(entry: Any, index: int, number: str, path: Path, where: str):
    problems: list[str] = []
    label = f"prediction {index + 1}"
    if isinstance(entry, dict) and isinstance(entry.get("key"), str):
        label += f" ({entry['key']})"

    def problem(text: str) -> None:
        problems.append(f"{where}: {label}: {text}")

    if not isinstance(entry, dict):
        problem("must be an object with a key, a question, choices or a number, and an explanation")
        return None, problems
    for name in entry:
        if name not in PREDICTION_KEYS:
            problem(f"unknown key {name!r} (a prediction has {', '.join(PREDICTION_KEYS)})")
    key = entry.get("key")
    if not isinstance(key, str) or not KEY.match(key) or not key.startswith(f"{number}-"):
        problem(f"\"key\" must be the module's number, a dash and a few words, such as \"{number}-pad-rows\" "
                f"(lower case, digits and dashes); it is {key!r}")
        key = f"{number}-?"
    question = _text(entry, "question", problem)
    explanation = _text(entry, "explanation", problem)
    has_choices, has_number = "choices" in entry, "number" in entry
    if has_choices == has_number:
        problem("give either \"choices\" (a list of at least two) or \"number\" ({\"unit\": ..., \"rel\": ...}), "
                "not both or neither")
        return None, problems
    if has_number:
        spec = _number(entry, problem, key, question, explanation, path)
    else:
        spec = _choices(entry, problem, key, question, explanation, path)
    return (None if problems else spec), problems


def _number(entry, problem, key, question, explanation, path) -> PredictionSpec | None:
    number = entry["number"]
    if not isinstance(number, dict):
        problem("\"number\" must be an object: {\"unit\": \"bytes\", \"rel\": 0.1}")
        return None
    for name in number:
        if name not in NUMBER_KEYS:
            problem(f"\"number\": unknown key {name!r} (it has {', '.join(NUMBER_KEYS)})")
    unit = number.get("unit", "")
    if not isinstance(unit, str):
        problem(f"\"number\": \"unit\" must be a text (\"\" for none); it is {unit!r}")
        unit = ""
    rel = number.get("rel", DEFAULT_REL)
    if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not math.isfinite(rel) or rel < 0:
        problem(f"\"number\": \"rel\", the tolerance, must be a number of 0 or more (0.1 is within 10%, 0 exact); "
                f"it is {rel!r}")
        rel = DEFAULT_REL
    for name in ("answer", "choices"):
        if name in entry:
            problem(f"a number question has no {name!r}: the reveal cell measures the number")
    low, high = _text(entry, "low", problem), _text(entry, "high", problem)
    return PredictionSpec(key, question, explanation, path, unit=unit, rel=float(rel), low=low, high=high)


def _choices(entry, problem, key, question, explanation, path) -> PredictionSpec | None:
    listed = entry["choices"]
    if not isinstance(listed, list) or len(listed) < 2:
        problem("\"choices\" must be a list of at least two choices")
        return None
    for name in ("low", "high"):
        if name in entry:
            problem(f"a choice question has no {name!r}: each choice has its own \"why\"")
    choices, texts, whens = [], {}, []
    for number, choice in enumerate(listed, 1):
        def choice_problem(text: str, number=number) -> None:
            problem(f"choice {number}: {text}")

        if not isinstance(choice, dict):
            choice_problem("must be an object: {\"text\": ..., \"when\": ..., \"why\": ...}")
            continue
        for name in choice:
            if name not in CHOICE_KEYS:
                choice_problem(f"unknown key {name!r} (a choice has {', '.join(CHOICE_KEYS)})")
        text = _text(choice, "text", choice_problem)
        if text:
            same = " ".join(text.split()).casefold()
            if same in texts:
                choice_problem(f"{text!r} is choice {texts[same]} again: every choice must read differently")
            texts.setdefault(same, number)
        if "when" not in choice:
            choice_problem("\"when\" is missing: what the reveal cell measures when this choice is true")
            continue
        try:
            when = _when(choice["when"])
        except TypeError as error:
            choice_problem(f"\"when\": {error}")
            continue
        if any(_same(when, other) for other in whens):
            choice_problem(f"\"when\" {_json(when)} is another choice's: one measurement, one choice")
        whens.append(when)
        why = choice.get("why", "")
        if "why" in choice:
            why = _text(choice, "why", choice_problem)
        choices.append(Choice(text, when, why))
    answer = entry.get("answer")
    right = next((c for c in choices if c.text == answer), None)
    if right is None:
        problem(f"\"answer\" must be the text of one of the choices, the one the explanation is written for; it is "
                f"{answer!r}")
    for choice in choices:
        if choice is right and choice.why:
            problem(f"the answer {choice.text!r} has a \"why\", which is never shown: its lesson is the "
                    f"\"explanation\"")
        elif choice is not right and not choice.why and right is not None:
            problem(f"the choice {choice.text!r} needs a \"why\": what picking it shows about the idea")
    return PredictionSpec(key, question, explanation, path, choices=tuple(choices), answer=answer or "")


def _when(value: Any) -> Any:
    if isinstance(value, float):
        raise TypeError(f"{value!r} is a float; a measurement is a string, a boolean, an integer or a list of them")
    if isinstance(value, (list, dict)) and not value:
        raise TypeError("an empty list or object measures nothing")
    if isinstance(value, dict):
        raise TypeError("an object is not a measurement: use a string, a boolean, an integer or a list of them")
    if isinstance(value, list):
        return [_when(item) for item in value]
    return plain_value(value)


# ------------------------------------------------------------------------------------ finding

def prediction_files(root: Path) -> list[Path]:
    """Every module's predictions.json, in module order."""
    return sorted((root / "modules").glob(f"[0-9][0-9]_*/{FILE}"))


def find_prediction(key: Any, root: Path | None = None) -> PredictionSpec:
    """The prediction `key` names, from its module's predictions.json (found from the course root).
    TypeError or ValueError naming the key, the file and the keys it holds; PredictionDataError for
    a broken file."""
    if not isinstance(key, str):
        raise TypeError(f"a prediction is named by its key, a text such as '05-pad-rows'; got {key!r}")
    match = KEY.match(key)
    if not match:
        raise ValueError(f"{key!r} is not a prediction's key: its module's number, a dash and a few words, such as "
                         f"'05-pad-rows'")
    if root is None:
        root = _course_root()
    files = sorted((root / "modules").glob(f"{match.group(1)}_*/{FILE}"))
    if not files:
        raise ValueError(f"no prediction {key!r}: module {match.group(1)} has no modules/{match.group(1)}_*/{FILE}")
    specs = load_predictions(files[0])
    if key not in specs:
        raise ValueError(f"no prediction {key!r} in {_where(files[0])}; it holds {', '.join(map(repr, specs))}")
    return specs[key]


def _course_root() -> Path:
    from labkit.syllabus import CourseError, find_course_root

    try:
        return find_course_root()
    except CourseError:
        return Path(__file__).resolve().parents[1]
