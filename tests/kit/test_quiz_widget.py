"""The notebook quiz (labkit/quiz/widget.py), driven headless: set the widgets' values as a learner would,
click the buttons, and read the feedback and the score."""

from __future__ import annotations

import html
import json

import ipywidgets as widgets
import pytest

from labkit.quiz import parse_quiz, quiz_text
from labkit.quiz import widget as qw
from labkit.syllabus import CourseError

QUIZ = {
    "module": "01_attention_basics",
    "title": "Attention basics",
    "questions": [
        {"id": "softmax-sum", "type": "single", "question": "What does each row of weights sum to?",
         "choices": ["0", "1", "T"], "answer": 1, "explanation": "Softmax makes a distribution.",
         "hint": "Think of probabilities."},
        {"id": "causal-rows", "type": "multiple", "question": "Which hold for a causal row?",
         "choices": ["It sums to 1", "It holds negative weights", "Future weights are 0"],
         "answer": [0, 2], "explanation": "Softmax, then the mask."},
        {"id": "qkv-weights", "type": "numeric", "question": "How many weights in Q, K and V?",
         "answer": 786432, "tolerance": 0, "unit": "weights", "explanation": "3 x 512 x 512."},
        {"id": "scale", "type": "single", "question": "Scores are divided by?",
         "choices": ["$d_k$", "$\\sqrt{d_k}$"], "answer": 1, "explanation": "Variance $d_k$ -> 1."},
    ],
}


def walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def find(widget, kind):
    return [w for w in walk(widget) if type(w) is kind]


def button(box, name):
    (found,) = [b for b in find(box, widgets.Button) if b.description == name]
    return found


@pytest.fixture
def quiz_box():
    box = qw.quiz_widget(parse_quiz(QUIZ))
    title, *questions, score = box.children
    assert "<h3>Attention basics</h3>" in title.value
    assert len(questions) == 4
    return questions, score


NOT_YET = "Not quite: that is not right yet."


def test_a_first_wrong_try_gets_the_hint_and_a_second_the_answer(quiz_box):
    (q1, *_), score = quiz_box
    assert score.value == "Score: 0 of 4 right on the first try, 0 answered"
    (radio,) = find(q1, widgets.RadioButtons)
    assert radio.options == (("A. 0", 0), ("B. 1", 1), ("C. T", 2)) and radio.value is None
    assert [b.description for b in find(q1, widgets.Button)] == ["Check"]  # the hint comes with a wrong try
    feedback = find(q1, widgets.HTMLMath)[-1]
    button(q1, "Check").click()
    assert "Choose an answer first." in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 0 answered"
    radio.value = 0
    button(q1, "Check").click()
    assert NOT_YET in feedback.value and "Hint: Think of probabilities." in feedback.value
    assert "The answer is" not in feedback.value and "Softmax makes a distribution." not in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 1 answered"
    radio.value = 2
    button(q1, "Check").click()
    assert "Not quite: you chose C. The answer is B: 1" in feedback.value
    assert "Softmax makes a distribution." in feedback.value
    radio.value = 1  # the answer just shown: right, and it changes nothing
    button(q1, "Check").click()
    assert "Right! The answer is B: 1" in feedback.value and "does not change your score" in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 1 answered"


def test_a_right_first_try_counts_and_later_tries_change_nothing(quiz_box):
    (q1, *_), score = quiz_box
    (radio,) = find(q1, widgets.RadioButtons)
    feedback = find(q1, widgets.HTMLMath)[-1]
    radio.value = 1
    button(q1, "Check").click()
    assert "Right! The answer is B: 1" in feedback.value and "Softmax makes a distribution." in feedback.value
    assert score.value == "Score: 1 of 4 right on the first try, 1 answered"
    radio.value = 0
    button(q1, "Check").click()
    assert "Not quite: you chose A." in feedback.value
    assert score.value == "Score: 1 of 4 right on the first try, 1 answered"


def test_multiple_choice_needs_all_and_only_the_right_boxes(quiz_box):
    (_, q2, *_), score = quiz_box
    boxes = find(q2, widgets.Checkbox)
    assert [b.description for b in boxes] == ["A. It sums to 1", "B. It holds negative weights",
                                              "C. Future weights are 0"]
    feedback = find(q2, widgets.HTMLMath)[-1]
    button(q2, "Check").click()
    assert "Tick every answer that applies first." in feedback.value
    boxes[0].value = True
    button(q2, "Check").click()
    assert NOT_YET in feedback.value and "missed" not in feedback.value and "C" not in feedback.value
    boxes[1].value = boxes[2].value = True
    button(q2, "Check").click()
    assert "Not quite: B is not right. The answers are A and C." in feedback.value
    boxes[1].value = False
    button(q2, "Check").click()
    assert "Right! The answers are A and C." in feedback.value and "Softmax, then the mask." in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 1 answered"


def test_numeric_reads_typed_numbers_and_explains_a_bad_one(quiz_box):
    (_, _, q3, _), score = quiz_box
    (text,) = find(q3, widgets.Text)
    assert [label.value for label in find(q3, widgets.Label)] == ["weights"]
    feedback = find(q3, widgets.HTMLMath)[-1]
    text.value = "0,5"
    button(q3, "Check").click()
    assert ("Type a number, such as 42, -3, 0.125, 1e-5 or 25,829,888 (a point for decimals; commas "
            "only between groups of three digits); got '0,5'.") in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 0 answered"  # unreadable: counts nothing
    text.value = "786.432"
    button(q3, "Check").click()
    assert NOT_YET in feedback.value and "786,432" not in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 1 answered"
    text.value = "786,432 weights"
    button(q3, "Check").click()
    assert "Right! The answer is 786,432 weights." in feedback.value
    assert score.value == "Score: 0 of 4 right on the first try, 1 answered"


def test_choices_with_math_are_typeset_and_picked_by_letter(quiz_box):
    (*_, q4), score = quiz_box
    (radio,) = find(q4, widgets.RadioButtons)
    assert radio.options == (("A", 0), ("B", 1))
    assert "A. $d_k$<br>B. $\\sqrt{d_k}$" in [w.value for w in find(q4, widgets.HTMLMath)]
    radio.value = 1
    button(q4, "Check").click()
    assert "Right! The answer is B: $\\sqrt{d_k}$" in find(q4, widgets.HTMLMath)[-1].value


def test_markup_escapes_html_and_leaves_math_alone():
    assert qw.markup("Use `x < y` and **bold**; $a<b$\nnext") == (
        "Use <code>x &lt; y</code> and <b>bold</b>; $a&lt;b$<br>next")
    assert qw.markup("$`not code`$ `code`") == "$`not code`$ <code>code</code>"


def test_markup_renders_what_the_terminal_draws():
    """The subset of Markdown the terminal draws (markdown.py): italics and links too, and nothing
    inside code or math; a link that is not http(s) or a relative path stays text."""
    assert qw.markup("*what* and _this_, not d_k or `a*b*c` or 2 * 3") == (
        "<i>what</i> and <i>this</i>, not d_k or <code>a*b*c</code> or 2 * 3")
    assert qw.markup("the [glossary](../docs/glossary.md#kv-cache)") == (
        'the <a href="../docs/glossary.md#kv-cache" target="_blank" rel="noopener">glossary</a>')
    assert qw.markup('[x](https://a.b/?q="1"&r=2)') == (
        '<a href="https://a.b/?q=&quot;1&quot;&amp;r=2" target="_blank" rel="noopener">x</a>')
    assert qw.markup("[click](javascript:alert(1))") == "[click](javascript:alert(1))"
    assert qw.markup("**`code` in bold**") == "<b><code>code</code> in bold</b>"


DEEP = {**QUIZ, "questions": [QUIZ["questions"][0], {**QUIZ["questions"][1], "deep_dive": True},
                              *QUIZ["questions"][2:]]}


def test_the_express_route_asks_the_core_and_says_what_it_leaves_out():
    full = qw.quiz_widget(parse_quiz(DEEP))
    headings = [w.value for w in find(full, widgets.HTML) if w.value.startswith("<b>Question")]
    assert headings[:2] == ["<b>Question 1 of 4</b>", "<b>Question 2 of 4 (deep dive)</b>"]
    express = qw.quiz_widget(parse_quiz(DEEP), route="express")
    title, *questions, score = express.children
    assert len(questions) == 3 and score.value == "Score: 0 of 3 right on the first try, 0 answered"
    assert "Express route: the 3 questions on the core; the 1 on deep dives are left out." in title.value
    assert "Which hold for a causal row?" not in str([w.value for w in find(express, widgets.HTMLMath)])
    with pytest.raises(ValueError, match="route must be 'full' or 'express'; got 'short'"):
        qw.quiz_widget(parse_quiz(DEEP), route="short")


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A fake course root holding module 01's quiz, with notebooks/ as the current folder."""
    (tmp_path / "Makefile").write_text("")
    (tmp_path / "minimind_ref").mkdir()
    (tmp_path / "minimind_ref" / "__init__.py").write_text("")
    (tmp_path / "quizzes").mkdir()
    (tmp_path / "quizzes" / "01_attention_basics.json").write_text(json.dumps(QUIZ))
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    return tmp_path


@pytest.fixture
def shown(monkeypatch):
    """What show_quiz passes to IPython's display."""
    calls = []
    monkeypatch.setattr(qw, "display", lambda obj, raw=False: calls.append((obj, raw)))
    return calls


EXPECTED_TEXT = quiz_text(parse_quiz(QUIZ)) + (
    "\n\nAnswer in the quiz widget (it needs a running kernel), or in a terminal: make quiz M=01.")


@pytest.mark.parametrize("source", ["01", "1", 1, "01_attention_basics", "../quizzes/01_attention_basics.json"])
def test_show_quiz_shows_the_quiz_once_with_text_for_a_reader_without_a_kernel(course, shown, capsys, source):
    assert qw.show_quiz(source) is None
    assert capsys.readouterr().out == "", "nothing printed above the widget: the quiz is shown once"
    ((bundle, raw),) = shown
    assert raw and set(bundle) == {"text/plain", "text/html", "application/vnd.jupyter.widget-view+json"}
    assert bundle["text/plain"] == EXPECTED_TEXT
    for question in QUIZ["questions"]:
        assert html.escape(question["question"], quote=False) in bundle["text/html"]


def test_show_quiz_text_is_deterministic_and_hides_the_answers(course, shown):
    qw.show_quiz(parse_quiz(QUIZ))
    qw.show_quiz(course / "quizzes" / "01_attention_basics.json")
    (first, _), (second, _) = shown
    assert first["text/plain"] == second["text/plain"] == EXPECTED_TEXT
    assert first["text/html"] == second["text/html"]
    assert "Softmax makes a distribution." not in first["text/plain"] + first["text/html"]
    assert "786" not in first["text/plain"]


def test_show_quiz_takes_a_route(course, shown):
    (course / "quizzes" / "01_attention_basics.json").write_text(json.dumps(DEEP))
    qw.show_quiz("01", route="express")
    ((bundle, _),) = shown
    assert bundle["text/plain"] == quiz_text(parse_quiz(DEEP).on_route("express")) + (
        "\n\nExpress route: the 3 questions on the core; the 1 on deep dives are left out.\n"
        "Answer in the quiz widget (it needs a running kernel), or in a terminal: make quiz M=01 ROUTE=express.")
    with pytest.raises(ValueError, match=r"show_quiz's route must be 'full' or 'express'; got 'fast'"):
        qw.show_quiz("01", route="fast")
    with pytest.raises(ValueError, match=r"got None"):
        qw.show_quiz("no such quiz", route=None)  # the route is named before the source is looked up
    assert len(shown) == 1


def test_show_quiz_explains_a_wrong_source(course, shown):
    with pytest.raises(CourseError, match=r"Module 02 has no quiz yet"):
        qw.show_quiz("02")
    with pytest.raises(ValueError, match=r"There is no quiz named '01_basics'; module 01's quiz is "
                                         r"01_attention_basics\."):
        qw.show_quiz("01_basics")
    with pytest.raises(TypeError, match=r"show_quiz takes a Quiz, a module number"):
        qw.show_quiz(1.5)
    assert shown == []


def test_outside_any_course_the_quiz_comes_from_the_course_that_holds_labkit(tmp_path, monkeypatch, shown):
    """A learner's copy opened from another folder: its quiz cell still finds the quiz."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTENTION_LAB_COURSE", raising=False)
    qw.show_quiz("05")
    ((bundle, _),) = shown
    assert bundle["text/plain"].startswith("Quiz: ") and "make quiz M=05" in bundle["text/plain"]


def test_with_no_course_anywhere_the_error_names_the_fixes(tmp_path, monkeypatch, shown):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTENTION_LAB_COURSE", raising=False)
    monkeypatch.setattr(qw, "__file__", str(tmp_path / "site-packages" / "labkit" / "quiz" / "widget.py"))
    with pytest.raises(CourseError, match=r"No Attention Lab course in .*, nor around the installed "
                                          r"labkit .*\(make lab\).*ATTENTION_LAB_COURSE=.*show_quiz\(\"/path"):
        qw.show_quiz("05")
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(tmp_path))  # named, and wrong: no guessing
    with pytest.raises(CourseError, match=r"is not an Attention Lab course"):
        qw.show_quiz("05")
    assert shown == []
