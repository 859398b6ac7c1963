"""Module 10's facts about stage 11, the backward pass, and the catalogue's backward mistakes (issue
25), computed with the grader. (A file of its own beside the module's others: the facts loader reads
every file here.)"""

from __future__ import annotations

import torch

import minimind_ref as mm
from facts import fact
from labkit.grader import CATALOGUE, LADDER, STAGE, grade, stage_number
from labkit.grader.compare import first_difference
from labkit.grader.ladder import model_episodes, run_model, run_stage, stage_inputs

BACKWARD = [m for m in CATALOGUE if m.stage == "backward"]
THROUGH_SCORES = ("q_norm.weight", "k_norm.weight", "q_proj.weight", "k_proj.weight")


@fact
def backward_stage_inputs():
    (episode,) = stage_inputs(STAGE["backward"])[1]
    (call,) = episode.calls
    assert call.grad_output is not None and call.attn_mask is None  # causal, with a gradient to feed back
    return tuple(call.x.shape[:2])


@fact
def backward_mistakes():
    return len(BACKWARD)


@fact
def backward_mistakes_pass_the_forward_stages():
    forward = tuple(s for s in LADDER if s.key != "backward")
    assert all(grade(m.plant, quiet=True, stages=forward).passed for m in BACKWARD)
    return stage_number(forward[0]), len(forward)


@fact
def scale_under_no_grad_gradients():
    stage = STAGE["backward"]
    root_d = stage.make_config().head_dim ** 0.5
    planted = run_stage(next(m for m in BACKWARD if m.key == "scaled_under_no_grad").plant, stage)
    for key, want in run_stage(mm.Attention, stage).items():
        for name, grad in want.grads.items():
            if name == "x":
                continue
            factor = root_d if name in THROUGH_SCORES else 1.0
            if not torch.allclose(planted[key].grads[name], grad * factor, rtol=1e-4, atol=1e-5):
                return False
    return True


@fact
def whole_model_stage_misses_backward_mistakes():
    episodes, reference = model_episodes(0), run_model(None, 0)
    return all(first_difference(run_model(m.plant, 0), reference, episodes, None) is None for m in BACKWARD)
