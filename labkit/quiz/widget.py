"""A module's quiz in a notebook: one ipywidgets box per question, graded by quiz.py.

Only notebooks import this file (it needs ipywidgets). The questions, the grading and the wording
of the feedback all come from quiz.py, so the notebook and `make quiz M=NN` mark alike.

    from labkit.quiz.widget import show_quiz
    show_quiz("01")          # or show_quiz("01_attention_basics"), a path, or a Quiz

Each question follows the rule of model.Tries: a first wrong answer is told so and gets the hint;
the answer and the explanation come after a right answer or a second wrong one; the score counts
first tries.

`show_quiz` shows the quiz once: the widget, in one output that also holds the questions as text
and HTML (without answers), which a notebook stored with its outputs and read without a kernel (on
a code host, say) shows instead, since it cannot draw widgets. That text is deterministic, so strict
nbval can compare it.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from pathlib import Path

import ipywidgets as widgets
from IPython.display import display

from labkit.i18n import language, tr
from labkit.quiz import Feedback, Question, Quiz, Score, Tries, letter, load_quiz, parse_response, quiz_text
from labkit.quiz.markdown import BOLD, EMPHASIS, ITALIC, LINK
from labkit.quiz.model import ROUTES, question_heading, route_note, shown
from labkit.syllabus import ROOT_ENV, CourseError, _holds_a_module, find_course_root, get_module, quiz_path

_RIGHT, _WRONG = "#1a7f37", "#b35900"  # green and orange: readable on light and dark themes
_MATH = re.compile(r"(\$\$.+?\$\$|\$.+?\$)", re.S)
_TAGS = {BOLD: "b", ITALIC: "i"}


def markup(text: str) -> str:
    """Quiz text as HTML for HTMLMath: HTML-escaped, `code`, **bold**, *italics* and [links](url)
    outside $...$ (the subset the terminal draws too, markdown.py), line breaks kept. Math is left
    as written (only escaped), for MathJax to typeset. A link opens in a new tab; one whose address
    is not http(s) or a relative path (javascript:, data:) stays text."""
    parts = _MATH.split(text)
    for i in range(0, len(parts), 2):  # the even parts are outside math
        codes: list[str] = []

        def hold(match: re.Match) -> str:  # a code span stands as one private-use character meanwhile
            codes.append(f"<code>{html.escape(match.group(1), quote=False)}</code>")
            return chr(0xE000 + len(codes) - 1)

        plain = html.escape(re.sub(r"`([^`]+)`", hold, parts[i]), quote=False)
        for style, pattern in EMPHASIS:
            plain = pattern.sub(_link if style == LINK else rf"<{_TAGS[style]}>\1</{_TAGS[style]}>", plain)
        parts[i] = re.sub("[\ue000-\uf8ff]", lambda m: codes[ord(m.group(0)) - 0xE000]
                          if ord(m.group(0)) - 0xE000 < len(codes) else m.group(0), plain)
    for i in range(1, len(parts), 2):
        parts[i] = html.escape(parts[i], quote=False)
    return "".join(parts).replace("\n", "<br>")


def _link(match: re.Match) -> str:
    label, address = match.groups()
    if re.match(r"[A-Za-z][\w+.-]*:", address) and not re.match(r"https?://", address):
        return match.group(0)  # javascript:, data:, file: ... stay text
    return f'<a href="{html.escape(html.unescape(address))}" target="_blank" rel="noopener">{label}</a>'


def _has_markup(text: str) -> bool:
    """Whether `text` holds math or Markdown, which a radio button's plain label cannot show."""
    return bool(_MATH.search(text)) or markup(text) != html.escape(text, quote=False).replace("\n", "<br>")


def _feedback_html(feedback: Feedback) -> str:
    """The verdict line in colour, then the explanation."""
    head, _, rest = feedback.message.partition("\n")
    colour = _RIGHT if feedback.correct else _WRONG
    return (f'<div style="color:{colour}"><b>{markup(head)}</b></div>'
            + (f"<div>{markup(rest)}</div>" if rest else ""))


def _problem_html(text: str) -> str:
    return f'<div style="color:{_WRONG}">{markup(text)}</div>'


class _QuestionView:
    """One question's widgets, and what its Check button does: grade under the rule of model.Tries,
    show the feedback, and report the first try (`on_first_try(correct)`), once."""

    def __init__(self, question: Question, number: int, total: int,
                 on_first_try: Callable[[bool], None]):
        self.question, self.on_first_try = question, on_first_try
        self.tries = Tries(question)
        parts: list[widgets.Widget] = [
            widgets.HTML(f"<b>{html.escape(question_heading(question, number, total))}</b>"),
            widgets.HTMLMath(markup(shown(question.question))),
        ]
        parts += self._answer_widgets()
        self.check_button = widgets.Button(description=tr("Check"), button_style="primary")
        self.check_button.on_click(self.check)
        self.feedback = widgets.HTMLMath("")
        parts += [widgets.HBox([self.check_button]), self.feedback]
        self.box = widgets.VBox(parts, layout=widgets.Layout(margin="0 0 1.5em 0"))

    def _answer_widgets(self) -> list[widgets.Widget]:
        q = self.question
        choices = [shown(choice) for choice in q.choices]
        labels = [f"{letter(i)}. {choice}" for i, choice in enumerate(choices)]
        if q.type == "single":
            if any(_has_markup(choice) for choice in choices):
                # Radio labels are plain text (no MathJax): show the choices typeset, pick by letter.
                listed = widgets.HTMLMath("<br>".join(markup(label) for label in labels))
                self.input = widgets.RadioButtons(
                    options=[(letter(i), i) for i in range(len(q.choices))], value=None,
                    orientation="horizontal", layout=widgets.Layout(width="auto"))
                return [listed, self.input]
            self.input = widgets.RadioButtons(options=[(label, i) for i, label in enumerate(labels)],
                                              value=None, layout=widgets.Layout(width="auto"))
            return [self.input]
        if q.type == "multiple":
            # Checkbox descriptions are typeset, so math renders in them.
            self.input = widgets.VBox([
                widgets.Checkbox(value=False, description=markup(label), description_allow_html=True,
                                 indent=False, layout=widgets.Layout(width="auto"))
                for label in labels])
            return [self.input]
        self.input = widgets.Text(placeholder=tr("a number, e.g. 42, 0.125, 1e-5 or 25,829,888"),
                                  layout=widgets.Layout(width="22em"))
        return [widgets.HBox([self.input] + ([widgets.Label(shown(q.unit))] if q.unit else []))]

    def response(self):
        """The learner's answer as `Question.grade` takes it; ValueError says what is missing."""
        q = self.question
        if q.type == "single":
            if self.input.value is None:
                raise ValueError(tr("Choose an answer first."))
            return self.input.value
        if q.type == "multiple":
            chosen = [i for i, box in enumerate(self.input.children) if box.value]
            if not chosen:
                raise ValueError(tr("Tick every answer that applies first."))
            return chosen
        return parse_response(q, self.input.value)

    def check(self, _button=None) -> None:
        try:
            response = self.response()
        except ValueError as error:  # nothing to grade: say why, count nothing
            self.feedback.value = _problem_html(str(error))
            return
        first = self.tries.first_right is None
        feedback = self.tries.submit(response)
        self.feedback.value = _feedback_html(feedback)
        if first:
            self.on_first_try(feedback.correct)


def quiz_widget(quiz: Quiz, route: str = "full") -> widgets.VBox:
    """The quiz as one VBox: a title, a box per question (prompt, answer input, Check button,
    feedback) and a running score at the bottom, which counts first tries (model.Tries). On the
    express route, only the core's questions, and a line under the title saying what is left out."""
    note = route_note(quiz, route)
    quiz, full = quiz.on_route(route), quiz
    total = len(quiz.questions)
    first_tries: dict[int, bool] = {}
    score = widgets.Label()

    def show_score() -> None:
        score.value = str(Score(sum(first_tries.values()), len(first_tries), total))

    def recorder(number: int) -> Callable[[bool], None]:
        def record(correct: bool) -> None:
            first_tries[number] = correct
            show_score()
        return record

    show_score()
    head = f"<h3>{html.escape(shown(full.title))}</h3>"
    if full.description:
        head += f"<p>{markup(shown(full.description))}</p>"
    if note:
        head += f"<p><i>{html.escape(note)}</i></p>"
    views = [_QuestionView(q, n, total, recorder(n)) for n, q in enumerate(quiz.questions, 1)]
    return widgets.VBox([widgets.HTMLMath(head), *(view.box for view in views), score])


def resolve_quiz(source: Quiz | str | Path | int) -> Quiz:
    """A Quiz from a Quiz, a module number (1, "1", "01"), a module name ("01_attention_basics")
    or a path to a quiz file. Numbers and names are looked up in the course that holds the
    current folder (notebooks run in notebooks/ or workspace/), else in the course that holds the
    installed labkit (a learner's copy opened from another folder)."""
    if isinstance(source, Quiz):
        return source
    if isinstance(source, int) and not isinstance(source, bool):
        source = str(source)
    if isinstance(source, str):
        match = re.fullmatch(r"(\d{1,2})(?:_\w+)?", source.strip())
        if match:
            module = get_module(match.group(1), _course_root(), "quiz")
            path = quiz_path(module)
            if "_" in source and path.stem != source.strip():
                raise ValueError(f"There is no quiz named '{source.strip()}'; module "
                                 f"{module.number}'s quiz is {path.stem}.")
            return load_quiz(path)
    if isinstance(source, (str, Path)):
        return load_quiz(source)
    raise TypeError(f"show_quiz takes a Quiz, a module number such as \"01\", a module name such "
                    f"as \"01_attention_basics\" or a path to a quiz file; got {source!r}.")


def _course_root() -> Path:
    """The course around the current folder, else the one that holds this labkit (an editable
    install, as `make setup` makes); CourseError naming the fixes when neither is a course."""
    try:
        return find_course_root()
    except CourseError:
        if os.environ.get(ROOT_ENV):
            raise  # the learner named a course, and it is not one: say so, guess nothing
        package_course = Path(__file__).resolve().parents[2]
        if _holds_a_module(package_course):
            return package_course
        raise CourseError(f"No Attention Lab course in {Path.cwd()} or any folder above it, nor around the "
                          f"installed labkit ({package_course}). Open the notebook from inside the course "
                          f"folder (make lab), set {ROOT_ENV}=/path/to/the/course, or pass the quiz file's "
                          f"path: show_quiz(\"/path/to/the/course/quizzes/NN_slug.json\").") from None


def show_quiz(source: Quiz | str | Path | int, route: str = "full") -> None:
    """Show a quiz in a notebook, once: one output holding the interactive widget, and the
    questions as text and HTML (without answers) for a reader without a kernel. Returns None, so
    the cell does not display it twice. `route="express"` asks only the questions on the core,
    as the express route reads only the core (`"full"`, the default, asks them all)."""
    if route not in ROUTES:  # named before anything is looked up or drawn
        raise ValueError(f"show_quiz's route must be {' or '.join(repr(r) for r in ROUTES)}; got {route!r}.")
    quiz = resolve_quiz(source)
    display(quiz_bundle(quiz, quiz_widget(quiz, route), route), raw=True)


def quiz_bundle(quiz: Quiz, widget: widgets.Widget, route: str = "full") -> dict:
    """One display bundle, three forms of the quiz: a front end with a kernel draws the widget (the
    richest form it knows); one without (a code host, a notebook viewer) shows the HTML or the text,
    which are deterministic, so strict nbval can compare the text."""
    number = re.match(r"(\d\d)_", quiz.module)
    if number:
        options = (" LANG=zh-CN" if language() == "zh-CN" else "") + (f" ROUTE={route}" if route != "full" else "")
        where = tr("Answer in the quiz widget (it needs a running kernel), or in a terminal: {command}.",
                   command=f"make quiz M={number.group(1)}{options}")
    else:
        where = tr("Answer in the quiz widget (it needs a running kernel).")
    note = route_note(quiz, route)
    text = f"{quiz_text(quiz.on_route(route))}\n\n{note + chr(10) if note else ''}{where}"
    bundle = widget._repr_mimebundle_()
    bundle["text/plain"] = text
    bundle["text/html"] = f"<pre>{html.escape(text, quote=False)}</pre>"
    return bundle
