"""The course's quizzes: the file format, its validator, grading, and the terminal runner.

Each module has quizzes/NN_slug.json, data only (quizzes/README.md documents the format for
authors). The notebook widget (quiz_widget.py) and `make quiz M=NN` (the runner below) both load
it here and grade it here, so a question is marked, and its feedback worded, the same everywhere.

Why a hand-written validator as well as the JSON Schema `QUIZ_SCHEMA`: the schema lets an editor
check a file as it is typed, but it cannot say that an answer index lies within the choices, that
ids are unique, or that "module" matches the file name, and its messages describe the schema rather
than the fix. The validator checks those rules too, finds every problem in one pass (an author fixes
a file in one go, not one error per run) and words each one as what to change. It also catches the
trap of LaTeX in JSON: "$\\frac{a}{b}$" written with one backslash is a form feed and "rac".

Standard library only, so `make quiz` answers at once; the widget imports ipywidgets itself.

    python -m minimind_ref.teaching.quiz check quizzes/*.json   validate quiz files (authors)
    python -m minimind_ref.teaching.quiz schema                 print QUIZ_SCHEMA as JSON
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

QUESTION_TYPES = ("single", "multiple", "numeric")
# Choices are labelled A, B, C...; twelve (A to L) keeps the labels clear of the terminal's
# q (quit) and s (skip) keys, and more than that is a poor question anyway.
MAX_CHOICES = 12
ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"

TOP_KEYS = ("module", "title", "description", "questions")
QUESTION_KEYS = {
    "single": ("id", "type", "question", "choices", "answer", "explanation", "hint"),
    "multiple": ("id", "type", "question", "choices", "answer", "explanation", "hint"),
    "numeric": ("id", "type", "question", "answer", "tolerance", "unit", "explanation", "hint"),
}
_OPTIONAL = {"description", "hint", "unit"}
_ANY_QUESTION_KEYS = tuple(dict.fromkeys(k for keys in QUESTION_KEYS.values() for k in keys))

# What a missing key should hold, for the message that asks for it.
_WHAT = {
    "module": 'the file name without .json, such as "01_attention_basics"',
    "title": "the quiz's title",
    "questions": "a list of questions",
    "id": 'a short name unique in the file, such as "scale-factor"',
    "type": '"single", "multiple" or "numeric"',
    "question": "the question's text",
    "choices": "a list of at least 2 answer texts",
    "explanation": "why the answer is right, shown after answering",
    "tolerance": "how far from the answer still counts as right; 0 for exact",
}
_ANSWER_WHAT = {
    "single": "the index of the right choice, counting from 0",
    "multiple": "a list of the indices of every right choice, such as [0, 2]",
    "numeric": "the right number",
}

_NUMBER = re.compile(
    r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:_\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NUMBER_ADVICE = ("Type a number, such as 42, -3, 0.125, 1e-5 or 25,829,888 "
                  "(a point for decimals; commas only between groups of three digits)")

# JSON escapes that swallow the backslash of a LaTeX command: (what it becomes, commands it hits).
_LATEX_TRAPS = {
    "\t": ("a tab", "\\t", "\\theta, \\tau, \\times or \\text"),
    "\f": ("a form feed", "\\f", "\\frac"),
    "\b": ("a backspace", "\\b", "\\beta or \\bar"),
    "\r": ("a carriage return", "\\r", "\\rho or \\right"),
}


class QuizError(ValueError):
    """A quiz that breaks the format. The message has one line per problem found, each naming the
    file, the question (number and id) and the rule, and saying what to change; `problems` holds
    the same lines. The CLI prints them as they are and exits 2: the author can fix each one."""

    def __init__(self, problems: Sequence[str]):
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: `message` starts with "Right!" or "Not quite", gives the right
    answer, and ends with the question's explanation on its own line."""

    correct: bool
    message: str


@dataclass(frozen=True)
class Question:
    """One question, as validated by `parse_quiz` (build questions through it, not by hand).

    `answer` is a choice index (single), a sorted tuple of indices (multiple) or a number
    (numeric); `choices` is empty for numeric questions, `tolerance` and `unit` are None for the
    others.
    """

    id: str
    type: str
    question: str
    answer: Union[int, Tuple[int, ...], float]
    explanation: str
    choices: Tuple[str, ...] = ()
    tolerance: Optional[float] = None
    unit: Optional[str] = None
    hint: Optional[str] = None

    def grade(self, response: Any) -> Feedback:
        """Mark a response: a choice index (single), an iterable of indices (multiple: right only
        with all and only the right ones), or a number (numeric: right within the tolerance).

        A response of the wrong kind, or an index that is not a choice, is a ValueError: the front
        ends turn typed text into responses with `parse_response`, which explains a bad one.
        """
        if self.type == "single":
            chosen = self._index(response)
            head = "Right!" if chosen == self.answer else f"Not quite: you chose {letter(chosen)}."
            return Feedback(chosen == self.answer, f"{head} {self.answer_text()}\n{self.explanation}")
        if self.type == "multiple":
            if isinstance(response, (str, bytes)) or not hasattr(response, "__iter__"):
                raise ValueError(f"Question '{self.id}' takes a list of choice indices, such as "
                                 f"[0, 2]; got {response!r}.")
            chosen = {self._index(item) for item in response}
            missed = sorted(set(self.answer) - chosen)
            wrong = sorted(chosen - set(self.answer))
            notes = []
            if missed:
                notes.append(f"you missed {_letters(missed)}")
            if wrong:
                notes.append(f"{_letters(wrong)} {'is' if len(wrong) == 1 else 'are'} not right")
            head = f"Not quite: {', and '.join(notes)}." if notes else "Right!"
            return Feedback(not notes, f"{head} {self.answer_text()}\n{self.explanation}")
        if isinstance(response, bool) or not isinstance(response, numbers.Real) or not _finite(response):
            raise ValueError(f"Question '{self.id}' takes a finite number; got {response!r}.")
        correct = self.accepts(response)
        head = "Right!" if correct else f"Not quite: you answered {format_number(response)}."
        return Feedback(correct, f"{head} {self.answer_text()}\n{self.explanation}")

    def accepts(self, value: float) -> bool:
        """|value - answer| <= tolerance. A value on the boundary counts even when binary floats
        put the difference a hair above it (0.4 - 0.3 > 0.1): the learner typed the boundary."""
        difference = abs(value - self.answer)
        return difference <= self.tolerance or math.isclose(difference, self.tolerance, rel_tol=1e-9)

    def answer_text(self) -> str:
        """The right answer as a sentence: "The answer is B: ...", "The answers are A and C.",
        "The answer is 786,432 parameters." (with the tolerance when it is not 0)."""
        if self.type == "single":
            return f"The answer is {letter(self.answer)}: {self.choices[self.answer]}"
        if self.type == "multiple":
            return f"The answers are {_letters(self.answer)}."
        text = format_number(self.answer) + (f" {self.unit}" if self.unit else "")
        if self.tolerance:
            text += f" (anything within ±{format_number(self.tolerance)} counts)"
        return f"The answer is {text}."

    def _index(self, response: Any) -> int:
        if (isinstance(response, bool) or not isinstance(response, numbers.Integral)
                or not 0 <= response < len(self.choices)):
            raise ValueError(f"Question '{self.id}' takes choice indices from 0 to "
                             f"{len(self.choices) - 1}; got {response!r}.")
        return int(response)


@dataclass(frozen=True)
class Quiz:
    """A module's quiz: `module` is its NN_slug, `questions` a tuple of `Question`."""

    module: str
    title: str
    questions: Tuple[Question, ...]
    description: Optional[str] = None


@dataclass(frozen=True)
class Score:
    """How a terminal quiz went: `right` of `total`, with `answered` and `skipped` counted; the
    rest were not reached (the learner quit)."""

    right: int
    answered: int
    total: int
    skipped: int = 0

    @property
    def not_reached(self) -> int:
        return self.total - self.answered - self.skipped

    def __str__(self) -> str:
        notes = [f"{self.skipped} skipped"] if self.skipped else []
        notes += [f"{self.not_reached} not reached"] if self.not_reached else []
        return f"Score: {self.right} of {self.total}" + (f" ({', '.join(notes)})" if notes else "")


def letter(index: int) -> str:
    """The label of choice `index`: 0 -> "A"."""
    return chr(ord("A") + index)


def _finite(value: float) -> bool:
    """math.isfinite, but False (not OverflowError) for an int too large to be a float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _letters(indices: Sequence[int]) -> str:
    """"A", "A and C", "A, C and D"."""
    labels = [letter(i) for i in indices]
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def format_number(value: float) -> str:
    """A number as a learner reads it: whole numbers with thousands separators (786,432), others
    in Python's shortest exact form (0.125, 1e-05)."""
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if float(value).is_integer() and abs(value) < 1e16:
        return f"{int(value):,}"
    return repr(float(value))


# ---------------------------------------------------------------------------------------------
# Typed answers
# ---------------------------------------------------------------------------------------------

def parse_response(question: Question, text: str) -> Union[int, Tuple[int, ...], float]:
    """What a learner typed, as a response for `Question.grade`: one letter for single ("b" or
    "B"), letters for multiple ("A,C", "a c", "AC"), a number for numeric ("1e-5", "-3",
    "25_829_888", "25,829,888", optionally followed by the question's unit).

    Anything else is a ValueError whose message says what to type.
    """
    given = text.strip()
    if question.type == "numeric":
        return _parse_number(question, given)
    count = len(question.choices)
    span = "A or B" if count == 2 else f"A to {letter(count - 1)}"
    if question.type == "single":
        if re.fullmatch(r"[A-Za-z]", given) and ord(given.upper()) - ord("A") < count:
            return ord(given.upper()) - ord("A")
        if re.fullmatch(r"\d+", given):
            raise ValueError(f"Type the letter of your choice, {span}, not its number.")
        if re.fullmatch(r"[A-Za-z]", given):
            raise ValueError(f"There is no choice {given.upper()}: type one letter, {span}.")
        raise ValueError(f"Type one letter, {span}.")
    labels = re.sub(r"[\s,;]+", "", given).upper()
    every = "A and B" if count == 2 else f"A to {letter(count - 1)}"
    if labels and re.fullmatch(r"[A-Z]+", labels):
        out_of_range = sorted({c for c in labels if ord(c) - ord("A") >= count})
        if not out_of_range:
            return tuple(sorted({ord(c) - ord("A") for c in labels}))
        raise ValueError(f"There is no choice {', '.join(out_of_range)}: the choices are {every}.")
    raise ValueError(f"Type the letters of every answer that applies, such as A,C "
                     f"(the choices are {every}).")


def _parse_number(question: Question, given: str) -> Union[int, float]:
    text = given.replace("\u2212", "-")  # a minus sign pasted from typeset text
    unit = question.unit
    if unit and text.lower().endswith(unit.lower()) and text[: -len(unit)].strip():
        text = text[: -len(unit)].strip()
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{_NUMBER_ADVICE}." if not given else f"{_NUMBER_ADVICE}; got '{given}'.")
    plain = text.replace(",", "").replace("_", "")
    if not math.isfinite(float(plain)):
        raise ValueError(f"{given} is too large; type a finite number.")
    return int(plain) if re.fullmatch(r"[+-]?\d+", plain) else float(plain)


# ---------------------------------------------------------------------------------------------
# Loading and validating
# ---------------------------------------------------------------------------------------------

class _Object(dict):
    """A JSON object that remembers keys given twice: json keeps only the last silently, so a
    pasted-in second "answer" would otherwise win unseen."""

    duplicates: Tuple[str, ...] = ()


def _object(pairs: List[Tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    seen: Dict[str, int] = {}
    for key, _ in pairs:
        seen[key] = seen.get(key, 0) + 1
    obj.duplicates = tuple(key for key, count in seen.items() if count > 1)
    return obj


def _shown(path: Path) -> str:
    """The path as the learner would type it: relative to the current folder or, failing that,
    to the course root; else as given."""
    from minimind_ref.teaching.catalog import find_course_root

    resolved = path.resolve()
    for base in (Path.cwd().resolve(), find_course_root()):
        try:
            return resolved.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)


def _json_advice(message: str) -> str:
    if "escape" in message:
        return (' In JSON a backslash starts an escape: write LaTeX commands with two, '
                'as in "$\\\\sqrt{d_k}$".')
    if "delimiter" in message:
        return " Look for a missing comma or quote just before this point."
    if "control character" in message:
        return " A line break or tab inside a string must be written as \\n or \\t."
    if "property name" in message:
        return " Keys need double quotes, and JSON allows no comma after the last item."
    return ""


def load_quiz(path: Union[str, Path]) -> Quiz:
    """Read and validate a quiz file; "module" must equal the file's stem. Every problem, JSON
    syntax included (with line and column), comes as one QuizError."""
    path = Path(path)
    shown = _shown(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise QuizError([f"{shown}: no such file."]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise QuizError([f"{shown}: cannot be read as UTF-8 text ({error})."]) from None
    try:
        data = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as error:
        raise QuizError([f"{shown}: not valid JSON at line {error.lineno}, column {error.colno}: "
                         f"{error.msg}.{_json_advice(error.msg)}"]) from None
    return parse_quiz(data, shown, stem=path.stem)


def parse_quiz(data: Any, source: str = "<quiz>", *, stem: Optional[str] = None) -> Quiz:
    """Validate quiz data (as json.load gives it) and build the Quiz. `source` names it in
    messages; `stem`, when given (load_quiz gives the file's), must equal "module".

    Raises one QuizError listing every problem found.
    """
    problems: List[str] = []
    if not isinstance(data, dict):
        raise QuizError([f'{source}: a quiz is one JSON object, {{"module": ..., "title": ..., '
                         f'"questions": [...]}}; found {_describe(data)}.'])
    top = _Place(source, problems)
    _check_keys(data, TOP_KEYS, top, "at the top level")
    module = _text(data, "module", top)
    if module is not None and stem is not None and module != stem:
        top.add(f'"module" is "{module}" but the file is {stem}.json; they must match: set '
                f'"module" to "{stem}", or rename the file.')
    title = _text(data, "title", top)
    description = _text(data, "description", top)
    questions: List[Question] = []
    value = data.get("questions")
    if "questions" not in data:
        top.missing("questions")
    elif not isinstance(value, list):
        top.add(f'"questions" must be a list of questions; found {_describe(value)}.')
    elif not value:
        top.add('"questions" is empty; add at least one question.')
    else:
        ids: Dict[str, int] = {}
        for number, item in enumerate(value, 1):
            question = _parse_question(item, number, source, ids, problems)
            if question is not None:
                questions.append(question)
    if problems:
        raise QuizError(problems)
    return Quiz(module, title, tuple(questions), description)


class _Place:
    """Where problems are found ("file, question 3 ('id')"), and the list they go to."""

    def __init__(self, where: str, problems: List[str]):
        self.where, self.problems = where, problems

    def add(self, text: str) -> None:
        self.problems.append(f"{self.where}: {text}")

    def missing(self, key: str, what: Optional[str] = None) -> None:
        self.add(f'"{key}" is missing; add it: {what or _WHAT[key]}.')


def _describe(value: Any) -> str:
    """A JSON value as a message quotes it: 'the string "B"', 'the number 1.5', 'a list'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if not value.strip():
            return "an empty string"
        return f"the string {json.dumps(value if len(value) <= 40 else value[:37] + '...')}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _check_keys(obj: dict, allowed: Sequence[str], place: _Place, kind: str) -> None:
    """Refuse keys given twice and unknown keys (typos such as "explaination" among them)."""
    for key in getattr(obj, "duplicates", ()):
        place.add(f'"{key}" is given more than once; JSON keeps only the last, so remove the others.')
    for key in obj:
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        guess = f' (did you mean "{close[0]}"?)' if close else ""
        place.add(f'unknown key "{key}"{guess}; the keys allowed {kind} are: '
                  f'{", ".join(allowed)}.')


def _text(obj: dict, key: str, place: _Place, label: Optional[str] = None) -> Optional[str]:
    """obj[key] as a non-empty string, or None after reporting why not (a missing optional key
    is no problem)."""
    if key not in obj:
        if key not in _OPTIONAL:
            place.missing(key)
        return None
    value = obj[key]
    name = label or f'"{key}"'
    if not isinstance(value, str) or not value.strip():
        place.add(f"{name} must be a non-empty string; found {_describe(value)}.")
        return None
    for problem in _latex_problems(value):
        place.add(f"{name} {problem}")
    return value


def _latex_problems(text: str) -> List[str]:
    """Characters that only a one-backslash LaTeX command in JSON would put in a text."""
    problems = []
    for char, (name, escape, commands) in _LATEX_TRAPS.items():
        if char in text:
            example = commands.split(",")[0].split(" or ")[0]
            problems.append(f'contains {name}, which is what JSON makes of "{escape}": a LaTeX '
                            f'command such as {commands} needs two backslashes in the file '
                            f'("\\{example}").')
    if any("\n" in span for span in re.findall(r"\$([^$]*)\$", text)):
        problems.append('has a line break inside $...$, which is what JSON makes of "\\n": a LaTeX '
                        'command such as \\nabla, \\neq or \\nu needs two backslashes in the file '
                        '("\\\\nabla").')
    return problems


def _parse_question(obj: Any, number: int, source: str, ids: Dict[str, int],
                    problems: List[str]) -> Optional[Question]:
    """One question, or None after reporting its problems."""
    if not isinstance(obj, dict):
        problems.append(f"{source}, question {number}: a question must be a JSON object "
                        f"{{...}}; found {_describe(obj)}.")
        return None
    qid = obj.get("id")
    where = f"{source}, question {number}"
    place = _Place(where + (f" ('{qid}')" if isinstance(qid, str) and qid else ""), problems)
    before = len(problems)

    if "id" not in obj:
        place.missing("id")
    elif not isinstance(qid, str) or not re.match(ID_PATTERN, qid):
        place.add(f'"id" must be lowercase letters, digits and hyphens, starting with a letter or '
                  f'digit, such as "scale-factor"; found {_describe(qid)}.')
    elif qid in ids:
        place.add(f'the id "{qid}" is already used by question {ids[qid]}; ids must be unique.')
    else:
        ids[qid] = number

    qtype = obj.get("type")
    if "type" not in obj:
        place.missing("type")
    elif qtype not in QUESTION_TYPES:
        place.add(f'"type" must be "single", "multiple" or "numeric"; found {_describe(qtype)}.')
    known = qtype in QUESTION_TYPES
    _check_keys(obj, QUESTION_KEYS[qtype] if known else _ANY_QUESTION_KEYS, place,
                f'in a "{qtype}" question' if known else "in a question")

    text = _text(obj, "question", place)
    explanation = _text(obj, "explanation", place)
    hint = _text(obj, "hint", place)
    choices, answer, tolerance, unit = (), None, None, None
    if known and "answer" not in obj:
        place.missing("answer", _ANSWER_WHAT[qtype])
    if qtype in ("single", "multiple"):
        choices = _choices(obj, place)
        count = len(obj["choices"]) if isinstance(obj.get("choices"), list) else None
        if "answer" in obj:
            answer = (_single_answer if qtype == "single" else _multiple_answer)(
                obj["answer"], count, place)
    elif qtype == "numeric":
        if "answer" in obj:
            answer = _number(obj["answer"], '"answer"', place)
        if "tolerance" in obj:
            tolerance = _number(obj["tolerance"], '"tolerance"', place)
            if tolerance is not None and tolerance < 0:
                place.add(f'"tolerance" is {tolerance!r}; it must be 0 or more (0: the answer '
                          f'must be exact).')
        else:
            place.missing("tolerance")
        unit = _text(obj, "unit", place)
    if len(problems) > before:
        return None
    return Question(qid, qtype, text, answer, explanation, choices, tolerance, unit, hint)


def _choices(obj: dict, place: _Place) -> Tuple[str, ...]:
    """The choices as a tuple, or () after reporting their problems."""
    if "choices" not in obj:
        place.missing("choices")
        return ()
    value = obj["choices"]
    if not isinstance(value, list):
        place.add(f'"choices" must be a list of texts, such as ["first", "second"]; '
                  f'found {_describe(value)}.')
        return ()
    before = len(place.problems)
    if len(value) < 2:
        place.add(f'"choices" has {len(value)}; a question needs at least 2.')
    if len(value) > MAX_CHOICES:
        place.add(f'"choices" has {len(value)}; at most {MAX_CHOICES} (labelled A to '
                  f'{letter(MAX_CHOICES - 1)}).')
    seen: Dict[str, int] = {}
    for index, choice in enumerate(value):
        label = f"choice {letter(index)}" if index < 26 else f"choice {index}"
        if _text({"choice": choice}, "choice", place, label) is None:
            continue
        if choice.strip() in seen:
            place.add(f'choices {letter(seen[choice.strip()])} and {letter(index)} are the same '
                      f'({_describe(choice)}); make each choice different.')
        seen.setdefault(choice.strip(), index)
    return tuple(value) if len(place.problems) == before else ()


def _index_problem(value: Any, count: Optional[int], name: str, verb: str = "is") -> Optional[str]:
    """Why `value` is not a choice index among `count` choices (count None: unknown), or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        guess = ""
        if isinstance(value, str) and re.fullmatch(r"\s*[A-Za-z]\s*", value):
            guess = f" (for choice {value.strip().upper()}, write {ord(value.strip().upper()) - 65})"
        return (f"{name} must be a choice index, a whole number counting from 0; "
                f"found {_describe(value)}{guess}.")
    if count is not None and value >= count:
        return f"{name} {verb} {value} but there are only {count} choices (0 to {count - 1})."
    if value < 0:
        span = f" (0 to {count - 1})" if count is not None else ""
        return f"{name} {verb} {value}; choices are counted from 0{span}."
    return None


def _single_answer(value: Any, count: Optional[int], place: _Place) -> Optional[int]:
    if isinstance(value, list):
        place.add('"answer" of a "single" question is one index, not a list; for several right '
                  'choices use "type": "multiple".')
        return None
    problem = _index_problem(value, count, '"answer"')
    if problem:
        place.add(problem)
        return None
    return value


def _multiple_answer(value: Any, count: Optional[int], place: _Place) -> Optional[Tuple[int, ...]]:
    if not isinstance(value, list):
        place.add(f'"answer" of a "multiple" question must be a list of choice indices, such as '
                  f'[0, 2]; found {_describe(value)}.')
        return None
    if not value:
        place.add('"answer" is an empty list; list every right choice, such as [0, 2].')
        return None
    ok = True
    for item in value:
        problem = _index_problem(item, count, '"answer"', verb="contains")
        if problem:
            place.add(problem.replace("must be a choice index, a whole number",
                                      "must list choice indices, whole numbers", 1))
            ok = False
    repeated = sorted({item for item in value if isinstance(item, int) and value.count(item) > 1})
    if repeated:
        place.add(f'"answer" lists {", ".join(map(str, repeated))} more than once; list each right '
                  f'choice once.')
        ok = False
    return tuple(sorted(value)) if ok else None


def _number(value: Any, name: str, place: _Place) -> Optional[Union[int, float]]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        quoted = isinstance(value, str) and _NUMBER.fullmatch(value.strip()) is not None
        place.add(f"{name} must be a number; found {_describe(value)}"
                  f"{' (write it without quotes)' if quoted else ''}.")
        return None
    if not _finite(value):
        place.add(f"{name} must be a finite number; found {value!r}.")
        return None
    return value


# ---------------------------------------------------------------------------------------------
# JSON Schema: the same format for editors and other tools (the validator above adds the rules a
# schema cannot state, and friendlier messages)
# ---------------------------------------------------------------------------------------------

_NONEMPTY = {"type": "string", "pattern": r"\S"}
_COMMON = {"id": {"type": "string", "pattern": ID_PATTERN}, "question": _NONEMPTY,
           "explanation": _NONEMPTY, "hint": _NONEMPTY}
_CHOICES = {"type": "array", "items": _NONEMPTY, "minItems": 2, "maxItems": MAX_CHOICES,
            "uniqueItems": True}
_INDEX = {"type": "integer", "minimum": 0}


def _question_schema(qtype: str, answer: dict, **extra: dict) -> dict:
    required = [k for k in QUESTION_KEYS[qtype] if k not in _OPTIONAL]
    properties = {**_COMMON, "type": {"const": qtype}, "answer": answer, **extra}
    assert set(properties) == set(QUESTION_KEYS[qtype])
    return {"type": "object", "required": required, "additionalProperties": False,
            "properties": properties}


QUIZ_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Attention Lab quiz (quizzes/NN_slug.json)",
    "type": "object",
    "required": ["module", "title", "questions"],
    "additionalProperties": False,
    "properties": {
        "module": _NONEMPTY,
        "title": _NONEMPTY,
        "description": _NONEMPTY,
        "questions": {"type": "array", "minItems": 1, "items": {"oneOf": [
            _question_schema("single", _INDEX, choices=_CHOICES),
            _question_schema("multiple", {"type": "array", "items": _INDEX, "minItems": 1,
                                          "uniqueItems": True}, choices=_CHOICES),
            _question_schema("numeric", {"type": "number"},
                             tolerance={"type": "number", "minimum": 0}, unit=_NONEMPTY),
        ]}},
    },
}


# ---------------------------------------------------------------------------------------------
# Plain text and the terminal runner
# ---------------------------------------------------------------------------------------------

def _kind_note(question: Question, terminal: bool = False) -> Optional[str]:
    if question.type == "multiple":
        return "(choose all that apply, e.g. A,C)" if terminal else "(choose all that apply)"
    if question.type == "numeric":
        return f"(a number; unit: {question.unit})" if question.unit else "(a number)"
    return None


def quiz_text(quiz: Quiz) -> str:
    """The questions as plain text, without answers: what a notebook stores beside the widget so
    that it still shows the quiz when read without a kernel. Deterministic, unwrapped."""
    count = len(quiz.questions)
    lines = [f"Quiz: {quiz.title} ({count} question{'s' if count != 1 else ''})"]
    if quiz.description:
        lines.append(quiz.description)
    for number, question in enumerate(quiz.questions, 1):
        note = _kind_note(question)
        lines += ["", f"{number}. {question.question}" + (f" {note}" if note else "")]
        lines += [f"   {letter(i)}. {choice}" for i, choice in enumerate(question.choices)]
    return "\n".join(line.replace("\n", "\n   ") for line in lines)


_INSTRUCTIONS = ("Type your answer and press Enter: a letter, letters such as A,C, or a number. "
                 "? shows a hint, s or Enter skips, q quits.")


def run_terminal_quiz(path_or_quiz: Union[str, Path, Quiz], *,
                      input_fn: Callable[[str], str] = input,
                      print_fn: Callable[..., None] = print,
                      width: Optional[int] = None) -> Score:
    """Take a quiz in the terminal, one question at a time, and return the score.

    An answer that cannot be read is explained and asked again (it does not count); "?" shows the
    hint, "s" or an empty line skips, "q", end of input (Ctrl-D) or Ctrl-C stops with the score
    so far. Text is wrapped to `width` (default: the terminal's, else 80). A malformed quiz file
    raises QuizError before anything is shown.
    """
    quiz = path_or_quiz if isinstance(path_or_quiz, Quiz) else load_quiz(path_or_quiz)
    width = width or shutil.get_terminal_size((80, 24)).columns

    def say(text: str = "", indent: str = "", hanging: Optional[str] = None) -> None:
        for paragraph in text.split("\n"):
            lines = textwrap.wrap(paragraph, width, initial_indent=indent,
                                  subsequent_indent=hanging or indent, break_long_words=False,
                                  break_on_hyphens=False)
            for line in lines or [""]:
                print_fn(line)

    say(quiz.title)
    say("=" * min(len(quiz.title), width))
    if quiz.description:
        say(quiz.description)
    say(_INSTRUCTIONS)
    total, right, answered, skipped = len(quiz.questions), 0, 0, 0
    for number, question in enumerate(quiz.questions, 1):
        say()
        say(f"Question {number} of {total}")
        say(question.question)
        for index, choice in enumerate(question.choices):
            say(f"{letter(index)}. {choice}", indent="  ", hanging="     ")
        note = _kind_note(question, terminal=True)
        if note:
            say(note)
        outcome = _ask(question, input_fn, print_fn, say)
        if outcome is None:
            say(f"Stopped at question {number} of {total}.")
            break
        if outcome == "skip":
            say("Skipped.")
            skipped += 1
            continue
        answered += 1
        right += outcome.correct
        say(outcome.message)
    score = Score(right, answered, total, skipped)
    say()
    say(str(score))
    return score


def _ask(question: Question, input_fn: Callable[[str], str], print_fn: Callable[..., None],
         say: Callable[[str], None]) -> Union[Feedback, str, None]:
    """Read answers until one can be graded: its Feedback, "skip", or None to stop."""
    while True:
        try:
            text = input_fn("Your answer: ").strip()
        except (EOFError, KeyboardInterrupt):
            print_fn()  # the prompt left the cursor mid-line
            return None
        if text.lower() in ("q", "quit"):
            return None
        if text.lower() in ("", "s", "skip"):
            return "skip"
        if text == "?":
            say(f"Hint: {question.hint}" if question.hint else "There is no hint for this question.")
            continue
        try:
            return question.grade(parse_response(question, text))
        except ValueError as error:
            say(str(error))


def _main(argv: List[str]) -> int:
    """`check FILE...`: validate quiz files (0 if all are valid, else their problems and 2);
    `schema`: print QUIZ_SCHEMA."""
    if argv[:1] == ["schema"] and len(argv) == 1:
        print(json.dumps(QUIZ_SCHEMA, indent=2, ensure_ascii=False))
        return 0
    if argv[:1] != ["check"] or len(argv) < 2:
        print("usage: python -m minimind_ref.teaching.quiz {check FILE... | schema}", file=sys.stderr)
        return 2
    failed = False
    for name in argv[1:]:
        try:
            quiz = load_quiz(name)
        except QuizError as error:
            print(error, file=sys.stderr)
            failed = True
        else:
            print(f"{name}: OK, {len(quiz.questions)} questions.")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
