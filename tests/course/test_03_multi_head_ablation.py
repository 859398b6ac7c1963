"""Module 03's tools, tested against oracles: the per-head loop of experiment 1 against
minimind_ref's Attention with grouped heads as well, the splits of experiment 2 against the layer's
own, and the ablation hook of experiment 3 against "the layer's output minus that head's
contribution", computed independently."""

from __future__ import annotations

import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm

EXP1, EXP2, EXP3 = (load_experiment("03", name) for name in
                    ("exp1_heads_are_concatenated", "exp2_split_pitfalls", "exp3_heads_specialise"))


@pytest.mark.parametrize("heads", [1, 2, 4, 8])
def test_per_head_loop_equals_attention(heads):
    torch.manual_seed(heads)
    layer = EXP1.build_mha(64, heads, 7)
    x = torch.randn(3, 7, 64)
    cos, sin = mm.precompute_freqs_cis(layer.head_dim, 7)
    with torch.no_grad():
        expected, weights = layer(x, (cos, sin), output_attentions=True)
        looped, summed, looped_weights = EXP1.heads_in_a_loop(layer, x, cos, sin)
    # float32 rounding, which differs by CPU: torch's own float32 tolerances (the loop and the layer
    # differed by up to 1.07e-6 with ATen's portable kernels, 6e-8 with the AVX-512 ones)
    torch.testing.assert_close(looped, expected)
    torch.testing.assert_close(summed, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(looped_weights, weights)


def test_splits_match_the_layer_and_the_wrong_one_differs():
    x = torch.randn(2, 5, 12)
    right = EXP2.split_right(x, 3)
    assert torch.equal(right, x.view(2, 5, 3, 4).transpose(1, 2))
    for h in range(3):
        assert torch.equal(right[:, h], x[:, :, 4 * h:4 * (h + 1)])  # head h: features 4h .. 4h + 3
    assert not torch.equal(EXP2.split_wrong(x, 3), right)
    assert torch.equal(EXP2.merge_right(right), x)
    token, feature = EXP2.labels(2, 5, 12)
    assert bool(EXP2.slots_right(EXP2.split_right(token, 3), EXP2.split_right(feature, 3)).all())


@pytest.mark.parametrize("ablated", [[0], [2], [1, 3]])
def test_ablation_hook_removes_exactly_the_heads_contributions(ablated):
    torch.manual_seed(0)
    model = EXP3.build_model(heads=4, hidden=32, symbols=4, tokens=8).eval()
    ids = torch.randint(0, 8, (2, 8))
    block = model.model.layers[0]
    attention = block.self_attn
    captured = {}
    handle = attention.register_forward_hook(lambda m, args, out: captured.update(x=args[0], pos=args[1]))
    with torch.no_grad():
        model(ids)
        handle.remove()
        full, _ = attention(captured["x"], captured["pos"])
        d = attention.head_dim
        contributions = []
        for h in ablated:  # the oracle: head h's own attention times its own columns of W_o
            rows = slice(h * d, (h + 1) * d)
            out, _ = EXP1.one_head(captured["x"], attention.q_proj.weight[rows], attention.k_proj.weight[rows],
                                   attention.v_proj.weight[rows], *captured["pos"])
            contributions.append(out @ attention.o_proj.weight[:, rows].T)
        with EXP3.heads_ablated(model, ablated):
            ablated_output, weights = attention(captured["x"], captured["pos"], output_attentions=True)
        _, weights_before = attention(captured["x"], captured["pos"], output_attentions=True)
    torch.testing.assert_close(ablated_output, full - sum(contributions))  # to float32 rounding, any CPU
    torch.testing.assert_close(weights, weights_before)  # the hook acts after attention: weights unchanged
    # and the hook is gone afterwards
    with torch.no_grad():
        torch.testing.assert_close(attention(captured["x"], captured["pos"])[0], full)


def test_task_targets_are_topic_and_previous_symbol():
    ids, targets = EXP3.topic_and_previous_batch(5, 4, 8, torch.Generator().manual_seed(0))
    topic = ids[:, 0] - 4
    assert bool((topic >= 0).all()) and bool((ids[:, 1:] < 4).all())
    assert bool((targets[:, :2] == EXP3.IGNORE_INDEX).all())
    assert torch.equal(targets[:, 2:], topic[:, None] * 4 + ids[:, 1:-1])
