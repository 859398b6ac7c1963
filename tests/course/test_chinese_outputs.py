"""The Chinese answer book's stored outputs: Chinese, made by running it, and bound to the English ones.

`make notebooks` runs each English notebook, then its Chinese twin from notebooks/zh-CN/, whose
kernel speaks Chinese (labkit/course/cli.py): every line a cell prints and every text a figure shows
leaves the kernel translated (labkit/i18n/output.py), and labkit's own messages (check(), predict,
the quiz) are Chinese through `tr`. Strict nbval runs only the English notebooks, against a fresh
run. These tests, with no kernel, bind the Chinese outputs to those English ones:

- cell for cell, the Chinese outputs are the English outputs translated by the translator the kernel
  uses (`OutputTranslator`, taught each cell's templates in order, as the kernel learns them before
  each cell runs) that also knows labkit's messages: every printed line, every text output, and
  every figure's own texts (metadata["image/png"]["texts"], recorded as the kernel draws it), the
  same figures in the same places; the widgets' saved outputs likewise;
- nothing the Chinese notebook shows holds English (tests/rendered.py, `english_problems`), where
  its catalog is finished.

So an English output that changes fails nbval until it is refreshed, and a Chinese output that
does not follow it fails here until `make notebooks` runs both. The values come from one run on
one machine (`make notebooks` runs the two editions one after the other), so no tolerance is needed.
The course map (drawn by labkit with `figure_tr`, not translated as it leaves) is compared by its
count of pictures.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
import pytest
from rendered import RAISED, _widget_outputs, english_problems

from labkit.course.translation.check import catalog_problems
from labkit.course.translation.edition import zh_notebook
from labkit.i18n.output import OutputTranslator, notebook_catalog
from labkit.i18n.prose import english_prose, english_words

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


NUMBER = re.compile(r"\d+(?:\.\d+)?")
CHINESE = re.compile(r"[\u4e00-\u9fff]")


def shown(outputs: list[dict], course_map: bool = False) -> list[tuple]:
    """What `outputs` show, comparable across the editions: (kind, what, text), consecutive stream
    outputs of one name joined (where a kernel splits its text depends on timing), a figure as the
    tuple of its own texts (tick labels aside; None for the course map or when none are recorded),
    an error as its name."""
    out: list[tuple] = []
    for output in outputs:
        kind, data = output.get("output_type"), output.get("data", {})
        if kind == "stream":
            text = _text(output.get("text"))
            if out and out[-1][:2] == ("stream", output.get("name")):
                out[-1] = ("stream", output.get("name"), out[-1][2] + text)
            else:
                out.append(("stream", output.get("name"), text))
        elif kind == "error":
            out.append(("error", output.get("ename"), None))
        elif "image/png" in data:
            texts = output.get("metadata", {}).get("image/png", {}).get("texts")
            out.append(("figure", None, None if texts is None or course_map else
                        tuple(entry["text"] for entry in texts if not entry.get("tick"))))
        else:
            out.append((kind, tuple(sorted(data)), _text(data.get("text/plain"))))
    return out


def said_by_labkit(english: str, chinese: str, english_in) -> bool:
    """Whether `chinese` can be what labkit itself said for `english` through `tr` (a check, a
    prediction, the quiz, the grader's report, a figure labkit draws with figure_tr): a different
    text, with no English (`english_in`: prose for a line, any word for a figure's label; an
    error's own message aside), that keeps every number of the English (a catalog keeps them)."""
    numbers_kept = set(NUMBER.findall(english)) <= set(NUMBER.findall(chinese))
    return chinese != english and numbers_kept and not english_in(RAISED.split(chinese, 1)[0])


def line_problem(english: str, chinese: str, tr: OutputTranslator) -> str | None:
    """Why `chinese` is not what the Chinese kernel shows for the English line `english`, or None.

    Either it is the line translated by the kernel's translator (a template of the cell that printed
    it), or labkit said it in Chinese itself, through `tr` (a check's verdict, a prediction's reveal,
    the quiz, the grader's report, whose English a cell's template may also match): then it differs
    from the English, holds no English prose (an error's own message aside) and every number the
    English holds (a catalog keeps every number; Chinese may add one: "ones" is 全为 1). A line
    without an English word (values, code) is shown as written in both editions."""
    translated = tr.line(english)
    if chinese == translated:
        return None
    if said_by_labkit(english, chinese, english_prose):
        return None
    return f"want {translated!r}, got {chinese!r}"


def item_problems(english: tuple, chinese: tuple, tr: OutputTranslator) -> list[str]:
    if english[:2] != chinese[:2]:
        return [f"the English shows {english[:2]}, the Chinese {chinese[:2]}"]
    kind, _, text = english
    if kind == "figure":
        if text is None or chinese[2] is None:  # the map, or an English figure stored without its texts
            return []
        want = tuple(tr.text(label) for label in text)
        same = len(want) == len(chinese[2]) and all(
            zh == wanted or said_by_labkit(en, zh, english_words) for en, zh, wanted in zip(text, chinese[2], want))
        return [] if same else [f"a figure's texts: want {want}, got {chinese[2]}"]
    if not isinstance(text, str) or kind == "stream" and english[1] != "stdout":
        return [] if text == chinese[2] else [f"want {text!r}, got {chinese[2]!r}"]
    en_lines, zh_lines = text.split("\n"), chinese[2].split("\n")
    if len(en_lines) != len(zh_lines):
        return [f"{len(en_lines)} lines in English, {len(zh_lines)} in Chinese: {chinese[2]!r}"]
    return [problem for en, zh in zip(en_lines, zh_lines) if (problem := line_problem(en, zh, tr))]


def sequence_problems(english: list[tuple], chinese: list[tuple], tr: OutputTranslator, where: str,
                      ignored: bool = False) -> list[str]:
    """`ignored`: a cell whose output nbval ignores (timings, versions: CONTRIBUTING.md, "Stored outputs
    that hold on every machine"), whose values differ from run to run: the same kinds of output."""
    if len(english) != len(chinese) or ignored and [e[:2] for e in english] != [c[:2] for c in chinese]:
        return [f"{where}: {len(english)} outputs in English, {len(chinese)} in Chinese "
                f"({[e[:2] for e in english]} against {[c[:2] for c in chinese]})"]
    if ignored:  # its lines are read for English with the rest (english_problems), where the catalog is finished
        return []
    return [f"{where}: {problem}" for en, zh in zip(english, chinese) for problem in item_problems(en, zh, tr)]


def differences(english, chinese, name: str) -> list[str]:
    """Where the Chinese notebook's outputs are not what its English outputs become in Chinese."""
    problems = []
    tr, own = OutputTranslator(), notebook_catalog(f"{name}.ipynb")  # the kernel is told its notebook
    for index, (en, zh) in enumerate(zip(english.cells, chinese.cells)):
        if en.cell_type == "code":
            tr.add_source(en.source, own)  # as the kernel learns each cell before it runs
            course_map = "show_map(" in en.source
            ignored = "NBVAL_IGNORE_OUTPUT" in en.source or "nbval-ignore-output" in en.metadata.get("tags", [])
            problems += sequence_problems(shown(en.get("outputs", []), course_map),
                                          shown(zh.get("outputs", []), course_map), tr, f"{name}, cell {index}",
                                          ignored)
    problems += sequence_problems(shown(_widget_outputs(english)), shown(_widget_outputs(chinese)), tr,
                                  f"{name}, the widgets' saved outputs")
    return problems


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_the_chinese_answer_book_shows_the_english_outputs_in_chinese(stem):
    path = zh_notebook(ROOT, stem)
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: make notebooks M={stem[:2]}")
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    chinese = nbformat.read(path, as_version=4)
    assert [c.get("id") for c in chinese.cells] == [c.get("id") for c in english.cells]
    problems = differences(english, chinese, path.relative_to(ROOT).as_posix())
    if not catalog_problems(ROOT, f"notebook:{stem}"):  # finished: nothing English is left to see
        problems += english_problems(chinese, path.relative_to(ROOT).as_posix())
    assert not problems, "\n".join(problems) + f"\n(run make notebooks M={stem[:2]} to refresh both editions)"


# ---------------------------------------------------------------------------- how the build keeps them

def test_the_build_keeps_chinese_outputs_only_for_code_that_did_not_change(tmp_path):
    """`translation build` never copies the English outputs: a code cell keeps the outputs the Chinese
    notebook holds for it while its source is the same, and has none once it changes (until make
    notebooks runs it in Chinese); the widgets' state is the Chinese notebook's."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from labkit.course.translation.edition import CATALOGS, build_notebook
    from labkit.i18n.catalog import key_of

    def code(source, text, cell_id):
        return new_code_cell(source, id=cell_id, execution_count=1,
                             outputs=[new_output("stream", name="stdout", text=text)])

    (tmp_path / "notebooks").mkdir()
    (tmp_path / CATALOGS / "notebooks").mkdir(parents=True)
    (tmp_path / CATALOGS / "notebooks" / "99_x.md").write_text(f"<!-- zh-CN {key_of('Hello')} · cell 0 -->\n你好\n")
    english = new_notebook(cells=[new_markdown_cell("Hello", id="m"), code("x = 1\nx", "1\n", "a"),
                                  code("y = 2\ny", "2\n", "b")], metadata={"widgets": {"english": True}})
    nbformat.write(english, tmp_path / "notebooks" / "99_x.ipynb")

    built = nbformat.reads(build_notebook(tmp_path, "99_x"), as_version=4)
    assert built.cells[0].source == "你好"
    assert [(c.outputs, c.execution_count) for c in built.cells[1:]] == [([], None), ([], None)]
    assert "widgets" not in built.metadata, "no English outputs, not even a widget's"

    ran = copy.deepcopy(built)
    ran.cells[1].outputs, ran.cells[2].outputs = [new_output("stream", name="stdout", text="一\n")], \
        [new_output("stream", name="stdout", text="二\n")]
    ran.metadata["widgets"] = {"chinese": True}
    (tmp_path / "notebooks" / "zh-CN").mkdir()
    nbformat.write(ran, tmp_path / "notebooks" / "zh-CN" / "99_x.ipynb")
    english.cells[2].source = "y = 3\ny"
    nbformat.write(english, tmp_path / "notebooks" / "99_x.ipynb")

    built = nbformat.reads(build_notebook(tmp_path, "99_x"), as_version=4)
    assert built.cells[1].outputs[0]["text"] == "一\n", "unchanged code keeps its Chinese outputs"
    assert built.cells[2].source == "y = 3\ny" and built.cells[2].outputs == [], "changed code has none yet"
    assert built.metadata["widgets"] == {"chinese": True}


def test_make_notebooks_runs_no_chinese_notebook_whose_catalog_is_unfinished(tmp_path, capsys):
    """`make notebooks` builds and runs the Chinese twin after the English notebook, unless a text of
    its catalog is left to translate: then it says so and leaves the Chinese notebook as it was."""
    from nbformat.v4 import new_markdown_cell, new_notebook

    from labkit.course import cli

    (tmp_path / "notebooks").mkdir()
    nbformat.write(new_notebook(cells=[new_markdown_cell("Hello", id="m")]), tmp_path / "notebooks" / "99_x.ipynb")
    assert cli._chinese_run(tmp_path, tmp_path / "notebooks" / "99_x.ipynb") is None
    assert "notebooks/zh-CN/99_x.ipynb" in capsys.readouterr().err
    assert not (tmp_path / "notebooks" / "zh-CN").exists()
