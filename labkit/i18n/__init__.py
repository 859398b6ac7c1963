"""The course in two languages: English, and Simplified Chinese (简体中文, `zh-CN`).

The English files are the source. The Chinese edition is built from them and from translation
catalogs (translations/zh-CN/, one block per English text, keyed by the English's hash; see
labkit/i18n/catalog.py), so that a change to the English fails a test until it is carried over.

What the learner sees from labkit's own code (check() feedback, the quiz, predict, the map, the
explorer) is written in English as `tr("template {field}", field=...)`; in Chinese, `tr` finds the
template's translation in translations/zh-CN/labkit.md. Texts that a notebook's code passes to
labkit (a predict question) are translated the same way, from the notebook's catalog, and a check's
texts, read by its key from modules/NN_slug/checks.json, from translations/zh-CN/checks/NN_slug.md.

The language, first that applies:
1. `use_language("zh-CN")` in this process (the command lines' `--lang`);
2. the environment variable ATTENTION_LAB_LANG (`en` or `zh-CN`);
3. a folder named `zh-CN` around the current directory: a notebook's kernel runs in the notebook's
   folder, so notebooks/zh-CN/ and workspace/zh-CN/ speak Chinese without a word of their code
   changing;
4. English.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from labkit.i18n.catalog import CatalogError, key_of, read_catalog

__all__ = ["LANGUAGES", "edition_folder", "language", "phrase", "speaking", "tr", "use_language"]

LANGUAGES = ("en", "zh-CN")
ENV = "ATTENTION_LAB_LANG"
TRANSLATIONS = Path("translations") / "zh-CN"
_chosen: str | None = None
SHOWN_BY_CODE = ("notebooks", "experiments")  # folders of translations/zh-CN/ whose texts code prints


def _valid(lang: str, where: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"{where}: unknown language {lang!r}; the course speaks {' and '.join(LANGUAGES)}.")
    return lang


def use_language(lang: str | None) -> None:
    """Speak `lang` from now on in this process (None: decide again from the environment)."""
    global _chosen
    _chosen = None if lang is None else _valid(lang, "use_language")


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """`with speaking("zh-CN"):` for a block of code, then back to what it was."""
    global _chosen
    before, _chosen = _chosen, _valid(lang, "speaking")
    try:
        yield
    finally:
        _chosen = before


def language() -> str:
    if _chosen:
        return _chosen
    if os.environ.get(ENV):
        return _valid(os.environ[ENV], ENV)
    return "zh-CN" if "zh-CN" in Path.cwd().parts else "en"


def edition_folder(folder: Path) -> Path:
    """Where the current language's edition of a folder of notebooks or outputs lives: the folder
    itself in English, its `zh-CN/` subfolder in Chinese (notebooks/zh-CN, workspace/zh-CN)."""
    lang = language()
    return folder if lang == "en" else folder / lang


def phrase(text: str) -> str:
    """Mark an English text kept in data (a table of labels) for translation; `tr(it)` shows it."""
    return text


def tr(text: str, /, **fields: object) -> str:
    """`text` in the current language, its `{fields}` filled in. A text with no translation (a
    learner's own question, say) is shown as written."""
    translated = _translations().get(key_of(text)) if language() != "en" else None
    if not fields:
        return text if translated is None else translated
    if translated is None:
        return text.format(**fields)
    try:
        return translated.format(**fields)
    except (ValueError, KeyError, IndexError, AttributeError) as error:  # a catalog's mistake, named
        raise CatalogError(
            f"the Chinese of {text!r} (block {key_of(text)} of a catalog in {TRANSLATIONS.as_posix()}/, labkit.md "
            f"for labkit's messages) is not a template these fields fill ({type(error).__name__}: {error}): keep "
            f"each {{field}} of the English as written, and double a brace meant as text ({{{{ or }}}}); then "
            f"python -m labkit.course.translation check labkit") from None


@cache
def _translations() -> dict[str, str]:
    """Every finished block of every catalog of the course that holds this labkit."""
    from labkit.course_root import CourseError, find_course_root

    try:
        root = find_course_root()
    except CourseError:
        root = Path(__file__).resolve().parents[2]
    table: dict[str, str] = {}
    # The catalogs of what code prints (a notebook's, a script's) first: where one English is translated
    # two ways, the texts labkit shows with tr() (its messages, quizzes, checks, predictions) keep their
    # own, and a script or a cell reads its own catalog first (labkit/i18n/output.py).
    folder = root / TRANSLATIONS
    for path in sorted(folder.rglob("*.md"), key=lambda p: (p.relative_to(folder).parts[0] not in SHOWN_BY_CODE, p)):
        table.update(read_catalog(path).translations())
    return table
