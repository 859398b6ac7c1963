"""predict() and predict.reveal() (labkit/predict.py), on a course of their own: the answer
committed in the widget (its Commit button, clicked as a learner would) or with answer= is the one
a reveal compares; a reveal shows nothing of the result in a learner's copy until one is
committed, everything in the answer book; a prediction cannot change once shown; and every
nonsense input, in the data (labkit/predictions.py) or in a call, is refused by name."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from types import SimpleNamespace

import ipywidgets as widgets
import matplotlib
import pytest

matplotlib.use("Agg")  # headless, whatever the environment says

import matplotlib.pyplot as plt  # noqa: E402
from kernel_cells import run_cells  # noqa: E402

import labkit.predict as predict_module  # noqa: E402
from labkit.predict import RevealMismatch, predict  # noqa: E402
from labkit.predictions import PredictionDataError, find_prediction, load_predictions  # noqa: E402
from labkit.syllabus import ROOT_ENV  # noqa: E402

CHOICE = {
    "key": "05-nan-spread",
    "question": "Which rows hold NaN?",
    "choices": [{"text": "none", "when": "none", "why": "0 x NaN is NaN."},
                {"text": "the pad rows", "when": [True, False], "why": "Every output sums over them."},
                {"text": "every row", "when": "every"}],
    "answer": "every row",
    "explanation": "One NaN value reaches {count} rows.",
}
NUMBER = {
    "key": "05-pad-rows",
    "question": "How many queries see nothing?",
    "number": {"unit": "queries", "rel": 0.1},
    "low": "The pads come first.",
    "high": "The real tokens see themselves.",
    "explanation": "Left padding: {result} see nothing.",
}
ANSWER_TEXTS = ("every row", "One NaN value", "0 x NaN", "Every output sums", "Left padding", "The pads come",
                "The real tokens")


def write_course(root: Path, predictions: list[dict]) -> Path:
    """A course with module 05's notebook and predictions; returns its predictions.json."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "notebooks" / "05_masking.ipynb").write_text("{}")
    (root / "workspace").mkdir(exist_ok=True)
    path = root / "modules" / "05_masking" / "predictions.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"module": "05_masking", "predictions": predictions}))
    return path


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course whose kernel runs in workspace/, a learner's copy; `answer_book()` moves it to notebooks/."""
    write_course(tmp_path, [copy.deepcopy(CHOICE), copy.deepcopy(NUMBER)])
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    monkeypatch.chdir(tmp_path / "workspace")
    monkeypatch.setattr(predict_module, "_PREDICTIONS", {})
    yield SimpleNamespace(root=tmp_path, answer_book=lambda: monkeypatch.chdir(tmp_path / "notebooks"))
    plt.close("all")


def parts(box):
    yield box
    for child in getattr(box, "children", ()):
        yield from parts(child)


def widget_of(key: str):
    """The widget the prediction draws, and its field, Commit button and status line."""
    box = predict_module._PREDICTIONS[key]._widget()
    field = next(w for w in parts(box) if isinstance(w, (widgets.RadioButtons, widgets.Text)))
    button = next(w for w in parts(box) if isinstance(w, widgets.Button))
    status = [w for w in parts(box) if isinstance(w, widgets.HTML)][-1]
    return field, button, status


def reveal_choice(measured="every", count=4):
    with predict.reveal("05-nan-spread") as seen:
        print("layer 2, rows with NaN: [0, 1, 2, 3]")
        seen.result(measured, count=count)


# ------------------------------------------------------------------------------------------ the learner

def test_a_choice_committed_with_the_button_is_what_the_reveal_uses(course, capsys):
    predict("05-nan-spread")
    assert capsys.readouterr().out.splitlines()[:4] == [
        "Predict: Which rows hold NaN?", "  (a) none", "  (b) the pad rows", "  (c) every row"]
    field, button, status = widget_of("05-nan-spread")
    button.click()  # nothing chosen yet: nothing committed
    assert predict_module._PREDICTIONS["05-nan-spread"].answer is None and "Choose an answer first." in status.value
    field.value = "none"
    button.click()
    assert predict_module._PREDICTIONS["05-nan-spread"].answer == "none" and field.disabled and button.disabled
    assert "Committed: <b>none</b>" in status.value
    reveal_choice()
    assert capsys.readouterr().out.splitlines() == [
        "layer 2, rows with NaN: [0, 1, 2, 3]", "Your prediction: none. Not quite.", "The result: every row.",
        "0 x NaN is NaN.", "One NaN value reaches 4 rows."]


def test_a_number_typed_in_the_widget_is_what_the_reveal_uses(course, capsys):
    predict("05-pad-rows")
    field, button, status = widget_of("05-pad-rows")
    field.value = "not a number"
    button.click()
    assert "Type a number first." in status.value
    for typed in ("inf", "nan", "-Infinity"):  # float() reads these: refused by name in the status line
        field.value = typed
        button.click()
        assert "a prediction is a finite number" in status.value and not button.disabled, typed
        assert predict_module._PREDICTIONS["05-pad-rows"].answer is None
    field.value = "8"
    button.click()
    capsys.readouterr()
    with predict.reveal("05-pad-rows") as seen:
        seen.result(2)
    assert capsys.readouterr().out.splitlines() == [
        "Your prediction: 8 queries. Too high, by a factor of 4.", "The result: 2 queries.",
        "The real tokens see themselves.", "Left padding: 2 queries see nothing."]
    predict("05-pad-rows")  # asked again after the reveal: the widget shows the answer, and no longer commits
    field, button, status = widget_of("05-pad-rows")
    assert field.value == "8" and field.disabled and button.disabled and "Revealed" in status.value


def test_answer_commits_without_the_widget_and_a_right_answer_says_so(course, capsys):
    predict("05-nan-spread", answer="every row")
    predict("05-pad-rows", answer=2.1)  # within 10 %
    capsys.readouterr()
    reveal_choice()
    with predict.reveal("05-pad-rows") as seen:
        seen.result(2)
    out = capsys.readouterr().out.splitlines()
    assert "Your prediction: every row. Right." in out and "Your prediction: 2.1 queries. Right." in out
    assert "0 x NaN is NaN." not in out, "a right answer hears the explanation, not another choice's why"


def test_without_a_commit_a_learners_copy_shows_nothing_of_the_block_and_goes_on(course, capsys):
    predict("05-nan-spread")
    capsys.readouterr()
    with predict.reveal("05-nan-spread") as seen:
        computed = 42
        print("every row: the printed result")
        figure = plt.figure()
        seen.result("every", count=4)
    out = capsys.readouterr().out
    assert out == ("Nothing is shown until you commit a prediction: choose in the widget above and press Commit "
                   "(or write predict(\"05-nan-spread\", answer=...)), then run this cell again.\n")
    assert computed == 42, "the block ran: what it defines exists for the cells after it"
    assert not plt.fignum_exists(figure.number), "a figure the block drew is closed unseen"
    assert not any(text in out for text in ANSWER_TEXTS)
    predict("05-nan-spread", answer="none")  # the result has not been shown: the learner may still commit
    reveal_choice()
    assert "Your prediction: none. Not quite." in capsys.readouterr().out


def test_the_answer_book_shows_the_result_and_its_explanation(course, capsys):
    course.answer_book()
    reveal_choice()
    assert capsys.readouterr().out.splitlines() == [
        "layer 2, rows with NaN: [0, 1, 2, 3]", "The result: every row.", "One NaN value reaches 4 rows."]
    with pytest.raises(ValueError, match="cannot change after its reveal"):
        predict("05-nan-spread", answer="none")  # shown already, with no prediction


def test_a_prediction_cannot_change_after_its_reveal(course, capsys):
    predict("05-nan-spread", answer="none")
    reveal_choice()
    with pytest.raises(ValueError, match=r'predict\("05-nan-spread"\): its result has been shown with your '
                                         r"prediction, none; a prediction cannot change after its reveal"):
        predict("05-nan-spread", answer="every row")
    predict("05-nan-spread", answer="none")  # the same answer again (the cell run once more) is no change
    field, button, status = widget_of("05-nan-spread")
    button.disabled = field.disabled = False  # a widget drawn before the reveal, still live
    field.value = "every row"
    button.click()
    assert "cannot change after its reveal" in status.value
    assert predict_module._PREDICTIONS["05-nan-spread"].answer == "none"


def test_each_prediction_is_its_own_whatever_the_order_of_the_cells(course, capsys):
    predict("05-nan-spread", answer="none")
    predict("05-pad-rows", answer=2)
    capsys.readouterr()
    with predict.reveal("05-pad-rows") as seen:  # the later prediction first, as after Run All
        seen.result(2)
    reveal_choice()
    out = capsys.readouterr().out
    assert "Your prediction: 2 queries. Right." in out and "Your prediction: none. Not quite." in out


def test_a_held_block_that_fails_shows_its_output_only_where_the_answer_may_show(course, capsys):
    with pytest.raises(ZeroDivisionError):
        with predict.reveal("05-nan-spread"):
            print("every row")
            1 / 0
    assert capsys.readouterr().out == ""
    with pytest.raises(RuntimeError, match=r"predict.reveal\('05-nan-spread'\): the block ended without "
                                           r"seen.result"):
        with predict.reveal("05-nan-spread"):
            pass


def test_in_a_kernel_the_block_is_held_then_shown_in_order_with_its_figures(course, monkeypatch):
    """The real display machinery: a print, a display and a pyplot figure held back, none of them on
    screen before the commit; after it, in order, the figure as an image, then the reveal."""
    held = ("import matplotlib.pyplot as plt\nfrom IPython.display import display, Markdown\n"
            "with predict.reveal('05-nan-spread') as seen:\n    print('first')\n    display(Markdown('*second*'))\n"
            "    plt.plot([0, 1])\n    seen.result('every', count=4)")
    cells = run_cells(["from labkit import predict, show_figures_inline\nshow_figures_inline()\n"
                       "predict('05-nan-spread')", held, "predict('05-nan-spread', answer='every row')", held],
                      course.root / "workspace")
    before, after = cells[1].outputs, cells[3].outputs
    assert [o.output_type for o in before] == ["stream"] and "Nothing is shown" in before[0].text
    kinds = [(o.output_type, sorted(o.get("data", {}))) for o in after]
    assert kinds[0] == ("stream", []) and after[0].text == "first\n"
    assert "text/markdown" in kinds[1][1] and "image/png" in kinds[2][1], kinds
    assert after[-1].text.splitlines() == ["Your prediction: every row. Right.", "The result: every row.",
                                           "One NaN value reaches 4 rows."]


# ------------------------------------------------------------------------------------------ refused

def test_a_key_must_name_a_prediction_of_the_course(course):
    with pytest.raises(ValueError, match=r"no prediction '05-nothing' in modules/05_masking/predictions.json; "
                                         r"it holds '05-nan-spread', '05-pad-rows'"):
        predict("05-nothing")
    with pytest.raises(ValueError, match="module 07 has no modules/07_"):
        predict.reveal("07-cat-bytes")
    with pytest.raises(ValueError, match="is not a prediction's key"):
        predict("Which rows hold NaN?")
    with pytest.raises(TypeError, match="named by its key"):
        predict(5)


@pytest.mark.parametrize("value, error, message", [
    (math.nan, ValueError, "not finite"),
    (math.inf, ValueError, "not finite"),
    ("2", TypeError, "asks for a number; pass the number measured"),
    (True, TypeError, "asks for a number"),
])
def test_a_number_result_must_be_a_finite_number(course, value, error, message):
    with pytest.raises(error, match=message):
        with predict.reveal("05-pad-rows") as seen:
            seen.result(value)


@pytest.mark.parametrize("value, fields, error, message", [
    ("all", {"count": 4}, ValueError, r"seen.result\('all'\) for '05-nan-spread': no choice is measured so"),
    ((True, True), {"count": 4}, ValueError, "no choice is measured so"),
    (1, {"count": 4}, ValueError, "no choice is measured so"),  # 1 is not True, nor "every"
    (0.5, {"count": 4}, TypeError, "a float: round it|turn the measurement into one"),
    ("every", {}, TypeError, r"give count=\.\.\."),
    ("every", {"count": 4, "rows": 2}, TypeError, "no text uses rows"),
])
def test_a_choice_result_must_be_a_measurement_the_data_knows(course, value, fields, error, message):
    with pytest.raises(error, match=message):
        with predict.reveal("05-nan-spread") as seen:
            seen.result(value, **fields)


def test_a_measured_tuple_is_the_choice_whose_when_is_that_list(course, capsys):
    course.answer_book()
    path = Path(find_prediction("05-nan-spread").source)
    data = json.loads(path.read_text())
    data["predictions"][0]["answer"] = "the pad rows"
    data["predictions"][0]["choices"][2]["why"] = "It spreads."
    del data["predictions"][0]["choices"][1]["why"]
    path.write_text(json.dumps(data))
    reveal_choice(measured=(True, False))
    assert "The result: the pad rows." in capsys.readouterr().out


def test_a_result_that_is_not_the_datas_answer_fails_the_claim(course):
    course.answer_book()
    with pytest.raises(RevealMismatch, match=r"measured 'none', the choice 'none', but "
                                             r"modules/05_masking/predictions.json gives 'every row'"):
        reveal_choice(measured="none")


@pytest.mark.parametrize("answer, error, message", [
    ("most rows", ValueError, "pick one of the choices, written as shown: 'none', 'the pad rows', 'every row'"),
    (None, None, None),
])
def test_an_answer_must_be_a_choice(course, answer, error, message):
    if error is None:
        predict("05-nan-spread", answer=answer)  # None: nothing committed
        assert predict_module._PREDICTIONS["05-nan-spread"].answer is None
        return
    with pytest.raises(error, match=message):
        predict("05-nan-spread", answer=answer)


@pytest.mark.parametrize("answer, error, message", [
    (math.nan, ValueError, "a finite number"), (math.inf, ValueError, "a finite number"),
    ("2", TypeError, "asks for a number"), (True, TypeError, "asks for a number")])
def test_a_number_answer_must_be_a_finite_number(course, answer, error, message):
    with pytest.raises(error, match=message):
        predict("05-pad-rows", answer=answer)


def broken(change) -> list[dict]:
    choice, number = copy.deepcopy(CHOICE), copy.deepcopy(NUMBER)
    change(choice, number)
    return [choice, number]


@pytest.mark.parametrize("change, message", [
    (lambda c, n: c["choices"].append({"text": "none", "when": "x", "why": "?"}),
     "choice 4: 'none' is choice 1 again: every choice must read differently"),
    (lambda c, n: c["choices"].append({"text": " Every  Row ", "when": "x", "why": "?"}), "is choice 3 again"),
    (lambda c, n: c["choices"].__setitem__(0, {"text": "  ", "when": "none", "why": "?"}),
     "choice 1: 'text' must be a text that is not blank"),
    (lambda c, n: c["choices"].append({"text": "most", "when": "every", "why": "?"}),
     "\"when\" \"every\" is another choice's"),
    (lambda c, n: c["choices"].append({"text": "most", "why": "?"}), "\"when\" is missing"),
    (lambda c, n: c["choices"].append({"text": "most", "when": 0.5, "why": "?"}), "0.5 is a float"),
    (lambda c, n: c.__setitem__("choices", c["choices"][:1]), "at least two choices"),
    (lambda c, n: c.__setitem__("answer", "all of them"), "\"answer\" must be the text of one of the choices"),
    (lambda c, n: c["choices"][2].__setitem__("why", "Right."), "has a \"why\", which is never shown"),
    (lambda c, n: c["choices"][0].pop("why"), "the choice 'none' needs a \"why\""),
    (lambda c, n: n["number"].__setitem__("rel", -0.1), "\"rel\", the tolerance, must be a number of 0 or more"),
    (lambda c, n: n["number"].__setitem__("rel", "10%"), "\"rel\", the tolerance"),
    (lambda c, n: n.__setitem__("answer", 2), "a number question has no 'answer'"),
    (lambda c, n: n.pop("low"), "'low' must be a text that is not blank"),
    (lambda c, n: n.__setitem__("key", c["key"]), "the key '05-nan-spread' is used twice"),
    (lambda c, n: n.__setitem__("key", "06-pad-rows"), "\"key\" must be the module's number"),
    (lambda c, n: c.__setitem__("explanation", "{} rows"), "the field {} must be a name"),
    (lambda c, n: c.__setitem__("explanation", "a { brace"), "write a literal brace twice"),
    (lambda c, n: c.__setitem__("hint", "?"), "unknown key 'hint'"),
    (lambda c, n: c.__setitem__("number", {"unit": "rows"}), "give either \"choices\""),
])
def test_broken_data_is_refused_by_name(tmp_path, change, message):
    path = write_course(tmp_path, broken(change))
    with pytest.raises(PredictionDataError) as refused:
        load_predictions(path)
    assert message in str(refused.value), str(refused.value)
    assert all(line.startswith(str(path)) or "modules/05_masking/predictions.json" in line
               for line in refused.value.problems)


def test_a_nan_tolerance_or_a_repeated_key_in_the_json_is_refused(tmp_path):
    path = write_course(tmp_path, [NUMBER])
    path.write_text(path.read_text().replace('"rel": 0.1', '"rel": NaN'))
    with pytest.raises(PredictionDataError, match="NaN is not JSON"):
        load_predictions(path)
    path.write_text(json.dumps({"module": "05_masking", "predictions": [NUMBER]}).replace(
        '"low":', '"high": "twice", "low":'))
    with pytest.raises(PredictionDataError, match=r"the key\(s\) \['high'\] are given twice"):
        load_predictions(path)
    path.write_text(json.dumps({"module": "04_gqa", "predictions": [NUMBER]}))
    with pytest.raises(PredictionDataError, match="\"module\" must be '05_masking'"):
        load_predictions(path)
