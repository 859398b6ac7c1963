"""Where the course is: the folder that holds its modules, found from where you are (or named by
ATTENTION_LAB_COURSE), and CourseError, the mistake a learner can fix.

Its own file, importing only the standard library, because everything needs it: labkit.syllabus
(which the Makefile runs before .venv exists, and re-exports these names) and labkit.i18n (which
reads the course's catalogs, and whose messages the syllabus speaks).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# Where each part of a module lives: (folder, suffix of the NN_slug entry, entry is a folder).
_PARTS = {
    "guide": ("modules", "", True),
    "notebook": ("notebooks", ".ipynb", False),
    "experiments": ("experiments", "", True),
    "quiz": ("quizzes", ".json", False),
}
_ENTRY = re.compile(r"^(\d\d)_(\w+)$")


class CourseError(Exception):
    """A mistake the learner can fix: an unknown module number, or a part not written yet.

    The CLI prints the message as one line on stderr and exits 2, without a traceback, because the
    message is the whole story.
    """


ROOT_ENV = "ATTENTION_LAB_COURSE"  # names the course folder when it cannot be found from where you are


def find_course_root(start: Path | None = None) -> Path:
    """The folder that holds the course: the first one, walking up from `start` (default: the
    current directory), that holds a module, that is an NN_slug entry in modules/, notebooks/,
    experiments/ or quizzes/. The course is recognised by its content, wherever the package is
    installed. ATTENTION_LAB_COURSE=/path/to/the/course overrides the search.

    Raises CourseError, saying where it looked, when no folder qualifies.
    """
    override = os.environ.get(ROOT_ENV)
    if override:
        folder = Path(override).expanduser().resolve()
        if not _holds_a_module(folder):
            raise CourseError(f"{ROOT_ENV}={override} is not an Attention Lab course: it has no NN_slug "
                              f"entry in modules/, notebooks/, experiments/ or quizzes/.")
        return folder
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _holds_a_module(folder):
            return folder
    raise CourseError(f"No Attention Lab course in {here} or any folder above it. Run this from inside the "
                      f"course folder, or set {ROOT_ENV}=/path/to/the/course.")


def _holds_a_module(folder: Path) -> bool:
    for part_folder, suffix, is_dir in _PARTS.values():
        entries = folder / part_folder
        if entries.is_dir() and any(_ENTRY.match(_strip(entry.name, suffix)) and entry.is_dir() == is_dir
                                    for entry in entries.iterdir()):
            return True
    return False


def _strip(name: str, suffix: str) -> str:
    """An entry's name without its part's suffix: '03_multi_head.ipynb' -> '03_multi_head'."""
    return name[: len(name) - len(suffix)] if suffix and name.endswith(suffix) else name
