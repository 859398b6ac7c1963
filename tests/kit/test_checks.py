"""check(): right or wrong, and exactly why, for every kind of answer; the likely mistake and the
check's hint, read from its module's texts by key; learner errors reported, never raised; every
hostile answer gets a verdict; strict mode raises; the author's own mistakes raise at once.

Each notebook's checks, fed typical wrong answers, are tested in tests/course/test_check_hints.py."""

import json
import math

import numpy as np
import pytest
import torch
from kernel_cells import run_cells

from labkit.checks import STRICT_ENV, CheckResult, CheckTextError, CheckUsageError, ExerciseCheckFailed, check
from labkit.checks.diagnosis import KINDS, likely_mistake
from labkit.checks.texts import load_texts, texts_for
from labkit.syllabus import ROOT_ENV


@pytest.fixture(autouse=True)
def lenient(monkeypatch):
    """Strict mode off unless a test turns it on (the suite itself may run with it on)."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def why(result):
    """The reason after the dash of a failed check."""
    assert not result.passed
    prefix = f"✗ {result.name}: not yet — "
    assert result.message.startswith(prefix)
    return result.message[len(prefix):]


# ------------------------------------------------------------------------------ the result


def test_a_right_answer_prints_one_line_and_returns_a_true_result(capsys):
    result = check("softmax", torch.tensor([0.5, 0.5]), torch.tensor([0.5, 0.5]))
    assert capsys.readouterr().out == "✓ softmax: right.\n"
    assert isinstance(result, CheckResult) and result and result.passed
    assert (result.name, result.message, repr(result)) == ("softmax", "✓ softmax: right.", "✓ softmax: right.")


def test_a_wrong_answer_prints_why_and_returns_a_false_result(capsys):
    result = check("scale", 0.41, 0.29)
    assert capsys.readouterr().out == "✗ scale: not yet — it is 0.41: not right\n"
    assert not result and result.passed is False


def test_pretty_repr_is_the_message():
    from IPython.lib.pretty import pretty

    assert pretty(check("x", 1, 2)) == "✗ x: not yet — it is 1: not right"


# ---------------------------------------------------------------------------------- tensors


def test_tensor_values_report_the_largest_difference():
    got = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.41], [0.0, 0.0, 0.0, 0.35]])
    expected = got.clone()
    expected[1, 3], expected[2, 3] = 0.29, 0.34
    assert why(check("w", got, expected)) == (
        "2 of 12 values are outside the tolerance; the largest difference, 0.12, is at [1, 3]")


def test_tensor_shape_mismatch_names_the_likely_mistake():
    transposed = "Likely: it is the right result with its axes in another order"
    assert check("w", torch.ones(3, 4), torch.ones(4, 3)).message == (
        f"✗ w: not yet — it has shape [3, 4], expected [4, 3]. {transposed} (a transpose or a view too many or too "
        f"few?)")
    assert transposed in check("w", torch.ones(2, 3, 4), torch.ones(2, 4, 3)).message
    assert transposed in check("w", torch.ones(2, 5, 4, 8), torch.ones(2, 4, 5, 8)).message  # heads, tokens
    assert check("w", torch.ones(3, 4), torch.ones(3, 1, 4)).message == (
        "✗ w: not yet — it has shape [3, 4], expected [3, 1, 4]. Likely: it is the right values with an axis of "
        "size 1 too many or too few")
    assert check("w", torch.ones(12), torch.ones(3, 4)).message == "✗ w: not yet — it has shape [12], expected [3, 4]"


def test_dtype_kinds_must_match():
    assert why(check("w", torch.ones(2, dtype=torch.long), torch.ones(2))) == (
        "its dtype is torch.int64 (integer), expected floating point like torch.float32")
    assert why(check("mask", torch.ones(2), torch.ones(2, dtype=torch.bool))) == (
        "its dtype is torch.float32 (floating point), expected boolean like torch.bool")
    assert check("precision", torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float16))


def test_nan_and_inf_where_none_are_expected():
    got = torch.zeros(3, 4)
    got[0, 2] = got[1, 0] = got[2, 3] = float("nan")
    assert why(check("w", got, torch.zeros(3, 4))).startswith(
        "it contains NaN at 3 positions, e.g. [0, 2] (NaN comes from 0/0, inf - inf, or a softmax over "
        "a row that is all -inf)")
    assert check("w", torch.tensor([1.0, float("inf")]), torch.tensor([1.0, 2.0])).message == (
        "✗ w: not yet — it contains inf at 1 position, e.g. [1]. Likely: it is NaN or inf where the right result "
        "is finite")


def test_expected_nan_or_inf_must_be_there_too():
    masked = torch.tensor([[0.5, float("-inf")], [0.1, 0.2]])
    assert check("scores", masked.clone(), masked)
    assert why(check("scores", torch.tensor([[0.5, 0.0], [0.1, 0.2]]), masked)) == (
        "expected -inf at 1 position, e.g. [0, 1], where it has 0.0")
    assert why(check("score", 0.0, -math.inf)) == "it is 0.0: not right"
    nan = torch.tensor([float("nan"), 1.0])
    assert check("nan where expected", nan.clone(), nan)


def test_tensor_against_other_types():
    assert why(check("w", np.ones((2, 3)), torch.ones(2, 3))) == (
        "it is a numpy array of shape [2, 3], float64, expected a torch.Tensor of shape [2, 3], float32 "
        "(torch.from_numpy turns an array into a tensor)")
    assert why(check("w", [1.0, 2.0], torch.ones(2))) == (
        "it is a list of 2 items, expected a torch.Tensor of shape [2], float32")
    assert why(check("w", [torch.ones(2), torch.ones(2)], torch.ones(2, 2))) == (
        "it is a list of 2 tensors, expected a torch.Tensor of shape [2, 2], float32 (torch.stack or torch.cat "
        "turns a list of tensors into one tensor)")
    assert why(check("w", 0.5, torch.ones(2))) == "it is a float (0.5), expected a torch.Tensor of shape [2], float32"
    assert why(check("w", None, torch.ones(2))) == (
        "it is None, expected a torch.Tensor of shape [2], float32 (did the function forget to return its result?)")
    assert why(check("n", torch.tensor(0.5), 0.5)) == (
        "it is a 0-d torch.Tensor (0.5), expected a float "
        "(.item() turns a one-element tensor into a Python number)")


def test_bool_and_integer_tensors_compare_exactly():
    assert why(check("mask", torch.tensor([[True, False], [True, True]]), torch.ones(2, 2, dtype=torch.bool))) == (
        "it differs at 1 of 4 positions, the first at [0, 1]")
    assert why(check("ids", torch.tensor([1, 2, 4]), torch.tensor([1, 2, 3]))) == (
        "it differs at 1 of 3 positions, the first at [2]; the largest difference is 1")
    assert check("ids", torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3]))


def test_zero_dimensional_tensors():
    assert check("sum", torch.tensor(1.0), torch.tensor(1.0))
    assert why(check("sum", torch.tensor(1.5), torch.tensor(1.0))) == "it is 1.5: not right"


def test_grad_device_and_precision_do_not_matter():
    expected = torch.tensor([0.25, 0.75])
    got = torch.tensor([0.25, 0.75], requires_grad=True) * 1.0
    assert check("w", got, expected)
    assert check("w", torch.tensor([0.25, 0.75], dtype=torch.bfloat16), expected)


# ------------------------------------------------------------------------------- tolerances


def test_tolerances_are_honoured_at_the_boundary():
    # |got - expected| <= atol + rtol * |expected|, with values exact in binary
    assert check("atol", torch.tensor([1.5]), torch.tensor([1.0]), atol=0.5, rtol=0)
    assert not check("atol", torch.tensor([1.5000001], dtype=torch.float64), torch.tensor([1.0]), atol=0.5, rtol=0)
    assert check("rtol", torch.tensor([2.5]), torch.tensor([2.0]), atol=0, rtol=0.25)
    assert not check("rtol", torch.tensor([2.5000001], dtype=torch.float64), torch.tensor([2.0]), atol=0, rtol=0.25)
    assert check("both", 2.75, 2.0, atol=0.25, rtol=0.25)
    assert not check("both", 2.7500001, 2.0, atol=0.25, rtol=0.25)
    assert check("numpy", np.array([1.5]), np.array([1.0]), atol=0.5, rtol=0)
    assert not check("numpy", np.array([1.5000001]), np.array([1.0]), atol=0.5, rtol=0)


def test_default_tolerances_forgive_float32_rounding_only():
    x = torch.randn(50, generator=torch.Generator().manual_seed(0))
    assert check("softmax", x.softmax(0), x.double().softmax(0))
    assert not check("softmax", x.softmax(0) + 1e-4, x.softmax(0))


def test_largest_difference_is_taken_among_the_values_outside_the_tolerance():
    # 1000.5 vs 1000 is within rtol=1e-3 (tolerance 1.0); 0.2 vs 0.1 is not
    got, expected = torch.tensor([1000.5, 0.2], dtype=torch.float64), torch.tensor([1000.0, 0.1], dtype=torch.float64)
    assert why(check("w", got, expected, atol=0, rtol=1e-3)) == (
        "1 of 2 values are outside the tolerance; the largest difference, 0.1, is at [1]")


# ---------------------------------------------------------------------------- numpy arrays


def test_numpy_arrays():
    assert check("a", np.arange(4.0), np.arange(4.0))
    assert why(check("a", np.arange(4.0).reshape(2, 2), np.arange(4.0))) == "it has shape [2, 2], expected [4]"
    assert why(check("a", np.arange(4), np.arange(4.0))) == (
        "its dtype is numpy int64 (integer), expected floating point like numpy float64")
    assert why(check("a", torch.arange(4.0), np.arange(4.0))) == (
        "it is a torch.Tensor of shape [4], float32, expected a numpy array of shape [4], float64 "
        "(.numpy() turns a tensor into an array)")
    assert why(check("a", np.array([0.0, 0.5]), np.array([0.0, 0.25]))) == (
        "1 of 2 values are outside the tolerance; the largest difference, 0.25, is at [1]")
    assert why(check("s", np.array(["a", "b"]), np.array(["a", "c"]))) == (
        "it differs at 1 of 2 positions, the first at [1]")


def test_numpy_scalars_count_as_python_numbers():
    assert check("x", np.float32(0.5), 0.5)
    assert check("n", np.int64(3), 3)
    assert check("b", np.bool_(True), True)


# -------------------------------------------------------------------------- python values


def test_python_floats_use_the_tolerances():
    assert check("x", 0.1 + 0.2, 0.3)
    assert check("x", 3, 3.0)  # an int where a float is expected is a number all the same
    assert why(check("x", 0.3001, 0.3)) == "it is 0.3001: not right"
    assert check("nan", math.nan, math.nan)
    assert why(check("inf", 1e308, math.inf)) == "it is 1e+308: not right"
    assert why(check("x", "0.3", 0.3)) == "it is a str ('0.3'), expected a float"


def test_ints_bools_and_strings_compare_exactly():
    assert why(check("n", 7, 8)) == "it is 7: not right"
    assert why(check("n", 1024.0, 1024)) == (
        "it is a float (1024.0), expected an int (use // or int() for a whole number)")
    assert why(check("n", True, 1)) == "it is a bool (True), expected an int"
    assert why(check("b", 1, True)) == "it is an int (1), expected a bool"
    assert why(check("b", False, True)) == "it is False: not right"
    assert why(check("s", "cat", "dog")) == "it is 'cat': not right"
    assert check("s", "dog", "dog") and check("none", None, None)
    assert why(check("none", 0, None)) == "it is an int (0), not right"


def test_lists_and_tuples_item_by_item():
    assert check("pair", (torch.ones(2), 3), [torch.ones(2), 3])  # a list or a tuple: same items
    assert why(check("pair", [1, 2, 3], [1, 2])) == "it has 3 items, expected 2"
    assert why(check("pair", [1, 2, 3], [1, 2, 4])) == "item [2]: it is 3: not right"
    assert why(check("nested", [1, [2, 3.0]], [1, [2, 3.5]])) == "item [1][1]: it is 3.0: not right"
    assert why(check("out", (torch.ones(3), torch.ones(2, 2)), (torch.ones(3), torch.ones(2, 3)))) == (
        "item [1]: it has shape [2, 2], expected [2, 3]")
    assert why(check("shape", torch.Size([2, 3]), (3, 2))) == "item [0]: it is 2: not right"
    assert why(check("pair", torch.ones(2), (1.0, 1.0))) == (
        "it is a torch.Tensor of shape [2], float32, expected a tuple of 2 items")


def test_dicts_key_by_key():
    assert check("d", {"a": 1, "b": torch.ones(2)}, {"b": torch.ones(2), "a": 1})
    assert why(check("d", {"a": 1}, {"a": 1, "b": 2})) == "it lacks the keys ['b']"
    assert why(check("d", {"a": 1, "c": 2}, {"a": 1})) == "it has extra keys ['c']"
    assert why(check("d", {"a": 1}, {"a": 2})) == "item ['a']: it is 1: not right"


def test_other_objects_compare_with_equality():
    assert check("dtype", torch.float32, torch.float32)
    assert why(check("dtype", torch.float16, torch.float32)) == "it is torch.float16: not right"


# -------------------------------------------------------------------------------- functions


def reference_scale(x, factor=2.0):
    return x * factor


def test_a_function_checked_on_cases():
    result = check("scale", lambda x, factor=2.0: x + x, reference_scale, cases=[torch.ones(2), torch.zeros(3, 3)])
    assert result


def test_the_first_failing_case_is_named_with_its_inputs():
    def learner(x, factor):
        return x * factor if x.dim() == 1 else x

    cases = [(torch.ones(3), 2.0), (torch.ones(2, 5), 3.0), (torch.ones(2, 5), 4.0)]
    assert why(check("scale", learner, reference_scale, cases=cases)) == (
        "for case 2 of 3, inputs (float32 [2, 5], 3.0): 10 of 10 values are outside the tolerance; the largest "
        "difference, 2.0, is at [0, 0]. Likely: it is one of its inputs, handed back unchanged")
    assert why(check("scale", lambda x: x, reference_scale, cases=[torch.ones(2, 5)])) == (
        "for case 1 of 1, input float32 [2, 5]: 10 of 10 values are outside the tolerance; the largest difference, "
        "1.0, is at [0, 0]. Likely: it is one of its inputs, handed back unchanged")
    assert why(check("count", lambda n: n + 1, [2, 4], cases=[1, 2])) == "for case 2 of 2, input 2: it is 3: not right"
    assert why(check("nothing", lambda: 1, [2], cases=[()])) == "for case 1 of 1, no inputs: it is 1: not right"


def test_expected_outputs_may_be_listed():
    assert check("double", lambda x: 2 * x, [2, 4, torch.tensor([6.0])], cases=[1, 2, torch.tensor([3.0])])


def test_a_tuple_case_is_positional_arguments_anything_else_one_argument():
    seen = []
    check("args", lambda *args: seen.append(len(args)) or 0, [0, 0, 0], cases=[(1, 2, 3), [1, 2, 3], ()])
    assert seen == [3, 1, 0]


def test_the_module_docstring_example_says_what_it_shows(tmp_path, monkeypatch, capsys):
    course(tmp_path, monkeypatch, {"01_attention_basics": {"attention_weights": {
        "explain": "Each row is a probability distribution over the keys.",
        "hint": "Which axis of the scores holds the keys?"}}})

    def attention_weights(q, k):  # the classic slip: keys against queries
        return (k @ q.T / q.shape[-1] ** 0.5).softmax(dim=-1)

    def reference_weights(q, k):
        return (q @ k.T / q.shape[-1] ** 0.5).softmax(dim=-1)

    cases = [(torch.randn(3, 4), torch.randn(5, 4)), (torch.randn(1, 8), torch.randn(1, 8))]
    check("01/attention_weights", reference_weights, reference_weights, cases=cases)
    check("01/attention_weights", attention_weights, reference_weights, cases=cases)
    assert capsys.readouterr().out.splitlines() == [
        "✓ attention_weights: right. Each row is a probability distribution over the keys.",
        "✗ attention_weights: not yet — for case 1 of 2, inputs (float32 [3, 4], float32 [5, 4]): it has "
        "shape [5, 3], expected [3, 5]. Likely: it is the right result with its axes in another order (a transpose "
        "or a view too many or too few?). Hint: Which axis of the scores holds the keys?",
    ]


def test_an_unfinished_exercise_says_so():
    def softmax(x):
        raise NotImplementedError

    assert why(check("softmax", softmax, lambda x: x.softmax(-1), cases=[torch.ones(2, 5), torch.ones(3)])) == (
        "the exercise is not filled in yet (it raises NotImplementedError)")


def test_learner_exceptions_are_reported_not_raised(capsys):
    def broken(x):
        return x / 0 if isinstance(x, int) else x

    result = check("ratio", broken, lambda x: x, cases=[torch.ones(2, 5), 3, 4])
    assert why(result) == "for case 2 of 3, input 3: your code raised ZeroDivisionError: division by zero"
    assert capsys.readouterr().out.count("\n") == 1

    def shape_bug(q, k):
        return q @ k

    assert why(check("scores", shape_bug, lambda q, k: q @ k.T,
                     cases=[(torch.ones(2, 4), torch.ones(3, 4))])).startswith(
        "for case 1 of 1, inputs (float32 [2, 4], float32 [3, 4]): your code raised RuntimeError: mat1 and mat2 "
        "shapes")


def test_in_place_learner_functions_cannot_corrupt_the_reference_or_the_cases():
    x = torch.tensor([1.0, 2.0, 3.0])
    nested = [torch.tensor([1.0])]

    def learner(t, items):
        t.mul_(100)  # in place: a bug, but it must not change what the reference sees
        items[0].zero_()
        items.append(None)
        return t / 100

    def reference(t, items):
        assert t.tolist() == [1.0, 2.0, 3.0] and items[0].item() == 1.0 and len(items) == 1
        return t.clone()

    assert check("in place", learner, reference, cases=[(x, nested), (x, nested)])
    assert x.tolist() == [1.0, 2.0, 3.0] and nested[0].item() == 1.0 and len(nested) == 1


def test_inputs_that_require_grad_still_do():
    x = torch.ones(3, requires_grad=True)

    def learner(t):
        assert t.requires_grad and t is not x
        (t * 2).sum().backward()
        return t.grad

    assert check("grad", learner, [torch.full((3,), 2.0)], cases=[x])
    assert x.grad is None


def test_a_failing_reference_is_the_authors_bug():
    def reference(x):
        raise KeyError("oops")

    with pytest.raises(RuntimeError,
                       match=r"the reference function reference failed on case 1 of 1 \(input 1\): KeyError"):
        check("r", lambda x: x, reference, cases=[1])


# ------------------------------------------------------------------------------ strict mode


def test_strict_mode_raises_after_printing(monkeypatch, capsys):
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(ExerciseCheckFailed, match="^✗ n: not yet — it is 1: not right$") as error:
        check("n", 1, 2)
    assert isinstance(error.value, AssertionError)
    assert capsys.readouterr().out == "✗ n: not yet — it is 1: not right\n"
    assert check("n", 2, 2)  # passing checks are quiet about strictness
    with pytest.raises(ExerciseCheckFailed, match="not filled in yet"):
        check("todo", lambda: (_ for _ in ()).throw(NotImplementedError), [1], cases=[()])


@pytest.mark.parametrize("value", ["0", "", "true", "yes"])
def test_only_1_turns_strict_mode_on(monkeypatch, value):
    monkeypatch.setenv(STRICT_ENV, value)
    assert not check("n", 1, 2)


# ------------------------------------------------------------------- the author's mistakes


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(got=torch.ones(2), expected=lambda x: x, cases=[1]), TypeError,
     "cases=...) was given, so got must be the learner's function, but it is a torch.Tensor of shape [2]"),
    (dict(got=lambda x: x, expected=[1, 2], cases=[1]), ValueError,
     "expected=...) lists 2 outputs but there are 1 cases"),
    (dict(got=lambda x: x, expected=3, cases=[1]), TypeError,
     "expected must be a reference function or a list of expected outputs (one per case), but it is an int (3)"),
    (dict(got=lambda x: x, expected=lambda x: x, cases=[]), ValueError, "cases=...) is empty"),
    (dict(got=lambda x: x, expected=lambda x: x, cases=5), TypeError, "cases=...) must be a list of inputs, got int"),
    (dict(got=lambda x: x, expected=lambda x: x, cases="abc"), TypeError,
     "cases=...) must be a list of inputs, got str"),
    (dict(got=3, expected=len), TypeError, "check(expected=...) is a function (len) but no cases were given"),
    (dict(got=1, expected=1, atol=-1e-6), ValueError, "check(atol=...) must be a finite number >= 0, got -1e-06"),
    (dict(got=1, expected=1, rtol=-1), ValueError, "check(rtol=...) must be a finite number >= 0, got -1"),
    (dict(got=1, expected=1, rtol=math.nan), ValueError, "check(rtol=...) must be a finite number >= 0, got nan"),
    (dict(got=1, expected=1, atol="1e-6"), TypeError, "check(atol=...) must be a number, got str"),
    (dict(got=1, expected=1, explain="Arithmetic."), TypeError, "unexpected keyword argument 'explain'"),
    (dict(got=1, expected=1, hint="Count."), TypeError, "unexpected keyword argument 'hint'"),
    (dict(name="05/no_such_check", got=1, expected=1), CheckTextError, "has no entry 'no_such_check'"),
    (dict(name="99/anything", got=1, expected=1), CheckTextError, "no modules/99_*/checks.json"),
    (dict(got=torch.ones(2), expected=torch.empty(2, device="meta")), CheckUsageError, "meta device"),
    *[(dict(name=name, got=1, expected=1), TypeError, "check(name=...) must be a non-empty string")
      for name in ("", "  ", None, 3)],
])
def test_misuse_of_check_raises_naming_the_argument(kwargs, error, text, capsys):
    with pytest.raises(error) as raised:
        check(**{"name": "exercise", **kwargs})
    assert text in str(raised.value)
    assert capsys.readouterr().out == ""  # nothing printed: no verdict on a check that cannot run


# --------------------------------------------------------------------------------- notebook


def test_in_a_notebook_the_verdict_shows_once(tmp_path, monkeypatch):
    """As a cell's last value the result adds nothing to the line check() printed; shown from a
    later cell it shows its message; an unfinished exercise does not stop the notebook."""
    monkeypatch.delenv(STRICT_ENV, raising=False)
    sources = [
        "from labkit.checks import check\n"
        "def todo(x):\n    raise NotImplementedError\n"
        "r = check('todo', todo, lambda x: x, cases=[1])",
        "check('sum', 1 + 1, 2)",
        "r",
    ]
    cells = run_cells(sources, tmp_path)
    shown = [[(o.output_type, o.get("text") or o.get("data", {}).get("text/plain")) for o in cell.outputs]
             for cell in cells]
    assert shown == [
        [("stream", "✗ todo: not yet — the exercise is not filled in yet (it raises NotImplementedError)\n")],
        [("stream", "✓ sum: right.\n")],
        [("stream", "✗ todo: not yet — the exercise is not filled in yet (it raises NotImplementedError)\n")],
    ]


# ------------------------------------------------------------------ nothing given away (§3)


# Value answers of every kind, each checked against a wrong answer: the expected value must not
# appear in what the check says, nor a difference or a ratio from which it follows.
VALUE_ANSWERS = [
    (7, 8), (0, 1), (1024.0, 2048.0), (0.41, 0.29), (True, False), ("cat", "dog"), (-3, 12345),
    ([1, 2, 3], [1, 2, 4]), ([0.5, [2, 3.0]], [0.5, [2, 3.5]]), ({"heads": 4}, {"heads": 16}),
    (torch.tensor(1.5), torch.tensor(0.875)), (torch.tensor(3), torch.tensor(96)), (torch.float16, torch.bfloat16),
    (np.float32(0.25), 0.625), ((2, 3), (2, 77)),
]


def _leaves(value):
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value.item() if isinstance(value, torch.Tensor) else value]


@pytest.mark.parametrize("got, expected", VALUE_ANSWERS, ids=lambda v: repr(v)[:20])
def test_a_wrong_value_answer_never_shows_the_expected_value(got, expected):
    said = why(check("answer", got, expected))
    assert "not right" in said
    shown = {repr(leaf) for leaf in _leaves(got)} | {str(leaf) for leaf in _leaves(got)}
    for leaf in _leaves(expected):
        for text in {repr(leaf), str(leaf), f"{leaf:,}" if isinstance(leaf, int) else str(leaf)} - shown:
            assert text not in said, f"the check gives away {text!r}: {said!r}"
    assert "expected" not in said and "difference" not in said and "factor" not in said


def test_a_wrong_tensor_says_where_and_how_much_but_not_the_expected_entries():
    expected = torch.tensor([[0.125, 0.875], [0.3125, 0.6875]])
    got = expected.clone()
    got[1, 0] = 0.5
    said = why(check("weights", got, expected))
    assert said.startswith("1 of 4 values are outside the tolerance; the largest difference, 0.1875, is at [1, 0]")
    assert "0.3125" not in said and "0.5" not in said
    mask = torch.tensor([[True, False], [True, True]])
    said = why(check("mask", ~mask, mask))
    assert said == "it differs at 4 of 4 positions, the first at [0, 0]. Likely: it is the right mask with True and " \
                   "False swapped"


# ------------------------------------------------------------- the texts, kept out of the notebooks


def course(tmp_path, monkeypatch, modules: dict) -> None:
    """A course folder whose modules hold these check texts (module slug -> checks.json content),
    found by check() through ATTENTION_LAB_COURSE."""
    for name, entries in modules.items():
        folder = tmp_path / "modules" / name
        folder.mkdir(parents=True, exist_ok=True)
        text = entries if isinstance(entries, str) else json.dumps(entries)
        (folder / "checks.json").write_text(text, encoding="utf-8")
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))


TEXTS = {"scores": {"explain": "One score per query and key.", "hint": "Check the scale (module 01).",
                    "mistakes": {"transposed": "Rows are queries, columns keys."}},
         "tokens": {"name": "the number of tokens", "hint": "Count the prompt too."}}


def test_a_key_reads_the_checks_texts_said_on_success_and_on_failure(tmp_path, monkeypatch, capsys):
    course(tmp_path, monkeypatch, {"03_multi_head": TEXTS})
    q = torch.randn(4, 8)
    assert check("03/scores", q @ q.T, q @ q.T).message == "✓ scores: right. One score per query and key."
    said = check("03/scores", 2 * q @ q.T, q @ q.T)
    assert said.message.endswith(". Likely: it is the right result times one constant factor. Hint: Check the "
                                 "scale (module 01).")
    assert (said.key, said.name, said.mistake) == ("03/scores", "scores", "scaled")
    transposed = check("03/scores", q[:3] @ q.T, (q[:3] @ q.T).T)
    assert transposed.message.endswith("expected [4, 3]. Hint: Rows are queries, columns keys.")  # its own words
    assert check("03/tokens", 7, 9).message == "✗ the number of tokens: not yet — it is 7: not right. Hint: Count " \
                                               "the prompt too."
    assert check("03/tokens", 9, 9).message == "✓ the number of tokens: right."  # no explain: nothing more
    todo = check("03/tokens", lambda: (_ for _ in ()).throw(NotImplementedError), [9], cases=[()])
    assert todo.message == ("✗ the number of tokens: not yet — the exercise is not filled in yet (it raises "
                            "NotImplementedError)")  # nothing to diagnose yet, so no hint


def test_a_name_that_is_not_a_key_is_shown_as_written_with_no_texts(tmp_path, monkeypatch):
    course(tmp_path, monkeypatch, {"03_multi_head": TEXTS})
    assert check("03 scores", 1, 2).message == "✗ 03 scores: not yet — it is 1: not right"
    assert check("my/scores", 1, 1).message == "✓ my/scores: right."
    q = torch.randn(4, 8)
    assert check("mine", -q, q).message.endswith(". Likely: it is the right result with the opposite sign")


def test_the_texts_are_read_again_when_their_file_changes(tmp_path, monkeypatch):
    course(tmp_path, monkeypatch, {"03_multi_head": TEXTS})
    assert check("03/tokens", 1, 2).message.endswith("Hint: Count the prompt too.")
    course(tmp_path, monkeypatch, {"03_multi_head": {**TEXTS, "tokens": {"hint": "Count again, slowly."}}})
    assert check("03/tokens", 1, 2).message.endswith("Hint: Count again, slowly.")


@pytest.mark.parametrize("content, problem", [
    ("{", "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    ("[]", "must hold a JSON object, one entry per check (slug -> texts), not list"),
    ({"Scores": {"hint": "x"}}, "entry 'Scores': a slug is lower-case letters, digits and underscores"),
    ({"scores": "check the scale"}, "entry 'scores' must be an object with a \"hint\""),
    ({"scores": {"explain": "x"}}, "entry 'scores' has no \"hint\": every check says what to re-check"),
    ({"scores": {"hint": "  "}}, "entry 'scores': \"hint\" must be a non-empty string"),
    ({"scores": {"hint": "x", "explanation": "y"}}, "entry 'scores' has unknown fields ['explanation']"),
    ({"scores": {"hint": "x", "mistakes": {"transpose": "y"}}},
     "names 'transpose', which check() cannot tell apart; the kinds are transposed, "),
    ({"scores": {"hint": "x", "mistakes": {"scaled": ""}}}, "the hint for the mistake 'scaled' must be a non-empty"),
    ({"scores": {"hint": "x", "mistakes": ["scaled"]}}, "\"mistakes\" must be an object (kind of mistake -> hint)"),
    ({"scores": {"hint": "x", "name": 3}}, "\"name\" must be a non-empty string"),
])
def test_texts_that_cannot_be_read_are_named_with_the_fix(tmp_path, monkeypatch, content, problem, capsys):
    course(tmp_path, monkeypatch, {"03_multi_head": content})
    with pytest.raises(CheckTextError) as raised:
        check("03/scores", 1, 1)
    assert problem in str(raised.value) and "modules/03_multi_head/checks.json" in str(raised.value)
    assert isinstance(raised.value, ValueError) and capsys.readouterr().out == ""  # no verdict on a broken check


def test_texts_that_are_not_text_or_not_a_file_are_named(tmp_path, monkeypatch):
    course(tmp_path, monkeypatch, {"03_multi_head": TEXTS})
    path = tmp_path / "modules" / "03_multi_head" / "checks.json"
    path.write_bytes(b'{"scores": {"hint": "\xff"}}')
    with pytest.raises(CheckTextError, match=r"is not UTF-8 text \(byte 21\): save it as UTF-8"):
        check("03/scores", 1, 1)
    path.write_text(json.dumps(TEXTS))
    with pytest.raises(CheckTextError, match=r"has no entry 'score' for the check key '03/score' \(did you mean "
                                             r"'03/scores'\?\): add it, with at least a \"hint\", or use one of its "
                                             r"keys: scores, tokens\."):
        texts_for("03/score", tmp_path)
    path.unlink()
    path.mkdir()
    with pytest.raises(CheckTextError, match="is not a file"):
        check("03/scores", 1, 1)


def test_the_courses_texts_are_valid_and_every_kind_is_named_in_words():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "modules").glob("*/checks.json"))
    assert len(files) == len(list((root / "notebooks").glob("*.ipynb")))
    assert sum(len(load_texts(path)) for path in files) >= 54
    assert all(text.strip() and not text.endswith(".") for text in KINDS.values())


# ------------------------------------------------------------------------------ the likely mistake


TORCH = torch.Generator().manual_seed(0)
E = torch.randn(3, 5, generator=TORCH)
MASK = torch.ones(5, 5, dtype=torch.bool).tril()
HEADS = torch.randn(2, 4, 3, 8, generator=TORCH)


@pytest.mark.parametrize("kind, got, expected", [
    ("transposed", E.T.clone(), E),
    ("transposed", MASK.T.clone(), MASK),
    ("transposed", HEADS.transpose(1, 2).contiguous(), HEADS),
    ("size_one_axis", E[None], E),
    ("not_finite", torch.tensor([0.0, -math.inf]), torch.tensor([0.0, -1000.0])),  # any size: where, not what
    ("zeros", torch.zeros(3, 5), E),
    ("complement", ~MASK, MASK),
    ("negated", -E, E),
    ("scaled", E / 8 ** 0.5, E),
    ("shifted", torch.ones(5, 5, dtype=torch.bool).tril(-1), MASK),
    ("shifted", torch.ones(5, 5, dtype=torch.bool).tril(1), MASK),
    ("permuted", HEADS[:, [1, 0, 3, 2]], HEADS),
    ("permuted", HEADS[:, [0, 1, 0, 1]], HEADS[:, [0, 0, 1, 1]]),  # heads tiled instead of in blocks
    ("permuted", (E * 2, E), (E, E * 2)),  # a pair of results in the wrong order
    ("rearranged", HEADS.reshape(2, 3, 4, 8).transpose(1, 2).contiguous(), HEADS),
    (None, E + 0.1 * torch.randn(3, 5, generator=TORCH), E),
    (None, torch.tensor([2.0, 4.0]), torch.tensor([1.0, 2.0])),  # too few values to read: a value answer
    (None, torch.tensor([71, 71, 71, 71]), torch.tensor([5, 5, 5, 5])),  # token ids have no scale or sign
    (None, 16.0, 4.0),
])
def test_the_likely_mistake_is_read_from_the_answer(kind, got, expected):
    assert likely_mistake(got, expected) == kind
    said = check("x", got, expected).message
    assert (f"Likely: it is {KINDS[kind]}" in said) if kind else "Likely" not in said


def test_an_input_handed_back_is_recognised():
    x = torch.randn(4, 4, generator=TORCH)
    assert check("unrope", lambda x_rot, t: x_rot, lambda x_rot, t: x_rot * 2 + t, cases=[(x, x)]).mistake == (
        "input_returned")


# ------------------------------------------------------------------------ hostile answers (issue 37)


@pytest.mark.parametrize("got, expected, verdict", [
    (torch.empty(2, 3, device="meta"), torch.ones(2, 3),
     "it is a torch.Tensor of shape [2, 3] on the meta device, which holds no values: compute it on the CPU"),
    (torch.eye(3).to_sparse(), torch.eye(3), None),
    (torch.eye(3).to_sparse_csr(), torch.eye(3), None),
    (2 * torch.eye(3).to_sparse(), torch.eye(3).to_sparse(), "3 of 9 values are outside the tolerance"),
    (torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), torch.ones(2),
     "it is a nested torch.Tensor of 2 tensors, float32, expected a torch.Tensor of shape [2], float32"),
    (torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
     torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), None),
    (torch.nested.nested_tensor([torch.ones(2), torch.zeros(3)]),
     torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), "item [1]: 3 of 3 values are outside"),
    (torch.nested.nested_tensor([torch.ones(2, 3), torch.zeros(4, 3)], layout=torch.jagged),
     torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)], layout=torch.jagged),
     "item [1]: 12 of 12 values are outside"),
    (torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8), torch.ones(3), None),
    (torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8),
     torch.quantize_per_tensor(2 * torch.ones(3), 0.1, 0, torch.qint8), "3 of 3 values are outside the tolerance"),
    (torch.tensor([1 + 1j]), torch.tensor([1 + 2j]), "1 of 1 values are outside the tolerance"),
    (torch.tensor([1 + 1j]).conj(), torch.tensor([1 - 1j]), None),
    (torch.tensor([1 + 1j]).conj().imag, torch.tensor([-1.0]), None),
    (1 + 1j, 1 + 2j, "it is 1+1j: not right"),
    (1 + 1j, 1.0, "it is a complex number (1+1j), expected a float"),
    (torch.tensor([True]), torch.tensor([1]), "its dtype is torch.bool (boolean), expected integer like torch.int64"),
    (torch.tensor([1]), torch.tensor([True]), "its dtype is torch.int64 (integer), expected boolean like torch.bool"),
    (torch.ones(0, 3), torch.ones(0, 3), None),
    (torch.ones(0, 3), torch.ones(3, 0), "it has shape [0, 3], expected [3, 0]. Likely"),
    (torch.arange(12.0).view(3, 4).T, torch.arange(12.0).view(3, 4).T.contiguous(), None),
    (torch.ones(3).expand(4, 3), torch.ones(4, 3), None),
    (torch.nn.Parameter(torch.ones(2)), torch.ones(2), None),
    (torch.ones(2).as_subclass(type("Sub", (torch.Tensor,), {})), torch.zeros(2), "2 of 2 values are outside"),
    (np.array([1, "a"], dtype=object), np.array([1, "b"], dtype=object), "it differs at 1 of 2 positions"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), np.array(["2020-01-02"], dtype="datetime64[D]"),
     "it differs at 1 of 1 positions"),
    ([torch.ones(2), torch.zeros(2)], [torch.ones(2), torch.ones(2)], "item [1]: 2 of 2 values are outside"),
    (math.nan, math.nan, None),
    (np.float64("nan"), math.nan, None),
    (torch.tensor(math.nan), torch.tensor(math.nan), None),
    (torch.tensor([complex(math.nan, 0)]), torch.tensor([complex(math.nan, 0)]), None),
    (10 ** 400, 1.0, "it is a number of about 401 digits: not right"),
    (10 ** 400, 10 ** 400 + 1, "it is a number of about 401 digits: not right"),
    (1.0, 10 ** 400, "it is a float (1.0), expected an int (use // or int() for a whole number)"),
    (torch.tensor([2 ** 62]), torch.tensor([2 ** 62 + 1]),
     "it differs at 1 of 1 positions, the first at [0]; the largest difference is 1"),
    (torch.tensor([2 ** 63 - 1]), torch.tensor([-2 ** 63]), "the largest difference is 18446744073709551615"),
    (len, 3, "it is a function (len), expected an int (a function: call it to get its result)"),
    (torch.nn.Linear(3, 3), 3, "it is a Linear (12 parameters), expected an int"),
    (torch.nn.Linear(3, 3), torch.nn.Linear(3, 3), "it is a Linear (12 parameters): not right"),
])
def test_every_hostile_answer_gets_a_verdict(got, expected, verdict):
    result = check("x", got, expected)
    if verdict is None:
        assert result.passed, result.message
    else:
        assert verdict in why(result)


def test_a_long_answer_or_input_is_described_never_dumped():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))
    said = why(check("x", lambda m, xs, d, s, n: m, lambda m, xs, d, s, n: 0,
                     cases=[(model, list(range(1000)), {str(i): i for i in range(50)}, "y" * 300, None)]))
    assert said == ("for case 1 of 1, inputs (Sequential (8,320 parameters), list of 1000 items, dict with 50 keys, "
                    "a str of 300 characters, None): it is a Sequential (8,320 parameters), expected an int")
    assert why(check("d", {i: i for i in range(100)}, {})) == "it has extra keys [0, 1, 2, 3, 4, 5] and 94 more"
    assert why(check("l", list(range(1000)), list(range(1001)))) == "it has 1000 items, expected 1001"
    big = torch.randn(1000, 1000)
    assert len(check("t", big, big + 1).message) < 200
    assert why(check("s", "x" * 1000, "y")).startswith("it is 'xxxxx") and len(why(check("s", "x" * 1000, "y"))) < 100
