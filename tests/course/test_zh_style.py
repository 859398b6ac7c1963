"""One term per concept in the Chinese edition (issue 36): the style sheet, docs/style.zh-CN.md, is the data.

Its first table gives, for each concept, the word the Chinese writes and the words it does not. Over
every Chinese file (the catalogs of translations/zh-CN/, the hand-translated pages, the Chinese
glossary page), no word of the "不写作" column appears; and where a catalog block's English uses the
concept's English word, its Chinese writes the chosen word, as the glossary check does for its terms.
Its second table gives the guides' section headings: every Chinese guide writes the same set.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labkit.course.translation.compare import COMMENT, prose
from labkit.course.translation.edition import CATALOGS, LANG, all_targets, catalog_of, guide_pairs
from labkit.i18n.catalog import key_of, read_catalog

ROOT = Path(__file__).resolve().parents[2]
STYLE = ROOT / "docs" / f"style.{LANG}.md"


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table under `## heading` in the style sheet, header and rule dropped."""
    text = STYLE.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


TERMS = [(concept, english, chosen, [w for w in avoided.split("、") if w])
         for concept, english, chosen, avoided in _table("一个概念一个词")]
HEADINGS = dict(_table("讲义的小节标题"))


def chinese_files() -> list[Path]:
    """Every Chinese file a learner reads, the style sheet aside (it names the words to avoid)."""
    paths = sorted((ROOT / CATALOGS).rglob("*.md")) + [zh for _, zh in guide_pairs(ROOT)]
    return paths + sorted(p for p in (ROOT / "docs").glob(f"*.{LANG}.md") if p not in paths and p != STYLE)


def avoided_words() -> list[str]:
    found = []
    for path in chinese_files():
        for number, line in enumerate(COMMENT.sub("", path.read_text(encoding="utf-8")).splitlines(), 1):
            for concept, _, chosen, avoided in TERMS:
                found += [f"{path.relative_to(ROOT)}:{number}: {word} -> {chosen} ({concept})"
                          for word in avoided if word in line]
    return found


def test_the_style_sheet_has_its_tables():
    assert len(TERMS) >= 6 and all(chosen for _, _, chosen, _ in TERMS), TERMS
    assert "Key ideas" in HEADINGS and "Code guide" in HEADINGS, HEADINGS


def test_no_chinese_file_writes_an_avoided_word():
    found = avoided_words()
    assert not found, f"{len(found)} words the style sheet ({STYLE.name}) avoids:\n" + "\n".join(found)


def _words(english: str) -> str:
    """The English's prose, placeholders ({hint}) aside: they are filled in, not read."""
    return re.sub(r"\{\w*\}", " ", prose(english))


def _english_word(english: str) -> re.Pattern:
    return re.compile(rf"(?<![\w-]){re.escape(english)}(?:e?s)?(?![\w-])", re.IGNORECASE)


@pytest.mark.parametrize("target", all_targets(ROOT))
def test_each_block_writes_the_chosen_word_where_its_english_uses_the_concept(target):
    _, path, units, _ = catalog_of(ROOT, target)
    done = _read(path)
    missing = []
    for unit in units:
        chinese = done.get(key_of(unit.text))
        if chinese is None:
            continue
        for concept, english, chosen, _ in TERMS:
            if english and _english_word(english).search(_words(unit.text)) and chosen not in prose(chinese):
                missing.append(f"{path.relative_to(ROOT)} {key_of(unit.text)}: {english!r} -> {chosen}")
    assert not missing, "\n".join(missing)


def _read(path: Path) -> dict[str, str]:
    return read_catalog(path).translations() if path.exists() else {}


@pytest.mark.parametrize("english", [e for e, _ in guide_pairs(ROOT) if e.parent.parent.name == "modules"],
                         ids=lambda p: p.parent.name)
def test_every_guide_writes_the_same_section_headings(english):
    chinese = english.with_name(f"README.{LANG}.md")
    en = re.findall(r"^## (.+)$", english.read_text(encoding="utf-8"), flags=re.M)
    zh = re.findall(r"^## (.+)$", chinese.read_text(encoding="utf-8"), flags=re.M)
    wrong = [f"{a!r} is {b!r}, write {HEADINGS[a]!r}" for a, b in zip(en, zh) if a in HEADINGS and b != HEADINGS[a]]
    wrong += [f"{a!r} is {b!r}: a deep dive's heading starts 深入：" for a, b in zip(en, zh)
              if a.startswith("Deep dive:") and not b.startswith("深入：")]
    assert not wrong, f"{chinese.relative_to(ROOT)}: " + "; ".join(wrong)
