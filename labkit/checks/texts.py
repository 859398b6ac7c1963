"""What each of the course's checks says besides its verdict, kept as data beside its module.

A check cell stays in the learner's copy, so it holds only the call and its inputs; what the check
says on success (why the result matters, which often states the fix) and on failure (what to
re-check) lives in `modules/NN_slug/checks.json`, one entry per check of `notebooks/NN_slug.ipynb`:

    {
      "prefix_lm_mask": {
        "explain": "A prefix LM is the causal mask with the prompt's columns opened: ...",
        "hint": "Which keys may a token of the prompt see, and which a token after it? ...",
        "mistakes": {"complement": "...", "transposed": "..."}
      },
      "write_into_cache_bytes": {
        "name": "write_into_cache writes only the new tokens",
        "explain": "...",
        "hint": "..."
      }
    }

A notebook names an entry by its **key**: the module's number, a slash, and the entry's slug,
`check("05/prefix_lm_mask", prefix_lm_mask, references.prefix_lm_mask, cases=[...])`. The number
finds the file (`modules/05_*/checks.json`; notebook 00's is `modules/00_start_here/checks.json`),
the slug the entry. A slug is lower-case letters, digits and underscores, starting with a letter.

An entry's fields:
- `hint` (required): said on failure: what to re-check (the idea, the section or module to
  revisit), never the answer;
- `mistakes` (optional): a hint for each kind of mistake the check can tell apart (the keys of
  labkit.checks.diagnosis.KINDS), said instead of `hint` when the learner's result is of that kind:
  it names the likely mistake, never its fix;
- `explain` (optional): said on success: why the result matters;
- `name` (optional): the name the learner reads, when it is not the slug ("write_into_cache writes
  only the new tokens").

The file is read and validated when a check first uses it (and again when it changes); anything
wrong in it is the author's mistake, CheckTextError, naming the file, the entry, the field and the
fix. The Chinese of every text is in translations/zh-CN/checks/NN_slug.md (tr() finds it).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .compare import CheckUsageError
from .diagnosis import KINDS

__all__ = ["CheckTextError", "CheckTexts", "KEY", "FIELDS", "is_key", "load_texts", "texts_for", "texts_file"]

KEY = re.compile(r"^(\d\d)/([a-z][a-z0-9_]*)$")
SLUG = re.compile(r"^[a-z][a-z0-9_]*$")
FIELDS = {"name": False, "explain": False, "hint": True, "mistakes": False}  # field -> required
FILE_NAME = "checks.json"


class CheckTextError(CheckUsageError):
    """A check's texts cannot be found or read: the author's mistake, named with its fix."""


@dataclass(frozen=True)
class CheckTexts:
    """One check's texts, in English (check() shows them through tr())."""
    key: str
    name: str
    hint: str
    explain: str = ""
    mistakes: tuple[tuple[str, str], ...] = ()

    def hint_for(self, kind: str | None) -> str | None:
        """The check's hint for a kind of mistake, if it has one."""
        return dict(self.mistakes).get(kind) if kind else None


def is_key(name: str) -> bool:
    """Whether check()'s first argument is a key into a module's texts ("05/prefix_lm_mask") rather
    than a name shown as written (a check of the learner's own)."""
    return bool(KEY.match(name))


def _course_root() -> Path:
    from labkit.syllabus import CourseError, find_course_root

    try:
        return find_course_root()
    except CourseError:  # labkit used from outside the course folder: the course that holds it
        return Path(__file__).resolve().parents[2]


def texts_file(number: str, root: Path | None = None) -> Path:
    """The texts of module `number`: modules/NN_slug/checks.json."""
    root = _course_root() if root is None else root
    found = sorted((root / "modules").glob(f"{number}_*/{FILE_NAME}"))
    if not found:
        raise CheckTextError(
            f"no modules/{number}_*/{FILE_NAME} under {root}: a check key '{number}/slug' names an entry of module "
            f"{number}'s check texts; write that file (labkit/checks/texts.py says how).")
    return found[0]


def texts_for(key: str, root: Path | None = None) -> CheckTexts:
    """The texts of the check named by `key` ("05/prefix_lm_mask")."""
    match = KEY.match(key)
    if not match:
        raise CheckTextError(f"{key!r} is not a check key: write 'NN/slug', the module's number and the entry's "
                             f"slug (lower-case letters, digits, underscores), as in '05/prefix_lm_mask'.")
    number, slug = match.groups()
    path = texts_file(number, root)
    entries = load_texts(path)
    if slug not in entries:
        close = difflib.get_close_matches(slug, entries, n=1)
        guess = f" (did you mean '{number}/{close[0]}'?)" if close else ""
        raise CheckTextError(f"{_shown(path)} has no entry {slug!r} for the check key {key!r}{guess}: add it, "
                             f"with at least a \"hint\", or use one of its keys: {', '.join(sorted(entries))}.")
    return entries[slug]


_loaded: dict[Path, tuple[tuple[int, int], dict[str, CheckTexts]]] = {}


def load_texts(path: Path) -> dict[str, CheckTexts]:
    """Every entry of one checks.json, validated; read again only when the file changes."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as error:
        raise CheckTextError(f"{_shown(path)} cannot be read ({error.strerror or error}).") from None
    stamp = (stat.st_mtime_ns, stat.st_size)
    if path in _loaded and _loaded[path][0] == stamp:
        return _loaded[path][1]
    entries = _parse(path)
    _loaded[path] = (stamp, entries)
    return entries


def _parse(path: Path) -> dict[str, CheckTexts]:
    name = _shown(path)
    if not path.is_file():
        raise CheckTextError(f"{name} is not a file: it must be a JSON object of check texts.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise CheckTextError(f"{name} is not UTF-8 text (byte {error.start}): save it as UTF-8.") from None
    except json.JSONDecodeError as error:
        raise CheckTextError(f"{name} is not valid JSON: {error.msg} at line {error.lineno}, column "
                             f"{error.colno}.") from None
    if not isinstance(data, dict):
        raise CheckTextError(f"{name} must hold a JSON object, one entry per check (slug -> texts), not "
                             f"{type(data).__name__}.")
    number = path.parent.name[:2]
    entries = {}
    for slug, entry in data.items():
        where = f"{name}, entry {slug!r}"
        if not SLUG.match(slug):
            raise CheckTextError(f"{where}: a slug is lower-case letters, digits and underscores, starting with a "
                                 f"letter (the key '{number}/{slug}' must be one).")
        if not isinstance(entry, dict):
            raise CheckTextError(f"{where} must be an object with a \"hint\" (and maybe \"explain\", \"name\", "
                                 f"\"mistakes\"), not {type(entry).__name__}.")
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            raise CheckTextError(f"{where} has unknown fields {unknown}: the fields are {sorted(FIELDS)}.")
        for field, required in FIELDS.items():
            if required and field not in entry:
                raise CheckTextError(f"{where} has no \"{field}\": every check says what to re-check when it fails.")
            if field != "mistakes" and field in entry and not _text(entry[field]):
                raise CheckTextError(f"{where}: \"{field}\" must be a non-empty string.")
        mistakes = entry.get("mistakes", {})
        if not isinstance(mistakes, dict):
            raise CheckTextError(f"{where}: \"mistakes\" must be an object (kind of mistake -> hint).")
        for kind, text in mistakes.items():
            if kind not in KINDS:
                raise CheckTextError(f"{where}: \"mistakes\" names {kind!r}, which check() cannot tell apart; "
                                     f"the kinds are {', '.join(KINDS)} (labkit/checks/diagnosis.py).")
            if not _text(text):
                raise CheckTextError(f"{where}: the hint for the mistake {kind!r} must be a non-empty string.")
        entries[slug] = CheckTexts(key=f"{number}/{slug}", name=entry.get("name", slug), hint=entry["hint"],
                                   explain=entry.get("explain", ""),
                                   mistakes=tuple((kind, mistakes[kind]) for kind in KINDS if kind in mistakes))
    return entries


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _shown(path: Path) -> str:
    """A file as a message names it: relative to the course, when it is in one."""
    parts = Path(path).parts
    return "/".join(parts[-3:]) if len(parts) >= 3 and parts[-3] == "modules" else str(path)
