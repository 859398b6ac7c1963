"""A learner's predictions, played in the kernel that has just run their copy top to bottom.

After Run All, every reveal cell must have shown one line, how to commit, and nothing of its
result. Then, in the same kernel, for each prediction in turn the learner commits in the widget
the predict cell shows (its field set, Commit pressed), alternately the right answer and a wrong
one, and runs the reveal cell again: it must now show the block's output (as many figures as the
answer book's cell), the verdict, the `why` of a wrong pick and the explanation, with no error;
and the prediction must refuse another answer. Last, each revealed prediction's report is drawn in
Chinese with the fields the notebook computed, so every translated text fills its fields.

tests/kit/test_student_copies.py calls `play` on the kernels it already runs the copies in: the
predictions add their reveal cells' second runs and nothing else to the suite.
"""

from __future__ import annotations

import ast
import json
import string
from pathlib import Path

import nbformat

from labkit.i18n import speaking, tr
from labkit.predictions import find_prediction

ROOT = Path(__file__).resolve().parents[1]

# Defined once in the kernel: commit as a learner does, through the widget the predict cell draws.
COMMIT_HELPER = '''
def _learner_commits(key, right):
    from labkit.predict import _PREDICTIONS
    prediction = _PREDICTIONS[key]
    spec, measured = prediction.spec, prediction.measured
    if spec.number:
        pick = f"{measured if right else measured * 3 + 1}"
    else:
        pick = measured if right else next(c.text for c in spec.choices if c.text != measured)
    box = prediction._widget()
    field, (button, status) = box.children[1], box.children[2].children
    field.value = pick
    button.click()
    print(json.dumps({"answer": prediction.answer, "measured": measured, "status": status.value}))
import json
from labkit.predict import _PREDICTIONS
'''

REFUSE = '''
try:
    predict({key!r}, answer={other!r})
    print("accepted")
except ValueError as refusal:
    print("refused:", refusal)
'''


def prediction_cells(notebook) -> list[tuple[int, int, str]]:
    """(predict cell, reveal cell, key) for each prediction of a notebook, in order."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if "predict" not in cell.metadata.get("tags", []):
            continue
        key = predict_key(cell.source)
        reveal = next(j for j in range(index + 1, len(notebook.cells)) if notebook.cells[j].cell_type == "code")
        found.append((index, reveal, key))
    return found


def predict_key(source: str) -> str:
    """The key of the `predict("KEY")` call in a predict cell's source."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "predict" and node.args:
            return node.args[0].value
    raise ValueError(f"no predict(...) call in {source!r}")


def text(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def images(outputs) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs)


def says(shown: str, template: str) -> bool:
    """Whether a line of `shown` is `template` with some values in its fields: its literal parts, in order."""
    parts = [literal for literal, *_ in string.Formatter().parse(template) if literal.strip()]
    for line in shown.splitlines():
        at = 0
        for part in parts:
            at = line.find(part, at)
            if at < 0:
                break
            at += len(part)
        else:
            return True
    return False


def play(run, copy, answer_book, name: str, lang: str, right_first: bool) -> list[str]:
    """The steps above, in the kernel `run` executes cells in; `copy` is the learner copy just run,
    `answer_book` the solved notebook. The problems, one line each."""
    problems = []
    cells = prediction_cells(copy)
    if not cells:
        return problems
    run(COMMIT_HELPER)
    for turn, (_, show, key) in enumerate(cells):
        where = f"{name}, cell {show} ({key})"
        try:
            problems += _one(run, copy, answer_book, lang, (turn % 2 == 0) == right_first, show, key, where)
        except Exception as error:  # a cell that fails when the learner runs it again: said, and the next one
            problems.append(f"{where}: {type(error).__name__}: {str(error)[-500:]}")
    problems += _in_chinese(run, name, [key for _, _, key in cells])
    return problems


def _one(run, copy, answer_book, lang: str, right: bool, show: int, key: str, where: str) -> list[str]:
    problems = []
    with speaking(lang):
        waiting = tr("Nothing is shown until you commit a prediction: choose in the widget above and press Commit "
                     "(or write predict(\"{key}\", answer=...)), then run this cell again.", key=key)
    outputs = copy.cells[show].outputs
    if {(o.get("output_type"), o.get("name")) for o in outputs} != {("stream", "stdout")} or \
            text(outputs).strip() != waiting:
        problems.append(f"{where}: after Run All, the reveal shows more than how to commit: "
                        f"{[o.get('output_type') for o in outputs]} {text(outputs)[:200]!r}")
    committed = run(f"_learner_commits({key!r}, {right})")
    status = text(committed.outputs)
    if not status.startswith("{") or json.loads(status)["answer"] is None:
        return [f"{where}: the widget did not commit: {status[:200]!r}"]
    again = run(copy.cells[show].source)
    probe = text(run(f"print(json.dumps(_PREDICTIONS[{key!r}].measured))").outputs)
    shown, errors = text(again.outputs), [o for o in again.outputs if o.get("output_type") == "error"]
    spec = find_prediction(key, ROOT)
    answer, before = json.loads(status)["answer"], json.loads(status)["measured"]
    if json.loads(probe) != before:
        problems.append(f"{where}: run again after Run All, the reveal measures {probe.strip()}, not "
                        f"{before!r}: it reads a name that a later cell changes")
    with speaking(lang):
        verdict = tr("Your prediction: {answer}. Right." if right else
                     "Your prediction: {answer}. Not quite." if not spec.number else
                     "Your prediction: {answer}. Too high, by a factor of {ratio}.")
        expected = [tr("The result: {result}."), tr(spec.explanation)]
        if not right:
            expected.append(tr(spec.high if spec.number else spec.choice(answer).why))
    if errors or not says(shown, verdict):
        problems.append(f"{where}: after committing ({'right' if right else 'wrong'}), the reveal shows "
                        f"no verdict {verdict!r}: {shown[-400:]!r} {[e.get('ename') for e in errors]}")
    for template in expected:
        if not says(shown, template):
            problems.append(f"{where}: after committing, the reveal does not say {template[:80]!r}")
    if images(again.outputs) != images(answer_book.cells[show].outputs):
        problems.append(f"{where}: after committing, the reveal shows {images(again.outputs)} figure(s), the "
                        f"answer book {images(answer_book.cells[show].outputs)}")
    other = next((c.text for c in spec.choices if c.text != answer), None) if not spec.number else answer * 2 + 1
    refused = text(run(REFUSE.format(key=key, other=other)).outputs)
    with speaking(lang):
        locked = tr("predict(\"{key}\"): its result has been shown with your prediction, {answer}; a prediction "
                    "cannot change after its reveal (a new kernel starts afresh).")
    if not refused.startswith("refused:") or not says(refused, locked):
        problems.append(f"{where}: a prediction changed after its reveal: {refused[:200]!r}")
    return problems


def _in_chinese(run, name: str, keys: list[str]) -> list[str]:
    """Each revealed prediction's report, drawn in Chinese with the fields the notebook computed."""
    problems = []
    chinese = run("from labkit.i18n import speaking as _speaking\nfrom labkit.predict import _PREDICTIONS as _P\n"
                  f"with _speaking('zh-CN'):\n    for _key in {keys!r}:\n"
                  "        print(_key, *_P[_key].report(), sep='\\n')")
    said = text(chinese.outputs)
    if any(o.get("output_type") == "error" for o in chinese.outputs):
        problems.append(f"{name}: a report does not draw in Chinese: {chinese.outputs[-1].get('evalue')}")
    for key in keys:
        spec = find_prediction(key, ROOT)
        with speaking("zh-CN"):
            if tr(spec.explanation) == spec.explanation or not says(said, tr(spec.explanation)):
                problems.append(f"{name}, {key}: the Chinese report lacks the translated explanation")
    return problems


def answer_book(path: Path):
    return nbformat.read(path, as_version=4)
