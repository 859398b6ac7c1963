"""Module 10's facts: the ladder and the catalogue from labkit.grader's data (whose stages
tests/kit/test_grader.py holds to what the grader does), the costs from exp2_ladder_order's
measurements, the q/k norm bound from minimind_ref's RMSNorm."""

from __future__ import annotations

import inspect
import math

import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from facts import fact, once
from labkit.grader import BY_KEY, CATALOGUE, LADDER, STAGE, grade, ladder, stage_number
from labkit.grader.compare import first_difference
from labkit.grader.ladder import BASE, model_episodes, run_model, stage_inputs

CONFIG = mm.MiniMindConfig(**BASE)


@once
def ladder_order():
    """exp2's measurements: each stage's operation count and what stage 10 alone misses."""
    exp2 = load_experiment("10", "exp2_ladder_order")
    flops = exp2.stage_flops(0)
    episodes, reference = model_episodes(0), run_model(None, 0)
    forward = [m for m in CATALOGUE if m.stage != "backward"]  # stage 10 cannot see a backward mistake
    missed = [m.title for m in forward if first_difference(run_model(m.plant, 0), reference, episodes, None) is None]
    return flops, missed


WHOLE = stage_number(STAGE["whole_model"]) - 1  # stage 10's index: the stages before it are the cheap ones


def ladder_cost(mistake) -> float:
    """What catching `mistake` on the ladder costs, as a share of stage 10 run alone (exp2's measure)."""
    flops, _ = ladder_order()
    return sum(flops[:stage_number(STAGE[mistake.stage])]) / flops[WHOLE]


# ---------------------------------------------------------------------------- sizes

@fact
def catalogue_size():
    return len(CATALOGUE)


@fact
def ladder_stages():
    return len(LADDER)


@fact
def grader_model_size():
    """(hidden size, layers) of the grader's random MiniMind."""
    return CONFIG.hidden_size, CONFIG.num_hidden_layers


@fact
def capstone_layer_parameters():
    """Parameters of the layer with hidden 64, 4 query heads, 2 key/value heads of 16, q/k norm."""
    assert (CONFIG.num_attention_heads, CONFIG.num_key_value_heads, CONFIG.head_dim) == (4, 2, 16)
    return sum(p.numel() for p in mm.Attention(CONFIG.replace(qk_norm=True)).parameters())


@fact
def capstone_projection_sizes():
    """`q_proj` maps 64 to 4 x 16, `k_proj` and `v_proj` map 64 to 2 x 16."""
    c, h, kv, d = CONFIG.hidden_size, CONFIG.num_attention_heads, CONFIG.num_key_value_heads, CONFIG.head_dim
    return c, h, d, c, kv, d


@fact
def grader_tolerance_float32():
    """atol = rtol of float32: $10^{-4} + 10^{-4}|expected|$."""
    atol, rtol = ladder.TOLERANCE[torch.float32]
    assert atol == rtol
    exponent = round(math.log10(atol))
    return 10, exponent, 10, exponent


@fact
def grader_tolerance_float16():
    atol, rtol = ladder.TOLERANCE[torch.float16]
    assert atol == rtol
    exponent = round(math.log10(atol))
    return 10, exponent, 10, exponent


@fact
def grader_tolerance_float32_atol():
    return ladder.TOLERANCE[torch.float32][0]


@fact
def float16_largest_magnitude():
    return int(torch.finfo(torch.float16).max)


@fact
def stage7_inputs():
    """Stage 7: a prefill of 5 tokens, then three one-token steps."""
    sizes = [call.x.shape[1] for call in stage_inputs(STAGE["prefill_decode"])[1][0].calls]
    assert set(sizes[1:]) == {1}
    return sizes[0], len(sizes) - 1


@fact
def stage8_steps():
    """Stage 8: steps of 3 and 2 tokens after a cache."""
    return tuple(call.x.shape[1] for call in stage_inputs(STAGE["multi_token_step"])[1][0].calls)[1:]


# ---------------------------------------------------------------------------- the contract's inputs

@fact
def grader_first_stage_angles():
    """The grader's first stages give `cos = 1` and `sin = 0`: RoPE switched off (the contract says so)."""
    angles = set()
    for stage in LADDER[:3]:
        call = stage_inputs(stage)[1][0].calls[0]
        angles |= {(cos, sin) for cos, sin in zip(call.cos.flatten().tolist(), call.sin.flatten().tolist())}
    assert len(angles) == 1, angles
    cos, sin = angles.pop()
    return int(cos), int(sin)


@fact
def kv_cache_update_call():
    """The call the contract asks a layer to make, from KVCache.update's own parameters."""
    names = list(inspect.signature(mm.KVCache.update).parameters)[1:]
    assert names[0] == "layer_idx"
    return (f"past_key_values.update(self.layer_idx, {', '.join(names[1:])})",)


# ---------------------------------------------------------------------------- the ladder's order

@fact
def early_stages_cost_under_a_fifth():
    """Each of stages 1 to 9, both passes (with and without weights), costs under a fifth of stage 10."""
    flops, _ = ladder_order()
    return max(flops[:WHOLE]) < flops[WHOLE] / 5


@fact
def stage10_alone_misses():
    """How many mistakes stage 10 alone misses (and that they are the float16 and multi-token ones)."""
    _, missed = ladder_order()
    assert set(missed) == {BY_KEY["minus_billion_fp16"].title, BY_KEY["no_mask_after_cache"].title}
    return len(missed)


@fact
def ladder_catches_early_mistakes_for_under_half():
    """Every mistake of stages 1 to 9 costs under half of stage 10 alone to catch on the ladder."""
    return max(ladder_cost(m) for m in CATALOGUE if m.stage not in ("whole_model", "backward")) < 0.5


@fact
def ladder_cost_of_a_stage10_mistake():
    """A mistake only stage 10 catches costs the whole ladder: 1.46 times stage 10 alone (exp2)."""
    costs = {ladder_cost(m) for m in CATALOGUE if m.stage == "whole_model"}
    assert len(costs) == 1
    return costs.pop()


# ---------------------------------------------------------------------------- the notebook's three plants

@fact
def tiled_heads_fail_at_stage_and_head():
    difference = grade(BY_KEY["repeat_tiled"].plant, quiet=True).difference
    return stage_number(STAGE[BY_KEY["repeat_tiled"].stage]), difference.where["head"]


@once
def _top_left():
    difference = grade(BY_KEY["top_left_causal"].plant, quiet=True).difference
    assert abs(difference.actual - 1.0) < 1e-6  # weight 1 on key 0
    return difference.where["query"]


@fact
def top_left_first_decoded_query():
    """The position of the first decoded query, which a top-left mask lets see key 0 only."""
    return _top_left()


@fact
def top_left_reference_keys():
    """The keys the reference spreads that query's weight over."""
    return int(mm.causal_mask(1, _top_left() + 1).sum())


# ---------------------------------------------------------------------------- q/k norm's bound

@fact
def qk_norm_score_bound_minimind3():
    """The largest score unit-gain q/k norm allows at MiniMind-3's D = 96: q = k, so q.k / sqrt(D) =
    |q|^2 / sqrt(D) with |q| at most sqrt(D) after RMSNorm: sqrt(D), reached here through
    minimind_ref's own RMSNorm. The gains are learned, so max|g_q| max|g_k| sqrt(D) is the bound."""
    d = mm.MiniMindConfig.minimind3().head_dim
    norm = mm.RMSNorm(d)  # gains start at 1
    x = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        q = norm.double()(x)
    score = (q @ q / math.sqrt(d)).item()
    assert score <= math.sqrt(d)
    return d, score
