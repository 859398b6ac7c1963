"""Dropout, as MiniMind places it: after the embeddings, after attention's output projection and
after the feed-forward (and on the weights, inside attention). It acts in training only: in eval
it is the identity."""

from __future__ import annotations

import torch
from model_factory import random_model, small_config

import minimind_ref as mm


def dropout_calls(run, monkeypatch):
    """How many dropouts `run` applies in training mode (torch.dropout with train=True)."""
    calls = []
    original = torch.dropout

    def counted(x, p, train):
        calls.append(train and p > 0)
        return original(x, p, train)

    monkeypatch.setattr(torch, "dropout", counted)
    run()
    monkeypatch.setattr(torch, "dropout", original)
    return sum(calls)


def test_training_applies_every_dropout_and_changes_the_output(monkeypatch):
    config = small_config(dropout=0.3)
    model = random_model(config, seed=0).train()
    ids = torch.randint(0, config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    first = model(ids).logits
    assert dropout_calls(lambda: model(ids), monkeypatch) == 1 + 2 * config.num_hidden_layers
    assert not torch.allclose(first, model(ids).logits)


def test_eval_skips_dropout_and_matches_a_model_without_it(monkeypatch):
    config = small_config(dropout=0.3)
    model = random_model(config, seed=0).eval()
    plain = mm.MiniMindForCausalLM(config.replace(dropout=0.0)).eval()
    plain.load_state_dict(model.state_dict())
    ids = torch.randint(0, config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert dropout_calls(lambda: model(ids), monkeypatch) == 0
        assert torch.equal(model(ids).logits, plain(ids).logits)
        assert torch.equal(model.generate(ids, 5), plain.generate(ids, 5))
