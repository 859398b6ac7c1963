"""Every numeric quiz answer, recomputed by code: RECOMPUTED = {module: {question id: function}}.

Each module keeps its recomputations in a file of its own, named like its quiz
(`tests/quiz_answers/03_multi_head.py` for `quizzes/03_multi_head.json`), holding a dict
`ANSWERS = {question id: function}`. A function returns the answer as computed from minimind_ref
or torch, or an `Estimate` when the answer is a statistical fact measured by sampling (then the
test accepts the quiz's value within the estimate's own tolerance). tests/course/test_quizzes.py requires
an entry for every numeric question and refuses entries for questions that no longer exist.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path

from .estimate import Estimate

__all__ = ["Estimate", "RECOMPUTED"]


def _discover() -> dict[str, dict[str, Callable]]:
    found = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if re.fullmatch(r"\d\d_\w+", path.stem):
            module = importlib.import_module(f"{__name__}.{path.stem}")
            found[path.stem] = module.ANSWERS
    return found


RECOMPUTED = _discover()
