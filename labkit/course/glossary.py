"""The glossary: docs/glossary.json is the data, docs/glossary.md the page generated from it.

Each entry of `terms` in the JSON file:

    term            the term as the course writes it ("KL divergence"); its heading in the page
    forms           the spellings to look for in the course's text (word-bounded; a plural "s" or
                    "es" is allowed after each); case-insensitive unless case_sensitive is true
    gloss           one line that says what it is
    module          the module that teaches it ("00": a prerequisite or the tour of notebook 00)
    zh              the Chinese term, as the Chinese edition writes it (the page's 中文 line)
    zh_forms        the Chinese spellings that count as this term: where an English text uses one
                    of `forms`, its Chinese translation must use one of these
    case_sensitive  optional: match the forms exactly as written (acronyms such as "KL", "HBM")

The page has one `### term` heading per entry, grouped by the module that teaches it, so a link
reads `docs/glossary.md#kl-divergence` (`anchor(term)`: GitHub's rule, lower case, spaces to
hyphens, other punctuation dropped). `tests/course/test_glossary.py` fails when the page is not
what this module writes from the data, and checks the first use of every term in the course
(CONTRIBUTING.md, "The glossary").

    python -m labkit.course.glossary          write docs/glossary.md
    python -m labkit.course.glossary --check  exit 1 if docs/glossary.md is out of date
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from labkit.syllabus import PLANNED_MODULES, find_course_root

__all__ = ["GlossaryError", "Term", "anchor", "headword", "load_glossary", "render", "render_translated", "write"]

GLOSSARY_JSON = Path("docs") / "glossary.json"
GLOSSARY_MD = Path("docs") / "glossary.md"
GLOSSARY_ZH = Path("docs") / "glossary.zh-CN.md"
PREREQUISITES = ("00", "Prerequisites and the tour of notebook 00", "notebooks/00_start_here.ipynb")


@dataclass(frozen=True)
class Term:
    term: str
    forms: tuple[str, ...]
    gloss: str
    module: str
    zh: str = ""
    case_sensitive: bool = False
    zh_forms: tuple[str, ...] = ()

    @property
    def anchor(self) -> str:
        return anchor(self.term)

    def pattern(self) -> re.Pattern:
        """Any of the forms, as a whole word (a hyphen joins words), with an optional plural."""
        return _pattern(self.forms, self.case_sensitive)


@functools.lru_cache(maxsize=None)  # built once per term: the translation checks ask for it per text
def _pattern(forms: tuple[str, ...], case_sensitive: bool) -> re.Pattern:
    alternatives = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?:e?s)?(?![\w-])", flags)


class GlossaryError(ValueError):
    """docs/glossary.json cannot be used as it is: the message names the file, each entry and field
    that is wrong, and what it must be."""


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than '-' and '_' dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def load_glossary(root: Path | None = None) -> list[Term]:
    """Every entry, checked: each field of the type it must have, a module that exists, no two
    entries alike. Every problem is named at once (GlossaryError, a ValueError), with the file and the entry."""
    root = root or find_course_root()
    path = root / GLOSSARY_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GlossaryError(f"{GLOSSARY_JSON} is missing: the glossary's data lives there.") from None
    except IsADirectoryError:
        raise GlossaryError(f"{GLOSSARY_JSON} is a folder, not the glossary's JSON file.") from None
    except UnicodeDecodeError as error:
        raise GlossaryError(f"{GLOSSARY_JSON} is not UTF-8 text (byte {error.start}): save it as UTF-8.") from None
    except json.JSONDecodeError as error:
        raise GlossaryError(f"{GLOSSARY_JSON} is not valid JSON: {error.msg} at line {error.lineno}, "
                         f"column {error.colno}.") from None
    except (ValueError, RecursionError) as error:  # an integer of thousands of digits, arrays nested past the stack
        raise GlossaryError(f"{GLOSSARY_JSON} is JSON Python cannot read: {str(error)[:120]}.") from None
    except OSError as error:  # unreadable: permissions, a loop of links, a device
        raise GlossaryError(f"{GLOSSARY_JSON} cannot be read: {error.strerror or error}.") from None
    if not isinstance(data, dict) or not isinstance(data.get("terms"), list):
        raise GlossaryError(f'{GLOSSARY_JSON} must be an object with a list "terms": [{{"term": ..., ...}}, ...].')
    terms, problems, seen = [], [], {}
    for index, entry in enumerate(data["terms"]):
        found = _entry_problems(entry)
        if found:
            name = entry.get("term") if isinstance(entry, dict) else None
            problems.append(f"entry {index} ({name!r}): " + ", ".join(found))
            continue
        term = Term(entry["term"], tuple(entry["forms"]), entry["gloss"], entry["module"], entry.get("zh", ""),
                    entry.get("case_sensitive", False), tuple(entry.get("zh_forms", ())))
        if term.anchor in seen:
            problems.append(f"{term.term!r} and {seen[term.anchor]!r} have the same anchor #{term.anchor}")
        seen[term.anchor] = term.term
        terms.append(term)
    if problems:
        raise GlossaryError(f"{GLOSSARY_JSON}: " + "; ".join(problems))
    return terms


# Each field of an entry: (required, the type it must have, what it is, in words).
_FIELDS = {
    "term": (True, str, "a non-empty string"),
    "forms": (True, list, "a non-empty list of non-empty strings (a string alone would be read letter by letter)"),
    "gloss": (True, str, "a non-empty string"),
    "module": (True, str, 'a module number as a string ("00", "05", ...)'),
    "zh": (False, str, "a string"),
    "zh_forms": (False, list, "a list of non-empty strings"),
    "case_sensitive": (False, bool, "true or false"),
}


def _entry_problems(entry: object) -> list[str]:
    """What is wrong with one entry of `terms`, field by field; [] when nothing is."""
    if not isinstance(entry, dict):
        return [f"must be an object with the fields {', '.join(_FIELDS)}, got {type(entry).__name__}"]
    found = [f"unknown field {key!r}" for key in entry if key not in _FIELDS]
    for key, (required, kind, words) in _FIELDS.items():
        if key not in entry:
            if required:
                found.append(f"{key} is missing (it must be {words})")
            continue
        value = entry[key]
        right = isinstance(value, kind) and (kind is not str or value.strip() or key == "zh")
        if kind is list:
            right = isinstance(value, list) and (value or key == "zh_forms") and all(
                isinstance(item, str) and item.strip() for item in value)
        if not right:
            found.append(f"{key} must be {words}, got {json.dumps(value, ensure_ascii=False)[:60]}")
    module = entry.get("module")
    if isinstance(module, str) and module.strip() and module != "00" and module not in PLANNED_MODULES:
        found.append(f"module {module!r} is not a module of the course (00, or one of {', '.join(PLANNED_MODULES)})")
    return found


def _module_link(number: str) -> tuple[str, str]:
    """(title, link from docs/) of a module's guide, or of notebook 00 for the prerequisites."""
    if number == "00":
        return PREREQUISITES[1], f"../{PREREQUISITES[2]}"
    slug, title = PLANNED_MODULES[number]
    return title, f"../modules/{number}_{slug}/README.md"


def render(terms: list[Term]) -> str:
    """docs/glossary.md: an A-Z index, then the terms grouped by the module that teaches them."""
    lines = ["# Glossary", "",
             "<!-- Generated from docs/glossary.json by `python -m labkit.course.glossary`: edit the JSON, "
             "not this page. -->", "",
             "English · [简体中文](glossary.zh-CN.md)", "",
             "Every technical term the course uses, with one line on what it is and the module that "
             "teaches it. Also: the [cheat-sheet](cheatsheet.md) (formulas, shapes, MiniMind's numbers).", "",
             "**A-Z:** " + " · ".join(f"[{t.term}](#{t.anchor})"
                                     for t in sorted(terms, key=lambda t: t.term.lower())), ""]
    for number in ["00", *PLANNED_MODULES]:
        group = [t for t in terms if t.module == number]
        if not group:
            continue
        title, link = _module_link(number)
        lines += [f"## {number} · {title}", ""]
        for t in group:
            lines += [f"### {t.term}", "", t.gloss, ""]
            extra = [f"taught in [{number}]({link})"]
            others = [f for f in t.forms if f.strip("`").lower() != t.term.lower()]
            if others:
                extra.append("also written " + ", ".join(f"`{f}`" if "`" not in f else f for f in others))
            if t.zh:
                extra.append(f"中文: {t.zh}")
            lines += ["<sub>" + "; ".join(extra) + "</sub>", ""]
    return "\n".join(lines)


def headword(term: Term) -> str:
    """The Chinese page's heading for a term: its Chinese, with the English beside it unless the
    Chinese already writes it ("预填充（prefill）", "注意力头（head）", "softmax")."""
    if not term.zh or term.term.lower() in term.zh.lower():
        return term.zh or term.term
    return f"{term.zh}（{term.term}）"


def _index_key(term: Term) -> tuple[bool, str]:
    """Dictionary order: Latin first, A-Z; then Chinese by code point, which is radical-and-stroke order."""
    word = headword(term)
    return (not word[:1].isascii(), word.lower())


def render_translated(terms: list[Term], translate: Callable[[str], str]) -> str:
    """docs/glossary.zh-CN.md: the same page in Chinese. Each heading is the Chinese headword with the
    English term beside it, under an explicit anchor that is the English page's (`<a id="kv-cache">`),
    so that a link works on both pages; an index lists the headwords in dictionary order."""
    lines = ["# 术语表", "",
             "<!-- Generated from docs/glossary.json and translations/zh-CN/glossary.md by `make translations`: "
             "edit those, not this page. -->", "",
             "[English](glossary.md) · 简体中文", "",
             "课程用到的每个技术术语：中文写法、一句话解释，以及讲授它的模块。另见[速查表](cheatsheet.zh-CN.md)"
             "（公式、形状和 MiniMind 的各项数值）。", "",
             "**索引**（拉丁字母开头的按字母顺序，汉字开头的按部首笔画）：" + " · ".join(
                 f"[{headword(t)}](#{t.anchor})" for t in sorted(terms, key=_index_key)), ""]
    for number in ["00", *PLANNED_MODULES]:
        group = [t for t in terms if t.module == number]
        if not group:
            continue
        title, link = _module_link(number)
        link = link.replace("README.md", "README.zh-CN.md").replace("notebooks/", "notebooks/zh-CN/")
        lines += [f"## {number} · {translate(title)}", ""]
        for t in group:
            lines += [f'<a id="{t.anchor}"></a>', "", f"### {headword(t)}", "", translate(t.gloss), ""]
            extra = [f"讲授于 [{number}]({link})"]
            others = [f for f in t.forms if f.strip("`").lower() != t.term.lower()]
            if others:
                extra.append("英文也写作 " + "、".join(f"`{f}`" if "`" not in f else f for f in others))
            lines += ["<sub>" + "；".join(extra) + "</sub>", ""]
    return "\n".join(lines)


def write(root: Path | None = None) -> Path:
    root = root or find_course_root()
    path = root / GLOSSARY_MD
    path.write_text(render(load_glossary(root)), encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    try:
        return _command(argv)
    except GlossaryError as error:
        print(error, file=sys.stderr)
        return 1


def _command(argv: list[str]) -> int:
    root = find_course_root()
    if argv == ["--check"]:
        current = (root / GLOSSARY_MD).read_text(encoding="utf-8") if (root / GLOSSARY_MD).exists() else ""
        if current != render(load_glossary(root)):
            print(f"{GLOSSARY_MD} is out of date: run python -m labkit.course.glossary", file=sys.stderr)
            return 1
        return 0
    if argv:
        print("usage: python -m labkit.course.glossary [--check]", file=sys.stderr)
        return 2
    print("wrote", write(root).relative_to(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
