"""Quizzes as plain text and in the terminal: quiz_text, run_terminal_quiz (`make quiz M=NN`) and
the authors' command behind `python -m labkit.quiz {check FILE... | schema}`."""

from __future__ import annotations

import json
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

from labkit.i18n import language, phrase, tr
from labkit.quiz.format import QUIZ_SCHEMA, QuizError, load_quiz
from labkit.quiz.markdown import paint, plain_text, spans, terminal_shows_styles
from labkit.quiz.model import (
    Feedback,
    Question,
    Quiz,
    Score,
    Tries,
    letter,
    parse_response,
    question_heading,
    route_note,
    shown,
)


def _kind_note(question: Question, terminal: bool = False) -> str | None:
    if question.type == "multiple":
        return tr("(choose all that apply, e.g. A,C)") if terminal else tr("(choose all that apply)")
    if question.type == "numeric":
        return tr("(a number; unit: {unit})", unit=shown(question.unit)) if question.unit else tr("(a number)")
    return None


def quiz_text(quiz: Quiz) -> str:
    """The questions as plain text, without answers: what a notebook stores beside the widget so
    that it still shows the quiz when read without a kernel. Deterministic, unwrapped."""
    count = len(quiz.questions)
    title = shown(quiz.title)
    lines = [tr("Quiz: {title} (1 question)", title=title) if count == 1
             else tr("Quiz: {title} ({count} questions)", title=title, count=count)]
    if quiz.description:
        lines.append(shown(quiz.description))
    for number, question in enumerate(quiz.questions, 1):
        note = _kind_note(question)
        lines += ["", f"{number}. {shown(question.question)}" + (f" {note}" if note else "")]
        lines += [f"   {letter(i)}. {shown(choice)}" for i, choice in enumerate(question.choices)]
    return "\n".join(line.replace("\n", "\n   ") for line in lines)


# One instruction a line, so that wrapping never leaves a key ("?") stranded at a line's end.
_INSTRUCTIONS = phrase("Answer with a letter (B), letters (A,C) or a number, then press Enter.\n"
                 "A wrong answer gets a hint and a second try; then you see the answer.\n"
                 "Your score counts first tries. s or an empty line skips; q quits.")


def run_terminal_quiz(path_or_quiz: str | Path | Quiz, *,
                      input_fn: Callable[[str], str] = input,
                      print_fn: Callable[..., None] = print,
                      width: int | None = None,
                      route: str = "full",
                      styles: bool | None = None) -> Score:
    """Take a quiz in the terminal, one question at a time, and return the score.

    Each question follows the rule of model.Tries: a first wrong answer is told so and gets the
    hint, and is asked again; the answer and the explanation come after a right answer or a second
    wrong one; the score counts first tries. An answer that cannot be read is explained and asked
    again (it does not count); "s" or an empty line skips, "q", end of input (Ctrl-D) or Ctrl-C
    stops with the score so far. `route="express"` asks only the core's questions (model.Quiz.on_route;
    ValueError for an unknown route), and says how many were left out.

    Text is wrapped to `width` (default: the terminal's, else 80), its Markdown drawn as a terminal
    draws it (markdown.py): bold, italics, code and links in ANSI styles when `styles` is true, as
    plain text when false, and by default in styles only when standard output is a terminal that
    shows them and NO_COLOR is not set. A malformed quiz file raises QuizError before anything is
    shown.
    """
    quiz = path_or_quiz if isinstance(path_or_quiz, Quiz) else load_quiz(path_or_quiz)
    asked = quiz.on_route(route)
    width = width or shutil.get_terminal_size((80, 24)).columns
    styles = terminal_shows_styles() if styles is None else styles

    wrap = _wrap_wide if language() == "zh-CN" else _wrap

    def say(text: str = "", indent: str = "", hanging: str | None = None) -> None:
        plain, character_styles = spans(text)
        lines = [line for paragraph in plain.split("\n")
                 for line in wrap(paragraph, width, indent, hanging or indent) or [""]]
        for line in paint(lines, plain, character_styles) if styles else lines:
            print_fn(line)

    title = shown(quiz.title)
    say(title)
    say("=" * min(_columns(plain_text(title)), width))
    if quiz.description:
        say(shown(quiz.description))
    note = route_note(quiz, route)
    if note:
        say(note)
    say(tr(_INSTRUCTIONS))
    total, right, answered, skipped = len(asked.questions), 0, 0, 0
    for number, question in enumerate(asked.questions, 1):
        say()
        say(question_heading(question, number, total))
        say(shown(question.question))
        for index, choice in enumerate(question.choices):
            say(f"{letter(index)}. {shown(choice)}", indent="  ", hanging="     ")
        note = _kind_note(question, terminal=True)
        if note:
            say(note)
        tries = Tries(question)
        while True:
            outcome = _ask(question, tries, input_fn, print_fn, say)
            if not isinstance(outcome, Feedback):
                break
            say(outcome.message)
            if outcome.revealed:
                break
        answered += tries.first_right is not None
        right += bool(tries.first_right)
        if outcome is None:
            say(tr("Stopped at question {number} of {total}.", number=number, total=total))
            break
        if outcome == "skip":
            say(tr("Skipped."))
            skipped += tries.first_right is None
    score = Score(right, answered, total, skipped)
    say()
    say(final_score(score))
    return score


def _wrap(paragraph: str, width: int, indent: str, hanging: str) -> list[str]:
    """Wrap at spaces to `width` columns, as textwrap would with whole words (a word longer than the
    line gets a line of its own), the first line after `indent`, the others after `hanging`."""
    lines, line = [], ""
    for space, word in re.findall(r"(\s*)(\S+)", paragraph):
        gap = " " * len(space) if line else ""
        if line and _columns(line + gap + word) > width:
            lines.append(line)
            line = ""
        line = (line + gap if line else (hanging if lines else indent)) + word
    return [*lines, line] if line else lines


def _columns(text: str) -> int:
    """How many terminal columns `text` takes: a Chinese character (East Asian wide) takes two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _wrap_wide(paragraph: str, width: int, indent: str, hanging: str) -> list[str]:
    """Wrap text that mixes Chinese and Latin words by terminal columns: a line may break between two
    Chinese characters or at a space, never inside a Latin word or number, and never before
    closing punctuation (，。：；！？）、)."""
    tokens = re.findall(r"\s+|[^\s\u2e80-\u9fff\uff00-\uffef\u3000-\u303f]+|.", paragraph)
    lines, line = [], indent
    for token in tokens:
        if token.isspace():
            if line.strip():
                line += " "
            continue
        if _columns(line + token) <= width or not line.strip() or token in "，。：；！？）、”":
            line += token
            continue
        lines.append(line.rstrip())
        line = hanging + token
    if line.strip():
        lines.append(line.rstrip())
    return lines


def final_score(score: Score) -> str:
    """The last line of a terminal quiz: right on the first try, answered, skipped, and what was not
    reached."""
    if score.not_reached:
        return tr("{score}, {skipped} skipped, {not_reached} not reached.", score=score, skipped=score.skipped,
                  not_reached=score.not_reached)
    return tr("{score}, {skipped} skipped.", score=score, skipped=score.skipped)


def _ask(question: Question, tries: Tries, input_fn: Callable[[str], str], print_fn: Callable[..., None],
         say: Callable[[str], None]) -> Feedback | str | None:
    """Read answers until one can be graded: its Feedback under the rule of `tries`, "skip", or
    None to stop."""
    while True:
        try:
            text = input_fn(tr("Your answer: ")).strip()
        except (EOFError, KeyboardInterrupt):
            print_fn()  # the prompt left the cursor mid-line
            return None
        if text.lower() in ("q", "quit"):
            return None
        if text.lower() in ("", "s", "skip"):
            return "skip"
        try:
            return tries.submit(parse_response(question, text))
        except ValueError as error:
            say(str(error))


def _main(argv: list[str]) -> int:
    """`check FILE...`: validate quiz files (0 if all are valid, else their problems and 2);
    `schema`: print QUIZ_SCHEMA."""
    if argv[:1] == ["schema"] and len(argv) == 1:
        print(json.dumps(QUIZ_SCHEMA, indent=2, ensure_ascii=False))
        return 0
    if argv[:1] != ["check"] or len(argv) < 2:
        print("usage: python -m labkit.quiz {check FILE... | schema}", file=sys.stderr)
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
