"""Every quiz file is valid and has the course's mix of questions; every question has a hint that
points where to look without giving the answer away, and both front ends show it after a first wrong
try; a question on a deep dive's material is marked so, and one marked core is about the core.
Whether the answers are true is tests/course/test_quiz_checks.py's job: it runs each question's
"check"."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

from labkit.course.clock import course_clock, quiz_questions
from labkit.course.glossary import load_glossary
from labkit.quiz import Tries, load_quiz, run_terminal_quiz
from labkit.quiz.checks import mentions
from labkit.quiz.markdown import plain_text

ROOT = Path(__file__).resolve().parents[2]
QUIZZES = sorted((ROOT / "quizzes").glob("*.json"))
QUESTIONS = [(path.stem, question) for path in QUIZZES for question in load_quiz(path).questions]


def _id(value):
    return getattr(value, "id", None) or str(value)


def test_there_are_quizzes():
    assert QUIZZES


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.stem)
def test_quiz_is_valid_and_mixes_question_types(path):
    quiz = load_quiz(path)
    assert len(quiz.questions) >= 8, f"{path.name}: a quiz has at least 8 questions"
    assert {q.type for q in quiz.questions} == {"single", "multiple", "numeric"}, (
        f"{path.name}: a quiz mixes single-choice, multiple-choice and numeric questions")


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.stem)
def test_every_numeric_answer_is_computed_by_its_check(path):
    """A number code can compute is computed once, by the question's own check, never typed twice."""
    unchecked = [q.id for q in load_quiz(path).questions if q.type == "numeric" and q.check is None]
    assert not unchecked, f"{path.name}: numeric questions without a check: {unchecked}"


# --- hints ------------------------------------------------------------------------------------------

def test_every_question_has_a_hint():
    """The instructions promise one after a first wrong answer (quizzes/README.md, "Questions")."""
    silent = [f"{module} '{q.id}'" for module, q in QUESTIONS if not q.hint]
    assert not silent, f"questions without a hint: {silent}"


def _words(text: str) -> str:
    """A text as a reader sees it, for comparing: plain, lower case, single spaces."""
    return " ".join(plain_text(text).lower().split())


@pytest.mark.parametrize(("module", "question"), QUESTIONS, ids=_id)
def test_a_hint_never_holds_the_answer(module, question):
    """Neither the keyed choice's text nor the keyed number: a hint says where to look."""
    hint = _words(question.hint)
    if question.type == "numeric":
        decimals = len(repr(float(question.answer)).split(".")[1].rstrip("0")) if not float(
            question.answer).is_integer() else None
        assert not mentions(plain_text(question.hint), question.answer, decimals), (
            f"{module} '{question.id}': the hint states the answer {question.answer}")
        return
    keyed = [question.answer] if question.type == "single" else list(question.answer)
    for index in keyed:
        choice = _words(question.choices[index])
        assert not re.search(rf"(?<!\w){re.escape(choice)}(?!\w)", hint), (
            f"{module} '{question.id}': the hint quotes the right choice {choice!r}")


@cache
def _sections(number: str) -> tuple[tuple[str, bool], ...]:
    """Module `number`'s notebook headings, with whether each is in a deep dive."""
    (path,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    return tuple((line.lstrip("#").strip(), "deep-dive" in cell.metadata.get("tags", []))
                 for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown"
                 for line in cell.source.splitlines() if re.match(r"#{2,3} ", line))


def _cited(module: str, hint: str) -> list[tuple[str, str, bool | None]]:
    """Each place the hint sends the learner: (what it says, the module, whether that place is in a
    deep dive, or None when no notebook heading matches)."""
    places = []
    for other, first, second in re.findall(r"(?:[Mm]odule (\d\d)'s )?[Ss]ections? (\d+)(?: and (\d+))?", hint):
        for number in filter(None, (first, second)):
            where = other or module[:2]
            found = [deep for title, deep in _sections(where) if title.startswith(f"{number}. ")]
            places.append((f"section {number}", where, found[0] if found else None))
    for title in re.findall(r"deep dive \*([^*]+)\*", hint):
        found = [deep for heading, deep in _sections(module[:2])
                 if plain_text(heading).lower().lstrip("0123456789. ").startswith(f"deep dive: {title.lower()}")]
        places.append((f"the deep dive *{title}*", module[:2], found[0] if found else None))
    for title in re.findall(r"exercise \*([^*]+)\*", hint):
        found = [deep for heading, deep in _sections(module[:2])
                 if re.match(rf"Exercise \d+: {re.escape(title)}", plain_text(heading), re.I)]
        places.append((f"the exercise *{title}*", module[:2], found[0] if found else None))
    for other in re.findall(r"[Mm]odule (\d\d)\b", hint):
        places.append((f"module {other}", other, False if list((ROOT / "notebooks").glob(f"{other}_*")) else None))
    return places


@pytest.mark.parametrize(("module", "question"), QUESTIONS, ids=_id)
def test_a_hint_sends_the_learner_to_a_place_that_exists_on_the_questions_route(module, question):
    """A section, deep dive or exercise a hint names is a heading of that notebook, so a renumbered
    notebook fails here rather than leaving a hint that points nowhere. The places agree with the
    question's marking: a question on the core sends the learner to the core only (which the express
    route reads), and one marked "deep_dive" names the deep dive that teaches it."""
    places = _cited(module, question.hint)
    missing = [place for place, _, deep in places if deep is None]
    assert not missing, f"{module} '{question.id}': the hint names {missing}, which no heading holds"
    deep = [f"{place} of module {where}" for place, where, in_deep in places if in_deep]
    if question.deep_dive:
        assert deep, f"{module} '{question.id}' is marked deep_dive; its hint names no deep dive: {places}"
    else:
        assert not deep, f"{module} '{question.id}' is on the core, and its hint sends it to a deep dive: {deep}"


def _wrong(question):
    """A first wrong answer, as a learner would type it."""
    if question.type == "numeric":
        return str(question.answer + 10 * (question.tolerance or 0) + 1e6)
    right = [question.answer] if question.type == "single" else list(question.answer)
    others = [i for i in range(len(question.choices)) if i not in right]
    chosen = others[:1] if question.type == "single" else right[1:] + others[:1] if others else right[1:]
    return ",".join(chr(ord("A") + i) for i in (chosen or right[:1]))


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.stem)
def test_both_front_ends_show_every_hint_after_a_first_wrong_try(path):
    """The terminal prints the hint after a first wrong answer (then nothing of the answer), and the
    widget shows it in the question's feedback."""
    import ipywidgets as widgets

    from labkit.quiz import parse_response
    from labkit.quiz.widget import markup, quiz_widget

    quiz = load_quiz(path)
    lines: list[str] = []
    answers = [text for question in quiz.questions for text in (_wrong(question), "s")]
    run_terminal_quiz(quiz, input_fn=lambda prompt: answers.pop(0), print_fn=lambda *a: lines.append(" ".join(a)),
                      width=10_000, styles=False)
    printed = "\n".join(lines)
    box = quiz_widget(quiz)
    for question, view in zip(quiz.questions, box.children[1:-1]):
        hint_line = f"Hint: {plain_text(question.hint)}"
        assert hint_line in lines, f"{path.stem} '{question.id}': the terminal did not show its hint"
        after = printed.split(hint_line, 1)[1].split("Question ", 1)[0]
        assert question.answer_text() not in after and plain_text(question.explanation) not in after
        feedback = [w for w in view.children if isinstance(w, widgets.HTMLMath)][-1]
        response = parse_response(question, _wrong(question))
        if question.type == "single":
            [w for w in view.children if isinstance(w, widgets.RadioButtons)][0].value = response
        elif question.type == "multiple":
            boxes = [w for child in view.children if isinstance(child, widgets.VBox) for w in child.children]
            for index, checkbox in enumerate(boxes):
                checkbox.value = index in response
        else:
            [w for child in view.children if isinstance(child, widgets.HBox) for w in child.children
             if isinstance(w, widgets.Text)][0].value = _wrong(question)
        [w for child in view.children if isinstance(child, widgets.HBox) for w in child.children
         if isinstance(w, widgets.Button)][0].click()
        assert markup(f"Hint: {question.hint}") in feedback.value, (
            f"{path.stem} '{question.id}': the widget did not show its hint")
        assert not Tries(question).submit(response).correct  # the wrong answer above is wrong


# --- core and deep dives ----------------------------------------------------------------------------

@cache
def _core_text(number: str) -> str:
    """Every cell the express route reads up to module `number` (notebooks 00 to it, no deep dive):
    its source, and the text it prints."""
    texts = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        if path.name[:2] > number:
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if "deep-dive" not in cell.metadata.get("tags", []):
                texts.append(cell.source)
                for output in cell.get("outputs", []):
                    texts += [output.get("text", ""), output.get("data", {}).get("text/plain", "")]
    return "\n".join(text if isinstance(text, str) else "".join(text) for text in texts)


@cache
def _glossary():
    return load_glossary(ROOT)


def _code_names(text: str) -> set[str]:
    """The names in a text's code spans that a learner must have met: functions, methods and
    arguments (`repeat_kv`, `.view`, `is_causal=`), not one-letter shapes."""
    names = set()
    for span in re.findall(r"`([^`]+)`", text):
        names |= {name for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span) if len(name) > 3}
    return names


@pytest.mark.parametrize(("module", "question"), [(m, q) for m, q in QUESTIONS if not q.deep_dive], ids=_id)
def test_a_question_on_the_core_uses_only_what_the_core_teaches(module, question):
    """What a core question asks and answers (its question and its right choices) uses glossary
    terms and code names that the express route meets: each appears in a core cell (or what it
    prints) of notebooks 00 to the question's module. A distractor may name what the learner can
    rule out without knowing it, and a term taught by a later module is the question's to explain,
    so neither is held here.
    (The other way round cannot be checked so: a deep dive reuses the core's words, and what makes
    a question a deep dive's is the idea it asks about, decided by reading.)"""
    number = module[:2]
    keyed = [] if question.type == "numeric" else (
        [question.answer] if question.type == "single" else list(question.answer))
    asked = " ".join([question.question, *(question.choices[i] for i in keyed)])
    core = _core_text(number)
    unmet = [term.term for term in _glossary()
             if term.module <= number and term.pattern().search(plain_text(asked)) and not term.pattern().search(core)]
    unmet += sorted(name for name in _code_names(asked) if not re.search(rf"\b{re.escape(name)}\b", core))
    assert not unmet, (f"{module} '{question.id}' is marked core, but the core of notebooks 00-{number} never "
                       f"uses {unmet}: mark it \"deep_dive\": true, or teach it in the core")


def test_the_clock_counts_the_express_routes_questions():
    clocks = course_clock(ROOT)
    for path in QUIZZES:
        quiz = load_quiz(path)
        express = len(quiz.on_route("express").questions)
        assert quiz_questions(path, "express") == clocks[path.stem[:2]].core_quiz_questions == express
        assert quiz_questions(path) == clocks[path.stem[:2]].quiz_questions == len(quiz.questions)
    assert sum(load_quiz(path).questions[i].deep_dive for path in QUIZZES
               for i in range(len(load_quiz(path).questions))) > 0
