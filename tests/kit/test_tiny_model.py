"""The course's tiny trained MiniMind (tiny_model.py, tiny_data.py, tiny_heads.py): its data, its
reproducible training, the committed checkpoint and the head scores that module 09's exercises check.

Training the full model takes minutes, so here it is exercised at a reduced size (a few steps,
trained twice, identical bytes) and by its first steps (the weights after them are saved beside
the checkpoint when it is made): bit for bit on a machine with the fingerprint the report records,
within measured bounds on any other (reproduction.py). The full rebuild is `make train-tiny
ARGS=--check`, which retrains and compares with the committed file the same way.
"""

from __future__ import annotations

import json
import math
import sys

import pytest
import torch

from labkit import tiny_data as td
from labkit import tiny_heads as th
from labkit import tiny_model as tm
from labkit.training import IGNORE_INDEX

SMALL = tm.Recipe(steps=3, warmup=1, batch_size=4, seq_len=32, synthetic=2)


@pytest.fixture(scope="module")
def trained():
    return tm.load_tiny_model()


@pytest.fixture(scope="module")
def report():
    return tm.load_report()


# ------------------------------------------------------------------------------------- data


def test_tokenizer_is_bytes_plus_bos():
    tok = td.ByteTokenizer()
    ids = tok.encode("a b\né")
    assert ids == [td.BOS, 97, 32, 98, 10, 0xC3, 0xA9]
    assert tok.decode(ids) == "a b\né"
    assert tok.labels(ids[:5]) == ["<s>", "a", "␣", "b", "↵"]
    assert tok.labels([9, 0xC3]) == ["⇥", "\\xc3"]
    with pytest.raises(ValueError, match="token ids"):
        tok.decode([300])


def same_text_or_skip(report):
    """The stdlib files are the same in CPython 3.10, 3.11 and 3.12 (checked when they were chosen);
    another Python may hold other versions of them, and then cannot rebuild the checkpoint."""
    if (td.text_sha256() != report["depends_on"]["text_sha256"]
            and sys.version_info[:2] not in ((3, 10), (3, 11), (3, 12))):
        pytest.skip(f"Python {sys.version_info[0]}.{sys.version_info[1]}'s standard-library files differ from "
                    f"those the checkpoint was trained on")


def test_the_text_is_the_recorded_one_and_held_out_by_file(report):
    assert not set(td.TRAIN_FILES) & set(td.HELD_OUT_FILES)
    same_text_or_skip(report)
    assert td.text_sha256() == report["depends_on"]["text_sha256"], (
        "this Python's standard-library files differ from those the checkpoint was trained on")
    train, held = td.train_text(), td.held_out_text()
    assert train.numel() > 300_000 and held.numel() > 20_000
    assert int(train.max()) < 128 and int(held.max()) < 128  # all ASCII


def test_a_batch_mixes_code_and_repeated_spans_and_ignores_the_unpredictable_at_first():
    mix = td.DataMix(batch_size=6, seq_len=40, synthetic=3, first_copy_from=5)
    batch = mix.batch_fn(td.train_text())
    inputs, targets = batch(0, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (6, 39)
    assert (inputs[:, 0] == td.BOS).all()
    assert (targets[:3] != IGNORE_INDEX).all()  # code: every next byte counts
    for row, target in zip(inputs[3:], targets[3:]):
        tokens = row[1:].tolist()
        span = next(n for n in range(2, len(tokens)) if tokens[n] == tokens[0])  # the period
        assert len(set(tokens[:span])) == span  # distinct characters within the span
        kept = (target != IGNORE_INDEX).nonzero().flatten()
        assert kept.min().item() == span + 1  # from the 2nd token of the 2nd copy on
        assert torch.equal(target[kept], torch.cat([row[1:], target[-1:]])[kept])
    later_inputs, later_targets = batch(5, torch.Generator().manual_seed(0))
    assert torch.equal(later_inputs, inputs)  # the same draws: only the scoring changed
    assert (later_targets != IGNORE_INDEX).all()
    assert torch.equal(later_targets[:, :-1], later_inputs[:, 1:])


# ------------------------------------------------------------------------ bit for bit


def test_training_twice_gives_identical_bytes_at_a_reduced_size():
    first, log_first = tm.train_tiny(SMALL)
    second, log_second = tm.train_tiny(SMALL)
    assert log_first.losses == log_second.losses
    assert tm.checkpoint_bytes(first, SMALL) == tm.checkpoint_bytes(second, SMALL)
    other, _ = tm.train_tiny(tm.Recipe(steps=3, warmup=1, batch_size=4, seq_len=32, synthetic=2, seed=1))
    assert tm.checkpoint_bytes(other, SMALL) != tm.checkpoint_bytes(first, SMALL)


def test_the_first_steps_of_the_committed_recipe_are_reproduced(report):
    """The weights after the first steps of the real run are the saved ones, within the measured
    bounds (bit for bit only on a machine whose full fingerprint the report records: see
    test_the_checkpoint_is_small_safe_and_the_one_reported)."""
    same_text_or_skip(report)
    assert report["prefix_check"]["steps"] == tm.PREFIX_STEPS
    assert tm.sha256_of(tm.prefix_path(tm.CHECKPOINT)) == report["prefix_check"]["sha256"]
    result = tm.reproduce_prefix()
    assert result.passed, "\n".join(result.lines())
    assert result.check == "within tolerance", result.lines()


@pytest.fixture
def small_checkpoint(tmp_path):
    """A checkpoint trained for 2 steps by `make train-tiny`'s own code, with its report and prefix."""
    path = tmp_path / "tiny.safetensors"
    assert tm.main(["--steps", "2", "--out", str(path), "--no-progress"]) == 0
    return path


def test_the_same_machine_asks_for_the_same_bytes(small_checkpoint):
    result = tm.reproduce_prefix(small_checkpoint)
    assert result.check == "bit for bit" and result.passed, result.lines()
    data = bytearray(tm.prefix_path(small_checkpoint).read_bytes())
    data[-1] ^= 1  # one bit of the last weight
    tm.prefix_path(small_checkpoint).write_bytes(bytes(data))
    result = tm.reproduce_prefix(small_checkpoint)
    assert result.check == "bit for bit" and not result.passed


def test_another_machine_is_held_to_the_measured_bounds_and_told_why(small_checkpoint, monkeypatch):
    here = tm.machine_fingerprint(tm.THREADS)
    monkeypatch.setattr(tm, "machine_fingerprint", lambda threads: {**here, "cpu": "another CPU"})
    result = tm.reproduce_prefix(small_checkpoint)
    assert result.check == "within tolerance" and result.passed, result.lines()
    assert "cpu:" in result.reason and "'another CPU' here" in result.reason
    assert "relative distance 0.0e+00" in result.lines()[2]

    from safetensors.torch import load_file, save_file

    prefix = tm.prefix_path(small_checkpoint)
    weights = load_file(str(prefix))
    name = "model.layers.0.self_attn.q_proj.weight"
    weights[name] = weights[name] * (1 + 1e-3)  # as a slightly different recipe would move it
    save_file(weights, str(prefix), metadata=tm._header(tm.build_model(), tm.Recipe.with_steps(2)))
    result = tm.reproduce_prefix(small_checkpoint)
    assert result.check == "within tolerance" and not result.passed, result.lines()


def test_a_rebuild_with_another_seed_is_far_outside_the_bounds():
    """The bounds have teeth: a changed seed lands about 1 away, the bound is 1e-5."""
    recipe = tm.Recipe()
    first, _ = tm.train_tiny(recipe, steps=2)
    other, _ = tm.train_tiny(tm.Recipe(seed=1), steps=2)
    from labkit.reproduction import weight_distance

    assert weight_distance(tm._tensors(other), tm._tensors(first)) > 1e4 * tm.PREFIX_WEIGHTS_RTOL


def test_stopping_early_outside_the_warm_up_is_refused():
    with pytest.raises(ValueError, match="schedule"):
        tm.train_tiny(tm.Recipe(), steps=tm.Recipe.warmup + 1)


def test_the_command_line_trains_saves_and_reports(tmp_path, capsys):
    out = tmp_path / "tiny.safetensors"
    assert tm.main(["--steps", "2", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "held-out loss" in printed and "greedy samples" in printed and "induction head" in printed
    info = json.loads(out.with_suffix(".json").read_text())
    assert info["sha256"] == tm.sha256_of(out) and info["recipe"]["steps"] == 2
    model, _ = tm.load_tiny_model(out)
    assert tm.checkpoint_bytes(model, tm.Recipe(**info["recipe"])) == out.read_bytes()


def test_check_retrains_by_the_checkpoints_own_recipe_and_says_which_check(small_checkpoint, monkeypatch, capsys):
    """`make train-tiny ARGS=--check`, on a checkpoint trained for 2 steps: the same bytes pass, a
    changed byte fails; on another machine the bounds apply, and the output says so."""
    monkeypatch.setattr(tm, "CHECKPOINT", small_checkpoint)
    capsys.readouterr()
    assert tm.main(["--check", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert ("Check applied: bit for bit (this machine's fingerprint matches" in printed
            and "Result: reproduced." in printed)
    here = tm.machine_fingerprint(tm.THREADS)
    monkeypatch.setattr(tm, "machine_fingerprint", lambda threads: {**here, "blas": "openblas"})
    assert tm.main(["--check", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "Check applied: within tolerance (made on another machine: blas:" in printed
    assert "ok   first 1 steps, within tolerance: reproduced" in printed and "ok   held-out loss" in printed
    assert "Result: reproduced." in printed
    report_path = small_checkpoint.with_suffix(".json")
    info = json.loads(report_path.read_text())
    report_path.write_text(json.dumps({**info, "held_out_loss": info["held_out_loss"] + 0.5}))  # another model
    assert tm.main(["--check", "--no-progress"]) == 1
    printed = capsys.readouterr().out
    assert "FAIL held-out loss" in printed and "Result: NOT reproduced." in printed
    report_path.write_text(json.dumps(info))
    monkeypatch.undo()
    monkeypatch.setattr(tm, "CHECKPOINT", small_checkpoint)
    data = bytearray(small_checkpoint.read_bytes())
    data[-1] ^= 1  # one bit of the last weight
    small_checkpoint.write_bytes(bytes(data))
    assert tm.main(["--check", "--no-progress"]) == 1
    assert "Result: NOT reproduced." in capsys.readouterr().out


# ----------------------------------------------------------------------- the checkpoint


def test_the_checkpoint_is_small_safe_and_the_one_reported(report):
    path = tm.CHECKPOINT
    assert path.stat().st_size <= 5 * 2**20
    assert tm.sha256_of(path) == report["sha256"] and path.stat().st_size == report["bytes"]
    header = tm.checkpoint_metadata(path)
    assert header["recipe"] == report["recipe"] and header["threads"] == tm.THREADS
    assert header["text_sha256"] == report["depends_on"]["text_sha256"]
    fingerprint = set(tm.machine_fingerprint(tm.THREADS))
    # where the reference prefix was made; recorded before the CPU's family, model, stepping and
    # flags were, so no machine can match it in full and every machine checks it within tolerance
    assert set(report["prefix_check"]["made_on"]) <= fingerprint
    # the committed checkpoint predates fingerprints: its machine is not recorded, so a full rebuild
    # anywhere is compared within tolerance (`make train-tiny` records it from now on)
    assert report["made_on"] is None or set(report["made_on"]) == fingerprint
    assert len(report["prefix_check"]["losses"]) == tm.PREFIX_STEPS


def test_the_checkpoint_loads_into_the_tiny_model(trained, report):
    model, tokenizer = trained
    assert not model.training
    assert tm.parameter_count(model) == report["parameters"]
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied, saved once
    assert model.config.to_dict() == tm.tiny_config().to_dict()


def test_a_missing_checkpoint_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="make train-tiny") as missing:
        tm.load_tiny_model(tmp_path / "nothing.safetensors")
    assert "saved to labkit/checkpoints/tiny_minimind.safetensors" in str(missing.value)


def test_a_script_without_the_checkpoint_exits_2_with_that_message(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        tm.load_tiny_model_or_exit(tmp_path / "nothing.safetensors")
    assert stop.value.code == 2
    assert "make train-tiny" in capsys.readouterr().err


def test_a_script_gets_the_same_model_as_load_tiny_model(trained):
    model, tokenizer = tm.load_tiny_model_or_exit()
    assert not model.training and type(tokenizer) is type(trained[1])
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), trained[0].state_dict().values()))


def test_it_learned_something(trained, report):
    model, tokenizer = trained
    loss = tm.held_out_loss(model)
    assert loss == pytest.approx(report["held_out_loss"], abs=1e-3)
    assert loss < 0.5 * math.log(td.VOCAB_SIZE)
    probe = th.repeated_probe()
    assert th.repeat_loss(model, probe, 24) < 0.1 * math.log(len(td.PRINTABLE))  # induction works
    samples = tm.greedy_samples(model, tokenizer)
    assert [s["completion"] for s in report["samples"]] == [c for _, c in samples]
    prompt, completion = samples[-1]
    assert prompt == "Zq8#mW!v2Zq8#m" and completion.startswith("W!v2Zq8#mW!v2")  # continues the span


# -------------------------------------------------------------------------- head scores


def test_scores_of_planted_patterns_are_one():
    T, span = 9, 4
    previous = torch.zeros(T, T)
    previous[0, 0] = 1
    previous[torch.arange(1, T), torch.arange(T - 1)] = 1
    first = torch.zeros(T, T)
    first[:, 0] = 1
    induction = torch.zeros(T, T)
    induction[torch.arange(T), torch.arange(T)] = 1
    queries = torch.arange(span + 1, T)
    induction[queries] = 0
    induction[queries, queries - span + 1] = 1
    assert th.previous_token_scores(previous).item() == 1 and th.first_token_scores(previous).item() == 1 / 8
    assert th.first_token_scores(first).item() == 1 and th.previous_token_scores(first).item() == pytest.approx(1 / 8)
    assert th.induction_scores(induction, span).item() == 1 and th.induction_scores(previous, span).item() == 0
    stacked = torch.stack([previous, first, induction])[None]  # [1, 3, T, T]
    assert th.previous_token_scores(stacked).shape == (1, 3)
    with pytest.raises(ValueError, match="span"):
        th.induction_scores(induction, 8)
    with pytest.raises(ValueError, match="T, T"):
        th.first_token_scores(torch.zeros(3, 4))


def test_the_head_scores_are_the_reported_ones(trained, report):
    model, _ = trained
    scores = th.measure_head_scores(model)
    for name in ("previous", "induction", "first"):
        torch.testing.assert_close(getattr(scores, name), torch.tensor(report["head_scores"][name]), atol=1e-4, rtol=0)
    assert list(scores.previous_token_head) == report["previous_token_head"]
    assert [list(h) for h in scores.induction_heads()] == report["induction_heads"]
    assert list(scores.sink_head) == report["sink_head"]


def test_each_head_the_exercises_ask_for_is_clear(trained):
    """Module 09's exercises name these heads; each must stand out on any probe, not by a hair."""
    model, _ = trained
    for seed in range(6):
        scores = th.measure_head_scores(model, seed=seed)
        for values in (scores.previous, scores.first):  # named by their largest score
            best, second = values.flatten().topk(2).values.tolist()
            assert best > 0.5 and best - second > 0.2, (seed, values)
        induction = scores.induction.flatten()
        strong, weak = induction[induction > 0.5], induction[induction <= 0.5]
        assert len(strong) >= 2 and strong.min() > 0.8 and weak.max() < 0.3, (seed, induction)
        assert all(layer >= 1 for layer, _ in scores.induction_heads()), "induction needs an earlier layer"
        assert scores.previous_token_head[0] == 0 and scores.sink_head not in scores.induction_heads()


def test_ablating_a_head_replaces_only_its_slice_and_is_undone(trained):
    model, _ = trained
    ids = th.repeated_probe(count=2, span=8)
    before = model(ids).logits
    layer, head = 1, 0
    attention = model.model.layers[layer].self_attn
    D = attention.head_dim
    seen = {}
    plain = attention.o_proj.register_forward_pre_hook(lambda m, inputs: seen.update(plain=inputs[0]))
    model(ids)
    plain.remove()
    for mode in ("zero", "mean"):
        with th.ablated(model, [(layer, head)], mode):  # the capture runs after the ablation's hook
            hook = attention.o_proj.register_forward_pre_hook(lambda m, inputs: seen.update(x=inputs[0]))
            during = model(ids).logits
        hook.remove()
        part = seen["x"][..., head * D:(head + 1) * D]
        expected = 0.0 if mode == "zero" else seen["plain"][..., head * D:(head + 1) * D].mean(dim=(0, 1))
        assert torch.equal(part, torch.zeros_like(part) + expected)
        assert torch.equal(seen["x"][..., (head + 1) * D:], seen["plain"][..., (head + 1) * D:])
        assert not torch.equal(before, during)
    assert torch.equal(model(ids).logits, before)
    with pytest.raises(ValueError, match="mode"):
        with th.ablated(model, [(0, 0)], "random"):
            pass
    with pytest.raises(ValueError, match="no head"):
        with th.ablated(model, [(2, 0)]):
            pass
