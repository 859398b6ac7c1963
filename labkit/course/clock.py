"""The clock: how long each module takes, on the express route and on the full course, by one rule
that counts everything a route asks of the learner.

The rule reads a module's notebook and its quiz and nothing else. Each cell a route reads costs:

    a Markdown cell       its words / 130
    a code cell           0.5 (read it, run it, look at its output)
    + a predict cell      1 more (commit to an answer)
    + a find-the-bug cell 8 more (find it, fix it, pass its check)
    + an exercise         8 more (a cell tagged `solution` that is not `find-the-bug`)
    - its check           0.5 less: the code cell right after a `solution` cell that runs its
                          `check(...)` or `grade(...)` is part of the exercise's minutes
    - the quiz's cell     0: the cell that shows the quiz (`show_quiz(...)`) is counted by its questions
    + the capstone        60 more, not 8 (the `solution` cell tagged `blank-page`: module 10's whole
                          layer written from the contract alone, until the grader passes it)

and a route adds:

    + 3 per experiment script its cells ask to run (the command `python experiments/NN_slug/expK_name.py`
        or `python -m experiments.NN_slug.expK_name` in a cell's text): run it and read what it shows
    + 1 per question of the quiz it asks

- **Which cells a route reads.** The full course reads every cell and asks every quiz question. The
  express route reads the **core**: a cell is core unless it carries the `deep-dive` tag
  (CONTRIBUTING.md, "Core and deep dives"); it asks the quiz questions not marked
  `"deep_dive": true` (`quiz_questions(quiz, "express")`, as `make quiz ROUTE=express` asks them);
  and in the capstone it takes the blank-page path, so it skips the cells tagged `steps-path`
  (module 10's path A, the layer one step at a time).
- **The express route** is modules 01-08 and then the capstone (module 10) in blank-page mode; the
  full course is every module, 00 to 10 (`route_totals`).
- Words are whitespace-separated tokens of the Markdown cells that hold a letter or a digit: the
  hidden fact markers (`<!-- ... -->`) and bare markup (a bullet's `-`, a table's `|`, a heading's
  `##`, a formula's `=`) are not read as words. 130 words a minute is reading to understand, not skimming.
- **Experiments.** A script counts when a cell gives the command to run it, as a step of the route.
  A mention by name ("experiment `exp2_scaling` checks each trend") and the opening's `make exp M=NN`
  ("the experiment scripts take each claim further") point the curious further: the route does not
  ask for them, so the rule does not count them. Today no core cell asks for one.
- **Run time is not counted.** Every cell of every notebook runs in seconds on a laptop's CPU (each
  opening says so, and `make test` runs them all); the half minute per code cell covers it. A cell
  that takes longer is a bug to fix in the cell, not a minute for the clock.
- **The guide is not counted.** It is optional reading beside the notebook (the same ideas, with
  the formulas and the code guide to look things up later), so a route is the notebooks, their
  exercises, experiments and quizzes.

Each guide states its module's two times in its first line as bound facts (`tests/facts/00_clock.py`,
within 20%), and the README states the routes' totals; `make test` fails when the rule and the text
drift apart, and `tests/course/test_clock.py` holds the express route to at most 6 hours.
`python -m labkit.course.clock` prints the table.
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
CAPSTONE = 60
EXPERIMENT = 3
QUIZ_QUESTION = 1
EXPRESS_LIMIT = 6 * 60  # issue 34: the express route, capstone included, fits in 6 hours
EXPRESS_MODULES = ("01", "02", "03", "04", "05", "06", "07", "08", "10")  # the first dot product to FlashAttention

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WORD = re.compile(r"\w")  # a token with no letter or digit (`-`, `|`, `##`, `=`) is markup, not a word
_QUIZ = re.compile(r"^\s*show_quiz\(", re.M)
_CHECK = re.compile(r"\b(?:check|grade)\(")
_EXPERIMENT = re.compile(r"\bpython3? +(?:-m +)?experiments[/.](\d\d_\w+)[/.](exp\d+_\w+)")

__all__ = ["CAPSTONE", "EXPRESS_LIMIT", "EXPRESS_MODULES", "Clock", "Counts", "clock", "course_clock",
           "quiz_questions", "route_totals"]


@dataclass(frozen=True)
class Counts:
    """What one route reads in one module."""

    words: int = 0
    code: int = 0
    predict: int = 0
    bugs: int = 0
    exercises: int = 0
    capstone: int = 0
    experiments: int = 0
    quiz_questions: int = 0

    @property
    def minutes(self) -> float:
        return (self.words / WORDS_PER_MINUTE + CODE_CELL * self.code + PREDICT * self.predict
                + FIND_THE_BUG * self.bugs + EXERCISE * self.exercises + CAPSTONE * self.capstone
                + EXPERIMENT * self.experiments + QUIZ_QUESTION * self.quiz_questions)


@dataclass(frozen=True)
class Clock:
    """What the rule counts in one module on each route, and the two times it gives."""

    module: str
    core: Counts
    all: Counts

    @property
    def express(self) -> float:
        return self.core.minutes

    @property
    def full(self) -> float:
        return self.all.minutes

    @property
    def quiz_questions(self) -> int:
        return self.all.quiz_questions

    @property
    def core_quiz_questions(self) -> int:  # those the express route asks: not marked deep_dive
        return self.core.quiz_questions


def words(markdown: str) -> int:
    return sum(bool(_WORD.search(token)) for token in _COMMENT.sub(" ", markdown).split())


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _count(cells: list[dict], questions: int) -> Counts:
    counts = dict.fromkeys(("words", "code", "predict", "bugs", "exercises", "capstone"), 0)
    experiments = set()
    after_solution = False
    for cell in cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        source = _source(cell)
        experiments |= set(_EXPERIMENT.findall(_COMMENT.sub(" ", source)))
        if cell["cell_type"] == "markdown":
            counts["words"] += words(source)
        elif cell["cell_type"] == "code":
            # the check right after a solution cell is part of that exercise's minutes ("pass its check")
            # the cell that shows the quiz is counted by its questions
            counts["code"] += not (after_solution and _CHECK.search(source)) and not _QUIZ.search(source)
            counts["predict"] += "predict" in tags
            if "solution" in tags:
                kind = "bugs" if "find-the-bug" in tags else "capstone" if "blank-page" in tags else "exercises"
                counts[kind] += 1
        after_solution = cell["cell_type"] == "code" and "solution" in tags
    return Counts(**counts, experiments=len(experiments), quiz_questions=questions)


def clock(notebook: Path, quiz: Path | None = None) -> Clock:
    """The counts and times of one module, from its notebook file and its quiz file (if any)."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    core = [cell for cell in cells if not {"deep-dive", "steps-path"} & set(cell.get("metadata", {}).get("tags", []))]
    return Clock(Path(notebook).stem.split("_", 1)[0], core=_count(core, quiz_questions(quiz, "express")),
                 all=_count(cells, quiz_questions(quiz, "full")))


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
    """The routes of the README, in minutes: the express route (modules 01-08, then the capstone in
    blank-page mode) and the full course (every module)."""
    return {"express": sum(clocks[number].express for number in EXPRESS_MODULES if number in clocks),
            "full course": sum(c.full for c in clocks.values())}


def main(argv: list[str] | None = None) -> int:
    clocks = course_clock()
    print(f"{'module':8}{'express':>9}{'full':>7}   express / full: words, code cells, predict, find-the-bug, "
          f"exercises, capstone, experiments, quiz")
    for number, c in clocks.items():
        pairs = ", ".join(f"{getattr(c.core, name)}/{getattr(c.all, name)}" for name in Counts.__dataclass_fields__)
        print(f"{number:8}{c.express:9.0f}{c.full:7.0f}   {pairs}")
    for route, minutes in route_totals(clocks).items():
        print(f"{route}: {minutes:.0f} minutes ({minutes / 60:.1f} h)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
