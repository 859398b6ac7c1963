"""The capstone's grader (labkit.grader): the reference passes every stage, every planted mistake
is caught at its stage and named, the report places the difference, and a class or file that
cannot be graded is a usage error (exit 2) that says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import minimind_ref as mm
from labkit.grader import BY_KEY, CATALOGUE, LADDER, STAGE, GraderUsageError, grade, stage_number
from labkit.grader.__main__ import main
from labkit.grader.ladder import run_stage

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cls", [mm.Attention], ids=["minimind_ref"])
def test_the_reference_passes_every_stage(cls, capsys):
    report = grade(cls)
    assert report.passed and [s.key for s in report.passed_stages] == [s.key for s in LADDER]
    out = capsys.readouterr().out.splitlines()
    stages = out[:len(LADDER)]
    assert [line.split(": ", 1)[1] for line in stages] == [f"{s.title} ... ✓" for s in LADDER]  # a line per stage
    assert out[len(LADDER)].startswith(f"✓ {cls.__name__}: right. It passes all {len(LADDER)} stages")
    # the verdict is about the reference's own code, and says so
    assert report.inherits == ["minimind_ref.Attention"] and "minimind_ref: Attention.forward" in report.borrowed
    assert out[-1].startswith("  note: not all of this is your code: Attention is minimind_ref.Attention;")


def test_a_stage_draws_the_same_model_and_random_state_from_the_cache_as_afresh():
    """The grader draws each stage's random MiniMind once per process (grade.drawn_once): what a
    stage gets from it, the weights and torch's random state after them, where the stage's dropout
    starts, is what drawing it again gives."""
    from labkit.grader.grade import drawn_once
    from labkit.models import random_minimind

    config = LADDER[0].make_config()
    for _ in range(2):
        torch.manual_seed(123)  # whatever the state before
        cached = drawn_once(config, 7)
        after_cache = torch.get_rng_state()
        fresh = random_minimind(config, 7)
        assert torch.equal(after_cache, torch.get_rng_state())
        assert all(torch.equal(a, b) for a, b in zip(cached.state_dict().values(), fresh.state_dict().values()))
    assert drawn_once(config, 7) is cached and drawn_once(config, 8) is not cached


def test_the_ladder_checks_the_forward_cheapest_first_then_the_backward():
    assert len(LADDER) == 11 and LADDER[0].key == "one_head"
    assert LADDER[-2].key == "whole_model" and LADDER[-1].key == "backward"  # gradients once the forward is right
    heads = [s.make_config().num_attention_heads for s in LADDER[:3]]
    assert heads == [1, 4, 4] and LADDER[2].make_config().num_key_value_heads == 2
    assert LADDER[8].make_config().qk_norm and not any(s.make_config().qk_norm for s in LADDER[:8])


@pytest.mark.parametrize("mistake", CATALOGUE, ids=lambda m: m.key)
def test_every_planted_mistake_is_caught_at_its_stage_and_named(mistake):
    report = grade(mistake.plant, quiet=True)
    assert not report.passed
    assert report.stage.key == mistake.stage, f"caught at {report.stage.key}"
    assert report.matches == [mistake], [m.key for m in report.matches]
    assert [s.key for s in report.passed_stages] == [s.key for s in LADDER[:stage_number(report.stage) - 1]]
    text = str(report)
    assert f"diagnosis: {mistake.title}." in text and f"modules/{mistake.module}/README.md" in text


def test_the_catalogue_lists_every_mistake_the_issue_names_with_a_module_that_exists():
    wanted = {"unscaled", "scaled_by_d", "keys_not_transposed", "softmax_over_queries", "top_left_causal",
              "mask_after_softmax", "minus_billion_fp16", "rope_on_values", "rope_interleaved",
              "positions_from_zero", "repeat_tiled", "merge_without_transpose", "view_non_contiguous",
              "cache_on_heads_axis"}
    assert wanted <= set(BY_KEY)
    for mistake in CATALOGUE:
        assert (ROOT / "modules" / mistake.module / "README.md").is_file()
        assert mistake.stage in STAGE and mistake.diagnosis.count(". ") == 0, mistake.key  # one sentence
        assert issubclass(mistake.plant, mm.Attention)


def test_the_report_places_the_difference():
    report = grade(BY_KEY["repeat_tiled"].plant, quiet=True)
    assert report.difference.quantity == "attention weights"
    assert report.difference.where == {"batch": 0, "query": 0, "head": 1, "key": 0}  # head 1 reads KV head 1
    decode = grade(BY_KEY["top_left_causal"].plant, quiet=True).difference
    assert decode.call.startswith("step 1") and decode.where["query"] == 5  # the first decoded position
    assert decode.actual == pytest.approx(1.0)  # sees key 0 only
    text = str(grade(BY_KEY["rope_on_values"].plant, quiet=True))
    assert "first difference, in the heads before o_proj: layer 0, sequence 0, query position 0, head 0" in text


def test_an_unknown_mistake_is_located_but_not_named():
    class Louder(mm.Attention):
        def forward(self, *args):
            out, weights = super().forward(*args)
            return out * 1.01, weights

    report = grade(Louder, quiet=True)
    assert report.stage.key == "one_head" and report.matches == [] and report.difference.quantity == "output"
    assert "matches none of the" in str(report)


def test_a_class_not_written_yet_says_not_yet():
    class MyAttention(nn.Module):
        def __init__(self, config, layer_idx=0):
            super().__init__()
            raise NotImplementedError("your code here")

        def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
            raise NotImplementedError

    report = grade(MyAttention, quiet=True)
    assert report.unfinished and not report.passed
    assert "not yet" in str(report) and "not filled in yet" in str(report)


def test_missing_qk_norm_parameters_fail_stage_9_not_the_usage():
    class NoNorms(mm.Attention):
        def __init__(self, config, layer_idx=0):
            super().__init__(mm.MiniMindConfig(**{**config.to_dict(), "qk_norm": False}), layer_idx)

    report = grade(NoNorms, quiet=True)
    assert report.stage.key == "qk_norm" and "q_norm.weight" in report.difference.error


@pytest.mark.parametrize("cls, words", [
    (int, "derived from torch.nn.Module"),
    (type("NoLayerIdx", (nn.Module,), {"__init__": lambda self, config, a, b: None}), "(config, layer_idx)"),
    (type("ShortForward", (mm.Attention,), {"forward": lambda self, x, position_embeddings: x}), "forward must take"),
])
def test_a_class_that_cannot_be_plugged_in_is_refused(cls, words):
    with pytest.raises(GraderUsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        grade(cls, quiet=True)


def test_parameters_named_otherwise_are_refused_naming_them():
    class Renamed(mm.Attention):
        def __init__(self, config, layer_idx=0):
            super().__init__(config, layer_idx)
            self.wq = self.q_proj
            del self.q_proj

    with pytest.raises(GraderUsageError, match=r"it lacks q_proj.weight and it has wq.weight besides"):
        grade(Renamed, quiet=True)


# -- the command line: python -m labkit.grader FILE (make grade FILE=...) -------------------------

HEADER = "from minimind_ref import Attention\nfrom labkit.grader.mistakes import RepeatTiled\n\n"


@pytest.mark.parametrize("body, status", [
    ("class MyAttention(Attention):\n    pass\n", 0),
    ("class MyAttention(RepeatTiled):\n    pass\n", 1),
])
def test_the_command_line_exits_0_when_right_and_1_at_a_failed_stage(tmp_path, capsys, body, status):
    path = tmp_path / "my_attention.py"
    path.write_text(HEADER + body)
    assert main([str(path)]) == status
    out = capsys.readouterr().out
    assert "\n✓ MyAttention: right." in out if status == 0 else "repeat_kv in the wrong order" in out


def _not_a_file(tmp_path: Path, kind: str) -> str:
    """A path that is no .py file: a folder, a named pipe, a device, links that lead nowhere."""
    path = tmp_path / "mine.py"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        return "/dev/zero"
    elif kind == "device behind a link":
        path.symlink_to("/dev/zero")
    elif kind == "loop of links":
        path.symlink_to(tmp_path / "other.py")
        (tmp_path / "other.py").symlink_to(path)
    elif kind == "link to nothing":
        path.symlink_to(tmp_path / "gone.py")
    elif kind in ("empty", "blank"):
        return "" if kind == "empty" else "  "
    elif kind == "through a file":
        (tmp_path / "file").write_text("")
        return str(tmp_path / "file" / "mine.py")
    return str(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX paths")
@pytest.mark.parametrize("kind, words", [
    ("folder", "is a folder, not a file"),
    ("fifo", "is a named pipe (FIFO), which the grader would wait on for ever"),
    ("device", "/dev/zero is a device (such as /dev/zero), which the grader would read for ever"),
    ("device behind a link", "(a symbolic link to /dev/zero) is a device"),
    ("loop of links", "is a loop of symbolic links"),
    ("link to nothing", "gone.py, which does not exist"),
    ("through a file", "runs through a file as if it were a folder"),
    ("empty", "the file's path is empty"),  # Path("") is the current folder, which nobody meant
    ("blank", "the file's path is empty"),
])
def test_a_path_that_is_no_python_file_is_named_before_it_is_opened(tmp_path, capsys, kind, words):
    """A FIFO or /dev/zero would be read for ever: each is refused by what it is, at once, not as
    "no such file"."""
    assert main([_not_a_file(tmp_path, kind)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage error: ") and words in err and "no such file" not in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, args, words", [
    (None, [], "no such file"),
    ("import nowhere_to_be_found\n", [], "does not import: ModuleNotFoundError"),
    ("x = 1\n", [], "must define exactly one nn.Module class"),
    (HEADER + "class A(Attention):\n    pass\n\nclass B(Attention):\n    pass\n", [], "it defines A, B"),
    (HEADER + "class A(Attention):\n    pass\n", ["--class", "C"], "--class C"),
    ("from torch import nn\n\nclass A(nn.Module):\n    def __init__(self):\n        super().__init__()\n", [],
     "(config, layer_idx)"),
])
def test_the_command_line_names_a_usage_mistake_and_exits_2(tmp_path, capsys, content, args, words):
    path = tmp_path / "mine.py"
    if content is not None:
        path.write_text(content)
    assert main([str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage error: ") and words in err and len(err.strip().splitlines()) == 1


def test_the_command_line_runs_as_a_module(tmp_path):
    path = tmp_path / "my_attention.py"
    path.write_text(HEADER + "class MyAttention(RepeatTiled):\n    pass\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # no wall-clock limit of its own: the grader bounds every call and its worker's start itself
    result = subprocess.run([sys.executable, "-m", "labkit.grader", str(path)], capture_output=True, text=True,
                            env=env, cwd=tmp_path)
    assert result.returncode == 1 and f"stage 3 of {len(LADDER)}, grouped key/value heads, fails" in result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_grade_without_file_explains_before_building_the_venv(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "ATTENTION_LAB_LANG"}
    result = subprocess.run(["make", "-s", "-C", str(tmp_path), "grade", "LANG=C.UTF-8", f"PYTHON={sys.executable}"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert "make grade needs your file, as in: make grade FILE=path/to/my_attention.py" in result.stderr
    assert not (tmp_path / ".venv").exists()


def test_half_precision_is_what_exposes_the_minus_billion_fill():
    """Stage 6 runs in float16 after float32: the same -1e9 that float32 absorbs cannot be stored."""
    assert torch.finfo(torch.float16).max < 1e9 < torch.finfo(torch.float32).max
    report = grade(BY_KEY["minus_billion_fp16"].plant, quiet=True)
    assert report.difference.episode == "the same batch in float16" and "Half" in report.difference.error


# -- the backward pass (stage 11): a right forward with a wrong backward ---------------------------

BACKWARD = [m for m in CATALOGUE if m.stage == "backward"]


def test_at_least_two_mistakes_have_a_right_forward_and_a_wrong_backward():
    assert {"detached_keys", "scaled_under_no_grad", "softmax_zeroed_in_place"} <= {m.key for m in BACKWARD}
    forward = tuple(s for s in LADDER if s.key != "backward")
    for mistake in BACKWARD:  # every forward stage passes, the whole model included
        assert grade(mistake.plant, quiet=True, stages=forward).passed, mistake.key


def test_a_detached_path_is_named_by_the_weight_that_gets_no_gradient():
    difference = grade(BY_KEY["detached_keys"].plant, quiet=True).difference
    # the backward pass reaches k_norm (after k_proj in the forward) first
    assert difference.quantity == "gradient of k_norm.weight" and "receives no gradient" in difference.error


def test_a_scale_hidden_from_autograd_multiplies_the_query_and_key_gradients_by_sqrt_d():
    report = grade(BY_KEY["scaled_under_no_grad"].plant, quiet=True)
    difference, head_dim = report.difference, report.stage.make_config().head_dim
    assert difference.quantity == "gradient of q_norm.weight" and difference.where == {"dimension": 0}
    assert difference.actual / difference.expected == pytest.approx(head_dim ** 0.5, rel=1e-4)
    # o_proj and v_proj do not pass through the scores: their gradients are right
    assert difference.largest["gradient of o_proj.weight"] < 1e-5
    assert difference.largest["gradient of v_proj.weight"] < 1e-5
    assert "in the gradient of q_norm.weight: layer 0, dimension 0" in str(report)
    # every gradient through the scores is exactly sqrt(D) times the reference's, the others are right
    planted, reference = (run_stage(cls, report.stage) for cls in (BY_KEY["scaled_under_no_grad"].plant, mm.Attention))
    through_scores = ("q_norm.weight", "k_norm.weight", "q_proj.weight", "k_proj.weight")
    for key, want in reference.items():
        for name, grad in want.grads.items():
            factor = head_dim ** 0.5 if name in through_scores else 1
            if name != "x":
                torch.testing.assert_close(planted[key].grads[name], grad * factor, rtol=1e-4, atol=1e-5, msg=name)


def test_an_in_place_change_autograd_needs_is_an_error_in_the_backward():
    difference = grade(BY_KEY["softmax_zeroed_in_place"].plant, quiet=True).difference
    assert difference.quantity == "error" and "the backward pass raises RuntimeError" in difference.error
    assert "modified by an inplace operation" in difference.error and "Hint" not in difference.error


def test_a_wrong_weight_gradient_is_placed_by_head_row_and_column():
    class HalfValueGradient(mm.Attention):  # a straight-through: same value, half the gradient
        def merge_heads(self, out):
            return super().merge_heads(out * 0.5 + (out * 0.5).detach())

    report = grade(HalfValueGradient, quiet=True)
    difference = report.difference
    assert report.stage.key == "backward" and report.matches == []
    assert difference.quantity == "gradient of v_proj.weight"  # o_proj's gradient sees the value, not the path
    assert set(difference.where) == {"head", "row", "column"} and difference.where["head"] == 0
    assert difference.actual == pytest.approx(difference.expected / 2, rel=1e-4)


def test_an_output_cut_from_the_graph_is_named():
    class Frozen(mm.Attention):
        def forward(self, *args):
            out, weights = super().forward(*args)
            return out.detach(), weights

    report = grade(Frozen, quiet=True)
    assert report.stage.key == "backward" and "the output does not require grad" in report.difference.error
