"""The Chinese edition's command line (CONTRIBUTING.md, "The Chinese edition").

    python -m labkit.course.translation sync [NN|glossary|labkit|all|experiments/NN_slug/expN_name.py]
        write the catalogs (NN: the module's notebook, quiz, check texts, predictions and translated
        scripts): a `todo` block per new or changed English text (a script's catalog is made when it
        is named)
    python -m labkit.course.translation build [NN|all]
        write notebooks/zh-CN/ and docs/glossary.zh-CN.md (make translations)
    python -m labkit.course.translation check [NN|glossary|labkit|all|experiments/NN_slug/expN_name.py]
        list what is not translated, current or faithful
    python -m labkit.course.translation stamp FILE.zh-CN.md
        after carrying an English change over: name the English version it now translates

Exit status: 0 done, 1 problems found (check, or build with catalogs unfinished), 2 a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

from labkit.course.translation import check as checks
from labkit.course.translation.edition import (
    LANG,
    STAMP,
    NotTranslated,
    all_targets,
    build_notebook,
    catalog_of,
    experiment_target,
    guide_pairs,
    stamp_line,
    write_glossary,
    zh_notebook,
)
from labkit.i18n.catalog import CatalogError, read_catalog, synced
from labkit.syllabus import find_course_root

USAGE = __doc__.split("\n\n")[1]


def _targets(root: Path, what: str) -> list[str]:
    everything = all_targets(root)
    if what == "all":
        return everything
    if what in ("glossary", "labkit"):
        return [what]
    if what.endswith(".py"):  # one experiment script: its catalog is made by sync if need be
        script = Path(what).resolve()
        if not (script.is_file() and script.parent.parent == (root / "experiments").resolve()):
            raise SystemExit(_usage(f"{what} is not an experiment script (experiments/NN_slug/expN_*.py)"))
        return [experiment_target(root, script)]
    number = what.zfill(2)
    found = [t for t in everything if t.partition(":")[2].startswith(f"{number}_")]
    if not found:
        raise SystemExit(_usage(f"no notebook, quiz, check texts or predictions numbered {what!r}"))
    return found


def _usage(message: str) -> int:
    print(f"python -m labkit.course.translation: {message}\n{USAGE}", file=sys.stderr)
    return 2


def sync(root: Path, what: str) -> int:
    for target in _targets(root, what):
        _, path, units, preamble = catalog_of(root, target)
        catalog = read_catalog(path)
        text = synced(catalog, units, preamble)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        todo = text.count(" todo · ")
        print(f"{path.relative_to(root).as_posix()}: {len(units)} texts, {todo} to translate")
    return 0


def build(root: Path, what: str) -> int:
    status = 0
    for target in _targets(root, what):
        kind, _, stem = target.partition(":")
        if kind == "notebook":
            try:
                text = build_notebook(root, stem)
            except NotTranslated as problem:
                print(f"not built: notebooks/{LANG}/{stem}.ipynb\n{problem}", file=sys.stderr)
                status = 1
                continue
            path = zh_notebook(root, stem)
            path.parent.mkdir(exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                print("wrote", path.relative_to(root).as_posix())
        elif kind == "glossary":
            try:
                print("wrote", write_glossary(root).relative_to(root).as_posix())
            except NotTranslated as problem:
                print(f"not built: docs/glossary.{LANG}.md\n{problem}", file=sys.stderr)
                status = 1
    return status


def check(root: Path, what: str) -> int:
    problems = []
    for target in _targets(root, what):
        problems += checks.catalog_problems(root, target) + checks.faithful_problems(root, target)
        if target.startswith("notebook:"):
            problems += checks.notebook_file_problems(root, target.partition(":")[2])
    number = None if what in ("all", "glossary", "labkit") else what.zfill(2)
    if what not in ("glossary", "labkit") and not what.endswith(".py"):
        for english in checks.guides(root, number):
            problems += checks.guide_problems(root, english)
        if number == "00":
            for english in checks.guides(root)[:2]:  # the README and the cheat-sheet go with notebook 00
                problems += checks.guide_problems(root, english)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)" if problems else "the Chinese edition is current and faithful here",
          file=sys.stderr)
    return 1 if problems else 0


def stamp(root: Path, name: str) -> int:
    chinese = Path(name).resolve()
    pairs = {c.resolve(): e for e, c in guide_pairs(root)}
    if chinese not in pairs:
        pages = ", ".join(c.relative_to(root).as_posix() for c in pairs)
        return _usage(f"{name} is not a hand-translated page ({pages})")
    if not chinese.exists():
        return _usage(f"{name} does not exist yet: translate {pairs[chinese].relative_to(root).as_posix()} first")
    lines = chinese.read_text(encoding="utf-8").split("\n")
    line = stamp_line(pairs[chinese])
    if STAMP.match(lines[0]):
        lines[0] = line
    else:
        lines[:0] = [line, ""]
    chinese.write_text("\n".join(lines), encoding="utf-8")
    print(f"{name}: {line}")
    return 0


def main(argv: list[str]) -> int:
    """The command; a catalog or glossary that cannot be read is named in one message, exit 1."""
    from labkit.course.glossary import GlossaryError

    try:
        return _command(argv)
    except (CatalogError, GlossaryError) as error:
        print(f"python -m labkit.course.translation: {error}", file=sys.stderr)
        return 1


def _command(argv: list[str]) -> int:
    if not argv or argv[0] not in ("sync", "build", "check", "stamp"):
        return _usage("say what to do")
    root = find_course_root()
    command, rest = argv[0], argv[1:]
    if command == "stamp":
        return stamp(root, rest[0]) if len(rest) == 1 else _usage("stamp takes one file")
    if len(rest) > 1:
        return _usage(f"{command} takes one of NN, glossary, labkit, all")
    return {"sync": sync, "build": build, "check": check}[command](root, rest[0] if rest else "all")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
