"""The clock: how long each module takes, on the express route and on the full course, by one rule.

The rule reads a module's notebook (and, for the full course, its quiz) and nothing else:

    express minutes = core Markdown words / 130
                      + 0.5 per core code cell
                      + 1 per core predict cell
                      + 8 per core find-the-bug cell

    full minutes    = all Markdown words / 130
                      + 0.5 per code cell
                      + 1 per predict cell
                      + 8 per find-the-bug cell
                      + 8 per exercise (a cell tagged `solution` that is not `find-the-bug`)
                      + 1 per quiz question

- A cell is **core** unless it carries the `deep-dive` tag (CONTRIBUTING.md, "Core and deep
  dives"); the express route reads the core only, so a predict or find-the-bug cell inside a deep
  dive counts for the full course only.
- Words are whitespace-separated tokens of the Markdown cells, the hidden fact markers
  (`<!-- ... -->`) left out. 130 words a minute is reading to understand, not skimming.
- A code cell costs half a minute (read it, run it, look at its output); a predict cell one more
  (commit to an answer); a find-the-bug cell or an exercise eight more (write and check code).
- **The express route's quiz** asks the questions on the core only: a question about a deep dive's
  material is marked `"deep_dive": true` in the quiz file (quizzes/README.md), and
  `quiz_questions(quiz, "express")` counts the others (`Clock.core_quiz_questions`). The express
  minutes above do not count them yet.
- **The guide is not counted.** It is optional reading beside the notebook (the same ideas, with
  the formulas and the code guide to look things up later), so a route is the notebooks (and, for
  the full course, the exercises and the quiz).

Each guide states its module's two times in its first lines as bound facts
(`tests/facts/00_clock.py`, within 20%), and the README states the routes' totals; `make test`
fails when the rule and the text drift apart. `python -m labkit.course.clock` prints the table.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

WORDS_PER_MINUTE = 130
CODE_CELL = 0.5
PREDICT = 1
FIND_THE_BUG = 8
EXERCISE = 8
QUIZ_QUESTION = 1

_COMMENT = re.compile(r"<!--.*?-->", re.S)

__all__ = ["Clock", "clock", "course_clock", "quiz_questions", "route_totals"]


@dataclass(frozen=True)
class Clock:
    """What the rule counts in one module, and the two times it gives."""

    module: str
    core_words: int
    all_words: int
    core_code: int
    all_code: int
    core_predict: int
    all_predict: int
    core_bugs: int
    all_bugs: int
    exercises: int
    quiz_questions: int
    core_quiz_questions: int = 0  # those the express route asks: not marked deep_dive

    @property
    def express(self) -> float:
        return (self.core_words / WORDS_PER_MINUTE + CODE_CELL * self.core_code + PREDICT * self.core_predict
                + FIND_THE_BUG * self.core_bugs)

    @property
    def full(self) -> float:
        return (self.all_words / WORDS_PER_MINUTE + CODE_CELL * self.all_code + PREDICT * self.all_predict
                + FIND_THE_BUG * self.all_bugs + EXERCISE * self.exercises + QUIZ_QUESTION * self.quiz_questions)


def words(markdown: str) -> int:
    return len(_COMMENT.sub(" ", markdown).split())


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def clock(notebook: Path, quiz: Path | None = None) -> Clock:
    """The counts and times of one module, from its notebook file and its quiz file (if any)."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    counts = dict.fromkeys(("core_words", "all_words", "core_code", "all_code", "core_predict", "all_predict",
                            "core_bugs", "all_bugs", "exercises"), 0)
    for cell in cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        scopes = ("all",) if "deep-dive" in tags else ("core", "all")
        for scope in scopes:
            if cell["cell_type"] == "markdown":
                counts[f"{scope}_words"] += words(_source(cell))
            elif cell["cell_type"] == "code":
                counts[f"{scope}_code"] += 1
                counts[f"{scope}_predict"] += "predict" in tags
                counts[f"{scope}_bugs"] += "find-the-bug" in tags
        if cell["cell_type"] == "code" and "solution" in tags and "find-the-bug" not in tags:
            counts["exercises"] += 1
    return Clock(Path(notebook).stem.split("_", 1)[0], quiz_questions=quiz_questions(quiz, "full"),
                 core_quiz_questions=quiz_questions(quiz, "express"), **counts)


def quiz_questions(quiz: Path | None, route: str = "full") -> int:
    """How many questions of a quiz file a route asks: all of them on the full course, those not
    marked `"deep_dive": true` on the express route (as labkit.quiz's Quiz.on_route picks them);
    0 with no quiz file."""
    if route not in ("full", "express"):
        raise ValueError(f"route must be 'full' or 'express'; got {route!r}.")
    if quiz is None or not Path(quiz).is_file():
        return 0
    questions = json.loads(Path(quiz).read_text(encoding="utf-8"))["questions"]
    return len(questions) if route == "full" else sum(question.get("deep_dive") is not True for question in questions)


def course_clock(root: Path | None = None) -> dict[str, Clock]:
    """Every module with a notebook (00 included), by number."""
    from labkit.syllabus import find_course_root

    root = root or find_course_root()
    clocks = {}
    for notebook in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        number = notebook.name[:2]
        quiz = next(iter(sorted((root / "quizzes").glob(f"{number}_*.json"))), None)
        clocks[number] = clock(notebook, quiz)
    return clocks


def route_totals(clocks: dict[str, Clock]) -> dict[str, float]:
    """The routes of the README, in minutes: the express route over modules 01-08, and the full
    course over every module."""
    express = [c for number, c in clocks.items() if "01" <= number <= "08"]
    return {"express 01-08": sum(c.express for c in express),
            "full course": sum(c.full for c in clocks.values())}


def main(argv: list[str] | None = None) -> int:
    clocks = course_clock()
    print(f"{'module':8}{'express':>9}{'full':>7}   core words / all, code cells, predict, find-the-bug, "
          f"exercises, quiz")
    for number, c in clocks.items():
        print(f"{number:8}{c.express:9.0f}{c.full:7.0f}   {c.core_words}/{c.all_words}, {c.core_code}/{c.all_code}, "
              f"{c.core_predict}/{c.all_predict}, {c.core_bugs}/{c.all_bugs}, {c.exercises}, "
              f"{c.core_quiz_questions}/{c.quiz_questions}")
    for route, minutes in route_totals(clocks).items():
        print(f"{route}: {minutes:.0f} minutes ({minutes / 60:.1f} h)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
