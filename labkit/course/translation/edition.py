"""The Chinese edition's files: where each lives, how it is built, and what keeps it from being current.

- notebooks/zh-CN/NN_slug.ipynb: built, never edited. The English notebook with each Markdown cell
  replaced by its translation (translations/zh-CN/notebooks/NN_slug.md) and its links sent to the
  Chinese twins. Code cells and metadata are the English notebook's own; the outputs are the
  notebook's own, run in Chinese (`make notebooks`), and a test binds them to the English outputs
  that nbval checks, so nbval need not run these notebooks again (conftest.py leaves them out;
  tests/course/test_chinese_outputs.py).
- modules/NN_slug/README.zh-CN.md, README.zh-CN.md, docs/cheatsheet.zh-CN.md: translated by hand,
  line 1 naming the git blob of the English version they translate (`stamp`).
- the quizzes, the checks' texts (modules/NN_slug/checks.json), the predictions
  (modules/NN_slug/predictions.json) and labkit's messages: translated at run time by `tr` from
  their catalogs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import nbformat

from labkit.course.glossary import GLOSSARY_ZH, load_glossary, render_translated
from labkit.course.translation.sources import (
    check_units,
    experiment_units,
    glossary_units,
    labkit_units,
    notebook_units,
    prediction_units,
    quiz_units,
)
from labkit.i18n.catalog import Unit, key_of, read_catalog
from labkit.predictions import FILE, prediction_files

__all__ = ["LANG", "catalog_of", "build_notebook", "blob", "guide_pairs", "stamp_line", "stamp_problems",
           "twin_link", "units_of", "write_glossary", "zh_notebook"]

LANG = "zh-CN"
CATALOGS = Path("translations") / LANG
PREAMBLE = {
    "notebook": ("<!-- The Chinese of notebooks/{name}: one block per Markdown cell and per text its code shows, "
                 "keyed by the English's hash. notebooks/zh-CN/{name} is built from it: make translations. "
                 "How: CONTRIBUTING.md, \"The Chinese edition\". -->"),
    "quiz": ("<!-- The Chinese of quizzes/{name}: one block per text; the answers and checks stay in the JSON. "
             "How: CONTRIBUTING.md, \"The Chinese edition\". -->"),
    "checks": ("<!-- The Chinese of modules/{name}/checks.json: each check's name in words, explanation and "
               "hints; check() shows them by key. How: CONTRIBUTING.md, \"The Chinese edition\". -->"),
    "prediction": ("<!-- The Chinese of modules/{name}/predictions.json: one block per text of its predictions "
                   "(question, choices, unit, each why, the explanation), shown by predict and predict.reveal when "
                   "they run. Keep each {{field}} as it is. How: CONTRIBUTING.md, \"The Chinese edition\". -->"),
    "glossary": ("<!-- The Chinese of docs/glossary.json's glosses and module titles (the terms' Chinese is the "
                 "JSON's zh). docs/glossary.zh-CN.md is built from it: make translations. -->"),
    "experiments": ("<!-- The Chinese of what experiments/{name}.py prints and draws: its claim, then one "
                    "block per template (a printed line or a figure's text, each value a {{placeholder}} kept "
                    "as it is), keyed by the English's hash. Translated as the script runs in Chinese "
                    "(labkit/i18n/output.py). How: CONTRIBUTING.md, \"The Chinese edition\". -->"),
    "labkit": ("<!-- The Chinese of labkit's messages: every literal passed to tr() or phrase() in labkit/. "
               "Keep each {field} as it is; a block's first and last newlines are not kept, so a "
               "template neither starts nor ends with one. -->"),
}


def blob(path: Path) -> str:
    """The git blob id of a file (`git hash-object`), first 12 hex digits."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:12]


# ------------------------------------------------------------------------------------------ catalogs

def catalog_of(root: Path, target: str) -> tuple[str, Path, list[Unit], str]:
    """(kind, catalog path, English units, preamble) for 'notebook:<stem>', 'quiz:<stem>', 'checks:<stem>',
    'prediction:<module>', 'experiments:<NN_slug>/<script stem>', 'glossary', 'labkit'."""
    kind, _, stem = target.partition(":")
    if kind == "notebook":
        english = root / "notebooks" / f"{stem}.ipynb"
        return kind, root / CATALOGS / "notebooks" / f"{stem}.md", notebook_units(english), \
            PREAMBLE[kind].format(name=english.name)
    if kind == "quiz":
        english = root / "quizzes" / f"{stem}.json"
        return kind, root / CATALOGS / "quizzes" / f"{stem}.md", quiz_units(english), \
            PREAMBLE[kind].format(name=english.name)
    if kind == "checks":
        english = root / "modules" / stem / "checks.json"
        return kind, root / CATALOGS / "checks" / f"{stem}.md", check_units(english), PREAMBLE[kind].format(name=stem)
    if kind == "prediction":
        english = root / "modules" / stem / FILE
        return kind, root / CATALOGS / "predictions" / f"{stem}.md", prediction_units(english), \
            PREAMBLE[kind].format(name=stem)
    if kind == "experiments":
        return kind, root / CATALOGS / "experiments" / f"{stem}.md", \
            experiment_units(root / "experiments" / f"{stem}.py"), PREAMBLE[kind].format(name=stem)
    if kind == "glossary":
        return kind, root / CATALOGS / "glossary.md", glossary_units(root), PREAMBLE[kind]
    if kind == "labkit":
        return kind, root / CATALOGS / "labkit.md", labkit_units(root), PREAMBLE[kind]
    raise ValueError(f"unknown catalog {target!r}")


def units_of(root: Path, target: str) -> list[Unit]:
    return catalog_of(root, target)[2]


def all_targets(root: Path) -> list[str]:
    notebooks = [f"notebook:{p.stem}" for p in sorted((root / "notebooks").glob("*.ipynb"))]
    quizzes = [f"quiz:{p.stem}" for p in sorted((root / "quizzes").glob("*.json"))]
    checks = [f"checks:{p.parent.name}" for p in sorted((root / "modules").glob("*/checks.json"))]
    predictions = [f"prediction:{p.parent.name}" for p in prediction_files(root)]
    experiments = [experiment_target(root, p) for p in translated_scripts(root)]
    return [*notebooks, *quizzes, *checks, *predictions, *experiments, "glossary", "labkit"]


def experiment_target(root: Path, script: Path) -> str:
    """'experiments:01_attention_basics/exp3_stable_softmax' for the script
    experiments/01_attention_basics/exp3_stable_softmax.py."""
    return "experiments:" + script.resolve().relative_to((root / "experiments").resolve()).with_suffix("").as_posix()


def translated_scripts(root: Path) -> list[Path]:
    """The experiment scripts that have a Chinese catalog (translations/zh-CN/experiments/NN_slug/expN_*.md).
    A script joins the Chinese edition when its catalog is made (`translation sync experiments/.../expN.py`);
    one without a catalog prints English in both editions (CONTRIBUTING.md, "The Chinese edition")."""
    found = sorted((root / CATALOGS / "experiments").glob("*/*.md"))
    return [root / "experiments" / path.parent.name / f"{path.stem}.py" for path in found]


# ------------------------------------------------------------------------------------------ notebooks

def zh_notebook(root: Path, stem: str) -> Path:
    return root / "notebooks" / LANG / f"{stem}.ipynb"


LINK = re.compile(r"(\]\(|href=\")([^)\"\s]+)")


def twin_link(root: Path, folder: Path, target: str, new_folder: Path) -> str:
    """A link written in `folder` (relative), as written from `new_folder`, sent to the Chinese twin
    of its target where one exists. An anchor into a Chinese twin is kept only for the glossary,
    whose Chinese page keeps the English anchors; otherwise the link stays on the English page. A
    quiz's twin is its catalog, translations/zh-CN/quizzes/NN_slug.md: the quiz in Chinese (the answers
    stay in the JSON; the learner takes it with `make quiz M=NN LANG=zh-CN` or the notebook's widget)."""
    if re.match(r"^[a-z][a-z+.-]*:", target) or target.startswith(("#", "/")):
        return target
    path_part, hash_, anchor = target.partition("#")
    resolved = Path(os.path.normpath(folder / path_part))
    twin = None
    if resolved.suffix == ".ipynb" and resolved.parent == root / "notebooks":
        twin = resolved.parent / LANG / resolved.name
    elif resolved.suffix == ".json" and resolved.parent == root / "quizzes":
        twin = root / CATALOGS / "quizzes" / f"{resolved.stem}.md"
    elif resolved.suffix == ".md":
        twin = resolved.with_name(f"{resolved.stem}.{LANG}.md")
    if twin is not None and twin.exists() and (not anchor or twin.name == f"glossary.{LANG}.md"):
        resolved = twin
    rel = Path(os.path.relpath(resolved, new_folder)).as_posix()
    if path_part.endswith("/") and not rel.endswith("/"):
        rel += "/"
    return rel + hash_ + anchor


def _relink(root: Path, text: str) -> str:
    here, there = root / "notebooks", root / "notebooks" / LANG
    return LINK.sub(lambda m: m.group(1) + twin_link(root, here, m.group(2), there), text)


class NotTranslated(Exception):
    pass


def build_notebook(root: Path, stem: str) -> str:
    """The Chinese notebook's text, as `make translations` writes it: the English notebook, each
    Markdown cell translated. Its outputs are Chinese ones, made by running it in Chinese (`make
    notebooks` does: `_chinese_run` in labkit/course/cli.py), never the English outputs: a code cell
    keeps the outputs that the Chinese notebook on disk holds for it (the same id, the same source),
    and has none while its code is new or changed; the widgets' saved state is the Chinese file's."""
    english = root / "notebooks" / f"{stem}.ipynb"
    catalog = read_catalog(root / CATALOGS / "notebooks" / f"{stem}.md")
    problems = catalog.problems(notebook_units(english))
    if problems:
        raise NotTranslated("\n".join(problems))
    done = catalog.translations()
    notebook = nbformat.read(english, as_version=4)
    ran, widgets = _chinese_outputs(zh_notebook(root, stem))
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            cell.source = _relink(root, done[Unit(cell.source, "").key])
        elif cell.cell_type == "code":
            kept = ran.get(cell.get("id"))
            if kept is not None and kept.source == cell.source:
                cell.outputs, cell.execution_count = kept.outputs, kept.execution_count
            else:
                cell.outputs, cell.execution_count = [], None
    notebook.metadata.pop("widgets", None)
    if widgets is not None:
        notebook.metadata["widgets"] = widgets
    notebook.metadata["attention_lab"] = {"edition": LANG, "built_from": f"../{english.name}"}
    return nbformat.writes(notebook) + "\n"


def _chinese_outputs(path: Path) -> tuple[dict, dict | None]:
    """The code cells of the Chinese notebook at `path` by id, and its widgets' saved state; nothing
    when there is no such notebook or it cannot be read (it is about to be written again)."""
    try:
        notebook = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return {}, None
    return ({cell.get("id"): cell for cell in notebook.cells if cell.cell_type == "code"},
            notebook.metadata.get("widgets"))


def write_glossary(root: Path) -> Path:
    """Write docs/glossary.zh-CN.md; raises NotTranslated while a gloss or a title has no translation."""
    catalog = read_catalog(root / CATALOGS / "glossary.md")
    problems = catalog.problems(glossary_units(root))
    if problems:
        raise NotTranslated("\n".join(problems))
    done = catalog.translations()
    path = root / GLOSSARY_ZH
    path.write_text(render_translated(load_glossary(root), lambda text: done[key_of(text)]), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ guides

def guide_pairs(root: Path) -> list[tuple[Path, Path]]:
    """(English, Chinese) for every page translated by hand."""
    english = [root / "README.md", root / "docs" / "cheatsheet.md", *sorted((root / "modules").glob("*/README.md"))]
    return [(e, e.with_name(f"{e.stem}.{LANG}.md")) for e in english]


def stamp_line(english: Path) -> str:
    return f"<!-- {LANG} translation of {english.name} at {blob(english)} -->"


STAMP = re.compile(rf"^<!-- {LANG} translation of (\S+) at ([0-9a-f]{{12}}) -->$")


def stamp_problems(root: Path, english: Path, chinese: Path) -> list[str]:
    name = chinese.relative_to(root).as_posix()
    if not chinese.exists():
        return [f"{name} is missing: translate {english.relative_to(root).as_posix()} (CONTRIBUTING.md, "
                f"\"The Chinese edition\")"]
    first = chinese.read_text(encoding="utf-8").split("\n", 1)[0]
    match = STAMP.match(first)
    if not match or match.group(1) != english.name:
        return [f"{name}: line 1 must be `{stamp_line(english)}`, naming the English version it translates"]
    if match.group(2) != blob(english):
        return [f"{name} translates {english.name} as it was at {match.group(2)}; it is {blob(english)} now. "
                f"See what changed (git diff {match.group(2)} {blob(english)} once both are committed), carry it "
                f"over, then: python -m labkit.course.translation stamp {name}"]
    return []


def load_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
