"""A translation catalog: the Chinese of a list of English texts, each keyed by the English's hash.

A catalog is a Markdown file that a translator reads and writes. One block per English text
("unit"), in the order the English shows them:

    <!-- zh-CN 3f2a9c1b7d10 · cell 4 -->
    ## 2 · 从平均到注意力

The key is the first 12 hex digits of the SHA-256 of the English text, so a translation belongs to
one English text: when the English changes, its key changes, and the old block no longer matches
anything. That is how the edition cannot drift: `sync` writes a block marked `todo` for every
English text that has no translation (the English, and any old Chinese, for the translator to
replace), the tests fail while one is left, and nothing else ever decides that a translation is
current. The label after `·` only helps the translator find the place; `sync` rewrites it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "Catalog", "CatalogError", "Unit", "key_of", "read_catalog", "synced"]

HEADER = re.compile(r"^<!-- zh-CN ([0-9a-f]{12})( todo)?(?: · (.*?))? -->$", re.MULTILINE)
ENGLISH_NOW = "<!-- English now (replace this block with its Chinese, then delete `todo` above) -->"


class CatalogError(ValueError):
    """A catalog that cannot be used as it is (not UTF-8, a folder, a finished block left empty, a
    template whose {fields} are broken): the message names the file, the block and the fix."""


FIX = "python -m labkit.course.translation sync <NN | glossary | labkit>"


def key_of(english: str) -> str:
    return hashlib.sha256(english.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Unit:
    """One English text to translate, and where it is (for the translator and for messages)."""
    text: str
    label: str

    @property
    def key(self) -> str:
        return key_of(self.text)


@dataclass(frozen=True)
class Block:
    key: str
    text: str
    todo: bool
    label: str


@dataclass(frozen=True)
class Catalog:
    path: Path
    preamble: str
    blocks: tuple[Block, ...]

    def translations(self) -> dict[str, str]:
        """key -> Chinese, for every finished block. A finished block left empty is refused: it would
        show an empty cell or question where the English has text."""
        if self.empty:
            raise CatalogError("\n".join(self._empty_problems()))
        return self.finished()

    @property
    def empty(self) -> tuple[Block, ...]:
        """Blocks marked finished (no `todo`) whose Chinese is blank."""
        return tuple(b for b in self.blocks if not b.todo and not b.text.strip())

    def finished(self) -> dict[str, str]:
        """key -> Chinese, for every finished block that holds text (what `translations` returns, without
        refusing the empty ones: for the tools that list them)."""
        return {b.key: b.text for b in self.blocks if not b.todo and b.text.strip()}

    def _empty_problems(self) -> list[str]:
        return [f"{_shown(self.path)}: block {b.key} ({b.label or 'no label'}) is marked finished but holds no "
                f"Chinese: write its translation, or put `todo` back in its header ({FIX} does)" for b in self.empty]

    def problems(self, units: list[Unit]) -> list[str]:
        """What keeps this catalog from translating `units`: missing, stale, unfinished, empty, or left over."""
        done = self.finished()
        wanted = {u.key for u in units}
        known = {b.key for b in self.blocks}
        stale = [b for b in self.blocks if b.key not in wanted]
        name = _shown(self.path)
        out = []
        for unit in units:
            if unit.key in done:
                continue
            if unit.key in {b.key for b in self.empty}:
                continue  # said below
            if unit.key in known:
                out.append(f"{name}: {unit.label} is marked todo: translate it and delete `todo` from its header")
            else:
                why = (" (its English changed since it was translated: the catalog holds translations of English "
                       "that is no longer there)") if stale else ""
                out.append(f"{name}: {unit.label} has no translation{why}")
        out += [f"{name}: block {b.key} ({b.label or 'no label'}) translates English that is no longer there"
                for b in stale]
        out += [problem for problem, b in zip(self._empty_problems(), self.empty) if b.key in wanted]
        if out:
            out.append(f"fix: {FIX}, translate the `todo` blocks of {name}, then make translations")
        return out


def _shown(path: Path) -> str:
    try:  # the folder resolved, not the file: a catalog that is a link (to itself, even) keeps its name
        return (path.parent.resolve() / path.name).relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, RuntimeError, OSError):  # outside the course, or a loop of links on the way
        return path.as_posix()


def read_catalog(path: Path) -> Catalog:
    """The catalog at `path` (an empty one where there is no file yet); CatalogError, naming the
    file and the fix, where it cannot be read as a catalog."""
    if path.exists() and not path.is_file() and not path.is_dir():  # a FIFO or a device: reading it never ends
        raise CatalogError(f"{_shown(path)} is not a regular file (a pipe or a device): move it away, then {FIX} "
                           f"writes the catalog")
    try:  # a link to nothing, or to itself, is read to be named (exists() says False for it)
        text = path.read_text(encoding="utf-8") if path.exists() or path.is_symlink() else ""
    except IsADirectoryError:
        raise CatalogError(f"{_shown(path)} is a folder, not a catalog (a Markdown file of translations): move it "
                           f"away, then {FIX} writes the catalog") from None
    except UnicodeDecodeError as error:
        raise CatalogError(f"{_shown(path)} is not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset "
                           f"{error.start}): save it as UTF-8 (an editor's \"encoding\" menu, or "
                           f"iconv -f GB18030 -t UTF-8)") from None
    except OSError as error:
        raise CatalogError(f"{_shown(path)} cannot be read ({error.strerror})") from None
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("<!-- zh-CN") and not HEADER.match(line):  # else it would join the block above
            raise CatalogError(f"{_shown(path)}:{number}: a block's header must read `<!-- zh-CN <the 12 hex digits "
                               f"sync wrote>[ todo] · <label> -->`, got {line[:80]!r}: restore it as {FIX} wrote it")
    headers = list(HEADER.finditer(text))
    blocks = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[header.end():end].strip("\n")
        blocks.append(Block(header.group(1), body, bool(header.group(2)), header.group(3) or ""))
    preamble = text[:headers[0].start()].strip("\n") if headers else text.strip("\n")
    return Catalog(path, preamble, tuple(blocks))


def synced(catalog: Catalog, units: list[Unit], preamble: str) -> str:
    """The catalog rewritten for `units`: finished blocks kept, a `todo` block for every English text
    without one (holding the English, and the old Chinese where the English changed in place)."""
    done = catalog.finished()  # a finished block left empty is written as `todo` again, holding its English
    pending = {b.key: b.text for b in catalog.blocks if b.todo}
    old_keys = [b.key for b in catalog.blocks]
    old_text = {b.key: b.text for b in catalog.blocks}
    # Pair each changed English text with the block that stood in its place, to show the old Chinese.
    replaced: dict[str, str] = {}
    matcher = difflib.SequenceMatcher(a=old_keys, b=[u.key for u in units], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "replace":
            for a, b in zip(range(a0, a1), range(b0, b1)):
                replaced[units[b].key] = old_text[old_keys[a]]
    out, seen = [preamble.strip("\n"), ""], set()
    for unit in units:
        if unit.key in seen:
            continue
        seen.add(unit.key)
        if unit.key in done:
            out += [f"<!-- zh-CN {unit.key} · {unit.label} -->", done[unit.key], ""]
            continue
        body = pending.get(unit.key)
        if body is None:
            body = unit.text
            if unit.key in replaced and not HEADER.search(replaced[unit.key]):
                body = f"{replaced[unit.key]}\n{ENGLISH_NOW}\n{unit.text}"
        out += [f"<!-- zh-CN {unit.key} todo · {unit.label} -->", body, ""]
    return "\n".join(out).rstrip("\n") + "\n"
