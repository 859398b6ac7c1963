"""What a translation must keep of its English: the checks that make the two say the same thing.

Given an English text and its Chinese (a Markdown cell, a guide, a quiz text), `kept_problems` lists
what the Chinese lost or changed: headings (number and levels), fact markers (names, in order),
math, inline code, code blocks (comments aside), numbers and link targets. `term_problems` lists the
glossary terms the English uses and the Chinese does not write as the glossary's `zh_forms` say.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["kept_problems", "prose", "render_problems", "term_problems"]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\s)[^$\n]+?(?<!\s)\$", re.DOTALL)
CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
FACT = re.compile(r"<!-- fact: ([\w.-]+) -->")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
HEADING = re.compile(r"^(#{1,6}) ", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")
NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?")


def _fences(text: str) -> list[str]:
    """Code blocks with comments and blank lines dropped: a translator may translate a comment."""
    out = []
    for block in FENCE.finditer(text):
        lines = [re.sub(r"\s+#.*$|^\s*#.*$", "", line).rstrip() for line in block.group(0).splitlines()[1:-1]]
        out.append("\n".join(line for line in lines if line))
    return out


def prose(text: str) -> str:
    """The text without code blocks, math, inline code, HTML comments, file names, calls and link targets."""
    for pattern in (FENCE, MATH, COMMENT):
        text = pattern.sub(" ", text)
    text = CODE.sub(" ", text)
    text = re.sub(r"[\w./-]+\.(?:py|md|ipynb|json|html)\b", " ", text)  # a file's name is not prose
    text = re.sub(r"\w+(?:\.\w+)+\([^()]*\)", " ", text)  # nor a call written without backticks: x.transpose(0, 1)
    return re.sub(r"\]\([^)]*\)", "]", text)


def _links(text: str) -> list[str]:
    return [a or b for a, b in LINK.findall(text)]


def kept_problems(english: str, chinese: str, *, link: Callable[[str], str] = lambda t: t) -> list[str]:
    """What the Chinese changed of what a translation keeps. `link` maps an English link target to the
    one the Chinese should write (its Chinese twin)."""
    out = []
    en_levels = [len(h) for h in HEADING.findall(FENCE.sub("", english))]
    zh_levels = [len(h) for h in HEADING.findall(FENCE.sub("", chinese))]
    if en_levels != zh_levels:
        out.append(f"headings: the English has levels {en_levels}, the Chinese {zh_levels}")
    if FACT.findall(english) != FACT.findall(chinese):
        out.append(f"fact markers: the English has {FACT.findall(english)}, the Chinese {FACT.findall(chinese)}")
    # A command may gain the edition's switch: `make lab` becomes `make lab LANG=zh-CN`.
    zh_fences = [re.sub(r" +LANG=zh-CN\b", "", block) for block in _fences(chinese)]
    for what, en, zh in (("math", MATH.findall(FENCE.sub("", english)), MATH.findall(FENCE.sub("", chinese))),
                         ("code blocks", _fences(english), zh_fences)):
        lost = Counter(en) - Counter(zh)
        if lost:
            out.append(f"{what} changed or missing: {sorted(lost)[:3]}")
    en_code = {" ".join(m.group(2).split()) for m in CODE.finditer(FENCE.sub("", english))}  # a line break is a space
    zh_code = {" ".join(m.group(2).split()) for m in CODE.finditer(FENCE.sub("", chinese))}
    lost = {code for code in en_code if not any(code in written for written in zh_code)}  # `make lab LANG=zh-CN`
    if lost:
        out.append(f"inline code changed or missing: {sorted(lost)[:5]}")
    en_numbers, zh_numbers = set(NUMBER.findall(prose(english))), set(NUMBER.findall(chinese))
    if en_numbers - zh_numbers:
        missing = sorted(en_numbers - zh_numbers)[:6]
        out.append(f"numbers missing (write them as the English does, in digits): {missing}")
    wanted = {link(t) for t in _links(english)}
    written = set(_links(chinese))
    if wanted - written:
        out.append(f"links missing or not sent to the Chinese twin: {sorted(wanted - written)[:4]}")
    return out


def render_problems(chinese: str) -> list[str]:
    """Emphasis that CommonMark leaves as literal asterisks: a closing `**` right after full-width
    punctuation or a comment and right before a Chinese character does not close (write
    `**下一步**：`, not `**下一步：**`)."""
    from markdown_it import MarkdownIt

    shown = []
    for token in MarkdownIt("commonmark").enable("table").parse(chinese):
        shown += [child.content for child in token.children or [] if child.type == "text"]
    stray = [text for text in shown if "**" in text or re.search(r"(?<![\w*])\*(?=\S)[^*]*\S\*(?!\w)", text)]
    return [f"emphasis shown as literal asterisks: {text[:60]!r}" for text in stray[:3]]


def term_problems(english: str, chinese: str, terms: Iterable) -> list[str]:
    """Glossary terms that the English uses and the Chinese does not write as the glossary does. A
    use inside a longer term's use ("embedding" in "rotary position embeddings") is that term's."""
    en_prose, zh_prose = prose(english), prose(chinese)
    terms = [t for t in terms if t.zh_forms]
    spans = {t.term: [m.span() for m in t.pattern().finditer(en_prose)] for t in terms}
    longer = [(span, t.term) for t in terms for span in spans[t.term]]

    def inside_another(term: str, span: tuple[int, int]) -> bool:
        return any(a <= span[0] and span[1] <= b and (b - a) > (span[1] - span[0])
                   for (a, b), other in longer if other != term)

    out = []
    for term in terms:
        if not any(not inside_another(term.term, span) for span in spans[term.term]):
            continue
        if not any(form.lower() in zh_prose.lower() for form in term.zh_forms):
            out.append(f"term {term.term!r}: write it as {term.zh} (one of {', '.join(term.zh_forms)})")
    return out
