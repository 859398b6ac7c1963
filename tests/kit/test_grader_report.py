"""What the grader's report tells a learner beyond the first difference: an input of the contract
that the layer ignores (named, not sent to module 01), a verdict about the reference's own code
(inherited or called), numbers with the digits that differ, and the learner's own prints below the
stage lines, never inside them."""

from __future__ import annotations

import inspect
import textwrap

import grader_styles
import pytest
import torch
from grader_styles import STYLES
from torch import nn

import labkit.grader.guard
import minimind_ref as mm
from labkit.grader import BY_KEY, LADDER, grade
from labkit.grader.__main__ import main
from labkit.grader.grade import _numbers

# -- the contract's inputs, ignored --------------------------------------------------------------

class Written(nn.Module):
    """A right layer, written out, whose handling of its inputs the classes below change: the
    angles it rotates with, the mask it attends with, where it keeps the keys and values. The
    attention itself is minimind_ref's function."""

    def __init__(self, config, layer_idx=0):
        super().__init__()
        self.layer_idx, self.config = layer_idx, config
        reference = mm.Attention(config, layer_idx)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (reference.q_proj, reference.k_proj, reference.v_proj,
                                                              reference.o_proj)
        self.q_norm, self.k_norm = reference.q_norm, reference.k_norm

    def angles(self, x, position_embeddings, cache):
        return position_embeddings

    def mask(self, attn_mask, x, cache):
        return attn_mask

    def store(self, cache, k, v):
        return cache.update(self.layer_idx, k, v)

    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        b, t, _ = x.shape
        h, kv, d = self.config.num_attention_heads, self.config.num_key_value_heads, self.config.head_dim
        q = self.q_proj(x).view(b, t, h, d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, kv, d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, kv, d).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        cos, sin = self.angles(x, position_embeddings, past_key_values)
        q, k = mm.apply_rotary_pos_emb(q, k, cos, sin)
        mask = self.mask(attn_mask, x, past_key_values)
        if past_key_values is not None:
            k, v = self.store(past_key_values, k, v)
        out, weights = mm.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None,
                                                       enable_gqa=True, return_weights=True)
        out = self.o_proj(out.transpose(1, 2).reshape(b, t, h * d))
        return out, weights if output_attentions else None


class OwnAngles(Written):
    """Builds its own RoPE table from the positions."""

    def angles(self, x, position_embeddings, cache):
        start = cache.get_seq_length(self.layer_idx) if cache is not None else 0
        cos, sin = mm.precompute_freqs_cis(self.config.head_dim, self.config.max_position_embeddings,
                                           self.config.rope_theta)
        return cos[start:start + x.shape[1]], sin[start:start + x.shape[1]]


class CausalAgain(Written):
    """Applies causality on top of the mask it is given."""

    def mask(self, attn_mask, x, cache):
        if attn_mask is None:
            return None
        start = cache.get_seq_length(self.layer_idx) if cache is not None else 0
        return attn_mask & mm.causal_mask(x.shape[1], start + x.shape[1])


class CacheOfItsOwn(Written):
    """Keeps the keys and values itself and never calls past_key_values.update."""

    kept = None

    def store(self, cache, k, v):
        if self.kept is not None:
            k, v = torch.cat([self.kept[0], k], dim=2), torch.cat([self.kept[1], v], dim=2)
        self.kept = (k, v)
        return k, v


@pytest.mark.parametrize("cls, key, words", [
    (OwnAngles, "own_angles", "not with the position_embeddings (cos, sin) it is given"),
    (CausalAgain, "causality_again", "use it as it is and build the causal mask only when attn_mask is None"),
])
def test_a_layer_that_ignores_an_input_of_the_contract_is_told_which(cls, key, words):
    report = grade(cls, quiet=True)
    text = str(report)
    assert report.stage.key == "one_head" and [m.key for m in report.misreads] == [key], text
    assert words in text and 'modules/10_capstone/README.md, "The contract"' in text
    assert "matches none of the" not in text  # not sent to read module 01's step


def test_a_layer_that_keeps_a_cache_of_its_own_is_stopped_at_its_first_cached_call():
    report = grade(CacheOfItsOwn, quiet=True)
    assert report.stage.key == "prefill_decode" and report.difference.call.startswith("prefill of 5 tokens")
    assert "past_key_values holds 0 more positions after your call, expected 5" in report.difference.error
    assert "k, v = past_key_values.update(self.layer_idx, k, v)" in report.difference.error


# -- a verdict about the reference's own code -----------------------------------------------------

class Delegates(nn.Module):
    """Holds the contract's parameters and hands the whole job to an inner minimind_ref.Attention
    that shares them (kept out of the state dict, so that the reference's weights load strictly)."""

    def __init__(self, config, layer_idx=0):
        super().__init__()
        inner = mm.Attention(config, layer_idx)
        object.__setattr__(self, "inner", inner)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = inner.q_proj, inner.k_proj, inner.v_proj, inner.o_proj
        self.q_norm, self.k_norm = inner.q_norm, inner.k_norm

    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        self.inner.train(self.training)
        return self.inner(x, position_embeddings, attn_mask, past_key_values, output_attentions)


def test_a_layer_that_inherits_or_delegates_to_the_reference_is_reported_as_such():
    class Inherits(mm.Attention):
        pass

    inherits = grade(Inherits, quiet=True)
    assert inherits.passed and inherits.inherits == ["minimind_ref.Attention"]
    assert "note: not all of this is your code: Inherits inherits from minimind_ref.Attention;" in str(inherits)

    delegates = grade(Delegates, quiet=True)
    assert delegates.passed and delegates.inherits == []
    assert {"minimind_ref: Attention.forward", "minimind_ref: Attention.split_heads"} <= set(delegates.borrowed)
    assert (f"{len(delegates.borrowed)} of the reference's functions ran in it (minimind_ref's Attention.__init__, "
            f"Attention.forward, Attention.split_heads and {len(delegates.borrowed) - 3} more)") in str(delegates)

    function = grade(Written, quiet=True)
    assert function.passed and "minimind_ref: scaled_dot_product_attention" in function.borrowed


@pytest.mark.parametrize("cls", STYLES[:1], ids=lambda cls: cls.__name__)
def test_a_layer_of_ones_own_gets_no_note(cls):
    report = grade(cls, quiet=True)
    assert report.passed and report.inherits == [] and report.borrowed == []
    assert "note:" not in str(report)


# Graded from a file (make grade), the worker's profiler is on from the import to the end, while the
# grader also builds its own reference there: only what runs inside the learner's calls is theirs.
FILE_HEADER = "import minimind_ref as mm\nfrom torch import nn\n\n\n"


@pytest.mark.parametrize("source, class_name, note", [
    (None, "EinsumAttention", None),
    ("class Inherits(mm.Attention):\n    pass\n", "Inherits",
     "note: not all of this is your code: Inherits inherits from minimind_ref.Attention;"),
    (textwrap.dedent(inspect.getsource(Delegates)), "Delegates",
     "of the reference's functions ran in it (minimind_ref's Attention.__init__, Attention.forward, "
     "Attention.split_heads and "),
], ids=["written-from-scratch", "inherits", "delegates"])
def test_graded_from_a_file_only_the_learners_own_calls_count_as_borrowing(source, class_name, note, tmp_path,
                                                                           capsys):
    path = tmp_path / "my_attention.py"
    if source is None:
        path = grader_styles.__file__
    else:
        path.write_text(FILE_HEADER + source)
    assert main([str(path), "--class", class_name]) == 0
    out, err = capsys.readouterr()
    assert f"✓ {class_name}: right." in out and err == ""
    if note is None:
        assert "note:" not in out and "ran in it" not in out
    else:
        assert note in out


class DelegatesAndSaysItIsDone(Delegates):
    """Calls the guard's own mark that the learner's code has returned before it hands on the job."""

    def forward(self, *args):
        labkit.grader.guard._grader_runs()
        return super().forward(*args)


def test_a_layer_cannot_say_its_own_calls_are_over():
    report = grade(DelegatesAndSaysItIsDone, quiet=True)
    assert report.passed and "minimind_ref: Attention.forward" in report.borrowed


def test_the_graders_own_planted_mistakes_stand_for_a_learners_layer_without_a_note():
    report = grade(BY_KEY["repeat_tiled"].plant, quiet=True)
    assert report.planted and report.inherits[0] == "labkit.grader.mistakes.RepeatTiled"
    assert "note:" not in str(report)


# -- numbers with the digits that differ ----------------------------------------------------------

def test_the_numbers_shown_differ_in_their_last_digit():
    assert _numbers(0.42912, 0.42907) == ("0.42912", "0.42907")
    assert _numbers(0.5, 0.25) == ("0.5", "0.25") and _numbers(3, 4) == ("3", "4")
    assert _numbers(float("nan"), 0.1) == ("NaN", "0.1")

    class SlightlyLouder(mm.Attention):
        def forward(self, *args):
            out, weights = super().forward(*args)
            return out * (1 + 4e-4), weights  # just past the tolerance

    report = grade(SlightlyLouder, quiet=True)
    line = next(line for line in str(report).splitlines() if line.startswith("  expected "))
    expected, actual = line.removeprefix("  expected ").split(", got ")
    assert expected != actual and float(expected) == pytest.approx(report.difference.expected, rel=1e-3), line


# -- the learner's prints, below the stage lines --------------------------------------------------

def test_the_learners_prints_go_below_the_stage_line_never_into_it(capsys):
    class Chatty(mm.Attention):
        def forward(self, x, *args):
            print("x:", tuple(x.shape))
            return super().forward(x, *args)

    stages = LADDER[:2]
    grade(Chatty, stages=stages)
    out = capsys.readouterr().out.splitlines()
    stage_lines = [line for line in out if line.startswith("  stage ")]
    assert [line.split(": ", 1)[1] for line in stage_lines] == [f"{s.title} ... ✓" for s in stages]
    below = out[out.index(stage_lines[0]) + 1:out.index(stage_lines[1])]
    assert below[0].startswith("    your code printed ") and below[1] == "    | x: (2, 5, 64)", below
    assert all(line.startswith("    ") for line in below)
