"""A translation catalog that cannot be used as written is refused by name, where it is read: by
`make translations` (labkit.course.translation), by the Chinese quiz in the terminal and in the
widget (labkit.i18n's `tr`), never with a raw traceback and never by showing an empty Chinese text
in the English one's place. The kinds: not UTF-8, a folder, a block header that is not one, a
finished block left empty, and a message template whose {fields} are broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labkit.i18n as i18n
from labkit.course.translation.__main__ import main as build_command
from labkit.course.translation.check import _fields_problems
from labkit.i18n import ENV, speaking, tr, use_language
from labkit.i18n.catalog import CatalogError, Unit, key_of, read_catalog, synced

REPO = Path(__file__).resolve().parents[2]
QUIZ = "03_multi_head"
DERANDOMISED = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def english_by_default(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    use_language(None)
    yield
    use_language(None)


def course(tmp_path: Path, catalog: bytes | None, place: str) -> Path:
    """A course with module 03's quiz and notebook, and `catalog` (None: a folder) as the Chinese of
    one of them (`place`: quizzes or notebooks); the other's catalog is left out."""
    (tmp_path / "quizzes").mkdir()
    shutil.copy(REPO / "quizzes" / f"{QUIZ}.json", tmp_path / "quizzes")
    (tmp_path / "notebooks").mkdir()
    shutil.copy(REPO / "notebooks" / f"{QUIZ}.ipynb", tmp_path / "notebooks")
    folder = tmp_path / "translations" / "zh-CN"
    (folder / "quizzes").mkdir(parents=True)
    (folder / "notebooks").mkdir()
    target = folder / place / f"{QUIZ}.md"
    if catalog is None:
        target.mkdir()
    elif catalog == b"a link to itself":
        target.symlink_to(target)
    elif catalog == b"a pipe":
        os.mkfifo(target)  # reading it would wait for a writer forever
    else:
        target.write_bytes(catalog)
    return tmp_path


def the_real_catalog(mark_empty: str | None = None) -> bytes:
    """Module 03's quiz catalog, with the block translating `mark_empty` emptied (still marked finished)."""
    text = (REPO / "translations" / "zh-CN" / "quizzes" / f"{QUIZ}.md").read_text(encoding="utf-8")
    if mark_empty is not None:
        header = f"<!-- zh-CN {key_of(mark_empty)} · title -->"
        start = text.index(header) + len(header)
        end = text.index("<!-- zh-CN ", start)
        text = text[:start] + "\n\n" + text[end:]
    return text.encode("utf-8")


def quiz_title() -> str:
    import json

    return json.loads((REPO / "quizzes" / f"{QUIZ}.json").read_text(encoding="utf-8"))["title"]


BROKEN = {
    "not UTF-8": (lambda: "第一题".encode("gb18030") + b"\xff", "is not UTF-8 text (byte 0x"),
    "a folder": (lambda: None, "is a folder, not a catalog"),
    "a bad header": (lambda: b"<!-- zh-CN 12345 \xc2\xb7 title -->\ntext\n", "a block's header must read"),
    "an empty block": (lambda: the_real_catalog(mark_empty=quiz_title()), "is marked finished but holds no Chinese"),
    "a link to itself": (lambda: b"a link to itself", "cannot be read ("),
    **({"a pipe": (lambda: b"a pipe", "is not a regular file (a pipe or a device)")} if hasattr(os, "mkfifo") else {}),
}


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ATTENTION_LAB_COURSE": str(root), "PYTHONPATH": str(REPO)}
    env.pop(ENV, None)
    return subprocess.run([sys.executable, "-m", *args], input="q\n", capture_output=True, text=True, cwd=root,
                          env=env, timeout=180)


@pytest.mark.parametrize("kind", BROKEN)
def test_the_chinese_terminal_quiz_names_a_broken_catalog(tmp_path, kind):
    make, message = BROKEN[kind]
    done = run(course(tmp_path, make(), "quizzes"), "labkit.course", "--lang", "zh-CN", "quiz", "03")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr and f"translations/zh-CN/quizzes/{QUIZ}.md" in done.stderr


@pytest.mark.parametrize("kind", BROKEN)
def test_make_translations_names_a_broken_catalog(tmp_path, kind, monkeypatch, capsys):
    make, message = BROKEN[kind]
    if kind == "an empty block":  # the notebook's own catalog: its first Markdown cell left empty
        import nbformat

        first = next(c.source for c in nbformat.read(REPO / "notebooks" / f"{QUIZ}.ipynb", as_version=4).cells
                     if c.cell_type == "markdown" and c.source.strip())
        text = (REPO / "translations" / "zh-CN" / "notebooks" / f"{QUIZ}.md").read_text(encoding="utf-8")
        start = text.index(f"<!-- zh-CN {key_of(first)} · ")
        start = text.index("-->", start) + 3
        text = text[:start] + "\n\n" + text[text.index("<!-- zh-CN ", start):]
        root = course(tmp_path, text.encode("utf-8"), "notebooks")
    else:
        root = course(tmp_path, make(), "notebooks")
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(root))
    monkeypatch.chdir(root)
    assert build_command(["build", "03"]) == 1  # the command behind make translations M=03
    err = capsys.readouterr().err
    assert message in err and f"translations/zh-CN/notebooks/{QUIZ}.md" in err
    assert not (root / "notebooks" / "zh-CN" / f"{QUIZ}.ipynb").exists(), "nothing half-built"


def test_sync_turns_an_empty_finished_block_back_into_todo(tmp_path):
    unit = Unit("Attention basics", "title")
    path = tmp_path / "c.md"
    path.write_text(f"<!-- pre -->\n\n<!-- zh-CN {unit.key} · title -->\n\n", encoding="utf-8")
    catalog = read_catalog(path)
    assert catalog.problems([unit])[0].endswith("is marked finished but holds no Chinese: write its translation, "
                                                "or put `todo` back in its header (python -m labkit.course."
                                                "translation sync <NN | glossary | labkit> does)")
    with pytest.raises(CatalogError, match="holds no Chinese"):
        catalog.translations()
    assert f"<!-- zh-CN {unit.key} todo · title -->\nAttention basics" in synced(catalog, [unit], "<!-- pre -->")


@pytest.mark.parametrize("chinese", ["第 {number 题", "第 {number}} 题", "第 {count} 题", "第 {number!z} 题",
                                     "第 {number:zz} 题", "第 {0} 题", "第 {number.real.x} 题", "{", "}"])
def test_a_broken_template_is_named_by_check_and_by_tr(monkeypatch, chinese):
    english = "Question {number} of {total}"
    assert _fields_problems(english, chinese)[0].startswith("fields: the ")
    monkeypatch.setattr(i18n, "_translations", lambda: {key_of(english): chinese})
    with speaking("zh-CN"), pytest.raises(CatalogError) as error:
        tr(english, number=1, total=8)
    assert f"the Chinese of {english!r} (block {key_of(english)}" in str(error.value)
    assert tr(english, number=1, total=8) == "Question 1 of 8", "English is the English template"


PIECES = [*"{}!:.0a第题 ", "{number}", "{total}", "{{", "}}", "{number:d}", "{total!r}"]
TEMPLATE = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)


@settings(DERANDOMISED, max_examples=300)
@given(chinese=TEMPLATE)
def test_a_template_check_passes_is_one_tr_can_fill(chinese):
    """What `translation check` lets through, tr() fills; what tr() cannot fill, check named first."""
    english = "Question {number} of {total}"
    table = {key_of(english): chinese}
    original = i18n._translations
    i18n._translations = lambda: table
    try:
        with speaking("zh-CN"):
            text = tr(english, number=1, total=8)
        filled = True
    except CatalogError:
        filled = False
    finally:
        i18n._translations = original
    if not _fields_problems(english, chinese):
        assert filled and "{" not in text.replace("{{", "")


@settings(DERANDOMISED, max_examples=200)
@given(body=st.one_of(st.binary(max_size=40), st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.lists(st.tuples(st.sampled_from(["0123456789ab", "0123456789AB", "12345", "abcdefabcdef"]),
                                         st.booleans(), st.text(max_size=8)), max_size=3).map(
                          lambda blocks: "\n".join(f"<!-- zh-CN {k}{' todo' if todo else ''} · x -->\n{t}"
                                                   for k, todo, t in blocks).encode("utf-8", "surrogatepass"))))
def test_any_file_is_a_catalog_or_a_named_catalog_error(tmp_path_factory, body):
    path = tmp_path_factory.mktemp("catalog") / "c.md"
    path.write_bytes(body)
    try:
        translations = read_catalog(path).translations()
    except CatalogError as error:
        assert str(error).startswith(str(path)[:1]) or "c.md" in str(error)
        return
    assert all(text.strip() for text in translations.values()), "no empty Chinese is ever shown"


@pytest.mark.parametrize("kind", ["a folder", "an empty block"])
def test_the_chinese_quiz_widget_names_a_broken_catalog(tmp_path, kind, monkeypatch):
    from labkit.quiz.widget import quiz_widget, resolve_quiz

    make, message = BROKEN[kind]
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(course(tmp_path, make(), "quizzes")))
    i18n._translations.cache_clear()
    try:
        with speaking("zh-CN"), pytest.raises(CatalogError) as error:
            quiz_widget(resolve_quiz(tmp_path / "quizzes" / f"{QUIZ}.json"))
    finally:
        i18n._translations.cache_clear()  # the next test reads the real course's catalogs again
    assert message in str(error.value) and f"quizzes/{QUIZ}.md" in str(error.value)
