"""Every problem that keeps the Chinese edition from being current and faithful, per part.

The tests (tests/course/test_translation.py) and `python -m labkit.course.translation check` both ask this module,
so a translator sees exactly what the tests will say.
"""

from __future__ import annotations

from pathlib import Path

from labkit.course.glossary import load_glossary
from labkit.course.translation.compare import HEADING, NUMBER, kept_problems, prose, render_problems, term_problems
from labkit.course.translation.edition import (
    LANG,
    NotTranslated,
    _relink,
    all_targets,
    build_notebook,
    catalog_of,
    guide_pairs,
    stamp_problems,
    twin_link,
    zh_notebook,
)
from labkit.course.translation.sources import OUTPUT
from labkit.i18n.catalog import read_catalog
from labkit.i18n.templates import Template

__all__ = ["catalog_problems", "conflicts", "faithful_problems", "guide_problems", "notebook_file_problems"]


def catalog_problems(root: Path, target: str) -> list[str]:
    """Missing, unfinished or stale translations of one catalog."""
    _, path, units, _ = catalog_of(root, target)
    if not path.exists():
        return [f"{path.relative_to(root).as_posix()} is missing: python -m labkit.course.translation sync, "
                f"then translate it"]
    return read_catalog(path).problems(units)


def conflicts(root: Path) -> dict[str, dict[str, list[tuple[str, bool]]]]:
    """Every English text that two catalogs translate two ways: English -> Chinese -> the catalogs
    that say so, each as (path, whether the unit is a template of what code prints). All catalogs
    merge into one table keyed by the English, so only one Chinese can win there: a template's own
    catalog decides for its source's lines (labkit/i18n/output.py), while the texts shown through
    `tr()` (labkit's messages, quizzes, checks, predictions, widgets) share the table."""
    found: dict[str, dict[str, set[tuple[str, bool]]]] = {}
    for target in all_targets(root):
        _, path, units, _ = catalog_of(root, target)
        done = read_catalog(path).finished() if path.exists() else {}
        for unit in units:
            if unit.key in done:
                where = (path.relative_to(root).as_posix(), f": {OUTPUT} (" in unit.label)
                found.setdefault(unit.text, {}).setdefault(done[unit.key].strip(), set()).add(where)
    return {english: {zh: sorted(where) for zh, where in ways.items()}
            for english, ways in found.items() if len(ways) > 1}


def faithful_problems(root: Path, target: str, *, kept: bool = True, terms: bool = True) -> list[str]:
    """For each finished translation: what it changed of its English (`kept`), and the glossary's terms."""
    _, path, units, _ = catalog_of(root, target)
    done = read_catalog(path).finished() if path.exists() else {}  # an empty block: catalog_problems says so
    glossary = load_glossary(root) if terms else []
    here, there = root / "notebooks", root / "notebooks" / LANG
    out, seen = [], set()
    for unit in units:
        zh = done.get(unit.key)
        if zh is None or unit.key in seen:
            continue
        seen.add(unit.key)
        if not kept:
            found = []
        elif f": {OUTPUT} (" in unit.label:
            found = template_problems(unit.text, zh)
        elif target.startswith("experiments:"):  # a script's claim: plain text, numbers kept
            found = _numbers_kept(unit.text, zh)
        elif target.startswith("notebook:"):
            found = kept_problems(unit.text, _relink(root, zh), link=lambda t: twin_link(root, here, t, there))
            found += render_problems(zh)
        elif target == "labkit":
            found = _fields_problems(unit.text, zh)
        elif target.startswith("prediction:"):  # shown with its fields filled in, like a message
            found = kept_problems(unit.text, zh) + render_problems(zh) + _fields_problems(unit.text, zh)
        else:
            found = kept_problems(unit.text, zh) + render_problems(zh)
        if f": {OUTPUT} (" in unit.label:  # a template's {placeholders} are code, filled in, not read
            found += term_problems(_literal_text(unit.text), _literal_text(zh), glossary)
        else:
            found += term_problems(unit.text, zh, glossary)
        out += [f"{path.relative_to(root).as_posix()}: {unit.label}: {problem}" for problem in found]
    return out


def _literal_text(template: str) -> str:
    """A template's own words, each placeholder (`{attentions}`, `{len(CATALOGUE)}`) left out."""
    return " ".join(Template(template).literals)


def template_problems(english: str, chinese: str) -> list[str]:
    """A template's translation keeps every placeholder (each value is put back where it says) and
    every number of its English words, and adds no placeholder of its own."""
    en = sorted(Template(english).fields)
    zh = sorted(Template(chinese).fields)
    out = [] if en == zh else [f"placeholders: the English has {en}, the Chinese {zh} (keep each {{...}} as it is)"]
    return out + _numbers_kept(" ".join(Template(english).literals), " ".join(Template(chinese).literals))


def _numbers_kept(english: str, chinese: str) -> list[str]:
    missing = sorted(set(NUMBER.findall(english)) - set(NUMBER.findall(chinese)))
    return [f"numbers missing (write them as the English does, in digits): {missing[:6]}"] if missing else []


def _fields_problems(english: str, chinese: str) -> list[str]:
    """A message template's {fields}: the Chinese must be a template (braces in pairs) with the
    English's fields, each with the same format and conversion, or tr() fails when it fills them."""
    import string

    def fields(text: str) -> set[str]:
        return set("{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                      for _, name, spec, conversion in string.Formatter().parse(text) if name is not None)

    try:
        zh_fields = fields(chinese)
    except ValueError as error:
        return [f"fields: the Chinese is not a template ({error}): keep each {{field}} of the English as written, "
                f"and double a brace meant as text ({{{{ or }}}})"]
    en_fields = fields(english)
    if en_fields == zh_fields:
        return []
    return [f"fields: the English has {sorted(en_fields)}, the Chinese {sorted(zh_fields)}"]


def notebook_file_problems(root: Path, stem: str) -> list[str]:
    """The Chinese notebook on disk is exactly what `make translations` writes."""
    path = zh_notebook(root, stem)
    name = path.relative_to(root).as_posix()
    try:
        built = build_notebook(root, stem)
    except NotTranslated:
        return []  # catalog_problems says why
    if not path.exists():
        return [f"{name} is missing: make translations"]
    if path.read_text(encoding="utf-8") != built:
        return [f"{name} is not what make translations builds from notebooks/{stem}.ipynb and its translation "
                f"(edited by hand, or built before a change): run make translations; never edit it"]
    return []


def _sections(text: str) -> list[str]:
    starts = [m.start() for m in HEADING.finditer(text)]
    return [text[a:b] for a, b in zip([0, *starts], [*starts, len(text)])]


def guide_problems(root: Path, english: Path) -> list[str]:
    """A hand-translated page: current (its stamp), and faithful section by section."""
    chinese = english.with_name(f"{english.stem}.{LANG}.md")
    out = stamp_problems(root, english, chinese)
    if not chinese.exists():
        return out
    en_text = english.read_text(encoding="utf-8")
    zh_text = chinese.read_text(encoding="utf-8").split("\n", 1)[-1]
    folder = english.parent
    name = chinese.relative_to(root).as_posix()

    def link(target: str) -> str:  # the English's link to this translation becomes the way back
        twin = twin_link(root, folder, target, folder)
        return english.name if twin == chinese.name else twin

    out += [f"{name}: {p}" for p in kept_problems(en_text, zh_text, link=link) + render_problems(zh_text)]
    en_sections, zh_sections = _sections(en_text), _sections(zh_text)
    if len(en_sections) == len(zh_sections):
        terms = load_glossary(root)
        for number, (en, zh) in enumerate(zip(en_sections, zh_sections)):
            title = en.split("\n", 1)[0].strip("# ") if number else "(before the first heading)"
            out += [f"{name}: section {title!r}: {p}" for p in term_problems(en, zh, terms) + _number_problems(en, zh)]
    return out


def _number_problems(english: str, chinese: str) -> list[str]:
    """Every number of an English section, in its Chinese section (a page as a whole would let a number
    changed in one section pass because it is written in another)."""
    missing = sorted(set(NUMBER.findall(prose(english))) - set(NUMBER.findall(chinese)))
    return [f"numbers missing (write them as the English does, in digits): {missing[:6]}"] if missing else []


def guides(root: Path, number: str | None = None) -> list[Path]:
    pairs = [english for english, _ in guide_pairs(root)]
    if number is None:
        return pairs
    return [e for e in pairs if e.parent.name.startswith(f"{number}_")]
