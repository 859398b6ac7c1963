"""The Chinese edition (issue 28) is complete, current and faithful, and cannot drift from the English.

- Every English text has a translation made from that very text: a catalog block keyed by its hash
  (notebooks, quizzes, the glossary, labkit's messages), or, for a hand-translated page, a stamp
  naming the English version. Change one English sentence, number or quiz explanation and the test
  of that part fails, naming the text, until the Chinese is carried over (labkit/i18n/catalog.py).
- A Chinese notebook is exactly what `make translations` builds: the English code cells, byte for
  byte, with translated Markdown, and the outputs of running it in Chinese, which
  tests/course/test_chinese_outputs.py binds to the English outputs that nbval checks. That is why
  nbval does not run them (conftest.py).
- A translation keeps what a translation must (headings, fact markers, math, code, numbers, links)
  and writes every glossary term the way docs/glossary.json says.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.course.glossary import GLOSSARY_ZH, anchor, load_glossary, render_translated
from labkit.course.translation.check import (
    catalog_problems,
    faithful_problems,
    guide_problems,
    notebook_file_problems,
)
from labkit.course.translation.edition import (
    CATALOGS,
    LANG,
    all_targets,
    experiment_target,
    guide_pairs,
    translated_scripts,
    zh_notebook,
)
from labkit.i18n import catalog as catalogs
from labkit.predictions import prediction_files
from labkit.quiz.format import parse_quiz

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
QUIZZES = sorted(p.stem for p in (ROOT / "quizzes").glob("*.json"))
CHECK_TEXTS = sorted(p.parent.name for p in (ROOT / "modules").glob("*/checks.json"))
SCRIPTS = [experiment_target(ROOT, script) for script in translated_scripts(ROOT)]
PAGES = [english.relative_to(ROOT).as_posix() for english, _ in guide_pairs(ROOT)]
PREDICTIONS = [path.parent.name for path in prediction_files(ROOT)]


def _fail(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- complete and current

@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_notebook_translation_is_current(stem):
    """Each Markdown cell (and each text its code shows) has a translation of its present English,
    and notebooks/zh-CN/ holds exactly what make translations builds, never a hand edit."""
    _fail(catalog_problems(ROOT, f"notebook:{stem}") + notebook_file_problems(ROOT, stem))


@pytest.mark.parametrize("stem", QUIZZES)
def test_quiz_translation_is_current(stem):
    _fail(catalog_problems(ROOT, f"quiz:{stem}"))


@pytest.mark.parametrize("stem", CHECK_TEXTS)
def test_check_texts_translation_is_current_and_faithful(stem):
    """Each check's name in words, explanation and hints (modules/NN_slug/checks.json) has a current,
    faithful translation in translations/zh-CN/checks/NN_slug.md, which check() shows by key."""
    _fail(catalog_problems(ROOT, f"checks:{stem}") + faithful_problems(ROOT, f"checks:{stem}"))


@pytest.mark.parametrize("module", PREDICTIONS)
def test_prediction_translation_is_current_and_faithful(module):
    """Every text of a module's predictions (question, choices, unit, each why, the explanation) has
    a translation of its present English that keeps its numbers, code and {fields}."""
    _fail(catalog_problems(ROOT, f"prediction:{module}") + faithful_problems(ROOT, f"prediction:{module}"))


@pytest.mark.parametrize("page", PAGES)
def test_guide_translation_is_current_and_faithful(page):
    """The stamp names the English version translated; sections, facts, math, code, numbers, links
    and terms are the English's."""
    _fail(guide_problems(ROOT, ROOT / page))


@pytest.mark.parametrize("target", SCRIPTS)
def test_experiment_script_translation_is_current_and_faithful(target):
    """A script with a catalog (translations/zh-CN/experiments/NN_slug/expN_*.md) has each template of
    what it prints and draws translated, every {placeholder} and number kept (labkit/i18n/output.py)."""
    script = ROOT / "experiments" / f"{target.partition(':')[2]}.py"
    assert script.is_file(), f"{target}: its catalog has no script (renamed? move or delete the catalog)"
    _fail(catalog_problems(ROOT, target) + faithful_problems(ROOT, target))


@pytest.mark.parametrize("target", ["glossary", "labkit"])
def test_glossary_and_messages_are_translated(target):
    _fail(catalog_problems(ROOT, target) + faithful_problems(ROOT, target))


def test_chinese_glossary_page_is_current():
    done = catalogs.read_catalog(ROOT / CATALOGS / "glossary.md").translations()
    page = render_translated(load_glossary(ROOT), lambda text: done[catalogs.key_of(text)])
    written = (ROOT / GLOSSARY_ZH).read_text(encoding="utf-8") if (ROOT / GLOSSARY_ZH).exists() else ""
    assert written == page, f"{GLOSSARY_ZH} is out of date: make translations"


def test_no_catalog_is_left_over():
    """A catalog whose English is gone (a renamed notebook) is deleted with it."""
    wanted = {p for target in all_targets(ROOT) for p in [_catalog_path(target)]}
    found = set((ROOT / CATALOGS).rglob("*.md"))
    assert found <= wanted, f"catalogs with no English source: {sorted(p.name for p in found - wanted)}"
    built = set((ROOT / "notebooks" / LANG).glob("*.ipynb"))
    assert built <= {zh_notebook(ROOT, stem) for stem in NOTEBOOKS}, "a Chinese notebook has no English one"


def _catalog_path(target: str) -> Path:
    kind, _, stem = target.partition(":")
    folders = {"notebook": "notebooks", "quiz": "quizzes", "checks": "checks", "prediction": "predictions",
               "experiments": "experiments"}
    return ROOT / CATALOGS / (f"{folders[kind]}/{stem}.md" if kind in folders else f"{kind}.md")


# ---------------------------------------------------------------------------- faithful

@pytest.mark.parametrize("target", [f"notebook:{s}" for s in NOTEBOOKS] + [f"quiz:{s}" for s in QUIZZES])
def test_translations_keep_headings_facts_math_code_numbers_and_links(target):
    _fail(faithful_problems(ROOT, target, terms=False))


def test_each_glossary_term_is_translated_the_same_way_everywhere():
    """Where an English text uses a term (one of its `forms`, outside code), its Chinese uses one of
    the term's `zh_forms`: in every notebook cell, quiz text, gloss and message (the guides section
    by section, in test_guide_translation_is_current_and_faithful)."""
    problems = []
    for target in all_targets(ROOT):
        problems += faithful_problems(ROOT, target, kept=False)
    _fail(problems)


def test_every_term_has_its_chinese():
    for term in load_glossary(ROOT):
        assert term.zh and term.zh_forms, f"{term.term}: give zh and zh_forms in docs/glossary.json"
        assert any(form.lower() in term.zh.lower() for form in term.zh_forms), \
            f"{term.term}: its zh {term.zh!r} is not one of its own zh_forms {term.zh_forms}"


@pytest.mark.parametrize("stem", QUIZZES)
def test_translated_quiz_is_a_valid_quiz_with_the_same_key(stem):
    """The Chinese texts pass every rule the English ones do (characters, LaTeX); the answers and
    checks are the English file's own: one key, one check, for both languages."""
    english = json.loads((ROOT / "quizzes" / f"{stem}.json").read_text(encoding="utf-8"))
    done = catalogs.read_catalog(ROOT / CATALOGS / "quizzes" / f"{stem}.md").translations()

    def zh(text):
        return done.get(catalogs.key_of(text), text)

    translated = json.loads(json.dumps(english))
    for key in ("title", "description"):
        if key in translated:
            translated[key] = zh(translated[key])
    for question in translated["questions"]:
        for key in ("question", "hint", "explanation", "unit"):
            if key in question:
                question[key] = zh(question[key])
        if "choices" in question:
            question["choices"] = [zh(c) for c in question["choices"]]
    quiz = parse_quiz(translated, f"{stem} (zh-CN)", stem=stem)
    original = parse_quiz(english, stem, stem=stem)
    assert [q.answer for q in quiz.questions] == [q.answer for q in original.questions]
    assert [q.check for q in quiz.questions] == [q.check for q in original.questions]


# ---------------------------------------------------------------------------- built, not run again

@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_chinese_notebook_shares_every_code_cell(stem):
    """Only Markdown sources and outputs differ: code cells (source, metadata), cell ids and tags are
    the English notebook's, byte for byte once serialised. So running the Chinese notebook under
    nbval would test the same code again; its outputs, Chinese, are bound to the English ones by
    tests/course/test_chinese_outputs.py."""
    path = zh_notebook(ROOT, stem)
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: make translations")
    english = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    chinese = json.loads(path.read_text(encoding="utf-8"))
    assert len(chinese["cells"]) == len(english["cells"])
    for index, (en, zh) in enumerate(zip(english["cells"], chinese["cells"])):
        ran = ("outputs", "execution_count")  # the Chinese run's own
        if en["cell_type"] == "code":
            zh_code, en_code = ({k: v for k, v in cell.items() if k not in ran} for cell in (zh, en))
            assert json.dumps(zh_code, sort_keys=True) == json.dumps(en_code, sort_keys=True), \
                f"{stem} cell {index} differs"
        else:
            assert {k: v for k, v in zh.items() if k != "source"} == {k: v for k, v in en.items() if k != "source"}
    own = ("attention_lab", "widgets")  # the edition's, and the Chinese run's widget state
    assert {k: v for k, v in chinese["metadata"].items() if k not in own} == \
        {k: v for k, v in english["metadata"].items() if k != "widgets"}


def test_nbval_does_not_collect_the_chinese_notebooks():
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "notebooks"],
                            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    collected = {line.split("::")[0] for line in listed.stdout.splitlines() if "::" in line}
    assert collected, listed.stdout + listed.stderr
    assert not [path for path in collected if f"/{LANG}/" in path], collected
    assert {f"notebooks/{stem}.ipynb" for stem in NOTEBOOKS} <= collected


# ---------------------------------------------------------------------------- links

def _chinese_texts() -> list[tuple[Path, str]]:
    pages = [(zh, zh.read_text(encoding="utf-8")) for _, zh in guide_pairs(ROOT) if zh.exists()]
    if (ROOT / GLOSSARY_ZH).exists():
        pages.append((ROOT / GLOSSARY_ZH, (ROOT / GLOSSARY_ZH).read_text(encoding="utf-8")))
    for path in sorted((ROOT / "notebooks" / LANG).glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        pages.append((path, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")))
    return pages


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)} | set(re.findall(r'id="([^"]+)"', text))


def test_every_link_of_the_chinese_edition_leads_somewhere():
    broken = []
    for path, text in _chinese_texts():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, fragment = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if not resolved.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    _fail(broken)


@pytest.mark.parametrize("page", PAGES)
def test_each_page_links_its_twin_both_ways(page):
    english = ROOT / page
    chinese = english.with_name(f"{english.stem}.{LANG}.md")
    assert f"]({chinese.name})" in english.read_text(encoding="utf-8"), f"{page} does not link {chinese.name}"
    if chinese.exists():
        assert f"]({english.name})" in chinese.read_text(encoding="utf-8"), f"{chinese.name} does not link {page}"


def test_the_chinese_readme_is_the_chinese_learners_front_door():
    """The two commands as a Chinese learner types them, the answer book, and the module table
    linking every Chinese guide and notebook."""
    readme = (ROOT / f"README.{LANG}.md").read_text(encoding="utf-8")
    first = "\n".join(readme.split("\n")[:45])
    for command in ("make lab LANG=zh-CN", "make test", "make answers LANG=zh-CN", "make quiz M="):
        assert command in readme, f"README.{LANG}.md does not give `{command}`"
    assert "make lab LANG=zh-CN" in first and "notebooks/zh-CN/00_start_here.ipynb" in first
    for guide in sorted((ROOT / "modules").glob(f"*/README.{LANG}.md")):
        assert f"]({guide.relative_to(ROOT).as_posix()})" in readme, f"the table does not link {guide}"
    for notebook in sorted((ROOT / "notebooks" / LANG).glob("*.ipynb")):
        assert f"]({notebook.relative_to(ROOT).as_posix()})" in readme, f"the table does not link {notebook}"
