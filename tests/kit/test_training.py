"""The shared training loop: it learns, it is reproducible from its seed, and it refuses bad input."""

from __future__ import annotations

import pytest
import torch
from model_factory import small_config

import minimind_ref as mm
from labkit.training import IGNORE_INDEX, learning_rate, next_token_loss, train


def copy_previous_token(step, generator, vocab=16, batch=16, length=10):
    ids = torch.randint(0, vocab, (batch, length), generator=generator)
    targets = ids.roll(1, dims=1)  # the target at position t is the input at t - 1: attention must look back
    targets[:, 0] = IGNORE_INDEX  # position 0 has nothing before it
    return ids, targets


def make_model(seed=0):
    torch.manual_seed(seed)
    return mm.MiniMindForCausalLM(small_config(vocab_size=16, num_hidden_layers=1))


def test_training_lowers_the_loss_far_below_chance():
    log = train(make_model(), copy_previous_token, steps=200, lr=1e-2)
    chance = torch.log(torch.tensor(16.0)).item()
    assert log.losses[0] > 0.8 * chance
    assert log.final_loss() < 0.1 * chance


def test_same_seed_gives_identical_weights_and_losses():
    a, b = make_model(), make_model()
    log_a = train(a, copy_previous_token, steps=20, seed=3)
    log_b = train(b, copy_previous_token, steps=20, seed=3)
    assert log_a.losses == log_b.losses
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(p, q), name


def test_ignored_targets_add_nothing():
    logits = torch.randn(2, 3, 5)
    targets = torch.tensor([[1, 2, IGNORE_INDEX], [0, IGNORE_INDEX, 4]])
    kept = targets != IGNORE_INDEX
    expected = torch.nn.functional.cross_entropy(logits[kept], targets[kept])
    torch.testing.assert_close(next_token_loss(logits, targets), expected)


def test_schedule_warms_up_then_decays_to_a_tenth():
    rates = [learning_rate(s, 100, 1.0, 10) for s in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:]))
    assert rates[-1] == pytest.approx(0.1, abs=1e-3)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="steps"):
        train(make_model(), copy_previous_token, steps=0)
    with pytest.raises(ValueError, match="targets of shape"):
        next_token_loss(torch.randn(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


def test_training_runs_on_one_thread_and_gives_the_callers_count_back():
    """Tiny models on a busy machine: two threads that wait for each other at every small op are
    many times slower than one (training.py's docstring has the measurements)."""
    seen = []

    def batch(step, generator):
        seen.append(torch.get_num_threads())
        return copy_previous_token(step, generator)

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        train(make_model(), batch, steps=2)
        assert seen == [1, 1] and torch.get_num_threads() == 2
        train(make_model(), batch, steps=1, threads=2)
        assert seen[-1] == 2
        def broken(step, generator):
            raise RuntimeError("no data")

        with pytest.raises(RuntimeError, match="no data"):
            train(make_model(), broken, steps=2)
        assert torch.get_num_threads() == 2, "restored after an error too"
        with pytest.raises(ValueError, match="threads"):
            train(make_model(), copy_previous_token, steps=1, threads=0)
    finally:
        torch.set_num_threads(before)
