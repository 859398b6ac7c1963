"""The course's predictions ask before they tell (labkit/predict.py, modules/NN_slug/predictions.json).

- Every predict cell names one key, the next code cell reveals that key, and the keys are the
  data's, each asked once, in the data's order; each reveal passes the fields its texts use.
- Nothing a reveal says is in a learner's copy before the commit: no sentence of an answer, a `why`
  or an explanation, English or Chinese, in any cell of the copy, source or stored output; no code
  cell names the answer (the right choice as a literal, a constant passed to `seen.result`, or the
  right choice's `when` spelled without the others').
- The text above a prediction does not state its answer (`paragraph_leaks` says how that is read).
  The learner copies' runs, where the answer must stay hidden until committed, are in
  tests/kit/test_student_copies.py (tests/learner_predictions.py).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest
from learner_predictions import prediction_cells

from labkit.course.student import student_notebook
from labkit.i18n import speaking, tr
from labkit.predictions import find_prediction, load_predictions, prediction_files

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WITH_PREDICTIONS = [p for p in NOTEBOOKS if "predict(" in p.read_text(encoding="utf-8")]
CHINESE = [ROOT / "notebooks" / "zh-CN" / p.name for p in WITH_PREDICTIONS]


@lru_cache(maxsize=None)
def read(path: Path):
    """A notebook, read once for the whole file (the tests only read it)."""
    return nbformat.read(path, as_version=4)


def cells_of(path: Path) -> list[tuple[int, int, str]]:
    return prediction_cells(read(path))


def reveal_call(source: str) -> ast.Call | None:
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "result"
                and getattr(node.func.value, "id", None) == "seen"):
            return node
    return None


def revealed_key(source: str) -> str | None:
    """The key of a `with predict.reveal("KEY") as seen:` cell."""
    tree = ast.parse(source)
    for statement in tree.body:
        if isinstance(statement, ast.With):
            call = statement.items[0].context_expr
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "reveal"
                    and call.args and isinstance(call.args[0], ast.Constant)
                    and statement.items[0].optional_vars is not None
                    and getattr(statement.items[0].optional_vars, "id", None) == "seen"):
                return call.args[0].value
    return None


# ------------------------------------------------------------------------------------ the cells and the data

def test_every_module_data_file_loads_and_its_keys_are_asked_once_in_order():
    asked = {path.stem[:2]: [key for _, _, key in cells_of(path)] for path in WITH_PREDICTIONS}
    for data in prediction_files(ROOT):
        keys = list(load_predictions(data))
        number = data.parent.name[:2]
        assert asked.get(number) == keys, f"{data.relative_to(ROOT)} holds {keys}; its notebook asks {asked[number]}"
    assert set(asked) == {data.parent.name[:2] for data in prediction_files(ROOT)}, "a notebook asks with no data"


@pytest.mark.parametrize("path", WITH_PREDICTIONS, ids=lambda p: p.stem)
def test_each_reveal_cell_reveals_its_prediction_with_a_measurement_and_its_fields(path):
    notebook = read(path)
    for ask, show, key in prediction_cells(notebook):
        source = notebook.cells[show].source
        where = f"{path.name}, cell {show} ({key})"
        assert revealed_key(source) == key and len(ast.parse(source).body) == 1, (
            f"{where}: the cell after the prediction must be one `with predict.reveal({key!r}) as seen:` "
            f"block, so that nothing it shows escapes the hold")
        call = reveal_call(source)
        assert call is not None and call.args, f"{where}: no seen.result(...) in the block"
        measured = call.args[0]
        constant = isinstance(measured, ast.Constant) or (
            isinstance(measured, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in measured.elts))
        assert not constant, f"{where}: seen.result({ast.unparse(measured)}) is typed in, not measured"
        wanted = find_prediction(key, ROOT).fields() - {"result"}
        assert {k.arg for k in call.keywords} == wanted, f"{where}: its texts use the fields {sorted(wanted)}"


def _bound_anywhere(tree: ast.AST) -> set[str]:
    """Every name a cell binds, in any scope: assignments, loop and comprehension targets, arguments,
    functions, classes, imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _bound_at_top(tree: ast.Module) -> set[str]:
    """The names a cell binds in the notebook's namespace (not inside a function, class or comprehension)."""
    names = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


@pytest.mark.parametrize("path", WITH_PREDICTIONS, ids=lambda p: p.stem)
def test_a_reveal_cell_run_again_after_run_all_reads_what_it_read_the_first_time(path):
    """A learner commits after Run All and runs the reveal cell again: every name it reads from the
    cells above must still be what it was, so no later cell may rebind one."""
    notebook = read(path)
    found = []
    for _, show, key in prediction_cells(notebook):
        tree = ast.parse(notebook.cells[show].source)
        reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        reads -= _bound_anywhere(tree)
        for later, cell in enumerate(notebook.cells[show + 1:], show + 1):
            if cell.cell_type == "code":
                try:
                    rebound = reads & _bound_at_top(ast.parse(cell.source))
                except SyntaxError:  # an IPython magic: it binds nothing the test knows of
                    continue
                found += [f"{path.name}, cell {show} ({key}) reads {name!r}, which cell {later} rebinds"
                          for name in sorted(rebound)]
    assert not found, "\n".join(found)


# ------------------------------------------------------------------------------------ nothing in the copy

def sentences(text: str, chinese: bool = False) -> list[str]:
    """The pieces of a reveal's text that would give it away if a copy held them: each stretch
    between fields and between sentence marks, long enough to be this text's own (6 words, or 12
    Chinese characters)."""
    out = []
    for piece in re.split(r"\{[^}]*\}", text):
        for part in re.split(r"[.;:!?。；：！？]\s*" if not chinese else r"[。；：！？]", piece):
            part = " ".join(part.split())
            if (len(re.findall(r"[\u4e00-\u9fff]", part)) >= 12) if chinese else len(part.split()) >= 6:
                out.append(part)
    return out


def told(spec) -> list[str]:
    """What only a reveal may say: the explanation, every why; for a choice question its answer."""
    texts = [spec.explanation, spec.low, spec.high] + [c.why for c in spec.choices]
    return [t for t in texts if t]


def learner_visible(notebook) -> list[tuple[int, str]]:
    """(cell, text) for everything a learner's copy shows before a commit: every source, every stored output."""
    out = []
    for index, cell in enumerate(notebook.cells):
        shown = [cell.source]
        for output in cell.get("outputs", []):
            shown.append(output.get("text", ""))
            shown += [str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
        out.append((index, " ".join(" ".join(shown).split())))
    return out


@pytest.mark.parametrize("path", WITH_PREDICTIONS + CHINESE, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_no_learner_visible_cell_holds_what_a_reveal_says(path):
    chinese = "zh-CN" in path.parts
    copy = student_notebook(read(path), path.name)
    visible = learner_visible(copy)
    found = []
    for _, show, key in prediction_cells(copy):
        spec = find_prediction(key, ROOT)
        with speaking("zh-CN" if chinese else "en"):
            pieces = [p for text in told(spec) for p in sentences(tr(text), chinese)]
        for index, text in visible:
            found += [f"{path.name}, cell {index}: {key}: {p!r}" for p in pieces if p.lower() in text.lower()]
    assert not found, "a learner's copy shows what only a reveal may say:\n" + "\n".join(found)


def _literals(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


@pytest.mark.parametrize("path", WITH_PREDICTIONS, ids=lambda p: p.stem)
def test_no_code_cell_names_the_answer(path):
    notebook = read(path)
    found = []
    for _, show, key in prediction_cells(notebook):
        spec = find_prediction(key, ROOT)
        if spec.number:
            continue
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code" and spec.answer.casefold() in (s.casefold() for s in _literals(cell.source)):
                found.append(f"{path.name}, cell {index}: {key}: the answer {spec.answer!r} is a literal")
        spelled = {c.text for c in spec.choices if isinstance(c.when, str)
                   and c.when in _literals(notebook.cells[show].source)}
        if spec.answer in spelled and spelled != {c.text for c in spec.choices if isinstance(c.when, str)}:
            found.append(f"{path.name}, cell {show}: {key}: the cell spells the answer's measurement "
                         f"{spec.choice(spec.answer).when!r} but not every other choice's")
    assert not found, "\n".join(found)


# ------------------------------------------------------------------------------------ the paragraph above

STOP = set("""a an the of to in on at by for with and or but not no is are be it its it's this that these those
as from into than then so each every all one two any only what which who how does do there their his her
he she they we you your was were has have had will can may must if when where""".split())
NUMBER_WORDS = dict(zip("one two three four five six seven eight nine".split(), range(1, 10)))
HEADING = re.compile(r"^#{1,6} ", re.M)


def above(notebook, ask: int) -> str:
    """The Markdown a learner reads on the way to a prediction: from the latest of the section's
    heading and the previous prediction's reveal, down to the predict cell."""
    start = 0
    for index in range(ask - 1, -1, -1):
        cell = notebook.cells[index]
        if cell.cell_type == "markdown" and HEADING.search(cell.source):
            start = index
            break
        if "predict" in cell.metadata.get("tags", []):
            start = index + 2
            break
    return "\n\n".join(c.source for c in notebook.cells[start:ask] if c.cell_type == "markdown")


def _plain(text: str) -> str:
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S).replace("`", "").replace("*", "")
    return " ".join(text.lower().split())


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z_][a-z0-9_]*", _plain(text)) if w not in STOP}


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", _plain(text))]


def _shown_result(answer_book, show: int) -> str | None:
    for output in answer_book.cells[show].get("outputs", []):
        found = re.search(r"^The result: (.+)\.$", output.get("text", ""), re.M)
        if found:
            return found.group(1)
    return None


def paragraph_leaks(markdown: str, spec, result: str | None) -> list[str]:
    """How the text above a prediction (and its question) gives its answer away, one line each.
    Read as a checkable criterion, strict about what it flags and silent about paraphrase (which
    review must catch):

    - a choice question: the right choice as written (code marks and case aside) in the text or in
      the question; a right choice that is a tuple of numbers, written as one ([128, 512] for
      (128, 512)); or every word that only the right choice has (two at least, not in the
      question), together in one sentence of the text;
    - a number: the result as the answer book shows it (`result`), in the text, written to the same
      digits; a one-digit result only with its unit after it, in digits or in words ("two queries").
    """
    text, out = _plain(markdown), []
    if not spec.number:
        right = _plain(spec.answer)
        for where, body in (("the text above", text), ("the question", _plain(spec.question))):
            if len(right) > 3 and right in body:
                out.append(f"{where} writes the answer {spec.answer!r}")
        numbers = _numbers(spec.answer)
        if len(numbers) >= 2 and re.sub(r"[^\d,]", "", spec.answer) in {
                re.sub(r"[^\d,]", "", m) for m in re.findall(r"[\[(][\d,\s]+[\])]", markdown)}:
            out.append(f"the text above writes the shape {spec.answer}")
        own = _words(spec.answer) - set().union(*(_words(c.text) for c in spec.choices if c.text != spec.answer))
        own -= _words(spec.question)
        if len(own) >= 2:
            for sentence in re.split(r"(?<=[.:;?!])\s+", text):
                if own <= _words(sentence):
                    out.append(f"a sentence above has every word only the answer has, {sorted(own)}: {sentence[:80]!r}")
        return out
    if result is None:
        return ["the answer book shows no result for it"]
    digits = re.sub(r"[^\d.]", "", result.split()[0].replace(",", ""))
    value, decimals = float(digits), len(digits.partition(".")[2])
    unit = _plain(spec.unit)
    if len(digits.replace(".", "").lstrip("0")) >= 2:
        if any(round(n, decimals) == value for n in _numbers(text)):
            out.append(f"the text above writes the result {result}")
    elif unit:
        words = [w for w, n in NUMBER_WORDS.items() if n == value]
        if re.search(rf"(?<![\w.])(?:{'|'.join([digits, *words])})\s+{re.escape(unit)}", text):
            out.append(f"the text above says {result}")
    return out


@pytest.mark.parametrize("path", WITH_PREDICTIONS, ids=lambda p: p.stem)
def test_the_text_above_a_prediction_does_not_state_its_answer(path):
    notebook = read(path)
    chinese = read(ROOT / "notebooks" / "zh-CN" / path.name)
    found = []
    for ask, show, key in prediction_cells(notebook):
        spec = find_prediction(key, ROOT)
        result = _shown_result(notebook, show)
        found += [f"{path.name}, cell {ask} ({key}): {p}" for p in paragraph_leaks(above(notebook, ask), spec, result)]
        # The Chinese text above, where its words are its own: the numbers and the code names of an
        # answer are the English's, read above; an answer with four Chinese characters or more, as translated.
        with speaking("zh-CN"):
            zh_above, zh_answer = _plain(above(chinese, ask)), _plain(tr(spec.answer)) if spec.answer else ""
        if len(re.findall(r"[\u4e00-\u9fff]", zh_answer)) >= 4 and zh_answer in zh_above:
            found.append(f"zh-CN/{path.name}, cell {ask} ({key}): the text above writes the answer {zh_answer!r}")
    assert not found, "the text above a prediction gives its answer away:\n" + "\n".join(found)


class _Spec:
    def __init__(self, **fields):
        self.number = "unit" in fields
        self.__dict__.update(dict(question="?", answer="", choices=(), unit=""), **fields)


class _Choice:
    def __init__(self, text):
        self.text = text


@pytest.mark.parametrize("markdown, spec, result, leaks", [
    # notebook 00 before the rewrite: the paragraph gave the weight's shape, and module 04 its heading
    ("So MiniMind2's `k_proj`, from 512 numbers to 2 heads of 64, has a `[128, 512]` weight.",
     _Spec(answer="(128, 512)", choices=[_Choice("(128, 512)"), _Choice("(512, 128)")]), None, 1),
    ("## 5. `repeat_kv`: `expand` is free, the `reshape` after it copies",
     _Spec(answer="the reshape", choices=[_Choice(t) for t in ("the expand", "the reshape", "both")]), None, 1),
    ("For a pair this gives the same 2-D rotation as before, applied to different pairs of dimensions.",
     _Spec(answer="the same rotation of other pairs of dimensions: other numbers",
           choices=[_Choice(t) for t in ("the same numbers", "the same rotation of other pairs of dimensions: other "
                                         "numbers", "a different rotation: other angles")]), None, 1),
    ("Two sentences of 4 and 2 words share one batch, so the short one gets two pad tokens.",
     _Spec(unit="queries"), "2 queries", 0),
    ("Left padding leaves two queries with nothing to see.", _Spec(unit="queries"), "2 queries", 1),
    ("The curve is averaged over octaves of distance (1, 2-3, 4-7, ...).", _Spec(unit=""), "0.999", 0),
    ("The score keeps 0.999 of its value.", _Spec(unit=""), "0.999", 1),
    ("A uniform guess among 4 classes costs 1.386 nats.", _Spec(unit="nats"), "1.39 nats", 1),
    ("Each head is a slice of the same matrices.",
     _Spec(answer="the reshape", choices=[_Choice(t) for t in ("the expand", "the reshape")]), None, 0),
])
def test_the_paragraph_criterion_flags_what_states_the_answer_and_no_more(markdown, spec, result, leaks):
    assert len(paragraph_leaks(markdown, spec, result)) == leaks
