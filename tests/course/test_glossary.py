"""The glossary (docs/glossary.json, docs/glossary.md) is valid, its page is current, and no term is
used before the module that teaches it without an explanation where it first appears.

The rule (CONTRIBUTING.md, "The glossary"): read the course in order (notebook 00's Markdown, then
module by module each notebook's Markdown cells and its guide's paragraphs) and find the first
passage that uses each term (any of its forms, as a whole word). If that passage belongs to a module
before the term's teaching module, it must explain the term: link to its glossary entry
(`glossary.md#anchor`), link to or name the teaching module ("module 07", a link to
`07_kv_cache`), or set the term in bold (`**KL divergence**`) beside its definition. A passage is a
notebook's Markdown cell, or a guide's paragraph (lines between blank lines).

Every violation is listed at once (file, cell or line, term), so a run shows the whole worklist:

    .venv/bin/python -m pytest -q tests/course/test_glossary.py
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.course.glossary import GLOSSARY_MD, GlossaryError, Term, load_glossary, render
from labkit.syllabus import PLANNED_MODULES

ROOT = Path(__file__).resolve().parents[2]
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


@dataclass(frozen=True)
class Passage:
    module: str
    where: str
    text: str  # as written, links included

    @property
    def words(self) -> str:
        """The text a reader sees: hidden comments and link targets left out."""
        return _LINK_TARGET.sub("]", _COMMENT.sub(" ", self.text))


@cache
def reading_order() -> tuple[Passage, ...]:
    passages = []
    for number in ["00", *PLANNED_MODULES]:
        for notebook in sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb")):
            name = notebook.relative_to(ROOT).as_posix()
            for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
                if cell.cell_type == "markdown":
                    passages.append(Passage(number, f"{name} cell {index}", cell.source))
        for guide in sorted((ROOT / "modules").glob(f"{number}_*/README.md")):
            name = guide.relative_to(ROOT).as_posix()
            lines = guide.read_text(encoding="utf-8").split("\n")
            start = 0
            for i, line in enumerate([*lines, ""]):
                if not line.strip():
                    if i > start:
                        passages.append(Passage(number, f"{name}:{start + 1}", "\n".join(lines[start:i])))
                    start = i + 1
    return tuple(passages)


def explains(passage: Passage, term: Term) -> bool:
    """Does this passage explain the term, or point to where it is taught?"""
    text = passage.text
    if f"glossary.md#{term.anchor}" in text:
        return True
    number = term.module
    slug = PLANNED_MODULES.get(number, ("",))[0]
    if re.search(rf"\]\([^)]*{number}_{slug}", text) or re.search(rf"\bmodules? {number}\b", text):
        return True
    pattern = term.pattern()
    return any(pattern.search(bold) for bold in re.findall(r"\*\*(.+?)\*\*", _COMMENT.sub(" ", text), re.S))


@cache
def first_uses() -> dict[str, Passage]:
    """Each term's first passage in reading order (once per session: every test reads the same course)."""
    found = {}
    for term in load_glossary(ROOT):
        pattern = term.pattern()
        for passage in reading_order():
            if pattern.search(passage.words):
                found[term.term] = passage
                break
    return found


def violations() -> list[str]:
    terms = {t.term: t for t in load_glossary(ROOT)}
    problems = []
    for name, passage in first_uses().items():
        term = terms[name]
        if passage.module < term.module and not explains(passage, term):
            problems.append(f"{passage.where}: {name!r} (taught in {term.module}) is used before module "
                            f"{term.module} without an explanation or a link to glossary.md#{term.anchor}")
    return sorted(problems)


def test_the_glossary_is_valid_and_big_enough():
    terms = load_glossary(ROOT)  # raises, naming every problem, on a bad entry
    assert len(terms) >= 80, f"{len(terms)} terms: the course uses more"


def test_the_page_is_generated_from_the_data():
    written = (ROOT / GLOSSARY_MD).read_text(encoding="utf-8")
    assert written == render(load_glossary(ROOT)), (
        f"{GLOSSARY_MD} is out of date with docs/glossary.json: run python -m labkit.course.glossary")


def test_every_term_is_used_by_the_course():
    """In prose or in code: a term the course never writes has no place in its glossary."""
    code = "\n".join(cell.source for notebook in sorted((ROOT / "notebooks").glob("*.ipynb"))
                     for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code")
    used_in_prose = first_uses()
    unused = sorted(t.term for t in load_glossary(ROOT) if t.term not in used_in_prose and not t.pattern().search(code))
    assert not unused, f"glossary terms no notebook or guide uses (check their forms): {unused}"


def test_each_heading_is_the_anchor_links_use():
    page = (ROOT / GLOSSARY_MD).read_text(encoding="utf-8")
    for term in load_glossary(ROOT):
        assert f"\n### {term.term}\n" in page
        assert term.anchor == re.sub(r"[^\w\- ]", "", term.term.lower()).replace(" ", "-")


def test_links_into_the_glossary_name_an_entry():
    anchors = {t.anchor for t in load_glossary(ROOT)}
    broken = [f"{p.where}: #{a}" for p in reading_order() for a in re.findall(r"glossary\.md#([\w-]+)", p.text)
              if a not in anchors]
    assert not broken, "links to glossary entries that do not exist:\n" + "\n".join(broken)


def test_no_term_is_used_before_its_module_unexplained():
    problems = violations()
    assert not problems, f"{len(problems)} terms used before their module, unexplained:\n" + "\n".join(problems)


# ------------------------------------------------------------------------ the loader's named errors

FIELD_VALUES = st.one_of(st.text(max_size=6), st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3),
                         st.integers(), st.booleans(), st.none(), st.sampled_from(["01", "00", "10", "77", ""]),
                         st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))
FIELDS = ("term", "forms", "gloss", "module", "zh", "zh_forms", "case_sensitive", "extra")


def load_entries(tmp_path: Path, entries) -> list[Term]:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "glossary.json").write_text(json.dumps({"terms": entries}), encoding="utf-8")
    return load_glossary(tmp_path)


def test_a_string_forms_is_named_not_read_letter_by_letter(tmp_path):
    entry = {"term": "KV cache", "forms": "KV cache", "gloss": "The keys and values kept.", "module": "07"}
    with pytest.raises(GlossaryError, match=r"entry 0 \('KV cache'\): forms must be a non-empty list of non-empty "
                                            r"strings \(a string alone would be read letter by letter\)"):
        load_entries(tmp_path, [entry])
    with pytest.raises(GlossaryError, match="case_sensitive must be true or false, got \"yes\""):
        load_entries(tmp_path, [{**entry, "forms": ["KV cache"], "case_sensitive": "yes"}])


@settings(derandomize=True, database=None, deadline=None, max_examples=200,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.dictionaries(st.sampled_from(FIELDS), FIELD_VALUES, max_size=8))
def test_every_field_is_checked_for_its_type(tmp_path, entry):
    try:
        (term,) = load_entries(tmp_path, [entry])
    except GlossaryError as error:
        assert str(error).startswith("docs/glossary.json: entry 0 (")
        return
    assert isinstance(term.term, str) and term.term.strip() and isinstance(term.gloss, str) and term.gloss.strip()
    assert term.forms and all(isinstance(f, str) and f.strip() for f in term.forms)
    assert all(isinstance(f, str) and f.strip() for f in term.zh_forms) and isinstance(term.zh, str)
    assert isinstance(term.case_sensitive, bool) and (term.module == "00" or term.module in PLANNED_MODULES)


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe{", "docs/glossary.json is not UTF-8 text"),
    (b"{\"terms\": [", "docs/glossary.json is not valid JSON"),
    (b"[]", 'docs/glossary.json must be an object with a list "terms"'),
    (None, "docs/glossary.json is a folder"),
    (b"[" * 100_000 + b"]" * 100_000, "docs/glossary.json is JSON Python cannot read: maximum recursion depth"),
    (b'{"terms": [{"module": ' + b"9" * 5000 + b"}]}", "docs/glossary.json is JSON Python cannot read: Exceeds"),
    ("loop", "docs/glossary.json cannot be read: "),
])
def test_a_glossary_file_that_is_not_one_is_named(tmp_path, content, message):
    (tmp_path / "docs").mkdir()
    if content is None:
        (tmp_path / "docs" / "glossary.json").mkdir()
    elif content == "loop":  # a link to itself
        (tmp_path / "docs" / "glossary.json").symlink_to(tmp_path / "docs" / "glossary.json")
    else:
        (tmp_path / "docs" / "glossary.json").write_bytes(content)
    with pytest.raises(GlossaryError, match=re.escape(message)):
        load_glossary(tmp_path)
