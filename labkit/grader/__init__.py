"""The capstone's grader (module 10): plug a learner's attention into MiniMind, climb a ladder of
stages from the cheapest to the whole model, stop at the first that fails, say where, and name the
known mistake it matches.

    mistakes.py   CATALOGUE: known mistakes, each minimind_ref's Attention (one method per step)
                  with one step overridden
    ladder.py     LADDER: the stages, their inputs, and running a class through one
    compare.py    the first difference from the reference; whether two runs behave the same
    contract.py   CONTRACT: the inputs a layer is given (RoPE angles, the whole mask) and how it can ignore them
    grade.py      grade(cls) and its report; GraderUsageError
    guard.py      every call into the learner's code: exits, hangs, torch's global state, a patched grader,
                  reaching into the interpreter, its prints, the reference's own code that ran in it
    isolate.py    a learner's file run in a process of its own, the reference and comparisons in this one;
                  what crosses between them is data
    __main__.py   python -m labkit.grader FILE: the same grader on a learner's file (make grade)
"""

from .grade import GradeReport, GraderUsageError, diagnose, format_report, grade
from .guard import take_snapshot
from .ladder import LADDER, STAGE, Stage, stage_number
from .mistakes import BY_KEY, CATALOGUE, Mistake

__all__ = ["BY_KEY", "CATALOGUE", "GradeReport", "GraderUsageError", "LADDER", "Mistake", "STAGE", "Stage",
           "diagnose", "format_report", "grade", "stage_number"]

take_snapshot()  # the identity of every function the grading relies on, before any learner's code runs
