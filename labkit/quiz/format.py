"""Quiz files: loading and validating quizzes/NN_slug.json, and the JSON Schema of the format.

Each module has quizzes/NN_slug.json, data only (quizzes/README.md documents the format for
authors); `load_quiz` and `parse_quiz` turn one into a `Quiz` (model.py) or say everything
that is wrong with it.

Why a hand-written validator as well as the JSON Schema `QUIZ_SCHEMA`: the schema lets an editor
check a file as it is typed, but it cannot say that an answer index lies within the choices, that
ids are unique, or that "module" matches the file name, and its messages describe the schema rather
than the fix. The validator checks those rules too, finds every problem in one pass (an author fixes
a file in one go, not one error per run) and words each one as what to change. It also catches the
trap of LaTeX in JSON: "$\\frac{a}{b}$" written with one backslash is a form feed and "rac".
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labkit.quiz.model import _NUMBER, Check, Question, Quiz, _finite, letter

QUESTION_TYPES = ("single", "multiple", "numeric")
# Choices are labelled A, B, C...; twelve (A to L) keeps the labels clear of the terminal's
# q (quit) and s (skip) keys, and more than that is a poor question anyway.
MAX_CHOICES = 12
ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
# A quiz file is tens of KiB; a cap keeps a wrong or hostile file from filling memory before it is read.
MAX_FILE_BYTES = 2**20
# A check is a few lines that compute one answer (quizzes/README.md, "Checks").
MAX_CHECK_CHARS = 3000

TOP_KEYS = ("module", "title", "description", "questions")
QUESTION_KEYS = {
    "single": ("id", "type", "question", "choices", "answer", "explanation", "hint", "check",
               "unchecked", "deep_dive"),
    "multiple": ("id", "type", "question", "choices", "answer", "explanation", "hint", "check",
                 "unchecked", "deep_dive"),
    "numeric": ("id", "type", "question", "answer", "tolerance", "unit", "explanation", "hint",
                "check", "unchecked", "deep_dive"),
}
CHECK_KEYS = {
    "single": ("code", "choices"),
    "multiple": ("code", "choices", "unchecked"),
    "numeric": ("code", "value", "within"),
}
_OPTIONAL = {"description", "hint", "unit", "check", "unchecked", "deep_dive"}
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
    "value": "a Python expression that computes the answer, such as \"mm.MiniMindConfig().head_dim\"",
}
_ANSWER_WHAT = {
    "single": "the index of the right choice, counting from 0",
    "multiple": "a list of the indices of every right choice, such as [0, 2]",
    "numeric": "the right number",
}

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
        self.problems = tuple(_printable(str(problem)) for problem in problems)
        super().__init__("\n".join(self.problems))


def _printable(text: str) -> str:
    """`text` with lone surrogates written as escapes (\\udc80): they come from a "\\ud800" in
    a file or an undecodable file name, and would make printing the message itself fail."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _Object(dict):
    """A JSON object that remembers keys given twice: json keeps only the last silently, so a
    pasted-in second "answer" would otherwise win unseen."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    seen: dict[str, int] = {}
    for key, _ in pairs:
        seen[key] = seen.get(key, 0) + 1
    obj.duplicates = tuple(key for key, count in seen.items() if count > 1)
    return obj


def _shown(path: Path) -> str:
    """The path as the learner would type it: relative to the current folder or, failing that,
    to the course root; else as given."""
    from labkit.syllabus import CourseError, find_course_root

    resolved = path.resolve()
    try:
        bases = [Path.cwd().resolve(), find_course_root()]
    except CourseError:  # a quiz file outside any course: shown relative to here, or as given
        bases = [Path.cwd().resolve()]
    for base in bases:
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


class _NotJSON(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON has no such numbers."""


def _refuse_constant(name: str) -> Any:
    raise _NotJSON(name)


def load_quiz(path: str | Path) -> Quiz:
    """Read and validate a quiz file; "module" must equal the file's stem. Every problem, JSON
    syntax included (with line and column), comes as one QuizError: so do a file too large, nested
    too deep, or holding NaN or Infinity. Loading never runs a question's "check"."""
    path = Path(path)
    shown = _shown(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise QuizError([f"{shown}: {size:,} bytes; a quiz file is at most {MAX_FILE_BYTES:,} "
                             f"(the course's are tens of KiB). Is it the right file?"])
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise QuizError([f"{shown}: no such file."]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise QuizError([f"{shown}: cannot be read as UTF-8 text ({error})."]) from None
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise QuizError([f"{shown}: not valid JSON at line {error.lineno}, column {error.colno}: "
                         f"{error.msg}.{_json_advice(error.msg)}"]) from None
    except _NotJSON as error:
        raise QuizError([f"{shown}: holds {error}, which is not a JSON number (Python's json "
                         f"reads it, other tools do not); write a finite number."]) from None
    except RecursionError:
        raise QuizError([f"{shown}: lists or objects nested too deep to read; a quiz nests "
                         f"four levels (quiz, questions, question, choices)."]) from None
    except ValueError as error:  # an integer of thousands of digits, past Python's limit
        raise QuizError([f"{shown}: cannot be read: {error}."]) from None
    return parse_quiz(data, shown, stem=path.stem)


def parse_quiz(data: Any, source: str = "<quiz>", *, stem: str | None = None) -> Quiz:
    """Validate quiz data (as json.load gives it) and build the Quiz. `source` names it in
    messages; `stem`, when given (load_quiz gives the file's), must equal "module".

    Raises one QuizError listing every problem found.
    """
    problems: list[str] = []
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
    questions: list[Question] = []
    value = data.get("questions")
    if "questions" not in data:
        top.missing("questions")
    elif not isinstance(value, list):
        top.add(f'"questions" must be a list of questions; found {_describe(value)}.')
    elif not value:
        top.add('"questions" is empty; add at least one question.')
    else:
        ids: dict[str, int] = {}
        for number, item in enumerate(value, 1):
            question = _parse_question(item, number, source, ids, problems)
            if question is not None:
                questions.append(question)
    if problems:
        raise QuizError(problems)
    return Quiz(module, title, tuple(questions), description)


class _Place:
    """Where problems are found ("file, question 3 ('id')"), and the list they go to."""

    def __init__(self, where: str, problems: list[str]):
        self.where, self.problems = where, problems

    def add(self, text: str) -> None:
        self.problems.append(f"{self.where}: {text}")

    def missing(self, key: str, what: str | None = None) -> None:
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


def _text(obj: dict, key: str, place: _Place, label: str | None = None) -> str | None:
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
    problems = _latex_problems(value) + _character_problems(value)
    for problem in problems:
        place.add(f"{name} {problem}")
    return None if problems else value


def _character_problems(text: str) -> list[str]:
    """Characters a text must not hold: half a UTF-16 pair (from a "\\ud800" escape), which no
    terminal or notebook can show, and control characters other than the line break, which
    would not show either, or would drive the terminal (an escape sequence)."""
    problems = []
    surrogates = sorted({c for c in text if "\ud800" <= c <= "\udfff"})
    if surrogates:
        problems.append(f"contains a lone surrogate ({', '.join(f'U+{ord(c):04X}' for c in surrogates[:3])}), "
                        f"half of a UTF-16 pair, which cannot be shown; write the character itself.")
    controls = sorted({c for c in text if (c < " " and c not in "\n\t\f\b\r")
                       or "\x7f" <= c <= "\x9f"})
    if controls:
        problems.append(f"contains the control character "
                        f"{', '.join(f'U+{ord(c):04X}' for c in controls[:3])}, which would not "
                        f"show as text; remove it.")
    return problems


def _latex_problems(text: str) -> list[str]:
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


def _parse_question(obj: Any, number: int, source: str, ids: dict[str, int],
                    problems: list[str]) -> Question | None:
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
    check = None
    if known and "check" in obj:
        count = len(choices) if choices else None
        check = _check(obj["check"], qtype, count, answer, place)
    unchecked = _text(obj, "unchecked", place)
    deep_dive = obj.get("deep_dive", False)
    if not isinstance(deep_dive, bool):
        place.add(f'"deep_dive" must be true (the question is on a deep dive) or false (on the core, '
                  f'the default); found {_describe(deep_dive)}.')
    if "check" in obj and "unchecked" in obj:
        place.add('has both "check" and "unchecked"; keep "check" if it decides the question, '
                  'else "unchecked" with the reason no code can.')
    if len(problems) > before:
        return None
    return Question(qid, qtype, text, answer, explanation, choices, tolerance, unit, hint, check,
                    unchecked, deep_dive)


def _check(value: Any, qtype: str, count: int | None, answer: Any, place: _Place) -> Check | None:
    """A question's "check" (quizzes/README.md, "Checks"): its code and expressions must compile;
    they are not run here (labkit/quiz/checks.py runs them, in the tests)."""
    example = ('{"value": "mm.MiniMindConfig().head_dim"}' if qtype == "numeric"
               else '{"choices": {"B": "torch.equal(a, b)"}}')
    if not isinstance(value, dict):
        place.add(f'"check" must be an object, such as {example}; found {_describe(value)}.')
        return None
    before = len(place.problems)
    _check_keys(value, CHECK_KEYS[qtype], place, f'in the "check" of a "{qtype}" question')
    code = _code(value["code"], place) if "code" in value else ""
    expressions: list[tuple[int | None, str]] = []
    within = None
    if qtype == "numeric":
        if "value" not in value:
            place.add(f'"check" has no "value"; add it: {_WHAT["value"]}.')
        else:
            expressions.append((None, value["value"]))
        if "within" in value:
            within = _number(value["within"], '"check" "within"', place)
            if within is not None and within < 0:
                place.add(f'"check" "within" is {within!r}; it must be 0 or more.')
    else:
        expressions += _check_choices(value.get("choices"), "choices" in value, qtype, count,
                                      answer, place)
    reasons = _unchecked_choices(value, qtype, count, dict(expressions), place)
    compiled = []
    for index, expression in expressions:
        name = '"check" "value"' if index is None else f'"check" choice {letter(index)}'
        if _text({"e": expression}, "e", place, name) is not None:
            if _compiles(expression, "eval", name, place):
                compiled.append((index, expression))
    size = len(code) + sum(len(e) for _, e in expressions if isinstance(e, str))
    if size > MAX_CHECK_CHARS:
        place.add(f'"check" holds {size:,} characters of code; keep a check under '
                  f'{MAX_CHECK_CHARS:,}: move what it needs into minimind_ref or labkit.')
    if len(place.problems) > before:
        return None
    if qtype == "numeric":
        return Check(code=code, value=compiled[0][1], within=within)
    return Check(code=code, choices=tuple(sorted(compiled)), unchecked=tuple(sorted(reasons.items())))


def _code(value: Any, place: _Place) -> str:
    """"code": a string or a list of lines, joined; "" after reporting a problem."""
    lines = value if isinstance(value, list) else [value]
    if not lines or not all(isinstance(line, str) for line in lines):
        place.add(f'"check" "code" must be a string or a non-empty list of strings (one line of '
                  f'Python each); found {_describe(value)}.')
        return ""
    code = "\n".join(lines)
    problems = _character_problems(code)
    for problem in problems:
        place.add(f'"check" "code" {problem}')
    if problems or not _compiles(code, "exec", '"check" "code"', place):
        return ""
    return code


def _compiles(source: str, mode: str, name: str, place: _Place) -> bool:
    """Whether `source` is valid Python (compiling runs nothing); else the problem is reported."""
    if len(source) > MAX_CHECK_CHARS:
        return True  # reported once, by size, rather than compiled
    try:
        compile(source, "<check>", mode)
    except SyntaxError as error:
        where = f" (line {error.lineno})" if mode == "exec" and error.lineno else ""
        kind = "a valid Python expression" if mode == "eval" else "valid Python"
        place.add(f"{name} is not {kind}{where}: {error.msg}.")
        return False
    except (ValueError, RecursionError, MemoryError, OverflowError) as error:
        place.add(f"{name} cannot be compiled ({type(error).__name__}: {error}); keep it short "
                  f"and plain.")
        return False
    return True


def _check_choices(value: Any, given: bool, qtype: str, count: int | None, answer: Any,
                   place: _Place) -> list[tuple[int, str]]:
    """"check" "choices": {letter: expression}, for the choices the code can decide; a single
    question's must include the right choice."""
    if not given:
        place.add('"check" has no "choices"; add them: for each choice the code can decide, its '
                  'letter and an expression that is True exactly when that choice is true, such '
                  'as {"B": "torch.equal(a, b)"}.')
        return []
    if not isinstance(value, dict) or not value:
        place.add(f'"check" "choices" must be a non-empty object from choice letters to Python '
                  f'expressions, such as {{"B": "torch.equal(a, b)"}}; found {_describe(value)}.')
        return []
    found = []
    for key, expression in value.items():
        last = letter((count or MAX_CHOICES) - 1)
        if not (isinstance(key, str) and len(key) == 1 and "A" <= key <= last):
            place.add(f'"check" "choices" has the key {json.dumps(key)}; its keys are choice '
                      f'letters, A to {last}.')
            continue
        found.append((ord(key) - ord("A"), expression))
    if qtype == "single" and isinstance(answer, int) and found and answer not in dict(found):
        place.add(f'"check" "choices" leaves out {letter(answer)}, the right choice; a check of a '
                  f'"single" question decides the right choice at least.')
    return found


def _unchecked_choices(check: dict, qtype: str, count: int | None, decided: dict, place: _Place) -> dict[int, str]:
    """A multiple-choice check's "unchecked": {letter: why no code can decide that choice}. Every
    choice is decided by an expression or has its reason here, never both, so that a check is
    held against every change of the key (tests/course/test_quiz_checks.py)."""
    if qtype != "multiple":
        return {}
    value = check.get("unchecked", {})
    if not isinstance(value, dict) or ("unchecked" in check and not value):
        place.add(f'"check" "unchecked" must be a non-empty object from choice letters to the reason no '
                  f'code can decide that choice, such as {{"D": "a fact about GPU hardware"}}; found '
                  f'{_describe(value)}.')
        return {}
    last = letter((count or MAX_CHOICES) - 1)
    reasons = {}
    for key, reason in value.items():
        if not (isinstance(key, str) and len(key) == 1 and "A" <= key <= last):
            place.add(f'"check" "unchecked" has the key {json.dumps(key)}; its keys are choice letters, '
                      f'A to {last}.')
        elif ord(key) - ord("A") in decided:
            place.add(f'"check" decides choice {key} and also gives a reason it cannot; keep one.')
        elif _text({"r": reason}, "r", place, f'"check" "unchecked" {key}') is not None:
            reasons[ord(key) - ord("A")] = reason
    if count is not None and isinstance(check.get("choices"), dict) and check["choices"]:
        silent = [letter(i) for i in range(count) if i not in decided and i not in reasons
                  and letter(i) not in value]
        if silent:
            place.add(f'"check" leaves choice{"s" if len(silent) > 1 else ""} {", ".join(silent)} '
                      f'undecided; give each an expression in "choices", or in "unchecked" the reason no '
                      f'code can decide it (a wrong key must not pass unseen).')
    return reasons


def _choices(obj: dict, place: _Place) -> tuple[str, ...]:
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
    seen: dict[str, int] = {}
    for index, choice in enumerate(value):
        label = f"choice {letter(index)}" if index < 26 else f"choice {index}"
        if _text({"choice": choice}, "choice", place, label) is None:
            continue
        if choice.strip() in seen:
            place.add(f'choices {letter(seen[choice.strip()])} and {letter(index)} are the same '
                      f'({_describe(choice)}); make each choice different.')
        seen.setdefault(choice.strip(), index)
    return tuple(value) if len(place.problems) == before else ()


def _index_problem(value: Any, count: int | None, name: str, verb: str = "is") -> str | None:
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


def _single_answer(value: Any, count: int | None, place: _Place) -> int | None:
    if isinstance(value, list):
        place.add('"answer" of a "single" question is one index, not a list; for several right '
                  'choices use "type": "multiple".')
        return None
    problem = _index_problem(value, count, '"answer"')
    if problem:
        place.add(problem)
        return None
    return value


def _multiple_answer(value: Any, count: int | None, place: _Place) -> tuple[int, ...] | None:
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


def _number(value: Any, name: str, place: _Place) -> int | float | None:
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
_CODE = {"oneOf": [_NONEMPTY, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}


def _check_schema(qtype: str) -> dict:
    if qtype == "numeric":
        properties = {"code": _CODE, "value": _NONEMPTY, "within": {"type": "number", "minimum": 0}}
        required = ["value"]
    else:
        by_letter = {"type": "object", "minProperties": 1, "additionalProperties": False,
                     "patternProperties": {f"^[A-{letter(MAX_CHOICES - 1)}]$": _NONEMPTY}}
        properties = {"code": _CODE, "choices": by_letter}
        if qtype == "multiple":
            properties["unchecked"] = by_letter
        required = ["choices"]
    assert set(properties) == set(CHECK_KEYS[qtype])
    return {"type": "object", "required": required, "additionalProperties": False,
            "properties": properties}


def _question_schema(qtype: str, answer: dict, **extra: dict) -> dict:
    required = [k for k in QUESTION_KEYS[qtype] if k not in _OPTIONAL]
    properties = {**_COMMON, "type": {"const": qtype}, "answer": answer,
                  "check": _check_schema(qtype), "unchecked": _NONEMPTY, "deep_dive": {"type": "boolean"},
                  **extra}
    assert set(properties) == set(QUESTION_KEYS[qtype])
    return {"type": "object", "required": required, "additionalProperties": False,
            "properties": properties, "not": {"required": ["check", "unchecked"]}}


QUIZ_SCHEMA: dict[str, Any] = {
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
