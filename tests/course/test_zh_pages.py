"""Chinese pages keep the learner in Chinese (issue 36).

- Every `make` command that a Chinese text gives (a code span or a code-block line starting with
  `make `) carries `LANG=zh-CN`, so that a learner who copies it gets the Chinese edition: the
  Chinese workspace, the Chinese quiz, the Chinese slides and, as they learn Chinese, the grader
  and the scripts. The language is not remembered between commands; the switch is the one way.
- No link in a Chinese text leads to an English quiz file: a quiz's Chinese is its catalog,
  translations/zh-CN/quizzes/NN_slug.md (the build and the pages send `quizzes/NN_slug.json` there),
  and it is taken with `make quiz M=NN LANG=zh-CN` or the widget at the end of the Chinese notebook.

The Chinese texts: every catalog of translations/zh-CN/ (the Chinese of each block, comments aside),
every hand-translated page, docs/*.zh-CN.md, and the built Chinese notebooks' Markdown (for links,
which the build sends to the twins).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from labkit.course.translation.compare import COMMENT, FENCE
from labkit.course.translation.edition import CATALOGS, LANG, guide_pairs

ROOT = Path(__file__).resolve().parents[2]
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")


def chinese_texts() -> list[tuple[str, str]]:
    """(name, text) of every Chinese text a learner reads, HTML comments removed."""
    paths = sorted((ROOT / CATALOGS).rglob("*.md"))
    paths += [chinese for _, chinese in guide_pairs(ROOT)]
    paths += sorted(p for p in (ROOT / "docs").glob(f"*.{LANG}.md") if p not in paths)
    return [(p.relative_to(ROOT).as_posix(), COMMENT.sub("", p.read_text(encoding="utf-8"))) for p in paths]


def make_commands(text: str) -> list[str]:
    """Every make command a text gives: in a code span, or a line of a code block."""
    found = []
    for block in FENCE.finditer(text):
        found += [line.strip() for line in block.group(0).splitlines() if line.strip().startswith("make ")]
    for match in CODE_SPAN.finditer(FENCE.sub("", text)):
        code = " ".join(match.group(2).split())
        if code.startswith("make "):
            found.append(code)
    return found


def commands_without_language() -> list[str]:
    return [f"{name}: `{command}`" for name, text in chinese_texts() for command in make_commands(text)
            if f"LANG={LANG}" not in command.split("#")[0]]


def test_the_finder_sees_commands_in_spans_and_blocks():
    text = "运行 `make quiz M=01` 或\n```bash\nmake lab LANG=zh-CN   # 工作区\nmake test\n```\n`make` 本身不算"
    assert make_commands(text) == ["make lab LANG=zh-CN   # 工作区", "make test", "make quiz M=01"]


def test_every_make_command_in_a_chinese_text_names_the_language():
    missing = commands_without_language()
    assert not missing, (f"{len(missing)} make commands in Chinese texts lack LANG={LANG} (add it, so the "
                         "learner stays in Chinese):\n" + "\n".join(missing))


def _link_targets() -> list[tuple[str, Path, str]]:
    """(where, folder the link is relative to, target) for every link of the Chinese texts."""
    out = [(name, (ROOT / name).parent, a or b) for name, text in chinese_texts()
           if not name.startswith(f"{CATALOGS.as_posix()}/notebooks/") for a, b in LINK.findall(text)]
    for path in sorted((ROOT / "notebooks" / LANG).glob("*.ipynb")):
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "markdown":
                name = f"{path.relative_to(ROOT).as_posix()} cell {index}"
                out += [(name, path.parent, a or b) for a, b in LINK.findall(COMMENT.sub("", cell.source))]
    return out


def quiz_links_to_english() -> list[str]:
    out = []
    for where, folder, target in _link_targets():
        resolved = (folder / target.partition("#")[0]).resolve()
        if resolved.parent == ROOT / "quizzes" and resolved.suffix == ".json":
            out.append(f"{where}: ({target})")
    return out


def test_no_chinese_quiz_link_leads_to_an_english_file():
    english = quiz_links_to_english()
    assert not english, (f"{len(english)} links in Chinese texts lead to an English quiz file; link the quiz's "
                         f"Chinese, {CATALOGS.as_posix()}/quizzes/NN_slug.md:\n" + "\n".join(english))
