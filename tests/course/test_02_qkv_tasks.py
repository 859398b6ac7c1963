"""Module 02's experiment pieces do what their docstrings say: the synthetic tasks give the right
answers, the tied layer really shares one weight, and tied scores obey the Cauchy-Schwarz bound
that the module's claims rest on, whatever the weights."""

from __future__ import annotations

import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm

EXP1 = load_experiment("02", "exp1_tied_projections")
EXP2 = load_experiment("02", "exp2_kv_retrieval")
EXP3 = load_experiment("02", "exp3_tied_cannot_look_away")


def test_lookup_examples_answer_with_the_paired_value():
    generator = torch.Generator().manual_seed(0)
    (asked, keys, values), answers = EXP2.make_examples(500, 8, 4, generator)
    assert asked.shape == answers.shape == (500, 4) and keys.shape == values.shape == (500, 8)
    assert all(len(set(row)) == 8 for row in keys.tolist()), "the keys of an example are distinct"
    assert all(len(set(row)) == 4 for row in asked.tolist()), "an example asks about distinct pairs"
    for a, k, v, ans in zip(asked.tolist(), keys.tolist(), values.tolist(), answers.tolist()):
        table = dict(zip(k, v))
        assert [table[key] for key in a] == ans


def test_lookup_layer_shapes_and_fused_path():
    torch.manual_seed(0)
    model = EXP2.KeyValueLookup(width=16)
    (inputs, _) = EXP2.make_examples(3, 8, 4, torch.Generator().manual_seed(1))
    logits, weights = model(inputs, return_weights=True)
    assert logits.shape == (3, 4, EXP2.NUM_VALUES) and weights.shape == (3, 4, 8)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 4))


def test_partner_positions_point_at_the_partner():
    (symbols, values), answers = EXP3.make_sequences(200, 4, torch.Generator().manual_seed(0))
    partner = EXP3.partner_positions(symbols)
    assert torch.equal(symbols.gather(1, partner), symbols ^ 1)
    assert torch.equal(values.gather(1, partner), answers)
    assert not (partner == torch.arange(8)).any(), "nobody is its own partner"


def test_tied_partner_layer_shares_one_parameter():
    model = EXP3.PartnerLookup(width=8, tied=True)
    assert model.k_proj.weight is model.q_proj.weight
    assert len(list(model.parameters())) == 3  # q/k shared, v, readout


@pytest.mark.parametrize("rope", [False, True])
def test_tied_scores_are_symmetric_and_bounded_by_the_diagonal(rope):
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                               num_hidden_layers=1, vocab_size=16)
    layers = EXP1.build_layers(config)
    assert layers["tied"].k_proj.weight is layers["tied"].q_proj.weight
    assert layers["separate"].k_proj.weight is not layers["separate"].q_proj.weight
    x = torch.randn(3, 7, 32)
    cos, sin = EXP1.rope_tables("rope" if rope else "none", 7, config.head_dim, config.rope_theta)
    with torch.no_grad():
        scores = EXP1.scores_of(layers["tied"], x, cos, sin)  # [B, H, T, T]
        separate = EXP1.scores_of(layers["separate"], x, cos, sin)
    assert torch.allclose(scores, scores.transpose(-2, -1), atol=1e-6)
    diagonal = scores.diagonal(dim1=-2, dim2=-1)
    bound = torch.maximum(diagonal[..., :, None], diagonal[..., None, :])
    assert (scores <= bound + 1e-6).all()
    assert not torch.allclose(separate, separate.transpose(-2, -1), atol=1e-3)


def test_measure_reproduces_the_layers_weights():
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                               num_hidden_layers=1, vocab_size=16)
    layer = EXP1.build_layers(config)["tied"]
    cos, sin = EXP1.rope_tables("none", 6, config.head_dim, config.rope_theta)
    result = EXP1.measure(layer, torch.randn(2, 6, 32), cos, sin)
    assert result["softmax_matches"] < 1e-6
    assert result["longest_self_top"] == 1.0
