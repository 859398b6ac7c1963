"""predict(): commit to an answer before the notebook shows the result, then see what it says.

A prediction is two cells and an entry in its module's modules/NN_slug/predictions.json, which
holds every text it shows (labkit/predictions.py documents the format). The first cell, tagged
"predict", asks by the prediction's key; the learner answers in the widget it shows or, in a front
end without widgets, by writing the answer into the call:

    predict("05-pad-rows")
    # without widgets: predict("05-pad-rows", answer=2)

The next cell computes the result inside `predict.reveal` and hands it what it measured; the data
maps the measurement to a choice, so the cell's source names no answer:

    with predict.reveal("05-pad-rows") as seen:
        both = mm.combined_mask(left, 4, 4)[1, 0]
        print("padding_mask:", tuple(mm.padding_mask(left).shape))
        seen.result(int((~both.any(-1)).sum()))

Each prediction is its own object, kept in the kernel by its key (unique in the course, its prefix
the module), so a later prediction never takes an earlier one's place and the cells may run in any
order, Run All included.

Nothing of the answer shows before the learner commits. Everything the block prints or displays is
held back, and what happens at its end depends on where the kernel runs, which is the notebook's
folder (as the language is, labkit.i18n):

- **The answer book**: a kernel in the course's notebooks/ (or notebooks/zh-CN/), where `make
  answers`, `make notebooks`, `make portability` and nbval run and whose stored outputs the slides
  show. The block's output, the result and its explanation show, a prediction committed or not.
- **Anywhere else**, above all workspace/ (the learner's copies, `make lab`): with a committed
  prediction, the block's output, then the verdict, the `why` of a wrong pick and the
  explanation. Without one, nothing of the block: its output is dropped and its figures are
  closed unseen, and one line says how to commit. The block has run, so the names it defines
  exist and the notebook goes on: Run All reveals nothing and stops nowhere.

The safe side is the default: a copy moved to another folder is a learner's copy. Once a result has
been shown, its prediction cannot change (a commit of another answer is refused by name); a new
kernel starts afresh. A result that is not the answer the data explains fails loudly, in the answer
book first, so nbval holds every choice question to its measurement.

In the Chinese edition every text (the data's, translated in translations/zh-CN/predictions/, and
this file's) is shown through `tr`; the answer is kept and compared as the English choice, so the
notebook's code is the same in both languages.
"""

from __future__ import annotations

import html
import io
import math
import numbers
import sys
from pathlib import Path
from typing import Any

from .i18n import LANGUAGES, tr
from .predictions import PredictionSpec, find_prediction, plain_value

__all__ = ["Prediction", "RevealMismatch", "predict", "reveal"]

# This kernel's predictions, by key: the one place a prediction lives, whichever cell asks for it.
_PREDICTIONS: dict[str, Prediction] = {}
_MISSING = object()


class RevealMismatch(AssertionError):
    """The reveal cell measured another choice than the one its data explains: the course's claim
    does not hold (the code or the data changed), so the explanation would be false."""


class Prediction:
    """One prediction in this kernel: its texts (`spec`), the learner's committed `answer` (None
    until committed), what its reveal cell `measured` last (shown or not), and whether the result
    has been `shown`, after which the answer cannot change. `right` is the verdict of the last
    reveal that showed a committed answer, else None."""

    def __init__(self, spec: PredictionSpec):
        self.spec = spec
        self.answer: Any = None
        self.measured: Any = None
        self.fields: dict[str, Any] = {}
        self.shown = False
        self.right: bool | None = None

    @property
    def key(self) -> str:
        return self.spec.key

    def __repr__(self) -> str:
        return f"Prediction({self.key!r}, answer={self.answer!r}, shown={self.shown})"

    # ---------------------------------------------------------------------------------- committing

    def commit(self, answer: Any) -> None:
        """Record the learner's answer: a choice (as written in the data, or as shown in the
        learner's language) or a number. Refused once the result has been shown, unless it is the
        answer already committed."""
        value = self._valid(answer)
        if self.shown and not (self.answer is not None and value == self.answer):
            if self.answer is None:
                raise ValueError(tr("predict(\"{key}\"): its result has been shown already; a prediction cannot "
                                    "change after its reveal (a new kernel starts afresh).", key=self.key))
            raise ValueError(tr("predict(\"{key}\"): its result has been shown with your prediction, {answer}; a "
                                "prediction cannot change after its reveal (a new kernel starts afresh).",
                                key=self.key, answer=self._shown(self.answer)))
        self.answer = value

    def _valid(self, answer: Any) -> Any:
        spec = self.spec
        if not spec.number:
            texts = [choice.text for choice in spec.choices]
            shown = {tr(text): text for text in texts}
            written = str(answer) if isinstance(answer, (str, int)) and not isinstance(answer, bool) else None
            if written in texts:
                return written
            if written in shown:
                return shown[written]  # the choice as the learner reads it, in their language
            raise ValueError(tr("predict({key}, answer={answer}): pick one of the choices, written as shown: "
                                "{choices}", key=repr(self.key), answer=repr(answer),
                                choices=", ".join(repr(tr(t)) for t in texts)))
        if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
            raise TypeError(tr("predict({key}, answer={answer}): this question asks for a number, such as "
                               "answer=12 or answer=0.5", key=repr(self.key), answer=repr(answer)))
        if not math.isfinite(answer):  # the widget's field reads "inf" and "nan" as floats: said there too
            raise ValueError(tr("predict({key}, answer={answer}): a prediction is a finite number",
                                key=repr(self.key), answer=repr(answer)))
        return answer

    # ---------------------------------------------------------------------------------- asking

    def _question(self) -> str:
        return tr(self.spec.question).strip()

    def _text(self) -> str:
        lines = [tr("Predict: {question}", question=self._question())]
        if not self.spec.number:
            lines += [f"  ({chr(ord('a') + i)}) {tr(c.text)}" for i, c in enumerate(self.spec.choices)]
            lines.append(tr("Choose in the widget and press Commit (or pass answer=... to predict()); then run "
                            "the next cell."))
        else:
            lines.append(tr("Type a number in the widget and press Commit (or pass answer=... to predict()); "
                            "then run the next cell."))
        return "\n".join(lines)

    def _status(self) -> str:
        if self.shown and self.answer is not None:
            return tr("Revealed, with your prediction: <b>{answer}</b>.", answer=html.escape(self._shown(self.answer)))
        if self.shown:
            return tr("Its result has been shown.")
        if self.answer is not None:
            return tr("Committed: <b>{answer}</b>. Now run the next cell.",
                      answer=html.escape(self._shown(self.answer)))
        return ""

    def _widget(self):
        import ipywidgets as widgets

        if not self.spec.number:
            field = widgets.RadioButtons(options=[(tr(c.text), c.text) for c in self.spec.choices],
                                         value=self.answer, layout=widgets.Layout(width="auto"))
        else:
            unit = tr(self.spec.unit) if self.spec.unit else ""
            field = widgets.Text(value="" if self.answer is None else f"{self.answer:g}",
                                 placeholder=tr("a number, e.g. 12 or 0.5"), description=unit,
                                 layout=widgets.Layout(width="18em"))
        button = widgets.Button(description=tr("Commit"), button_style="primary")
        status = widgets.HTML(self._status())
        field.disabled = button.disabled = self.shown

        def commit(_button=None) -> None:
            value = field.value
            if self.spec.number:
                try:
                    value = float(str(value).replace(",", "").strip())
                except ValueError:
                    value = None
            if value is None:
                status.value = tr("Type a number first.") if self.spec.number else tr("Choose an answer first.")
                return
            try:
                self.commit(value)
            except (TypeError, ValueError) as refused:  # shown already, or not finite: said where they look
                status.value = html.escape(str(refused))
                return
            field.disabled = button.disabled = True
            status.value = self._status()

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

    # ---------------------------------------------------------------------------------- revealing

    def _shown(self, value: Any) -> str:
        """A choice or a number as the learner reads it: the choice translated, the number with its unit."""
        if isinstance(value, str):
            return tr(value)
        if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
            text = f"{int(value):,}"
        else:
            text = f"{value:.3g}"
        return f"{text} {tr(self.spec.unit) if self.spec.unit else ''}".strip()

    def _is_right(self) -> bool:
        if not self.spec.number:
            return self.answer == self.measured
        return abs(self.answer - self.measured) <= self.spec.rel * abs(self.measured)

    def report(self) -> list[str]:
        """What a reveal says, line by line, once it may say it: the verdict (with a committed
        answer), the result, the `why` of a wrong pick and the explanation."""
        spec, result = self.spec, self.measured
        fields = {**self.fields, "result": self._shown(result)}
        lines = []
        if self.answer is not None:
            right = self._is_right()
            if not spec.number:
                answer = self._shown(self.answer)
                lines.append(tr("Your prediction: {answer}. Right.", answer=answer) if right
                             else tr("Your prediction: {answer}. Not quite.", answer=answer))
                why = "" if right else spec.choice(self.answer).why
            else:
                lines.append(self._verdict(right))
                why = "" if right else (spec.low if self.answer < result else spec.high)
        lines.append(tr("The result: {result}.", result=self._shown(result)))
        if self.answer is not None and why:
            lines.append(tr(why, **fields))
        lines.append(tr(spec.explanation, **fields))
        return lines

    def _verdict(self, right: bool) -> str:
        """The first line of a numeric reveal: right, or too low or high (by what factor, when both
        numbers have the same sign)."""
        answer, result = self._shown(self.answer), self.measured
        if right:
            return tr("Your prediction: {answer}. Right.", answer=answer)
        low = self.answer < result
        if self.answer and result and (self.answer > 0) == (result > 0):
            ratio = f"{max(self.answer / result, result / self.answer):.3g}"
            if low:
                return tr("Your prediction: {answer}. Too low, by a factor of {ratio}.", answer=answer, ratio=ratio)
            return tr("Your prediction: {answer}. Too high, by a factor of {ratio}.", answer=answer, ratio=ratio)
        if low:
            return tr("Your prediction: {answer}. Too low.", answer=answer)
        return tr("Your prediction: {answer}. Too high.", answer=answer)


class Reveal:
    """`with predict.reveal(key) as seen:`: runs the block with its output held back, takes what it
    measured with `seen.result(...)`, and at its end shows the block's output and the reveal, or
    nothing but how to commit (the module docstring says when)."""

    def __init__(self, prediction: Prediction):
        self._prediction = prediction
        self._value: Any = _MISSING
        self._fields: dict[str, Any] = {}
        self._held: _HeldOutput | None = None

    def result(self, value: Any, /, **fields: Any) -> None:
        """What the block measured: a number for a number question, else the value the data's
        choices are told apart by (their `when`: a string, a boolean, an integer or a tuple, such
        as a shape). `fields` fill the `{name}` fields of the prediction's texts."""
        spec = self._prediction.spec
        where = f"seen.result({value!r}) for {spec.key!r}"
        if spec.number:
            value = _number(value, where)
        else:
            try:
                value = spec.choice_measured(plain_value(value)).text
            except (TypeError, ValueError) as error:
                raise type(error)(f"{where}: {error}") from None
        wanted = spec.fields() - {"result"}
        if set(fields) != wanted:
            extra, missing = sorted(set(fields) - wanted), sorted(wanted - set(fields))
            raise TypeError(f"{where}: its texts use the fields {sorted(wanted)}; "
                            + (f"give {', '.join(f'{m}=...' for m in missing)}" if missing else "")
                            + ("; " if missing and extra else "")
                            + (f"no text uses {', '.join(extra)}" if extra else ""))
        self._value, self._fields = value, fields

    def __enter__(self) -> Reveal:
        self._held = _HeldOutput()
        self._held.start()
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        held, prediction = self._held, self._prediction
        held.stop()
        may_show = _in_answer_book() or prediction.answer is not None
        if error is not None or self._value is _MISSING:
            held.show() if may_show else held.drop()
            if error is None:
                raise RuntimeError(f"predict.reveal({prediction.key!r}): the block ended without seen.result(...): "
                                   f"give it what the cell measured")
            return False
        prediction.measured, prediction.fields = self._value, self._fields
        if not may_show:
            held.drop()
            print(tr("Nothing is shown until you commit a prediction: choose in the widget above and press Commit "
                     "(or write predict(\"{key}\", answer=...)), then run this cell again.", key=prediction.key))
            return False
        spec = prediction.spec
        if not spec.number and self._value != spec.answer:
            held.show()
            raise RevealMismatch(
                f"predict.reveal({spec.key!r}): the cell measured {spec.choice(self._value).when!r}, the choice "
                f"{self._value!r}, but {_where(spec.source)} gives {spec.answer!r} as the answer and explains that "
                f"one: the code or the data changed; make them agree")
        held.show()
        print("\n".join(prediction.report()))
        prediction.shown = True
        prediction.right = prediction._is_right() if prediction.answer is not None else None
        return False


def _number(value: Any, where: str) -> float | int:
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: this question asks for a number; pass the number measured (an int or a "
                        f"float), not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{where}: the result is not finite; a prediction compares with a finite number")
    return value if isinstance(value, int) else float(value)


def _where(path: Path) -> str:
    from .predictions import _where as where

    return where(path)


def _in_answer_book() -> bool:
    """Whether this kernel runs in the answer book: the course's notebooks/ folder or one of its
    editions' (notebooks/zh-CN/). A copy anywhere else is a learner's."""
    from .syllabus import CourseError, find_course_root

    here = Path.cwd().resolve()
    try:
        book = find_course_root(here) / "notebooks"
    except CourseError:
        return False
    return here == book or here in {book / lang for lang in LANGUAGES if lang != "en"}


class _Stream(io.StringIO):
    """sys.stdout or sys.stderr while a block is held: each write kept, in order with the displays."""

    def __init__(self, events: list, name: str):
        super().__init__()
        self._events, self._name = events, name

    def write(self, text: str) -> int:
        if text:
            if self._events and self._events[-1][0] == self._name:
                self._events[-1][1] += text
            else:
                self._events.append([self._name, text])
        return len(text)


class _HeldOutput:
    """Everything a block prints or displays, kept in order, then shown or dropped; the pyplot
    figures it opens, shown below it (under the inline backend) or closed unseen."""

    def start(self) -> None:
        self.events: list = []
        self._streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Stream(self.events, "stdout"), _Stream(self.events, "stderr")
        self._shell = _shell()
        if self._shell is not None:
            from IPython.core.displaypub import CapturingDisplayPublisher

            events = self.events

            class Publisher(CapturingDisplayPublisher):
                def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
                    events.append(["display", dict(data=data, metadata=metadata, transient=transient, update=update)])

                def clear_output(self, wait=False):
                    events.append(["clear", wait])

            self._publisher, self._shell.display_pub = self._shell.display_pub, Publisher()
        self._figures = set(_figure_numbers())

    def stop(self) -> None:
        sys.stdout, sys.stderr = self._streams
        if self._shell is not None:
            self._shell.display_pub = self._publisher
        self.new_figures = [n for n in _figure_numbers() if n not in self._figures]

    def show(self) -> None:
        stdout, stderr = self._streams
        for kind, content in self.events:
            if kind == "stdout":
                stdout.write(content)
            elif kind == "stderr":
                stderr.write(content)
            elif kind == "display":
                self._publisher.publish(**content)
            else:
                self._publisher.clear_output(content)
        stdout.flush()
        if not self.new_figures:
            return
        import matplotlib
        import matplotlib.pyplot as plt

        if self._shell is None or "inline" not in matplotlib.get_backend().lower():
            return  # another backend shows its figures its own way
        from IPython.display import display

        for number in self.new_figures:
            if plt.fignum_exists(number):
                figure = plt.figure(number)
                display(figure)
                plt.close(figure)

    def drop(self) -> None:
        if self.new_figures:
            import matplotlib.pyplot as plt

            for number in self.new_figures:
                plt.close(number)


def _shell():
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def _figure_numbers() -> list[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return list(pyplot.get_fignums()) if pyplot is not None else []


# ---------------------------------------------------------------------------------- the two calls

def _prediction(key: Any) -> Prediction:
    spec = find_prediction(key)
    prediction = _PREDICTIONS.get(spec.key)
    if prediction is None:
        prediction = _PREDICTIONS[spec.key] = Prediction(spec)
    prediction.spec = spec  # the data as it is now (an author may have edited it)
    return prediction


def predict(key: str, answer: Any = None) -> None:
    """Ask the prediction `key` (its module's number and a name, such as "05-pad-rows"; the texts
    are in modules/NN_slug/predictions.json) and show the widget that commits an answer;
    `answer=` commits one without the widget. The result comes in the next cell, with
    `predict.reveal(key)`."""
    prediction = _prediction(key)
    if answer is not None:
        prediction.commit(answer)
    if _shell() is not None:
        from IPython.display import display

        display(prediction._repr_mimebundle_(), raw=True)
    else:
        print(prediction._text())


def reveal(key: str) -> Reveal:
    """`with predict.reveal(key) as seen:` around the cell that computes the result, ending with
    `seen.result(measured)`: shows the result once it may (the module docstring says when)."""
    return Reveal(_prediction(key))


predict.reveal = reveal  # the notebooks import one name, and a reveal reads as the prediction's
