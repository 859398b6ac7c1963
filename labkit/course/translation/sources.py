"""The English texts ("units") that each catalog translates, read from the English sources.

- a notebook: every Markdown cell, and every text its code shows the learner: the `description=` of
  a widget, and every template of what a cell prints and draws (labkit/i18n/templates.py), which the
  kernel translates as the cell runs in Chinese (labkit/i18n/output.py);
- a module's check texts (modules/NN_slug/checks.json): each check's name in words, explanation,
  hint and hints per kind of mistake;
- a module's predictions (modules/NN_slug/predictions.json): every text of every prediction
  (labkit/predictions.py), its code cells naming only the keys;
- a quiz: the title, the description, and each question's question, choices, hint, explanation and unit;
- the glossary: each term's gloss, and the module titles its page groups them under;
- labkit: every literal passed to `tr(...)` or `phrase(...)` in labkit's own code (its messages);
- an experiment script: its claim (its docstring's first paragraph, which it prints first) and
  every template of what it prints and draws (labkit/i18n/templates.py).

Code texts are read with `ast`, never by running anything.
"""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

import nbformat

from labkit.i18n.catalog import Unit
from labkit.i18n.templates import extended_context, source_templates

__all__ = ["OUTPUT", "check_units", "code_texts", "experiment_units", "glossary_units", "labkit_units",
           "notebook_units", "prediction_units", "quiz_units"]

OUTPUT = "output"  # the word in a unit's label that makes it a template of what code prints or draws


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def code_texts(source: str) -> list[tuple[str, str]]:
    """(what, text) for every learner-facing literal in a code cell, in source order."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    found: list[tuple[int, int, str, str]] = []

    def add(node: ast.AST, what: str) -> None:
        text = _string(node)
        if text:
            found.append((node.lineno, node.col_offset, what, text))

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        if "description" in keywords:  # a widget's label (labkit.widgets passes it through tr)
            add(keywords["description"], "widget label")
    return [(what, text) for _, _, what, text in sorted(found)]


def notebook_units(path: Path) -> list[Unit]:
    return list(_notebook_units(path.read_text(encoding="utf-8")))


# Reading a source's templates walks its whole syntax tree; the checks of one run ask for the same
# notebook or script many times (each catalog check, the glossary's, the build), so the units are
# kept per text read.
@functools.lru_cache(maxsize=128)
def _notebook_units(text: str) -> tuple[Unit, ...]:
    units, context = [], None  # the cells before: a text bound in one cell may be printed in a later one
    for index, cell in enumerate(nbformat.reads(text, as_version=4).cells):
        if cell.cell_type == "markdown" and cell.source.strip():
            units.append(Unit(cell.source, f"cell {index}"))
        elif cell.cell_type == "code":
            units += [Unit(text, f"cell {index}: {what}") for what, text in code_texts(cell.source)]
            units += [Unit(text, f"cell {index}: {OUTPUT} ({what})")
                      for _, what, text in source_templates(cell.source, context)]
            context = extended_context(context, cell.source)
    return tuple(units)


def experiment_units(script: Path) -> list[Unit]:
    """The texts of one experiment script: its claim (the docstring's first paragraph, printed
    first), then every template of what it prints and draws."""
    return list(_experiment_units(script.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=128)
def _experiment_units(source: str) -> tuple[Unit, ...]:
    from labkit.experiment import _first_sentence

    doc = ast.get_docstring(ast.parse(source), clean=False)
    units = [Unit(_first_sentence(doc), "claim")] if doc else []
    return tuple(units + [Unit(text, f"line {line}: {OUTPUT} ({what})")
                          for line, what, text in source_templates(source)])


def check_units(path: Path) -> list[Unit]:
    """The texts of one modules/NN_slug/checks.json, entry by entry: the name when it is in words
    (a slug is code, shown as written), the explanation, the hint, and each kind of mistake's hint."""
    from labkit.checks.texts import load_texts

    units = []
    for slug, texts in load_texts(path).items():
        if texts.name != slug:
            units.append(Unit(texts.name, f"{slug}: name"))
        if texts.explain:
            units.append(Unit(texts.explain, f"{slug}: explain"))
        units.append(Unit(texts.hint, f"{slug}: hint"))
        units += [Unit(text, f"{slug}: mistake {kind}") for kind, text in texts.mistakes]
    return units


QUIZ_TEXTS = ("question", "choices", "hint", "explanation", "unit")


def quiz_units(path: Path) -> list[Unit]:
    data = json.loads(path.read_text(encoding="utf-8"))
    units = [Unit(data[key], key) for key in ("title", "description") if isinstance(data.get(key), str)]
    for question in data.get("questions", []):
        for key in QUIZ_TEXTS:
            value = question.get(key)
            texts = value if key == "choices" and isinstance(value, list) else [value]
            units += [Unit(text, f"{question.get('id')}: {key}") for text in texts if isinstance(text, str) and text]
    return units


def prediction_units(path: Path) -> list[Unit]:
    """Every text of a module's predictions.json, labelled by its prediction's key (validated on the
    way: a broken file says so here too)."""
    from labkit.predictions import load_predictions, texts_of

    return [Unit(text, f"{key}: {what}") for key, spec in load_predictions(path).items()
            for what, text in texts_of(spec)]


def glossary_units(root: Path) -> list[Unit]:
    from labkit.course.glossary import PREREQUISITES, load_glossary
    from labkit.syllabus import PLANNED_MODULES

    titles = [Unit(PREREQUISITES[1], "module 00 title")]
    titles += [Unit(title, f"module {number} title") for number, (_, title) in PLANNED_MODULES.items()]
    return titles + [Unit(term.gloss, f"gloss of {term.term}") for term in load_glossary(root)]


MESSAGE_FUNCTIONS = ("tr", "phrase")


def labkit_units(root: Path) -> list[Unit]:
    units = []
    for path in sorted((root / "labkit").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) in MESSAGE_FUNCTIONS
                        and n.args), key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            text = _string(call.args[0])
            if text:
                units.append(Unit(text, f"{path.relative_to(root).as_posix()}:{call.lineno}"))
    return units
