"""Hostile quiz files: whatever a file holds, loading it gives a Quiz or one QuizError whose lines
can be printed, never a RecursionError, a UnicodeEncodeError or another error from deep inside.
The same holds at the three doors: `load_quiz`, `python -m labkit.quiz check` and `make quiz`
(labkit.course.cli's `quiz`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.course.cli import main as course_main
from labkit.quiz import Quiz, QuizError, load_quiz, parse_quiz
from labkit.quiz.format import MAX_FILE_BYTES

REPO = Path(__file__).resolve().parents[2]
STEM = "01_attention_basics"
VALID = {
    "module": STEM,
    "title": "Attention basics",
    "questions": [
        {"id": "sum", "type": "single", "question": "A row of weights sums to?", "choices": ["0", "1"],
         "answer": 1, "explanation": "Softmax.", "check": {"choices": {"B": "True", "A": "False"}}},
        {"id": "rows", "type": "multiple", "question": "A causal row?", "choices": ["sums to 1", "is negative"],
         "answer": [0], "explanation": "Softmax.", "unchecked": "a reason"},
        {"id": "count", "type": "numeric", "question": "T = 6?", "answer": 21, "tolerance": 0,
         "explanation": "6 * 7 / 2.", "check": {"code": ["n = 6"], "value": "n * (n + 1) // 2"}},
    ],
}


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# Each: (what the file holds, words the one problem line must contain).
HOSTILE_TEXT = {
    "nested-100000-deep": (deep(100_000), "nested too deep"),
    "nested-deep-in-a-hint": (json.dumps(VALID).replace('"Softmax."', deep(50_000), 1), "nested too deep"),
    "lone-surrogate-in-text": (json.dumps(VALID).replace("A row of weights", "\\ud800 row"), "lone surrogate"),
    "lone-surrogate-in-a-key": (json.dumps(VALID).replace('"hint"', '"x"').replace('"title"', '"\\udcff"', 1),
                                "unknown key"),
    "nan": (json.dumps(VALID).replace("21", "NaN"), "NaN"),
    "infinity": (json.dumps(VALID).replace('"tolerance": 0', '"tolerance": Infinity'), "Infinity"),
    "minus-infinity": (json.dumps(VALID).replace("21", "-Infinity"), "-Infinity"),
    "huge-integer": (json.dumps(VALID).replace("21", "1" * 5000), "cannot be read"),
    "number-past-float": (json.dumps(VALID).replace("21", "1e400"), "finite number"),
    "duplicate-key": (json.dumps(VALID).replace('"tolerance": 0', '"tolerance": 0, "tolerance": 1'),
                      "more than once"),
    "escape-sequence": (json.dumps(VALID).replace("Softmax.", "\\u001b[2J cleared"), "control character"),
    "top-level-list": ("[]", "one JSON object"),
    "empty-file": ("", "not valid JSON"),
    "check-not-python": (json.dumps(VALID).replace("n * (n + 1) // 2", "n *"), "valid Python"),
    "check-nested-too-deep": (json.dumps(VALID).replace("n * (n + 1) // 2", "-" * 100_000 + "1"),
                              "characters of code"),
    "check-deep-but-short": (json.dumps(VALID).replace("n * (n + 1) // 2", "(" * 300 + "1" + ")" * 300),
                             "valid Python"),
    "check-letter-past-the-choices": (json.dumps(VALID).replace('"A": "False"', '"C": "False"'), "letters"),
    "check-without-the-right-choice": (json.dumps(VALID).replace('"B": "True", ', ""), "the right choice"),
    "check-not-an-object": (json.dumps(VALID).replace('{"code": ["n = 6"], "value": "n * (n + 1) // 2"}', '"21"'),
                            "must be an object"),
    "check-without-value": (json.dumps(VALID).replace(', "value": "n * (n + 1) // 2"', ""), "no \"value\""),
    "check-code-not-lines": (json.dumps(VALID).replace('["n = 6"]', "[6]"), "list of strings"),
    "check-and-unchecked": (json.dumps(VALID).replace('"unchecked": "a reason"',
                                                      '"unchecked": "a reason", "check": {"choices": {"A": "True"}}'),
                            "both"),
    "check-with-a-surrogate": (json.dumps(VALID).replace('"n = 6"', '"n = 6  # \\udc80"'), "lone surrogate"),
}


def write(folder: Path, text: str | bytes, name: str = f"{STEM}.json") -> Path:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(QuizError) as caught:
        load_quiz(path)
    for line in caught.value.problems:
        line.encode("utf-8")  # printable: no lone surrogate left in a message
    return list(caught.value.problems)


def test_the_valid_sample_loads():
    quiz = parse_quiz(VALID, stem=STEM)
    assert quiz.questions[2].check.value == "n * (n + 1) // 2"
    assert quiz.questions[1].unchecked == "a reason"


@pytest.mark.parametrize("case", HOSTILE_TEXT, ids=str)
def test_each_hostile_file_is_one_named_quiz_error(case, tmp_path):
    text, words = HOSTILE_TEXT[case]
    problems = problems_of(write(tmp_path, text))
    assert any(words in line for line in problems), problems


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    path = write(tmp_path, json.dumps(VALID) + " " * MAX_FILE_BYTES)
    assert "is at most" in problems_of(path)[0]


def test_a_bom_is_read_and_utf16_is_named(tmp_path):
    assert isinstance(load_quiz(write(tmp_path, b"\xef\xbb\xbf" + json.dumps(VALID).encode())), Quiz)
    assert "UTF-8" in problems_of(write(tmp_path, json.dumps(VALID).encode("utf-16")))[0]


def test_a_folder_or_an_undecodable_name_is_named(tmp_path):
    (tmp_path / "folder.json").mkdir()
    assert "cannot be read" in problems_of(tmp_path / "folder.json")[0]
    odd = Path(str(tmp_path / "\udcff.json"))  # how Python spells a file name that is not UTF-8
    assert "no such file" in problems_of(odd)[0]


def test_the_authors_command_names_the_problem_and_exits_2(tmp_path):
    for case in ("nested-100000-deep", "lone-surrogate-in-text"):
        path = write(tmp_path, HOSTILE_TEXT[case][0])
        done = subprocess.run([sys.executable, "-m", "labkit.quiz", "check", str(path)], capture_output=True,
                              cwd=REPO, timeout=120)
        assert done.returncode == 2, done.stderr
        assert HOSTILE_TEXT[case][1].encode() in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("case", ["nested-100000-deep", "lone-surrogate-in-text", "nan"])
def test_make_quiz_names_the_problem_and_exits_2(case, tmp_path, monkeypatch, capsys):
    (tmp_path / "quizzes").mkdir()
    write(tmp_path / "quizzes", HOSTILE_TEXT[case][0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(tmp_path))
    assert course_main(["quiz", "1"]) == 2
    err = capsys.readouterr().err
    assert HOSTILE_TEXT[case][1] in err and "Traceback" not in err
    err.encode("utf-8")


# --- drawn: any JSON document is a Quiz or a QuizError --------------------------------------------

SCALARS = (st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=True)
           | st.text(max_size=12) | st.sampled_from(["\ud800", "\x1b", "\t", "A", STEM, "single", "numeric"]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8) | st.sampled_from(list(VALID["questions"][2]) + ["choices"]),
                                      inner, max_size=5), max_leaves=30)


def _replace(data, path: list[int], value):
    """`data` with the node reached by walking `path` (child indices, taken modulo) set to value."""
    if not path or not isinstance(data, (dict, list)) or not data:
        return value
    if isinstance(data, dict):
        keys = list(data)
        key = keys[path[0] % len(keys)]
        return {**data, key: _replace(data[key], path[1:], value)}
    index = path[0] % len(data)
    return [*data[:index], _replace(data[index], path[1:], value), *data[index + 1:]]


def _quiz_or_error(data) -> None:
    try:
        result = parse_quiz(data, stem=STEM)
    except QuizError as error:
        "\n".join(error.problems).encode("utf-8")
        assert error.problems
    else:
        assert isinstance(result, Quiz)


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_any_json_document_is_a_quiz_or_a_quiz_error(data):
    _quiz_or_error(data)


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 20), max_size=5), JSON)
def test_a_valid_quiz_with_any_part_replaced_is_a_quiz_or_a_quiz_error(path, value):
    _quiz_or_error(_replace(VALID, path, value))


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 20), max_size=5), JSON)
def test_a_hostile_file_is_a_quiz_or_a_quiz_error(tmp_path_factory, path, value):
    text = json.dumps(_replace(VALID, path, value), ensure_ascii=True)  # NaN and Infinity written as Python does
    file = write(tmp_path_factory.mktemp("quiz"), text)
    try:
        load_quiz(file)
    except QuizError as error:
        "\n".join(error.problems).encode("utf-8")
