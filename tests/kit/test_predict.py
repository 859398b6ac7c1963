"""predict() (labkit/predict.py): the answer committed in the widget (its Commit button, clicked as a
learner would) or with answer= is the one reveal compares; reveal never errors without one."""

from __future__ import annotations

import ipywidgets as widgets
import pytest

from labkit.predict import Prediction, predict


def parts(box):
    yield box
    for child in getattr(box, "children", ()):
        yield from parts(child)


def widget_of(prediction: Prediction):
    """The widget the prediction draws, and its field, Commit button and status line."""
    box = prediction._widget()
    field = next(w for w in parts(box) if isinstance(w, (widgets.RadioButtons, widgets.Text)))
    button = next(w for w in parts(box) if isinstance(w, widgets.Button))
    status = [w for w in parts(box) if isinstance(w, widgets.HTML)][-1]
    return field, button, status


CHOICES = ["1", "the number of keys", "it depends on the scores"]
WHY = {"1": "The softmax normalises each row.", "the number of keys": "That is before normalising."}


def test_a_choice_committed_with_the_button_is_what_reveal_uses(capsys):
    guess = predict("Each row sums to?", choices=CHOICES)
    field, button, status = widget_of(guess)
    button.click()  # nothing chosen yet: nothing committed
    assert guess.answer is None and "Choose an answer first." in status.value
    field.value = "the number of keys"
    button.click()
    assert guess.answer == "the number of keys" and field.disabled and button.disabled
    assert "Committed: <b>the number of keys</b>" in status.value
    capsys.readouterr()
    guess.reveal("1", why=WHY)  # (its return value is main's to change: the printed verdict is tested)
    assert capsys.readouterr().out.splitlines() == [
        "Your prediction: the number of keys. Not quite.", "The result: 1.", "That is before normalising."]


def test_a_number_typed_in_the_widget_is_what_reveal_uses(capsys):
    guess = predict("How many bytes?", number=True, unit="bytes")
    field, button, status = widget_of(guess)
    field.value = "not a number"
    button.click()
    assert guess.answer is None and "Type a number first." in status.value
    field.value = "2,048"
    button.click()
    assert guess.answer == 2048.0
    capsys.readouterr()
    guess.reveal(4096, why={"low": "Count keys and values."})
    assert capsys.readouterr().out.splitlines() == [
        "Your prediction: 2,048 bytes. Too low, by a factor of 2.", "The result: 4,096 bytes.",
        "Count keys and values."]


def test_answer_is_what_reveal_uses_without_a_widget(capsys):
    guess = predict("Each row sums to?", choices=CHOICES, answer="1")
    assert guess.answer == "1"
    capsys.readouterr()
    guess.reveal("1", why=WHY)
    assert capsys.readouterr().out.splitlines() == [
        "Your prediction: 1. Right.", "The result: 1.", "The softmax normalises each row."]
    predict("Bytes?", number=True, answer=4100).reveal(4096)
    assert "Right." in capsys.readouterr().out  # within 10 %
    with pytest.raises(ValueError, match="pick one of the choices"):
        predict("Each row sums to?", choices=CHOICES, answer="2")


@pytest.mark.parametrize("kwargs, result", [(dict(choices=CHOICES), "1"), (dict(number=True), 4096)])
def test_reveal_without_a_prediction_shows_the_result_and_never_errors(capsys, kwargs, result):
    guess = predict("?", **kwargs)
    capsys.readouterr()
    guess.reveal(result, why={"1": "Normalised.", "right": "Normalised."})
    out = capsys.readouterr().out
    assert out.startswith("No prediction was committed") and "The result:" in out and "Normalised." in out
    guess.reveal(result)  # and again, without why
    assert capsys.readouterr().out.startswith("No prediction was committed")
