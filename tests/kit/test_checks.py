"""check(): right or wrong, and exactly why, for every kind of answer; learner errors reported,
never raised; strict mode raises; the author's own mistakes raise at once."""

import math

import numpy as np
import pytest
import torch
from kernel_cells import run_cells

from labkit.checks import STRICT_ENV, CheckResult, ExerciseCheckFailed, check


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


def test_explain_follows_a_right_answer_only(capsys):
    check("rows", 1.0, 1.0, explain="Each row is a distribution.")
    check("rows", 2.0, 1.0, explain="Each row is a distribution.")
    assert capsys.readouterr().out.splitlines() == [
        "✓ rows: right. Each row is a distribution.",
        "✗ rows: not yet — it is 2.0: not right",
    ]


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


def test_tensor_shape_mismatch_with_hints():
    assert why(check("w", torch.ones(3, 4), torch.ones(4, 3))) == (
        "it has shape [3, 4], expected [4, 3] (the transpose: are the dimensions in the right order?)")
    assert why(check("w", torch.ones(2, 3, 4), torch.ones(2, 4, 3))).endswith(
        "(the transpose: are the dimensions in the right order?)")
    assert why(check("w", torch.ones(3, 4), torch.ones(3, 1, 4))) == (
        "it has shape [3, 4], expected [3, 1, 4] (a dimension of size 1 too many or too few: "
        "unsqueeze/squeeze, or keepdim?)")
    assert why(check("w", torch.ones(12), torch.ones(3, 4))) == "it has shape [12], expected [3, 4]"


def test_dtype_kinds_must_match():
    assert why(check("w", torch.ones(2, dtype=torch.long), torch.ones(2))) == (
        "its dtype is torch.int64 (integer), expected floating point like torch.float32")
    assert why(check("mask", torch.ones(2), torch.ones(2, dtype=torch.bool))) == (
        "its dtype is torch.float32 (floating point), expected boolean like torch.bool")
    assert check("precision", torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float16))


def test_nan_and_inf_where_none_are_expected():
    got = torch.zeros(3, 4)
    got[0, 2] = got[1, 0] = got[2, 3] = float("nan")
    assert why(check("w", got, torch.zeros(3, 4))) == (
        "it contains NaN at 3 positions, e.g. [0, 2] (NaN comes from 0/0, inf - inf, or a softmax over "
        "a row that is all -inf)")
    assert why(check("w", torch.tensor([1.0, float("inf")]), torch.tensor([1.0, 2.0]))) == (
        "it contains inf at 1 position, e.g. [1]")


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
        "it is a numpy array of shape [2, 3], expected a torch.Tensor of shape [2, 3] "
        "(torch.from_numpy turns an array into a tensor)")
    assert why(check("w", [1.0, 2.0], torch.ones(2))) == "it is a list of 2 items, expected a torch.Tensor of shape [2]"
    assert why(check("w", 0.5, torch.ones(2))) == "it is a float (0.5), expected a torch.Tensor of shape [2]"
    assert why(check("w", None, torch.ones(2))) == (
        "it is None, expected a torch.Tensor of shape [2] (did the function forget to return its result?)")
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
        "it is a torch.Tensor of shape [4], expected a numpy array of shape [4] "
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
        "it is a torch.Tensor of shape [2], expected a tuple of 2 items")


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
        "for case 2 of 3, inputs (shape [2, 5], 3.0): 10 of 10 values are outside the tolerance; the largest "
        "difference, 2.0, is at [0, 0]")
    assert why(check("scale", lambda x: x, reference_scale, cases=[torch.ones(2, 5)])) .startswith(
        "for case 1 of 1, input shape [2, 5]: 10 of 10 values are outside the tolerance; the largest difference, "
        "1.0, is at [0, 0]")
    assert why(check("count", lambda n: n + 1, [2, 4], cases=[1, 2])) == "for case 2 of 2, input 2: it is 3: not right"
    assert why(check("nothing", lambda: 1, [2], cases=[()])) == "for case 1 of 1, no inputs: it is 1: not right"


def test_expected_outputs_may_be_listed():
    assert check("double", lambda x: 2 * x, [2, 4, torch.tensor([6.0])], cases=[1, 2, torch.tensor([3.0])])


def test_a_tuple_case_is_positional_arguments_anything_else_one_argument():
    seen = []
    check("args", lambda *args: seen.append(len(args)) or 0, [0, 0, 0], cases=[(1, 2, 3), [1, 2, 3], ()])
    assert seen == [3, 1, 0]


def test_the_module_docstring_example_says_what_it_shows(capsys):
    def attention_weights(q, k):  # the classic slip: keys against queries
        return (k @ q.T / q.shape[-1] ** 0.5).softmax(dim=-1)

    def reference_weights(q, k):
        return (q @ k.T / q.shape[-1] ** 0.5).softmax(dim=-1)

    cases = [(torch.randn(3, 4), torch.randn(5, 4)), (torch.randn(1, 8), torch.randn(1, 8))]
    explain = "Each row is a probability distribution over the keys."
    check("attention weights", reference_weights, reference_weights, cases=cases, explain=explain)
    check("attention weights", attention_weights, reference_weights, cases=cases, explain=explain)
    assert capsys.readouterr().out.splitlines() == [
        "✓ attention weights: right. Each row is a probability distribution over the keys.",
        "✗ attention weights: not yet — for case 1 of 2, inputs (shape [3, 4], shape [5, 4]): it has "
        "shape [5, 3], expected [3, 5] (the transpose: are the dimensions in the right order?)",
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
        "for case 1 of 1, inputs (shape [2, 4], shape [3, 4]): your code raised RuntimeError: mat1 and mat2 shapes")


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
    (dict(got=len, expected=3), TypeError, "check(got=...) is a function (len) but no cases were given"),
    (dict(got=3, expected=len), TypeError, "check(expected=...) is a function (len) but no cases were given"),
    (dict(got=1, expected=1, atol=-1e-6), ValueError, "check(atol=...) must be a finite number >= 0, got -1e-06"),
    (dict(got=1, expected=1, rtol=-1), ValueError, "check(rtol=...) must be a finite number >= 0, got -1"),
    (dict(got=1, expected=1, rtol=math.nan), ValueError, "check(rtol=...) must be a finite number >= 0, got nan"),
    (dict(got=1, expected=1, atol="1e-6"), TypeError, "check(atol=...) must be a number, got str"),
    (dict(got=1, expected=1, explain=3), TypeError, "check(explain=...) must be a sentence"),
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
        "check('sum', 1 + 1, 2, explain='Arithmetic.')",
        "r",
    ]
    cells = run_cells(sources, tmp_path)
    shown = [[(o.output_type, o.get("text") or o.get("data", {}).get("text/plain")) for o in cell.outputs]
             for cell in cells]
    assert shown == [
        [("stream", "✗ todo: not yet — the exercise is not filled in yet (it raises NotImplementedError)\n")],
        [("stream", "✓ sum: right. Arithmetic.\n")],
        [("stream", "✗ todo: not yet — the exercise is not filled in yet (it raises NotImplementedError)\n")],
    ]


# ------------------------------------------------------------------ nothing given away (§3)


def test_a_hint_is_said_on_failure_only_and_not_for_an_exercise_not_filled_in(capsys):
    check("n", 8, 8, hint="Count the keys each query may see.")
    check("n", 7, 8, hint="Count the keys each query may see.")
    check("todo", lambda: (_ for _ in ()).throw(NotImplementedError), [1], cases=[()], hint="Count again.")
    assert capsys.readouterr().out.splitlines() == [
        "✓ n: right.",
        "✗ n: not yet — it is 7: not right. Hint: Count the keys each query may see.",
        "✗ todo: not yet — the exercise is not filled in yet (it raises NotImplementedError)",
    ]
    with pytest.raises(TypeError, match=r"check\(hint=...\) must be a sentence"):
        check("n", 1, 1, hint=3)


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
    assert said == "1 of 4 values are outside the tolerance; the largest difference, 0.1875, is at [1, 0]"
    assert "0.3125" not in said and "0.5" not in said
    mask = torch.tensor([[True, False], [True, True]])
    said = why(check("mask", ~mask, mask))
    assert said == "it differs at 4 of 4 positions, the first at [0, 0]" and "True" not in said
