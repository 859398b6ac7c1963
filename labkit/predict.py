"""predict(): commit to an answer before the notebook shows the result, then see what it says.

A prediction is two cells. The first (tagged "predict") asks, and the learner answers, in the
widget it shows or, in a front end without widgets, by writing the answer into the call:

    guess = predict("After the softmax, what does each row of weights sum to?",
                    choices=["1", "the number of keys", "it depends on the scores"])
    # without widgets: predict(..., answer="1")

The next cell computes the result and ends with `reveal`, which puts the two side by side and
says what the learner's answer shows about their picture of the idea:

    total = weights.sum(dim=-1)[0].item()
    guess.reveal("1" if abs(total - 1) < 1e-6 else "it depends on the scores",
                 why={"the number of keys": "That would be true before normalising ..."})

For a number, pass `number=True` (and `unit=`); `reveal(value)` then says how far off the guess
was, and `why` may have the keys "low", "high" and "right".

The learner's copies (workspace/, `labkit/course/student.py`) clear the stored output of the cell after a
prediction, so the result is not on the page before the learner has guessed. A run without a
learner (the tests, the answer book) has no prediction; reveal then shows the result and the
lesson of the right answer.

In the Chinese edition the question, the choices, the unit and the `why` texts (the notebook's own,
translated in its catalog) and every line of this file are shown through `tr`; the answer is kept
and compared as the English choice, so the notebook's code is the same in both languages.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .i18n import tr

__all__ = ["Prediction", "predict"]


class Prediction:
    """A question, the learner's committed answer (None until committed), and `reveal`."""

    def __init__(self, question: str, choices: Sequence[str] | None, number: bool, unit: str,
                 answer: Any):
        self._written = question  # as the notebook's code writes it: the key of its translation
        self.question, self.unit = question.strip(), unit
        self.choices = None if choices is None else [str(choice) for choice in choices]
        self.number = number
        self.answer = None
        self.right: bool | None = None
        if answer is not None:
            self.commit(answer)

    def commit(self, answer: Any) -> None:
        """Record the learner's answer: one of the choices, or a number."""
        if self.choices is not None:
            shown = {tr(choice): choice for choice in self.choices}
            if str(answer) not in self.choices and str(answer) in shown:
                answer = shown[str(answer)]  # the choice as the learner reads it, in their language
            if str(answer) not in self.choices:
                raise ValueError(f"predict(answer={answer!r}): pick one of the choices, written as "
                                 f"shown: {', '.join(repr(c) for c in self.choices)}.")
            self.answer = str(answer)
            return
        if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
            raise ValueError(f"predict(answer={answer!r}): this question asks for a number, such as 12 or 0.5.")
        self.answer = answer

    # ---------------------------------------------------------------------------------- asking

    def _text(self) -> str:
        lines = [tr("Predict: {question}", question=self._question())]
        if self.choices is not None:
            lines += [f"  ({chr(ord('a') + i)}) {tr(choice)}" for i, choice in enumerate(self.choices)]
            lines.append(tr("Choose in the widget and press Commit (or pass answer=... to predict()); then run "
                            "the next cell."))
        else:
            lines.append(tr("Type a number in the widget and press Commit (or pass answer=... to predict()); "
                            "then run the next cell."))
        return "\n".join(lines)

    def _question(self) -> str:
        """The question as the learner reads it (the notebook's catalog holds it as written)."""
        return tr(self._written).strip() or self.question

    def _widget(self):
        import ipywidgets as widgets

        if self.choices is not None:
            field = widgets.RadioButtons(options=[(tr(choice), choice) for choice in self.choices], value=None,
                                         layout=widgets.Layout(width="auto"))
        else:
            field = widgets.Text(placeholder=tr("a number, e.g. 12 or 0.5"),
                                 description=tr(self.unit) if self.unit else "", layout=widgets.Layout(width="18em"))
        button = widgets.Button(description=tr("Commit"), button_style="primary")
        status = widgets.HTML("")

        def commit(_button=None) -> None:
            value = field.value
            if self.choices is None:
                try:
                    value = float(str(value).replace(",", "").strip())
                except ValueError:
                    value = None
            if value is None:
                status.value = tr("Choose an answer first.") if self.choices else tr("Type a number first.")
                return
            self.commit(value)
            field.disabled = button.disabled = True
            status.value = tr("Committed: <b>{answer}</b>. Now run the next cell.",
                              answer=html.escape(self._shown(self.answer)))

        button.on_click(commit)
        return widgets.VBox([widgets.HTML(tr("<b>Predict:</b> {question}", question=html.escape(self._question()))),
                             field,
                             widgets.HBox([button, status])])

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:  # noqa: ARG002 (IPython's signature)
        """The widget where a kernel can draw it; the question as text everywhere else (and for
        strict nbval, which compares the text)."""
        try:
            bundle = self._widget()._repr_mimebundle_()
        except ImportError:
            bundle = {}
        text = self._text()
        bundle["text/plain"] = text
        bundle["text/html"] = f"<pre>{html.escape(text, quote=False)}</pre>"
        return bundle

    def __repr__(self) -> str:
        return f"Prediction({self.question!r}, answer={self.answer!r})"

    # ------------------------------------------------------------------------------- revealing

    def _shown(self, value: Any) -> str:
        """A choice or a number as the learner reads it: the choice translated, the number with its unit."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return tr(str(value))
        if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
            text = f"{int(value):,}"
        else:
            text = f"{value:.3g}"
        return f"{text} {tr(self.unit) if self.unit else ''}".strip()

    def reveal(self, result: Any, why: Mapping[str, str] | None = None, rel: float = 0.1) -> None:
        """Print the prediction beside the result and what the prediction shows. Returns nothing, so
        a cell that ends with it shows only the text; `self.right` records whether the prediction was
        right (a number within `rel` of the result), None without a prediction.

        result: the choice that is true (as written in `choices`), or the number measured.
        why: for choices, what picking each one shows (the right one's entry is said on success);
             for numbers, the keys "low", "high" and "right".
        """
        why = dict(why or {})
        if self.choices is not None and str(result) not in self.choices:
            raise ValueError(f"reveal({result!r}): the result must be one of the choices: "
                             f"{', '.join(repr(c) for c in self.choices)}.")
        lines = [tr("The result: {result}.", result=self._shown(result))]
        if self.answer is None:
            lines.insert(0, tr("No prediction was committed (the widget above, or answer=...)."))
            right, key = False, (str(result) if self.choices is not None else "right")
        elif self.choices is not None:
            right = self.answer == str(result)
            key = self.answer
            lines.insert(0, tr("Your prediction: {answer}. Right.", answer=self._shown(self.answer)) if right
                         else tr("Your prediction: {answer}. Not quite.", answer=self._shown(self.answer)))
        else:
            right = abs(self.answer - result) <= rel * abs(result)
            key = "right" if right else ("low" if self.answer < result else "high")
            lines.insert(0, self._verdict(right, key, result))
        if why.get(key):
            lines.append(tr(why[key]))
        print("\n".join(lines))
        self.right = right if self.answer is not None else None


    def _verdict(self, right: bool, key: str, result: float) -> str:
        """The first line of a numeric reveal: right, or too low or high (by what factor, when both
        numbers have the same sign)."""
        answer = self._shown(self.answer)
        if right:
            return tr("Your prediction: {answer}. Right.", answer=answer)
        if self.answer and result and (self.answer > 0) == (result > 0):
            ratio = f"{max(self.answer / result, result / self.answer):.3g}"
            if key == "low":
                return tr("Your prediction: {answer}. Too low, by a factor of {ratio}.", answer=answer, ratio=ratio)
            return tr("Your prediction: {answer}. Too high, by a factor of {ratio}.", answer=answer, ratio=ratio)
        if key == "low":
            return tr("Your prediction: {answer}. Too low.", answer=answer)
        return tr("Your prediction: {answer}. Too high.", answer=answer)


def predict(question: str, choices: Sequence[str] | None = None, *, number: bool = False,
            unit: str = "", answer: Any = None) -> Prediction:
    """Ask the learner to commit to an answer before the next cell shows the result.

    Give `choices` (a few short strings) or `number=True`; `answer=` records the learner's answer
    without the widget. Returns the Prediction; its `reveal(result, why=...)` goes in the next cell.
    """
    if not isinstance(question, str) or not question.strip():
        raise TypeError(f"predict(question=...) must be the question, a non-empty string; got {question!r}.")
    if (choices is None) == (not number):
        raise TypeError("predict() needs either choices=[...] (a few strings) or number=True.")
    if choices is not None and (isinstance(choices, str) or len(choices) < 2):
        raise TypeError("predict(choices=...) must be a list of at least two answers to choose from.")
    prediction = Prediction(question, choices, number, unit, answer)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return prediction
    if get_ipython() is not None:
        display(prediction._repr_mimebundle_(), raw=True)
    else:
        print(prediction._text())
    return prediction
