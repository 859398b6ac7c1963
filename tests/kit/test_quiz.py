"""The quiz format, its validator, grading, typed answers and the terminal runner (quiz.py).

Every validation rule is checked with its whole message: the message is what an author reads, so
its wording is part of the contract. The CLI (`make quiz`) is tested in test_course_cli.py.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from labkit.quiz import (
    MAX_CHOICES,
    QUIZ_SCHEMA,
    Feedback,
    Question,
    QuizError,
    Score,
    format_number,
    load_quiz,
    parse_quiz,
    parse_response,
    quiz_text,
    run_terminal_quiz,
)

REPO = Path(__file__).resolve().parents[2]

SAMPLE = {
    "module": "01_attention_basics",
    "title": "Attention basics",
    "description": "Five minutes on scores and softmax.",
    "questions": [
        {"id": "scale-factor", "type": "single",
         "question": "Why are the scores divided by $\\sqrt{d_k}$?",
         "choices": ["To save memory", "To keep the softmax from saturating", "To make them positive"],
         "answer": 1, "explanation": "Dot products of random vectors grow like $\\sqrt{d_k}$.",
         "hint": "Think about the variance of a dot product."},
        {"id": "which-hold", "type": "multiple", "question": "Which hold for every row of weights?",
         "choices": ["It sums to 1", "It can hold negative numbers", "Every weight is >= 0"],
         "answer": [2, 0], "explanation": "Softmax gives positive numbers that sum to 1."},
        {"id": "param-count", "type": "numeric", "question": "How many weights do Q, K and V hold?",
         "answer": 786432, "tolerance": 0, "unit": "parameters",
         "explanation": "Three 512 x 512 matrices: 3 x 262,144."},
    ],
}
SRC = "<quiz>"
Q1, Q2, Q3 = "<quiz>, question 1 ('scale-factor')", "<quiz>, question 2 ('which-hold')", \
    "<quiz>, question 3 ('param-count')"


def sample() -> dict:
    return copy.deepcopy(SAMPLE)


def problems(data, **kwargs) -> list:
    """The validator's lines for `data` (which must be invalid)."""
    with pytest.raises(QuizError) as error:
        parse_quiz(data, **kwargs)
    assert str(error.value) == "\n".join(error.value.problems)
    return list(error.value.problems)


def changed(edit) -> dict:
    data = sample()
    edit(data)
    return data


# --- the data model ------------------------------------------------------------------------------

def test_a_valid_quiz_parses_into_frozen_dataclasses():
    quiz = parse_quiz(sample())
    assert (quiz.module, quiz.title, quiz.description) == (
        "01_attention_basics", "Attention basics", "Five minutes on scores and softmax.")
    single, multiple, numeric = quiz.questions
    assert single == Question("scale-factor", "single", SAMPLE["questions"][0]["question"], 1,
                              SAMPLE["questions"][0]["explanation"], tuple(SAMPLE["questions"][0]["choices"]),
                              hint="Think about the variance of a dot product.")
    assert multiple.answer == (0, 2)  # sorted; the file need not be
    assert (numeric.answer, numeric.tolerance, numeric.unit, numeric.choices) == (786432, 0, "parameters", ())
    with pytest.raises(AttributeError):
        quiz.title = "x"


def test_optional_keys_may_be_left_out():
    data = sample()
    del data["description"], data["questions"][0]["hint"], data["questions"][2]["unit"]
    quiz = parse_quiz(data)
    assert quiz.description is None and quiz.questions[0].hint is None and quiz.questions[2].unit is None


# --- validation: every rule, with its message -----------------------------------------------------

TOP = "module, title, description, questions"
SINGLE_KEYS = "id, type, question, choices, answer, explanation, hint, check, unchecked, deep_dive"
NUMERIC_KEYS = "id, type, question, answer, tolerance, unit, explanation, hint, check, unchecked, deep_dive"

RULES = {
    "top-level-not-object": (lambda d: d.clear(), None),  # replaced below by a list
    "missing-title": (lambda d: d.pop("title"), f'{SRC}: "title" is missing; add it: the quiz\'s title.'),
    "unknown-top-key": (lambda d: d.update(titel="x"),
                        f'{SRC}: unknown key "titel" (did you mean "title"?); the keys allowed at the '
                        f'top level are: {TOP}.'),
    "empty-title": (lambda d: d.update(title="  "),
                    f'{SRC}: "title" must be a non-empty string; found an empty string.'),
    "description-not-text": (lambda d: d.update(description=3),
                             f'{SRC}: "description" must be a non-empty string; found the number 3.'),
    "missing-questions": (lambda d: d.pop("questions"),
                          f'{SRC}: "questions" is missing; add it: a list of questions.'),
    "questions-not-list": (lambda d: d.update(questions={}),
                           f'{SRC}: "questions" must be a list of questions; found an object.'),
    "no-questions": (lambda d: d.update(questions=[]),
                     f'{SRC}: "questions" is empty; add at least one question.'),
    "question-not-object": (lambda d: d["questions"].append("What is attention?"),
                            f'{SRC}, question 4: a question must be a JSON object {{...}}; found the '
                            f'string "What is attention?".'),
    "missing-id": (lambda d: d["questions"][1].pop("id"),
                   f'{SRC}, question 2: "id" is missing; add it: a short name unique in the file, such '
                   f'as "scale-factor".'),
    "bad-id": (lambda d: d["questions"][1].update(id="Which_Hold"),
               f'{SRC}, question 2 (\'Which_Hold\'): "id" must be lowercase letters, digits and hyphens, '
               f'starting with a letter or digit, such as "scale-factor"; found the string "Which_Hold".'),
    "duplicate-id": (lambda d: d["questions"][2].update(id="scale-factor"),
                     f'{SRC}, question 3 (\'scale-factor\'): the id "scale-factor" is already used by '
                     f'question 1; ids must be unique.'),
    "missing-type": (lambda d: d["questions"][0].pop("type"),
                     f'{Q1}: "type" is missing; add it: "single", "multiple" or "numeric".'),
    "bad-type": (lambda d: d["questions"][0].update(type="choice"),
                 f'{Q1}: "type" must be "single", "multiple" or "numeric"; found the string "choice".'),
    "typo-key": (lambda d: d["questions"][0].update(explaination="x"),
                 f'{Q1}: unknown key "explaination" (did you mean "explanation"?); the keys allowed in a '
                 f'"single" question are: {SINGLE_KEYS}.'),
    "key-of-another-type": (lambda d: d["questions"][2].update(choices=["a", "b"]),
                            f'{Q3}: unknown key "choices"; the keys allowed in a "numeric" question are: '
                            f'{NUMERIC_KEYS}.'),
    "missing-explanation": (lambda d: d["questions"][0].pop("explanation"),
                            f'{Q1}: "explanation" is missing; add it: why the answer is right, shown '
                            f'after answering.'),
    "question-not-text": (lambda d: d["questions"][0].update(question=["Why?"]),
                          f'{Q1}: "question" must be a non-empty string; found a list.'),
    "empty-hint": (lambda d: d["questions"][0].update(hint=""),
                   f'{Q1}: "hint" must be a non-empty string; found an empty string.'),
    "missing-choices": (lambda d: d["questions"][0].pop("choices"),
                        f'{Q1}: "choices" is missing; add it: a list of at least 2 answer texts.'),
    "choices-not-list": (lambda d: d["questions"][0].update(choices="A or B"),
                         f'{Q1}: "choices" must be a list of texts, such as ["first", "second"]; found '
                         f'the string "A or B".'),
    "one-choice": (lambda d: d["questions"][0].update(choices=["Only"], answer=0),
                   f'{Q1}: "choices" has 1; a question needs at least 2.'),
    "too-many-choices": (lambda d: d["questions"][0].update(choices=[f"c{i}" for i in range(13)]),
                         f'{Q1}: "choices" has 13; at most {MAX_CHOICES} (labelled A to L).'),
    "empty-choice": (lambda d: d["questions"][0]["choices"].__setitem__(2, " "),
                     f'{Q1}: choice C must be a non-empty string; found an empty string.'),
    "choice-not-text": (lambda d: d["questions"][0]["choices"].__setitem__(0, 7),
                        f'{Q1}: choice A must be a non-empty string; found the number 7.'),
    "duplicate-choices": (lambda d: d["questions"][0]["choices"].__setitem__(2, "To save memory "),
                          f'{Q1}: choices A and C are the same (the string "To save memory "); make each '
                          f'choice different.'),
    "missing-answer": (lambda d: d["questions"][0].pop("answer"),
                       f'{Q1}: "answer" is missing; add it: the index of the right choice, counting from 0.'),
    "single-answer-out-of-range": (lambda d: d["questions"][0].update(answer=3),
                                   f'{Q1}: "answer" is 3 but there are only 3 choices (0 to 2).'),
    "single-answer-negative": (lambda d: d["questions"][0].update(answer=-1),
                               f'{Q1}: "answer" is -1; choices are counted from 0 (0 to 2).'),
    "single-answer-letter": (lambda d: d["questions"][0].update(answer="B"),
                             f'{Q1}: "answer" must be a choice index, a whole number counting from 0; '
                             f'found the string "B" (for choice B, write 1).'),
    "single-answer-bool": (lambda d: d["questions"][0].update(answer=True),
                           f'{Q1}: "answer" must be a choice index, a whole number counting from 0; found true.'),
    "single-answer-float": (lambda d: d["questions"][0].update(answer=1.0),
                            f'{Q1}: "answer" must be a choice index, a whole number counting from 0; '
                            f'found the number 1.0.'),
    "single-answer-list": (lambda d: d["questions"][0].update(answer=[1]),
                           f'{Q1}: "answer" of a "single" question is one index, not a list; for several '
                           f'right choices use "type": "multiple".'),
    "multiple-answer-not-list": (lambda d: d["questions"][1].update(answer=0),
                                 f'{Q2}: "answer" of a "multiple" question must be a list of choice '
                                 f'indices, such as [0, 2]; found the number 0.'),
    "multiple-answer-empty": (lambda d: d["questions"][1].update(answer=[]),
                              f'{Q2}: "answer" is an empty list; list every right choice, such as [0, 2].'),
    "multiple-answer-out-of-range": (lambda d: d["questions"][1].update(answer=[0, 3]),
                                     f'{Q2}: "answer" contains 3 but there are only 3 choices (0 to 2).'),
    "multiple-answer-repeated": (lambda d: d["questions"][1].update(answer=[0, 2, 0]),
                                 f'{Q2}: "answer" lists 0 more than once; list each right choice once.'),
    "multiple-answer-not-index": (lambda d: d["questions"][1].update(answer=[0, "C"]),
                                  f'{Q2}: "answer" must list choice indices, whole numbers counting from 0; '
                                  f'found the string "C" (for choice C, write 2).'),
    "numeric-answer-quoted": (lambda d: d["questions"][2].update(answer="786432"),
                              f'{Q3}: "answer" must be a number; found the string "786432" (write it '
                              f'without quotes).'),
    "numeric-answer-nan": (lambda d: d["questions"][2].update(answer=float("nan")),
                           f'{Q3}: "answer" must be a finite number; found nan.'),
    "missing-tolerance": (lambda d: d["questions"][2].pop("tolerance"),
                          f'{Q3}: "tolerance" is missing; add it: how far from the answer still counts '
                          f'as right; 0 for exact.'),
    "negative-tolerance": (lambda d: d["questions"][2].update(tolerance=-0.5),
                           f'{Q3}: "tolerance" is -0.5; it must be 0 or more (0: the answer must be exact).'),
    "tolerance-not-number": (lambda d: d["questions"][2].update(tolerance=None),
                             f'{Q3}: "tolerance" must be a number; found null.'),
    "empty-unit": (lambda d: d["questions"][2].update(unit=""),
                   f'{Q3}: "unit" must be a non-empty string; found an empty string.'),
    "tab-from-latex": (lambda d: d["questions"][0].update(explanation="Scale by $\theta$."),
                       f'{Q1}: "explanation" contains a tab, which is what JSON makes of "\\t": a LaTeX '
                       f'command such as \\theta, \\tau, \\times or \\text needs two backslashes in the '
                       f'file ("\\\\theta").'),
    "form-feed-from-latex": (lambda d: d["questions"][0]["choices"].__setitem__(0, "$\frac{1}{2}$"),
                             f'{Q1}: choice A contains a form feed, which is what JSON makes of "\\f": a '
                             f'LaTeX command such as \\frac needs two backslashes in the file ("\\\\frac").'),
    "deep-dive-not-bool": (lambda d: d["questions"][0].update(deep_dive="yes"),
                           f'{Q1}: "deep_dive" must be true (the question is on a deep dive) or false (on the '
                           f'core, the default); found the string "yes".'),
    "multiple-check-leaves-a-choice": (
        lambda d: d["questions"][1].update(check={"choices": {"A": "True", "C": "True"}}),
        f'{Q2}: "check" leaves choice B undecided; give each an expression in "choices", or in "unchecked" '
        f'the reason no code can decide it (a wrong key must not pass unseen).'),
    "multiple-check-decides-and-gives-up": (
        lambda d: d["questions"][1].update(check={"choices": {"A": "True", "B": "False", "C": "True"},
                                                  "unchecked": {"B": "no code can"}}),
        f'{Q2}: "check" decides choice B and also gives a reason it cannot; keep one.'),
    "unchecked-choice-past-the-choices": (
        lambda d: d["questions"][1].update(check={"choices": {"A": "True", "B": "False", "C": "True"},
                                                  "unchecked": {"D": "no code can"}}),
        f'{Q2}: "check" "unchecked" has the key "D"; its keys are choice letters, A to C.'),
    "unchecked-choice-without-a-reason": (
        lambda d: d["questions"][1].update(check={"choices": {"A": "True", "C": "True"}, "unchecked": {"B": " "}}),
        f'{Q2}: "check" "unchecked" B must be a non-empty string; found an empty string.'),
    "unchecked-choices-not-an-object": (
        lambda d: d["questions"][1].update(check={"choices": {"A": "True", "C": "True"}, "unchecked": []}),
        f'{Q2}: "check" "unchecked" must be a non-empty object from choice letters to the reason no code can '
        f'decide that choice, such as {{"D": "a fact about GPU hardware"}}; found an empty list.'),
    "unchecked-choices-in-a-single-check": (
        lambda d: d["questions"][0].update(check={"choices": {"B": "True"}, "unchecked": {"A": "no code can"}}),
        f'{Q1}: unknown key "unchecked"; the keys allowed in the "check" of a "single" question are: code, '
        f'choices.'),
    "newline-in-math": (lambda d: d["questions"][2].update(question="What is $\nabla f$?"),
                        f'{Q3}: "question" has a line break inside $...$, which is what JSON makes of '
                        f'"\\n": a LaTeX command such as \\nabla, \\neq or \\nu needs two backslashes in '
                        f'the file ("\\\\nabla").'),
}


@pytest.mark.parametrize("rule", [r for r in RULES if r != "top-level-not-object"])
def test_each_rule_has_its_message(rule):
    edit, message = RULES[rule]
    assert message in problems(changed(edit))


def test_every_rule_is_refused_alone():
    """Each broken rule gives exactly its own line (no knock-on messages) except where one mistake
    is two facts (a renamed key is both unknown and missing)."""
    for rule, (edit, message) in RULES.items():
        if rule in ("top-level-not-object", "typo-key"):
            continue
        assert problems(changed(edit)) == [message], rule


def test_the_top_level_must_be_an_object():
    assert problems(["not", "a", "quiz"]) == [
        f'{SRC}: a quiz is one JSON object, {{"module": ..., "title": ..., "questions": [...]}}; '
        f'found a list.']


def test_module_must_equal_the_file_stem():
    assert problems(sample(), source="quizzes/01_attn.json", stem="01_attn") == [
        'quizzes/01_attn.json: "module" is "01_attention_basics" but the file is 01_attn.json; they '
        'must match: set "module" to "01_attn", or rename the file.']
    assert parse_quiz(sample(), stem="01_attention_basics").module == "01_attention_basics"


def test_every_problem_in_a_file_is_reported_together_in_order():
    data = sample()
    data["titel"] = data.pop("title")
    data["questions"][0]["answer"] = 5
    data["questions"][1]["id"] = "scale-factor"
    data["questions"][2]["explaination"] = data["questions"][2].pop("explanation")
    lines = problems(data)
    assert lines == [
        f'{SRC}: unknown key "titel" (did you mean "title"?); the keys allowed at the top level are: {TOP}.',
        f'{SRC}: "title" is missing; add it: the quiz\'s title.',
        f'{Q1}: "answer" is 5 but there are only 3 choices (0 to 2).',
        f'{SRC}, question 2 (\'scale-factor\'): the id "scale-factor" is already used by question 1; '
        f'ids must be unique.',
        f'{Q3}: unknown key "explaination" (did you mean "explanation"?); the keys allowed in a "numeric" '
        f'question are: {NUMERIC_KEYS}.',
        f'{Q3}: "explanation" is missing; add it: why the answer is right, shown after answering.',
    ]


def test_an_answer_is_checked_against_the_choices_even_when_they_have_problems():
    data = changed(lambda d: d["questions"][0].update(choices=["x", "x"], answer=2))
    assert problems(data) == [
        f'{Q1}: choices A and B are the same (the string "x"); make each choice different.',
        f'{Q1}: "answer" is 2 but there are only 2 choices (0 to 1).',
    ]


# --- loading files --------------------------------------------------------------------------------

@pytest.fixture
def quizzes(tmp_path, monkeypatch):
    """A quizzes/ folder in a temporary current folder, so messages name quizzes/NAME.json."""
    (tmp_path / "quizzes").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "quizzes"


def test_load_quiz_reads_a_file_and_names_it_in_messages(quizzes):
    path = quizzes / "01_attention_basics.json"
    path.write_text(json.dumps(sample(), indent=2), encoding="utf-8")
    assert load_quiz(path) == parse_quiz(sample())
    data = sample()
    data["questions"][0]["choices"].append("To normalise the keys")
    data["questions"][0]["answer"] = 4
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(QuizError) as error:
        load_quiz(path)
    assert str(error.value) == ("quizzes/01_attention_basics.json, question 1 ('scale-factor'): "
                                '"answer" is 4 but there are only 4 choices (0 to 3).')


def test_load_quiz_checks_module_against_the_file_name(quizzes):
    path = quizzes / "02_qkv.json"
    path.write_text(json.dumps(sample()), encoding="utf-8")
    with pytest.raises(QuizError, match=r'^quizzes/02_qkv\.json: "module" is "01_attention_basics" '
                                        r'but the file is 02_qkv\.json'):
        load_quiz(path)


def test_json_syntax_errors_give_line_and_column(quizzes):
    path = quizzes / "01_attention_basics.json"
    path.write_text('{\n  "module": "01_attention_basics"\n  "title": "x"\n}\n')
    with pytest.raises(QuizError) as error:
        load_quiz(path)
    assert str(error.value) == (
        "quizzes/01_attention_basics.json: not valid JSON at line 3, column 3: Expecting ',' "
        "delimiter. Look for a missing comma or quote just before this point.")


def test_a_single_backslash_latex_command_is_explained(quizzes):
    path = quizzes / "01_attention_basics.json"
    path.write_text('{"module": "01_attention_basics", "title": "$\\sqrt{d}$", "questions": []}')
    with pytest.raises(QuizError) as error:
        load_quiz(path)
    assert str(error.value) == (
        "quizzes/01_attention_basics.json: not valid JSON at line 1, column 46: Invalid \\escape. "
        'In JSON a backslash starts an escape: write LaTeX commands with two, as in "$\\\\sqrt{d_k}$".')


def test_a_key_given_twice_is_refused(quizzes):
    path = quizzes / "01_attention_basics.json"
    text = json.dumps(sample(), indent=2).replace('"answer": 1,', '"answer": 1, "answer": 2,', 1)
    path.write_text(text)
    with pytest.raises(QuizError) as error:
        load_quiz(path)
    assert str(error.value) == ("quizzes/01_attention_basics.json, question 1 ('scale-factor'): "
                                '"answer" is given more than once; JSON keeps only the last, so '
                                "remove the others.")


def test_a_missing_file_is_one_line(quizzes):
    with pytest.raises(QuizError, match=r"^quizzes/09_none\.json: no such file\.$"):
        load_quiz(quizzes / "09_none.json")


# --- the JSON Schema ------------------------------------------------------------------------------

def _readme_examples() -> list:
    """Every ```json block of quizzes/README.md, as a whole quiz (a lone question is wrapped)."""
    text = (REPO / "quizzes" / "README.md").read_text(encoding="utf-8")
    quizzes = []
    for block in re.findall(r"```json\n(.*?)```", text, flags=re.S):
        data = json.loads(block)
        if "questions" not in data:
            data = {"module": "01_example", "title": "Example", "questions": [data]}
        quizzes.append(data)
    return quizzes


def _repo_quiz_files() -> list:
    return sorted((REPO / "quizzes").glob("*.json"))


def test_the_schema_is_valid_and_accepts_every_valid_quiz():
    import jsonschema

    validator = jsonschema.Draft202012Validator(QUIZ_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(QUIZ_SCHEMA)
    valid = [sample(), *_readme_examples()]
    valid += [json.loads(path.read_text(encoding="utf-8")) for path in _repo_quiz_files()]
    for data in valid:
        parse_quiz(data)
        assert not list(validator.iter_errors(data)), data.get("module")


@pytest.mark.parametrize("rule", ["unknown-top-key", "typo-key", "key-of-another-type", "one-choice",
                                  "missing-tolerance", "negative-tolerance", "multiple-answer-empty",
                                  "bad-id", "bad-type", "single-answer-bool", "deep-dive-not-bool",
                                  "unchecked-choices-in-a-single-check", "unchecked-choices-not-an-object"])
def test_the_schema_refuses_what_it_can_express(rule):
    import jsonschema

    data = changed(RULES[rule][0])
    assert list(jsonschema.Draft202012Validator(QUIZ_SCHEMA).iter_errors(data)), rule
    problems(data)


@pytest.mark.parametrize("rule", ["single-answer-out-of-range", "multiple-answer-out-of-range",
                                  "duplicate-id", "tab-from-latex", "multiple-check-leaves-a-choice",
                                  "multiple-check-decides-and-gives-up"])
def test_only_the_validator_knows_the_extra_rules(rule):
    import jsonschema

    data = changed(RULES[rule][0])
    assert not list(jsonschema.Draft202012Validator(QUIZ_SCHEMA).iter_errors(data)), rule
    assert problems(data) == [RULES[rule][1]]


def test_the_readme_shows_every_question_type_and_its_examples_are_valid():
    types = {q["type"] for data in _readme_examples() for q in data["questions"]}
    assert types == {"single", "multiple", "numeric"}


# --- grading --------------------------------------------------------------------------------------

@pytest.fixture
def qs():
    return parse_quiz(sample()).questions


def test_single_choice_grading(qs):
    single = qs[0]
    explanation = SAMPLE["questions"][0]["explanation"]
    assert single.grade(1) == Feedback(True, "Right! The answer is B: To keep the softmax from "
                                             f"saturating\n{explanation}")
    assert single.grade(0) == Feedback(False, "Not quite: you chose A. The answer is B: To keep the "
                                              f"softmax from saturating\n{explanation}")


def test_multiple_choice_grading_names_what_was_missed_and_what_was_wrong(qs):
    multiple = qs[1]
    tail = "The answers are A and C.\nSoftmax gives positive numbers that sum to 1."
    assert multiple.grade([2, 0]) == Feedback(True, f"Right! {tail}")
    assert multiple.grade(i for i in (0, 2)) == Feedback(True, f"Right! {tail}")
    assert multiple.grade({0}) == Feedback(False, f"Not quite: you missed C. {tail}")
    assert multiple.grade([0, 1, 2]) == Feedback(False, f"Not quite: B is not right. {tail}")
    assert multiple.grade([1]) == Feedback(False, f"Not quite: you missed A and C, and B is not right. {tail}")
    assert multiple.grade([]).correct is False


def test_numeric_grading_and_the_tolerance_boundary(qs):
    numeric = qs[2]
    tail = "The answer is 786,432 parameters.\nThree 512 x 512 matrices: 3 x 262,144."
    assert numeric.grade(786432) == Feedback(True, f"Right! {tail}")
    assert numeric.grade(786432.0).correct
    assert numeric.grade(786433) == Feedback(False, f"Not quite: you answered 786,433. {tail}")
    loose = parse_quiz(changed(lambda d: d["questions"][2].update(answer=0.3, tolerance=0.1))).questions[2]
    assert loose.grade(0.4).correct and loose.grade(0.2).correct  # on the boundary: right
    assert not loose.grade(0.4001).correct and not loose.grade(0.1999).correct
    assert loose.grade(0.41).message.startswith(
        "Not quite: you answered 0.41. The answer is 0.3 parameters (anything within ±0.1 counts).")


@pytest.mark.parametrize("index,response", [(0, 3), (0, -1), (0, "B"), (0, True), (1, "AC"),
                                            (1, [0, 5]), (1, 2), (2, "786432"), (2, float("inf")),
                                            (2, False)])
def test_grade_refuses_responses_of_the_wrong_kind(qs, index, response):
    with pytest.raises(ValueError, match=f"Question '{qs[index].id}' takes"):
        qs[index].grade(response)


@pytest.mark.parametrize("value,text", [(786432, "786,432"), (25829888.0, "25,829,888"), (0.125, "0.125"),
                                        (1e-5, "1e-05"), (-3, "-3")])
def test_format_number(value, text):
    assert format_number(value) == text


# --- typed answers --------------------------------------------------------------------------------

@pytest.mark.parametrize("index,text,expected", [
    (0, "b", 1), (0, " B ", 1), (0, "a", 0),
    (1, "A,C", (0, 2)), (1, "a c", (0, 2)), (1, "AC", (0, 2)), (1, "c, a", (0, 2)), (1, "b", (1,)),
    (1, "aa", (0,)),
    (2, "1e-5", 1e-5), (2, "-3", -3), (2, "25_829_888", 25829888), (2, "25,829,888", 25829888),
    (2, "786432", 786432), (2, "0.125", 0.125), (2, ".5", 0.5), (2, "+2", 2), (2, "1,000.5", 1000.5),
    (2, "786432 parameters", 786432), (2, "\u22123", -3),
])
def test_parse_response_accepts(qs, index, text, expected):
    value = parse_response(qs[index], text)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("index,text,message", [
    (0, "d", "There is no choice D: type one letter, A to C."),
    (0, "1", "Type the letter of your choice, A to C, not its number."),
    (0, "A,C", "Type one letter, A to C."),
    (0, "", "Type one letter, A to C."),
    (1, "A,D", "There is no choice D: the choices are A to C."),
    (1, "0,2", "Type the letters of every answer that applies, such as A,C (the choices are A to C)."),
    (2, "12,34", None), (2, "1,2345", None), (2, "0,5", None), (2, "2_5829_888", None),
    (2, "25,829_888", None), (2, "nan", None), (2, "inf", None), (2, "0x10", None), (2, "3/4", None),
    (2, "1 000", None), (2, "e5", None), (2, "", None), (2, "1e999", "1e999 is too large; type a finite number."),
])
def test_parse_response_refuses_and_says_what_to_type(qs, index, text, message):
    with pytest.raises(ValueError) as error:
        parse_response(qs[index], text)
    if message is None:
        advice = ("Type a number, such as 42, -3, 0.125, 1e-5 or 25,829,888 (a point for decimals; "
                  "commas only between groups of three digits)")
        message = f"{advice}; got '{text}'." if text else f"{advice}."
    assert str(error.value) == message


def test_two_choices_read_a_or_b():
    quiz = parse_quiz(changed(lambda d: d["questions"][0].update(choices=["x", "y"], answer=0)))
    with pytest.raises(ValueError, match=r"^Type one letter, A or B\.$"):
        parse_response(quiz.questions[0], "xy")


# --- plain text -----------------------------------------------------------------------------------

def test_quiz_text_lists_the_questions_without_answers():
    assert quiz_text(parse_quiz(sample())) == (
        "Quiz: Attention basics (3 questions)\n"
        "Five minutes on scores and softmax.\n"
        "\n"
        "1. Why are the scores divided by $\\sqrt{d_k}$?\n"
        "   A. To save memory\n"
        "   B. To keep the softmax from saturating\n"
        "   C. To make them positive\n"
        "\n"
        "2. Which hold for every row of weights? (choose all that apply)\n"
        "   A. It sums to 1\n"
        "   B. It can hold negative numbers\n"
        "   C. Every weight is >= 0\n"
        "\n"
        "3. How many weights do Q, K and V hold? (a number; unit: parameters)")


# --- the terminal runner --------------------------------------------------------------------------

class Script:
    """input_fn that answers from a list, records the prompts, and then raises `end`."""

    def __init__(self, *answers, end=EOFError):
        self.answers, self.prompts, self.end = list(answers), [], end

    def __call__(self, prompt):
        self.prompts.append(prompt)
        if not self.answers:
            raise self.end()
        return self.answers.pop(0)


def run(*answers, end=EOFError, width=80, data=None):
    lines = []
    script = Script(*answers, end=end)
    score = run_terminal_quiz(parse_quiz(data or sample()), input_fn=script,
                              print_fn=lambda *a: lines.append(" ".join(map(str, a))), width=width)
    return score, lines, script


HEADER = [
    "Attention basics",
    "================",
    "Five minutes on scores and softmax.",
    "Answer with a letter (B), letters (A,C) or a number, then press Enter.",
    "A wrong answer gets a hint and a second try; then you see the answer.",
    "Your score counts first tries. s or an empty line skips; q quits.",
]


def test_the_runner_hints_after_a_first_wrong_try_and_answers_after_a_second():
    score, lines, script = run("x", "a", "b", "A", "c", "", width=96)
    assert score == Score(right=0, answered=2, total=3, skipped=1)
    assert lines == HEADER + [
        "",
        "Question 1 of 3",
        "Why are the scores divided by √dₖ?",
        "  A. To save memory",
        "  B. To keep the softmax from saturating",
        "  C. To make them positive",
        "There is no choice X: type one letter, A to C.",
        "Not quite: that is not right yet. Try once more; a second wrong answer shows the right one.",
        "Hint: Think about the variance of a dot product.",
        "Right! The answer is B: To keep the softmax from saturating",
        "Dot products of random vectors grow like √dₖ.",
        "",
        "Question 2 of 3",
        "Which hold for every row of weights?",
        "  A. It sums to 1",
        "  B. It can hold negative numbers",
        "  C. Every weight is >= 0",
        "(choose all that apply, e.g. A,C)",
        "Not quite: that is not right yet. Try once more; a second wrong answer shows the right one.",
        "Not quite: you missed A. The answers are A and C.",
        "Softmax gives positive numbers that sum to 1.",
        "",
        "Question 3 of 3",
        "How many weights do Q, K and V hold?",
        "(a number; unit: parameters)",
        "Skipped.",
        "",
        "Score: 0 of 3 right on the first try, 2 answered, 1 skipped.",
    ]
    assert script.prompts == ["Your answer: "] * 6


def test_a_first_wrong_try_shows_neither_the_answer_nor_the_explanation():
    _, lines, _ = run("a", "q")
    shown = "\n".join(lines[len(HEADER):])
    assert "To keep the softmax" not in shown.split("Question 1 of 3")[1].split("C. To make")[1]
    assert "The answer" not in shown and "Dot products" not in shown


def test_all_right_scores_without_notes():
    score, lines, _ = run("B", "a,c", "786_432 parameters")
    assert score == Score(3, 3, 3) and score.not_reached == 0
    assert lines[-1] == "Score: 3 of 3 right on the first try, 3 answered, 0 skipped."


def test_a_right_second_try_does_not_count_and_a_skip_after_a_wrong_try_is_answered():
    score, lines, _ = run("s", "a", "", "1", "786432")
    assert score == Score(0, 2, 3, 1)
    assert "Not quite: you answered 1." not in lines  # a first wrong try: no verdict with the answer
    assert "Right! The answer is 786,432 parameters." in lines
    assert lines[-1] == "Score: 0 of 3 right on the first try, 2 answered, 1 skipped."


def test_a_wrong_numeric_answer_twice_shows_the_answer():
    score, lines, _ = run("s", "s", "25_829_888", "1")
    assert score == Score(0, 1, 3, 2)
    assert "Not quite: you answered 25,829,888. The answer is 786,432 parameters." not in lines
    assert "Not quite: you answered 1. The answer is 786,432 parameters." in lines
    assert lines[-1] == "Score: 0 of 3 right on the first try, 1 answered, 2 skipped."


@pytest.mark.parametrize("stop", ["q", "quit", "Q"])
def test_q_quits_with_the_score_so_far(stop):
    score, lines, script = run("b", stop, "never read")
    assert score == Score(1, 1, 3)
    assert lines[-3:] == ["Stopped at question 2 of 3.", "",
                          "Score: 1 of 3 right on the first try, 1 answered, 0 skipped, 2 not reached."]
    assert script.answers == ["never read"]


@pytest.mark.parametrize("end", [EOFError, KeyboardInterrupt])
def test_end_of_input_and_ctrl_c_quit_cleanly(end):
    score, lines, _ = run("b", "s", end=end)
    assert score == Score(1, 1, 3, 1) and score.not_reached == 1
    assert lines[-4:] == ["", "Stopped at question 3 of 3.", "",
                          "Score: 1 of 3 right on the first try, 1 answered, 1 skipped, 1 not reached."]


def test_text_is_wrapped_to_the_width(monkeypatch):
    _, lines, _ = run("s", "s", "s", width=30)
    assert max(map(len, lines)) <= 30
    assert "  C. To make them positive" in lines
    assert "  B. To keep the softmax from" in lines and "     saturating" in lines  # hanging indent
    monkeypatch.setenv("COLUMNS", "40")  # the default width is the terminal's
    _, lines, _ = run("s", "s", "s", width=None)
    assert max(map(len, lines)) <= 40


def test_the_runner_takes_a_path_and_a_bad_file_raises_before_asking(quizzes):
    path = quizzes / "01_attention_basics.json"
    path.write_text(json.dumps(sample()))
    asked = Script("b")
    assert run_terminal_quiz(path, input_fn=asked, print_fn=lambda *a: None).right == 1
    path.write_text("{}")
    asked = Script()
    with pytest.raises(QuizError):
        run_terminal_quiz(str(path), input_fn=asked, print_fn=lambda *a: None)
    assert asked.prompts == []


def test_quiz_check_command(quizzes, capsys):
    from labkit.quiz.terminal import _main

    good, bad = quizzes / "01_attention_basics.json", quizzes / "02_qkv.json"
    good.write_text(json.dumps(sample()))
    bad.write_text(json.dumps(sample()))
    assert _main(["check", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: OK, 3 questions.\n"
    assert _main(["check", str(good), str(bad)]) == 2
    assert capsys.readouterr().err.startswith('quizzes/02_qkv.json: "module" is "01_attention_basics"')
    assert _main(["schema"]) == 0 and json.loads(capsys.readouterr().out) == QUIZ_SCHEMA
    assert _main([]) == 2


@pytest.mark.parametrize("tex, shown", [
    ("$\\theta_i = b^{-2i/d}$", "θᵢ = b⁻²ⁱᐟᵈ"),
    ("$\\mathrm{softmax}(Q K^T / \\sqrt{d})\\, V$", "softmax(Q Kᵀ / √d) V"),
    ("$\\frac{b n (n+1)/2}{b n} = 500.5$", "(b n (n+1)/2)/(b n) = 500.5"),
    ("$4 \\times 262{,}144 \\approx 10^{6}$", "4 × 262,144 ≈ 10⁶"),
    ("$e^{s - m_{new}}$", "e^(s - m_(new))"),
    ("call `rotate_half(x)` twice", "call rotate_half(x) twice"),
    ("$\\ell \\leftarrow 3 e^{-3}$, $-\\infty \\le s$", "ℓ ← 3 e⁻³, -∞ ≤ s"),
])
def test_plain_text_writes_formulas_in_unicode_and_code_without_backticks(tex, shown):
    from labkit.quiz.markdown import plain_text

    assert plain_text(tex) == shown


@pytest.mark.parametrize("path", sorted((REPO / "quizzes").glob("[0-9][0-9]_*.json")), ids=lambda p: p.stem)
def test_the_terminal_quiz_prints_no_latex_and_no_backtick(path):
    """Every question, choice, hint and explanation of every quiz, as the terminal shows them: each
    question is answered wrong twice (its hint, then its answer and explanation)."""
    quiz = load_quiz(path)
    answers = []
    for question in quiz.questions:
        if question.type == "numeric":
            answers += [str(question.answer + 10 * (question.tolerance or 0) + 1e6)] * 2
        else:
            right = [question.answer] if question.type == "single" else list(question.answer)
            others = [i for i in range(len(question.choices)) if i not in right]
            wrong = right[:1] if question.type == "multiple" and len(right) > 1 else others[:1]
            answers += [",".join(chr(ord("A") + i) for i in wrong)] * 2
    lines = []
    score = run_terminal_quiz(quiz, input_fn=Script(*answers), print_fn=lambda *a: lines.append(" ".join(map(str, a))))
    assert score.answered == len(quiz.questions) and score.right == 0
    printed = "\n".join(lines)
    assert "$" not in printed and "`" not in printed and "**" not in printed and "](" not in printed
    assert not re.search(r"(^|\s)\*\S", printed), "an italic's asterisk was left as it is"
    assert not re.search(r"\\[A-Za-z]+", printed), "a TeX command was left as it is"
    assert "\x1b" not in printed, "styles only on a terminal that shows them"


def test_tries_hint_first_answer_second_and_only_the_first_try_counts():
    from labkit.quiz import Tries
    from labkit.quiz.model import SEEN

    single = parse_quiz(sample()).questions[0]
    tries = Tries(single)
    first = tries.submit(0)
    assert (first.correct, first.revealed) == (False, False) and tries.first_right is False
    assert "Hint: Think about the variance" in first.message
    assert single.answer_text() not in first.message and single.explanation not in first.message
    second = tries.submit(0)
    assert second.revealed and single.answer_text() in second.message and single.explanation in second.message
    again = tries.submit(1)  # the answer it was just shown: right, but it changes nothing
    assert again.correct and SEEN in again.message and tries.first_right is False and tries.count == 2
    right_away = Tries(single)
    assert right_away.submit(1).revealed and right_away.first_right is True
    assert right_away.submit(0).message.startswith(f"Not quite: you chose A. {single.answer_text()} {SEEN}")
    assert right_away.first_right is True
    with pytest.raises(ValueError):
        Tries(single).submit(7)  # a response of the wrong kind counts nothing


# --- routes ---------------------------------------------------------------------------------------

def printer(lines: list):
    """A print_fn that keeps each printed line."""
    return lambda *args: lines.append(" ".join(map(str, args)))


def deep_sample() -> dict:
    """The sample with its multiple-choice question on a deep dive."""
    return changed(lambda d: d["questions"][1].update(deep_dive=True))


def test_the_express_route_leaves_out_the_deep_dive_questions():
    quiz = parse_quiz(deep_sample())
    assert [q.deep_dive for q in quiz.questions] == [False, True, False]
    assert quiz.on_route("full") is quiz
    assert [q.id for q in quiz.on_route("express").questions] == ["scale-factor", "param-count"]
    assert not parse_quiz(sample()).questions[1].deep_dive  # the default: core
    with pytest.raises(ValueError, match="route must be 'full' or 'express'; got 'fast'"):
        quiz.on_route("fast")


def test_the_terminal_asks_the_routes_questions_and_marks_the_deep_dives():
    lines = []
    score = run_terminal_quiz(parse_quiz(deep_sample()), input_fn=Script("b", "786432"),
                              print_fn=printer(lines), route="express")
    assert score == Score(2, 2, 2)
    assert lines[3] == "Express route: the 2 questions on the core; the 1 on deep dives are left out."
    assert "Question 2 of 2" in lines and "Which hold for every row of weights?" not in lines
    lines = []
    run_terminal_quiz(parse_quiz(deep_sample()), input_fn=Script("s", "s", "s"),
                      print_fn=printer(lines))
    assert "Question 2 of 3 (deep dive)" in lines and "Question 1 of 3" in lines
    assert not any(line.startswith("Express route") for line in lines)
    lines = []
    run_terminal_quiz(parse_quiz(sample()), input_fn=Script(), print_fn=printer(lines), route="express")
    assert "Express route: all 3 questions are on the core." in lines
    with pytest.raises(ValueError, match="route must be"):
        run_terminal_quiz(parse_quiz(sample()), input_fn=Script(), print_fn=printer(lines), route="slow")


# --- Markdown in the terminal ---------------------------------------------------------------------

MARKED = changed(lambda d: d["questions"][0].update(
    question="Which keys may the **first** query see, in *bottom-right* order, with `causal_mask(3, 8)` "
             "(see the [glossary](../docs/glossary.md)) and d_k = 64?"))
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def marked_lines(styles, width=200):
    lines = []
    run_terminal_quiz(parse_quiz(MARKED), input_fn=Script(), print_fn=printer(lines), styles=styles, width=width)
    return lines


def test_markdown_is_plain_text_where_styles_are_not_shown():
    assert ("Which keys may the first query see, in bottom-right order, with causal_mask(3, 8) (see the "
            "glossary (../docs/glossary.md)) and d_k = 64?") in marked_lines(styles=False)


def test_markdown_is_drawn_in_ansi_styles_on_a_terminal():
    lines = marked_lines(styles=True)
    assert ("Which keys may the \x1b[1mfirst\x1b[22m query see, in \x1b[3mbottom-right\x1b[23m order, with "
            "\x1b[36mcausal_mask(3, 8)\x1b[39m (see the \x1b[4mglossary\x1b[24m (../docs/glossary.md)) and "
            "d_k = 64?") in lines
    assert [ANSI.sub("", line) for line in lines] == marked_lines(styles=False)


def test_styled_text_wraps_by_what_shows_and_never_leaves_a_style_open():
    plain, styled = marked_lines(styles=False, width=24), marked_lines(styles=True, width=24)
    assert [ANSI.sub("", line) for line in styled] == plain and max(map(len, plain)) <= 24
    for line in styled:
        codes = ANSI.findall(line)
        opened = [code for code in codes if code in ("\x1b[1m", "\x1b[3m", "\x1b[36m", "\x1b[4m")]
        assert len(opened) * 2 == len(codes), line  # every style a line opens, it closes
    assert "\x1b[4mglossary\x1b[24m" in "".join(styled)
    assert not any(re.match(r"\x1b\[[0-9;]*m\s", line) for line in styled), "an indent is never styled"


@pytest.mark.parametrize("tty, environment, shown", [
    (True, {}, True), (True, {"NO_COLOR": "1"}, False), (True, {"NO_COLOR": ""}, True),
    (True, {"TERM": "dumb"}, False), (False, {}, False)])
def test_styles_only_on_a_terminal_that_shows_them(monkeypatch, tty, environment, shown):
    import io
    import sys

    from labkit.quiz.markdown import terminal_shows_styles

    class Stream(io.StringIO):
        def isatty(self):
            return tty

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(sys, "platform", "linux")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert terminal_shows_styles(Stream()) is shown
    monkeypatch.setattr(sys, "stdout", Stream())  # run_terminal_quiz decides from standard output
    lines = []
    run_terminal_quiz(parse_quiz(MARKED), input_fn=Script(), print_fn=printer(lines), width=200)
    assert any("\x1b[1mfirst" in line for line in lines) is shown


@pytest.mark.parametrize("text, shown", [
    ("snake_case_name and d_k and exp2_kv_retrieval", "snake_case_name and d_k and exp2_kv_retrieval"),
    ("a _word_ in italics", "a word in italics"),
    ("2 * 3 * 4 and H*D", "2 * 3 * 4 and H*D"),
    ("**bold with `x ** 2` and *it* inside**", "bold with x ** 2 and it inside"),
    ("`$x$` is code, $x^2$ is math, \\$5 is money", "$x$ is code, x² is math, $5 is money"),
    ("[https://arxiv.org](https://arxiv.org)", "https://arxiv.org"),
])
def test_markdown_reads_what_the_widget_renders_and_leaves_the_rest(text, shown):
    from labkit.quiz.markdown import plain_text

    assert plain_text(text) == shown


def test_make_quiz_takes_the_route(quizzes, monkeypatch, capsys):
    """`make quiz M=01 ROUTE=express` runs `python -m labkit.course quiz 01 --route express`; any other
    route is a usage error, exit 2, naming the routes."""
    import io
    import sys

    from labkit.course.cli import main

    (quizzes / "01_attention_basics.json").write_text(json.dumps(deep_sample()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO("b\n786432\n"))
    assert main(["quiz", "01", "--route", "express"]) == 0
    out = capsys.readouterr().out
    assert "the 1 on deep dives are left out" in out and "Question 2 of 2" in out
    assert out.rstrip().endswith("Score: 2 of 2 right on the first try, 2 answered, 0 skipped.")
    with pytest.raises(SystemExit) as stopped:
        main(["quiz", "01", "--route", "fast"])
    error = capsys.readouterr().err  # argparse's words, which vary a little with the Python version
    assert stopped.value.code == 2 and re.search(r"--route: invalid choice: 'fast' \(choose from '?full'?, "
                                                  r"'?express'?\)", error)
