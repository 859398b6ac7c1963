"""The syllabus: which modules the course plans, where the course is, and which parts exist on disk.

Every entry point that takes a module number (`make exp M=03`, `make quiz M=03`,
`make notebooks M=03`, `python -m labkit.course ...`, `show_quiz(3)`) and every experiment's
default output folder come through here, so that all of
them accept the same numbers ("3" and "03") and explain a wrong one in the same words.

Modules are discovered from disk, never from a fixed list: a module exists as soon as any one of
its parts does (`modules/NN_slug/`, `notebooks/NN_slug.ipynb`, `experiments/NN_slug/`,
`quizzes/NN_slug.json`). `PLANNED_MODULES` only supplies slugs and titles, and lets an error tell a
planned module that is not written yet from a number that means nothing.

It is part of the kit (the quiz widget and the experiment scaffold use it), and the maintainer
tools in `labkit.course` import it, never the other way round. It imports only the standard
library, `labkit.course_root` (where the course is) and `labkit.i18n` (its messages in the learner's
language), which import only the standard library too, and `labkit` imports nothing at import time,
so it runs with any Python 3, before torch or anything else is installed:

    python -m labkit.syllabus check exp 03

The Makefile uses that to explain a missing or wrong `M=` before it spends minutes building .venv.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Where the course is (re-exported: the kit and the tools import these names from here).
from labkit.course_root import (  # noqa: F401
    _ENTRY,
    _PARTS,
    ROOT_ENV,
    CourseError,
    _holds_a_module,
    _strip,
    find_course_root,
)
from labkit.i18n import phrase, tr

# number -> (slug, title). The slug names the module everywhere: modules/, notebooks/, experiments/,
# quizzes/ (see CONTRIBUTING.md, "A module").
PLANNED_MODULES: dict[str, tuple[str, str]] = {
    "01": ("attention_basics", "Attention basics"),
    "02": ("qkv", "Queries, keys and values"),
    "03": ("multi_head", "Multi-head attention"),
    "04": ("gqa", "Grouped-query attention"),
    "05": ("masking", "Masking: causal and padding"),
    "06": ("rope", "Rotary position embeddings"),
    "07": ("kv_cache", "The KV cache"),
    "08": ("flash", "FlashAttention"),
    "09": ("reading_heads", "Reading the heads of a trained model"),
    "10": ("capstone", "Capstone: write MiniMind's attention, graded"),
}

_SCRIPT = re.compile(r"^exp(\d+)(_\w*)?\.py$")


@dataclass(frozen=True)
class Module:
    """One module of the course, planned or found on disk, and where its parts are."""

    number: str
    slug: str
    title: str
    root: Path

    @property
    def name(self) -> str:
        return f"{self.number}_{self.slug}"

    def _part(self, part: str) -> Path | None:
        """The module's entry in a part's folder: NN_slug itself, else any NN_* (a slug that
        drifted from the plan is still found rather than reported missing)."""
        folder, suffix, is_dir = _PARTS[part]
        base = self.root / folder
        candidates = [base / f"{self.name}{suffix}"]
        if base.is_dir():
            candidates += sorted(base.glob(f"{self.number}_*{suffix}"))
        for path in candidates:
            if (path.is_dir() if is_dir else path.is_file()) and _ENTRY.match(_strip(path.name, suffix)):
                return path
        return None

    @property
    def guide(self) -> Path | None:
        folder = self._part("guide")
        return folder / "README.md" if folder and (folder / "README.md").is_file() else None

    @property
    def notebook(self) -> Path | None:
        return self._part("notebook")

    @property
    def quiz(self) -> Path | None:
        return self._part("quiz")

    @property
    def experiments(self) -> list[Path]:
        """The module's experiment scripts, expK_*.py, in the order of K as a number (exp10 after
        exp2). Other files in the folder (helpers) are not experiments."""
        folder = self._part("experiments")
        if folder is None:
            return []
        scripts = [p for p in folder.iterdir() if p.is_file() and _SCRIPT.match(p.name)]
        return sorted(scripts, key=lambda p: (int(_SCRIPT.match(p.name).group(1)), p.name))

    @property
    def on_disk(self) -> bool:
        return any(self._part(part) for part in _PARTS)


def numbers_on_disk(root: Path) -> dict[str, str]:
    """Module numbers that have at least one part on disk, mapped to the slug found there."""
    found: dict[str, str] = {}
    for folder, suffix, is_dir in _PARTS.values():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.iterdir()):
            if path.is_dir() != is_dir or (suffix and not path.name.endswith(suffix)):
                continue
            match = _ENTRY.match(_strip(path.name, suffix))
            if match:
                found.setdefault(match.group(1), match.group(2))
    return found


# Module 00 is on disk but planned nowhere (it teaches no attention idea), so its title is its slug's words;
# marked here so that the catalog holds its Chinese (`make list LANG=zh-CN` shows tr(title)).
_TITLES_FROM_SLUGS = (phrase("Start here"),)


def all_modules(root: Path) -> list[Module]:
    """Every planned module and every module on disk, in number order."""
    on_disk = numbers_on_disk(root)
    modules = []
    for number in sorted(set(PLANNED_MODULES) | set(on_disk)):
        slug, title = PLANNED_MODULES.get(number, (None, None))
        slug = slug or on_disk[number]
        modules.append(Module(number, slug, title or slug.replace("_", " ").capitalize(), root))
    return modules


def format_numbers(numbers: Iterable[str]) -> str:
    """'01, 02' for a few numbers, '03..08' for a run of three or more; 'none yet' for none."""
    values = sorted(int(n) for n in numbers)
    if not values:
        return tr("none yet")
    runs: list[list[int]] = []
    for value in values:
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    parts = []
    for run in runs:
        if len(run) >= 3:
            parts.append(f"{run[0]:02d}..{run[-1]:02d}")
        else:
            parts.extend(f"{v:02d}" for v in run)
    return ", ".join(parts)


def _where_things_stand(root: Path) -> str:
    on_disk = numbers_on_disk(root)
    missing = [n for n in PLANNED_MODULES if n not in on_disk]
    text = tr("Modules on disk: {numbers}.", numbers=format_numbers(on_disk))
    if missing:
        text += " " + tr("Planned but not yet written: {numbers}.", numbers=format_numbers(missing))
    return text


def _example_number(root: Path, target: str) -> str:
    """A number that works for `target` if there is one, so the suggested command runs."""
    modules = all_modules(root)
    for module in modules:
        if _has_part(module, target):
            return module.number
    for module in modules:
        if module.on_disk:
            return module.number
    return modules[0].number


def _has_part(module: Module, target: str) -> bool:
    if target == "exp":
        return bool(module.experiments)
    if target == "quiz":
        return module.quiz is not None
    if target in ("notebooks", "slides", "portability", "workspace"):
        return module.notebook is not None
    return module.on_disk


def get_module(text: str, root: Path, target: str = "exp") -> Module:
    """The module that `text` names: "3" or "03" (two digits at most), planned or on disk.

    Anything else raises CourseError naming what was given and listing the valid numbers; `target`
    is the make target the suggested command uses.
    """
    given = str(text).strip()
    number = given.zfill(2) if re.fullmatch(r"\d{1,2}", given) else None
    for module in all_modules(root):
        if module.number == number:
            return module
    raise CourseError(
        tr("Unknown module '{given}'. {where} Use: {command}", given=given, where=_where_things_stand(root),
           command=f"make {target} M={_example_number(root, target)}")
    )


def _modules_with(root: Path, target: str) -> str:
    return format_numbers(m.number for m in all_modules(root) if _has_part(m, target))


def experiment_scripts(module: Module) -> list[Path]:
    """The module's experiment scripts; CourseError if it has none yet."""
    scripts = module.experiments
    if not scripts:
        raise CourseError(
            tr("Module {number} ({slug}) has no experiment scripts yet (none in experiments/{name}/). "
               "Modules with experiment scripts: {numbers}.", number=module.number, slug=module.slug,
               name=module.name, numbers=_modules_with(module.root, "exp"))
        )
    return scripts


def notebook_path(module: Module) -> Path:
    """The module's notebook; CourseError if it has none yet."""
    if module.notebook is None:
        raise CourseError(
            tr("Module {number} ({slug}) has no notebook yet (no notebooks/{name}.ipynb). "
               "Modules with notebooks: {numbers}.", number=module.number, slug=module.slug,
               name=module.name, numbers=_modules_with(module.root, "notebooks"))
        )
    return module.notebook


def quiz_path(module: Module) -> Path:
    """The module's quiz file; CourseError if it has none yet."""
    if module.quiz is None:
        raise CourseError(
            tr("Module {number} has no quiz yet (no quizzes/{name}.json). Modules with quizzes: {numbers}.",
               number=module.number, name=module.name, numbers=_modules_with(module.root, "quiz"))
        )
    return module.quiz


# What each make target needs from the module it is given.
_REQUIREMENTS = {"exp": experiment_scripts, "quiz": quiz_path, "notebooks": notebook_path,
                 "slides": notebook_path, "portability": notebook_path, "workspace": notebook_path}
_PART_WORDS = {"exp": phrase("experiment scripts"), "quiz": phrase("quizzes"), "notebooks": phrase("notebooks"),
               "slides": phrase("notebooks"), "portability": phrase("notebooks"), "workspace": phrase("notebooks")}
_ALL_WHEN_EMPTY = ("notebooks", "portability", "workspace")  # targets where no number means every notebook


def check(target: str, text: str, root: Path) -> Module | None:
    """Everything `make TARGET M=text` needs, checked before any work: a module number (optional
    for notebooks and portability, where none means every notebook), a known module, and the part
    the target uses."""
    if not text.strip():
        if target in _ALL_WHEN_EMPTY:
            return None
        raise CourseError(
            tr("make {target} needs a module number, as in: {command}. Modules with {parts}: {numbers}. "
               "Planned modules: {planned}.", target=target, command=f"make {target} M={_example_number(root, target)}",
               parts=tr(_PART_WORDS[target]), numbers=_modules_with(root, target),
               planned=format_numbers(PLANNED_MODULES))
        )
    module = get_module(text, root, target)
    _REQUIREMENTS[target](module)
    return module


def _script(argv: list[str]) -> int:
    """`python -m labkit.syllabus check TARGET [NUMBER]`: silent and 0 when `make TARGET M=NUMBER` can go ahead,
    else one line on stderr and 2."""
    if len(argv) not in (2, 3) or argv[0] != "check" or argv[1] not in _REQUIREMENTS:
        print(f"usage: python -m labkit.syllabus check {{{','.join(_REQUIREMENTS)}}} [NUMBER]", file=sys.stderr)
        return 2
    try:
        check(argv[1], argv[2] if len(argv) == 3 else "", find_course_root())
    except CourseError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_script(sys.argv[1:]))
