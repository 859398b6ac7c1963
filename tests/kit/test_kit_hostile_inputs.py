"""Hostile inputs to the kit's public functions that take what a learner types: each is refused by
name (a usage error) or handled correctly, never a raw error from deep inside Python or torch.

The property tests draw inputs with hypothesis, derandomised with fixed example counts, so a run
is the same on every machine.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.arguments import flag, real, whole
from labkit.checks import STRICT_ENV, CheckResult, check
from labkit.course import cli
from labkit.experiment import Experiment, float_in, fraction, int_in, int_list, output_folder
from labkit.numerics import distance, outside_tolerance

DERANDOMISED = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                        suppress_health_check=[HealthCheck.too_slow])
REPO = Path(__file__).resolve().parents[2]

# -------------------------------------------------------------------------- --out and outputs/


@pytest.fixture
def script(tmp_path, monkeypatch):
    """A fake script in a fake course, a home folder of its own, and the course as the current folder."""
    course = tmp_path / "course"
    folder = course / "experiments" / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "exp1_demo.py").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(course)
    return folder / "exp1_demo.py"


def test_out_with_a_tilde_is_the_home_folder_as_a_shell_would_expand_it(script, tmp_path):
    """`--out=~/figs` reaches Python unexpanded (the shell expands `~` only at a word's start)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exp = Experiment.start("A claim.", str(script), ["--out=~/figs"])
    path = exp.save(plt.figure(), "curve")
    assert path == tmp_path / "home" / "figs" / "exp1_demo_curve.png" and path.is_file()
    assert not any(p.name.startswith("~") for p in (tmp_path / "course").rglob("*")), "no folder named ~"


@pytest.mark.parametrize("text, message", [
    ("~no_such_user_here/figs", "'~no_such_user_here' names no user's home folder"),
    ("", "must name a folder"),
    ("   ", "must name a folder"),
    ("figs\0x", "holds a NUL character"),
    ("x" * 300, "longer than the 255 bytes"),
    ("/" + "a/" * 3000, "cannot use the folder '/a/a/a"),
    *([("/proc/nope", "/proc is not writable")] if Path("/proc").is_dir() else []),
])
def test_out_refuses_what_no_folder_can_be_named_and_creates_nothing(script, tmp_path, capsys, text, message):
    with pytest.raises(SystemExit) as exited:
        Experiment.start("A claim.", str(script), [f"--out={text}"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --out: " in err and message in err
    assert len(err.strip().splitlines()[-1]) < 300, "a long path is quoted short"
    assert sorted(p.name for p in (tmp_path / "course").iterdir()) == ["experiments"]


def test_out_refuses_a_link_to_nothing_on_its_path(tmp_path):
    (tmp_path / "broken").symlink_to(tmp_path / "gone")
    for text in (tmp_path / "broken", tmp_path / "broken" / "figs"):
        with pytest.raises(argparse.ArgumentTypeError, match="is a link to .*which does not exist"):
            output_folder(str(text))
    assert not (tmp_path / "gone").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_out_refuses_a_folder_it_cannot_write(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(argparse.ArgumentTypeError, match="not writable"):
            output_folder(str(locked / "figs"))
    finally:
        locked.chmod(0o700)


def _workspace(root: Path, capsys) -> tuple[int, str]:
    (root / "notebooks").mkdir(exist_ok=True)
    (root / "notebooks" / "01_attention_basics.ipynb").write_text(
        (REPO / "notebooks" / "01_attention_basics.ipynb").read_text())
    status = cli.main(["workspace"])  # run from the course root, as make does
    return status, capsys.readouterr().err


def test_make_workspace_when_its_folder_is_a_file_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workspace").write_text("not a folder")
    status, err = _workspace(tmp_path, capsys)
    assert status == 2
    assert "cannot make your copies in workspace/" in err and "is a file" in err
    assert (tmp_path / "workspace").read_text() == "not a folder"


def test_make_workspace_when_a_copy_is_a_folder_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workspace" / "01_attention_basics.ipynb").mkdir(parents=True)
    status, err = _workspace(tmp_path, capsys)
    assert status == 2 and "01_attention_basics.ipynb is a folder, not a notebook" in err


@pytest.mark.parametrize("value", ["0", "false", "no", "yes", "2", "", " "])
def test_make_workspace_replaces_only_with_force_1(tmp_path, monkeypatch, capsys, value):
    """FORCE=0 or FORCE=false once replaced an edited copy: every value but 1 is refused by name."""
    monkeypatch.chdir(tmp_path)
    assert _workspace(tmp_path, capsys)[0] == 0
    copy = tmp_path / "workspace" / "01_attention_basics.ipynb"
    copy.write_text(copy.read_text().replace("raise NotImplementedError", "return 'my work'"))
    edited = copy.read_text()
    with pytest.raises(SystemExit) as stopped:
        cli.main(["workspace", "01", f"--force={value}"])
    assert stopped.value.code == 2
    assert f"FORCE={value!r} is not a choice: only FORCE=1 replaces" in capsys.readouterr().err
    assert copy.read_text() == edited and sorted(p.name for p in copy.parent.iterdir()) == [copy.name]


def test_make_workspace_never_writes_through_a_link(tmp_path, monkeypatch, capsys):
    """A copy that is a link is refused (even with FORCE=1), and so is a workspace that leads out of
    the course: nothing outside the course folder is written."""
    monkeypatch.chdir(tmp_path)
    course, outside = tmp_path / "course", tmp_path / "outside"
    course.mkdir()
    outside.mkdir()
    monkeypatch.chdir(course)
    (course / "workspace").mkdir()
    (course / "workspace" / "01_attention_basics.ipynb").symlink_to(outside / "mine.ipynb")
    for force in ([], ["--force=1"]):
        (course / "notebooks").mkdir(exist_ok=True)
        (course / "notebooks" / "01_attention_basics.ipynb").write_text(
            (REPO / "notebooks" / "01_attention_basics.ipynb").read_text())
        assert cli.main(["workspace", *force]) == 2
        assert "01_attention_basics.ipynb is a link (to " in capsys.readouterr().err
        assert list(outside.iterdir()) == []
    (course / "workspace" / "01_attention_basics.ipynb").unlink()
    (course / "workspace").rmdir()
    (course / "workspace").symlink_to(outside)
    assert cli.main(["workspace"]) == 2
    assert "workspace leads out of the course folder" in capsys.readouterr().err
    assert list(outside.iterdir()) == []
    (course / "workspace").unlink()
    (course / "inside").mkdir()
    (course / "workspace").symlink_to(course / "inside")  # a link that stays in the course is a folder like any
    assert cli.main(["workspace"]) == 0
    assert (course / "inside" / "01_attention_basics.ipynb").is_file()


def test_make_workspace_exits_2_through_the_command_line(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_attention_basics.ipynb").write_text(
        (REPO / "notebooks" / "01_attention_basics.ipynb").read_text())
    (tmp_path / "workspace").write_text("")
    done = subprocess.run([sys.executable, "-m", "labkit.course", "workspace"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and "Traceback" not in done.stderr and "is a file" in done.stderr


# ------------------------------------------------------------------------- the bounded flag types

TYPES = [int_in(2, 4096), int_in(-5, 5), float_in(-1.5, 2.5), float_in(0, 1, low_open=True, high_open=True),
         fraction(), int_list(1, 16384)]
HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"\s*[-+]?[0-9_]{0,30}(\.[0-9]*)?([eE][-+]?[0-9]{1,4})?\s*", fullmatch=True),
    st.sampled_from(["nan", "-inf", "inf", "1e309", "-0", "0x10", "1_000", "\u0661\u0662", "１２", "4" * 5000,
                     "\ud800", "2,,3", ",", "1," * 20 + "1", "+3", "3.", ".5", "1e-400"]),
    st.lists(st.integers(-10 ** 6, 10 ** 6), max_size=20).map(lambda xs: ",".join(map(str, xs))),
)


@settings(DERANDOMISED, max_examples=400)
@given(kind=st.sampled_from(TYPES), text=HOSTILE_TEXT)
def test_a_bounded_flag_gives_a_value_in_bounds_or_a_usage_message(kind, text):
    try:
        value = kind(text)
    except argparse.ArgumentTypeError as error:
        assert str(error).startswith(f"must be {kind.describe()}, got ")
        assert len(str(error)) < 300
        return
    values = value if isinstance(value, list) else [value]
    assert 1 <= len(values) <= getattr(kind, "most", 1)
    for number in values:
        assert type(number) is kind.kind and kind.contains(number)
        assert not isinstance(number, float) or math.isfinite(number)


def test_a_list_flag_is_bounded_in_length_too():
    lengths = int_list(1, 16384)
    assert lengths(",".join(["256"] * 16)) == [256] * 16
    with pytest.raises(argparse.ArgumentTypeError, match="at most 16 integers"):
        lengths(",".join(["256"] * 17))


# ----------------------------------------------------------------------------- check()'s arguments

LENIENT = mock.patch.dict(os.environ, {STRICT_ENV: "0"})  # a failed check prints its verdict, not raise

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30), FLOATS, st.text(max_size=5),
              st.lists(FLOATS, max_size=6).map(torch.tensor),
              st.lists(st.integers(-3, 3), max_size=6).map(torch.tensor),
              st.lists(FLOATS, min_size=4, max_size=4).map(lambda xs: torch.tensor(xs).reshape(2, 2)),
              st.sampled_from([torch.zeros(0), torch.tensor(True), torch.tensor([1 + 2j, float("nan")]),
                               torch.ones(2, dtype=torch.float16), object(), print])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=2), inner, max_size=3)),
    max_leaves=6)
TOLERANCES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans(),
                       st.none(), st.just("1e-6"))


@settings(DERANDOMISED, max_examples=300)
@given(name=st.one_of(st.text(max_size=8), st.none(), st.integers()), got=VALUES, expected=VALUES,
       atol=TOLERANCES, rtol=TOLERANCES)
def test_check_answers_a_verdict_or_names_the_authors_mistake(name, got, expected, atol, rtol):
    try:
        with LENIENT:
            result = check(name, got, expected, atol=atol, rtol=rtol)
    except (TypeError, ValueError) as error:  # the notebook author's use of check(), named
        assert str(error).startswith("check(")
        return
    assert isinstance(result, CheckResult)
    assert result.message.startswith(("✓ ", "✗ ")) and "\n" not in result.message


@settings(DERANDOMISED, max_examples=150)
@given(got=VALUES, cases=st.one_of(st.lists(VALUES, max_size=3), VALUES))
def test_check_with_cases_runs_the_function_or_names_the_authors_mistake(got, cases):
    def learner(*args):
        return got

    def reference(*args):
        return args[0] if args else None

    try:
        with LENIENT:
            result = check("exercise", learner, reference, cases=cases)
    except (TypeError, ValueError) as error:
        assert str(error).startswith("check(")
        return
    assert isinstance(result, CheckResult)


# ------------------------------------------------------------------ the one comparison engine


@settings(DERANDOMISED, max_examples=300)
@given(pairs=st.lists(st.tuples(FLOATS, FLOATS), min_size=1, max_size=8),
       atol=st.floats(0, 1), rtol=st.floats(0, 1))
def test_the_engine_agrees_with_torch_isclose(pairs, atol, rtol):
    """torch.isclose(equal_nan=True) is the rule check() and the grader state; nobody here wrote it."""
    actual = torch.tensor([a for a, _ in pairs], dtype=torch.float64)
    expected = torch.tensor([e for _, e in pairs], dtype=torch.float64)
    close = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    assert torch.equal(outside_tolerance(actual, expected, atol, rtol), ~close)
    gap = distance(actual, expected)
    assert torch.equal(gap == 0, (actual == expected) | (actual.isnan() & expected.isnan()))


def test_check_and_the_grader_accept_and_refuse_the_same_entries():
    from labkit.grader.compare import _bad

    inf, nan = float("inf"), float("nan")
    expected = torch.tensor([[1.0, nan, inf, -inf, 2.0, nan]])
    actual = torch.tensor([[1.00001, nan, inf, inf, nan, 0.0]])
    grader = _bad(actual, expected, None, (1e-4, 1e-4))[0].tolist()
    assert grader == [False, False, False, True, True, True]
    for column, refused in enumerate(grader):
        with LENIENT:
            verdict = check("entry", actual[0, column:column + 1], expected[0, column:column + 1], atol=1e-4, rtol=1e-4)
        assert verdict.passed is not refused


# -------------------------------------------------------- the kit's own arguments (labkit.arguments)

ANY_VALUE = st.one_of(
    st.integers(-10 ** 30, 10 ** 30), st.integers(-10 ** 400, 10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), st.text(max_size=6), st.binary(max_size=4), st.complex_numbers(max_magnitude=10),
    st.sampled_from(["3", "2.5", "nan", "all", "4" * 5000, [1], (2,), {3: 4}, object()]),
    st.integers(-2 ** 63, 2 ** 63 - 1).map(np.int64), st.integers(0, 255).map(np.uint8),
    st.floats(allow_nan=True, allow_infinity=True, width=32).map(np.float32), st.booleans().map(np.bool_),
    st.integers(-5, 5).map(torch.tensor))


@settings(DERANDOMISED, max_examples=400)
@given(value=ANY_VALUE, low=st.one_of(st.none(), st.integers(-3, 3)), span=st.one_of(st.none(), st.integers(0, 10)))
def test_whole_gives_an_int_in_bounds_or_names_the_argument(value, low, span):
    high = None if span is None or low is None else low + span
    try:
        number = whole("f", "size", value, low=low, high=high)
    except (TypeError, ValueError) as error:
        assert str(error).startswith("f: size must be a whole number") and len(str(error)) < 300
        return
    assert type(number) is int and not isinstance(value, (bool, np.bool_, float, str))
    assert (low is None or number >= low) and (high is None or number <= high) and number == value


@settings(DERANDOMISED, max_examples=400)
@given(value=ANY_VALUE, low=st.one_of(st.none(), st.floats(-5, 5)), low_open=st.booleans())
def test_real_gives_a_finite_float_in_bounds_or_names_the_argument(value, low, low_open):
    try:
        number = real("f", "scale", value, low=low, low_open=low_open)
    except (TypeError, ValueError) as error:
        assert str(error).startswith("f: scale ") and len(str(error)) < 300
        return
    assert type(number) is float and math.isfinite(number) and not isinstance(value, (bool, np.bool_, str))
    assert low is None or (number > low if low_open else number >= low)


@settings(DERANDOMISED, max_examples=100)
@given(value=ANY_VALUE)
def test_flag_takes_true_or_false_only(value):
    try:
        assert flag("f", "colorbar", value) is bool(value) and isinstance(value, (bool, np.bool_))
    except TypeError as error:
        assert str(error).startswith("f: colorbar must be True or False, got ") and len(str(error)) < 300
        assert not isinstance(value, (bool, np.bool_))


# ----------------------------------------------- the kit's functions that take a model, a tensor, a number


def _tiny():
    import minimind_ref as mm

    return mm.MiniMindConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                             vocab_size=32, max_position_embeddings=16)


def _train(**arguments):
    from labkit.training import train

    model = torch.nn.Linear(4, 4)
    return train(model, lambda step, generator: (torch.zeros(2, 4), torch.zeros(2, dtype=torch.long)),
                 **{"steps": 1, **arguments})


def _attention_scores(x=None, layer=None):
    from labkit.models import attention_scores, random_attention

    torch.manual_seed(0)
    layer = random_attention(_tiny()) if layer is None else layer
    cos, sin = torch.ones(3, 8), torch.zeros(3, 8)
    return attention_scores(layer, torch.randn(1, 3, 16) if x is None else x, cos, sin)


def _naive_cache(batch=1, layer=0, k=None, v=None):
    from labkit.memory import NaiveConcatCache

    cache = NaiveConcatCache(_tiny(), batch)
    k = torch.zeros(1, 1, 2, 8) if k is None else k
    return cache.update(layer, k, torch.zeros(1, 1, 2, 8) if v is None else v)


def _table(headers=("n", "name"), rows=((1, "a"),), formats=None):
    from labkit.experiment import print_table

    print_table(headers, rows, formats)


HOSTILE_KIT_CALLS = [  # (id, call, exception, what the message must say)
    ("train clip<0", lambda: _train(clip=-1.0), ValueError, r"train: clip must be a number of at least 0"),
    ("train clip nan", lambda: _train(clip=math.nan), ValueError, r"train: clip must be a finite number"),
    ("train steps bool", lambda: _train(steps=True), TypeError, r"train: steps must be a whole number"),
    ("train steps str", lambda: _train(steps="2"), TypeError, r"train: steps must be a whole number"),
    ("train steps 2.5", lambda: _train(steps=2.5), TypeError, r"train: steps must be a whole number"),
    ("train lr str", lambda: _train(lr="1e-3"), TypeError, r"train: lr must be a number"),
    ("train lr nan", lambda: _train(lr=math.nan), ValueError, r"train: lr must be a finite number"),
    ("train warmup<0", lambda: _train(warmup=-5), ValueError, r"train: warmup must be a whole number"),
    ("train warmup 2.5", lambda: _train(warmup=2.5), TypeError, r"train: warmup must be a whole number"),
    ("train weight_decay<0", lambda: _train(weight_decay=-1), ValueError, r"train: weight_decay"),
    ("train progress 'no'", lambda: _train(progress="no"), TypeError, r"train: progress must be True or False"),
    ("train log_every<0", lambda: _train(log_every=-1), ValueError, r"train: log_every"),
    ("train threads 1.5", lambda: _train(threads=1.5), TypeError, r"train: threads must be a whole number"),
    ("train threads 10**6", lambda: _train(threads=10**6), ValueError, r"train: threads must be a whole number"),
    ("train seed str", lambda: _train(seed="a"), TypeError, r"train: seed must be a whole number"),
    ("train model", lambda: __import__("labkit.training").training.train(3, lambda s, g: None, steps=1),
     TypeError, r"train: model must be a torch.nn.Module"),
    ("train batch", lambda: __import__("labkit.training").training.train(torch.nn.Linear(2, 2), 3, steps=1),
     TypeError, r"train: batch must be a function"),
    ("fixed_threads 0", lambda: __import__("labkit.training").training.fixed_threads(0).__enter__(),
     ValueError, r"fixed_threads: threads"),
    ("fixed_threads '2'", lambda: __import__("labkit.training").training.fixed_threads("2").__enter__(),
     TypeError, r"fixed_threads: threads"),
    ("relative_error broadcast", lambda: __import__("labkit").relative_error(torch.ones(3), torch.ones(2, 3)),
     ValueError, r"relative_error: actual and expected must have one shape"),
    ("relative_error list", lambda: __import__("labkit").relative_error([1.0], torch.ones(1)),
     TypeError, r"relative_error: actual must be a torch.Tensor"),
    ("relative_error meta", lambda: __import__("labkit").relative_error(torch.ones(2, device="meta"), torch.ones(2)),
     ValueError, r"relative_error: actual must be a dense tensor with values, got a meta"),
    ("relative_error sparse", lambda: __import__("labkit").relative_error(torch.eye(2).to_sparse(), torch.eye(2)),
     ValueError, r"got a sparse"),
    ("relative_error empty", lambda: __import__("labkit").relative_error(torch.ones(0), torch.ones(0)),
     ValueError, r"got an empty"),
    ("best_time str", lambda: __import__("labkit.timing").timing.best_time("x"), TypeError,
     r"best_time: the first argument must be a function"),
    ("time_call None", lambda: __import__("labkit.timing").timing.time_call(None), TypeError, r"time_call: "),
    ("best_step_times 3", lambda: __import__("labkit.timing").timing.best_step_times(3), TypeError,
     r"best_step_times: "),
    ("random_minimind dict", lambda: __import__("labkit.models").models.random_minimind({}), TypeError,
     r"random_minimind: config must be a MiniMindConfig"),
    ("random_minimind seed 2.5", lambda: __import__("labkit.models").models.random_minimind(_tiny(), seed=2.5),
     TypeError, r"random_minimind: seed must be a whole number"),
    ("random_minimind seed 2**70", lambda: __import__("labkit.models").models.random_minimind(_tiny(), seed=2**70),
     ValueError, r"random_minimind: seed must be a whole number"),
    ("random_minimind std<0", lambda: __import__("labkit.models").models.random_minimind(_tiny(), std=-1),
     ValueError, r"random_minimind: std"),
    ("random_attention None", lambda: __import__("labkit.models").models.random_attention(None), TypeError,
     r"random_attention: config must be a MiniMindConfig"),
    ("attention_scores model", lambda: _attention_scores(layer=torch.nn.Linear(2, 2)), TypeError,
     r"attention_scores: layer must be a minimind_ref Attention"),
    ("attention_scores x width", lambda: _attention_scores(torch.randn(1, 3, 5)), ValueError, r"hidden_size=16"),
    ("attention_scores x 2-D", lambda: _attention_scores(torch.randn(3, 16)), ValueError, r"must be 3-D"),
    ("attention_scores float64", lambda: _attention_scores(torch.randn(1, 3, 16, dtype=torch.float64)), TypeError,
     r"layer's weights are torch.float32"),
    ("NaiveConcatCache dict", lambda: __import__("labkit.memory").memory.NaiveConcatCache({}, 1), TypeError,
     r"NaiveConcatCache: config must be a MiniMindConfig"),
    ("NaiveConcatCache batch 2.0", lambda: _naive_cache(batch=2.0), TypeError, r"NaiveConcatCache: batch_size"),
    ("NaiveConcatCache layer -1", lambda: _naive_cache(layer=-1), ValueError, r"NaiveConcatCache.update: layer_idx"),
    ("NaiveConcatCache layer 5", lambda: _naive_cache(layer=5), ValueError, r"NaiveConcatCache.update: layer_idx"),
    ("NaiveConcatCache head_dim", lambda: _naive_cache(k=torch.zeros(1, 1, 2, 4)), ValueError,
     r"NaiveConcatCache.update: k must be \[batch=1, kv_heads=1, new tokens, head_dim=8\]"),
    ("NaiveConcatCache v length", lambda: _naive_cache(v=torch.zeros(1, 1, 3, 8)), ValueError,
     r"NaiveConcatCache.update: v must be"),
    ("print_table str headers", lambda: _table(headers="ab"), TypeError, r"print_table: headers must be a list"),
    ("print_table int rows", lambda: _table(rows=5), TypeError, r"print_table: rows must be a list"),
    ("print_table str row", lambda: _table(rows=["ab"]), TypeError, r"print_table: .*each a list"),
    ("print_table format", lambda: _table(formats=(".2f", ".2f")), ValueError,
     r"print_table: the format '.2f' of column 'name' cannot format 'a'"),
    ("Chip name", lambda: __import__("labkit.roofline").roofline.Chip(3, 1e12, 1e12, 10, "s"), TypeError,
     r"Chip: name must be a str"),
    ("flash_attn_splits 10**400", lambda: __import__("labkit.roofline").roofline.flash_attn_splits(1, 100, 10**400),
     ValueError, r"flash_attn_splits: key_blocks must be a whole number from 1"),
    ("decode grid 10**400", lambda: __import__("labkit.roofline").roofline.flash_attn_decode_grid(
        1, 8, 2, 10**400, 64, 132), ValueError, r"flash_attn_decode_grid: key_len"),
    ("check rtol 10**400", lambda: check("x", 1.0, 1.0, rtol=10**400), ValueError,
     r"check\(rtol=...\) must be a finite number >= 0"),
    ("interact 3", lambda: __import__("labkit.widgets").widgets.interact(3, a=1), TypeError,
     r"interact: the first argument must be the function"),
    ("interact unknown", lambda: __import__("labkit.widgets").widgets.interact(lambda factor: None, size=(1, 3)),
     TypeError, r"interact: <lambda> takes no argument named size"),
    ("show_in 3", lambda: __import__("labkit.widgets").widgets.show_in(3, "x"), TypeError,
     r"show_in: the first argument must be an ipywidgets Output"),
]


@pytest.mark.parametrize(("call", "error", "message"), [case[1:] for case in HOSTILE_KIT_CALLS],
                         ids=[case[0] for case in HOSTILE_KIT_CALLS])
def test_a_kit_function_names_a_wrong_argument_where_it_was_called(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_training_with_clip_0_does_not_clip_and_a_positive_clip_still_descends():
    from labkit.training import train

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    data = torch.randn(8, 4), torch.randint(0, 4, (8,))
    log = train(model, lambda step, generator: data, steps=20, lr=1e-1, clip=0)
    assert log.losses[-1] < log.losses[0]


def test_relative_error_of_equal_tensors_is_0_and_of_a_nonzero_against_zeros_inf():
    from labkit import relative_error

    assert relative_error(torch.zeros(3), torch.zeros(3)) == 0.0
    assert relative_error(torch.ones(3), torch.ones(3)) == 0.0
    assert relative_error(torch.ones(3), torch.zeros(3)) == math.inf
    assert relative_error(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0])) == 0.5


def test_numpy_numbers_are_taken_as_numbers_and_given_back_as_pythons():
    from labkit.roofline import Chip, intensity
    from labkit.timing import best_time

    assert type(intensity(np.float32(1), np.float32(2))) is float and intensity(np.int64(4), np.int64(1)) == 2.0
    chip = Chip("x", np.float64(1e12), np.float32(2e12), np.int64(10), "s")
    assert (type(chip.sms), type(chip.bf16_flops_sparse), type(chip.hbm_bytes_per_s)) == (int, float, float)
    assert best_time(lambda: None, repeats=np.int64(2), warmup=np.int8(0)) >= 0
    assert check("x", 1.0, 1.0, atol=np.float32(1e-3), rtol=np.float64(0)).passed
