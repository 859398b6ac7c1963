"""Module 06's numeric quiz answers, recomputed (see tests/quiz_answers/__init__.py)."""

from __future__ import annotations

import math

import torch

import minimind_ref as mm
from minimind_ref.rope import rope_decay_bound, rope_inverse_frequencies, yarn_inverse_frequencies, yarn_ramp


def _head_dim() -> int:
    return mm.MiniMindConfig().head_dim


def _pair_count() -> int:
    theta = rope_inverse_frequencies(_head_dim(), mm.MiniMindConfig().rope_theta)
    assert torch.unique(theta).numel() == theta.numel(), "every pair has its own speed"
    return theta.numel()


def _slowest_wavelength_millions() -> float:
    config = mm.MiniMindConfig()
    theta = config.rope_theta ** (-(config.head_dim - 2) / config.head_dim)  # the last pair
    return 2 * math.pi / theta / 1e6


def _decay_start() -> float:
    return rope_decay_bound(torch.tensor([0]), _head_dim(), mm.MiniMindConfig().rope_theta)[0].item()


def _yarn_counts() -> tuple[int, int]:
    config = mm.MiniMindConfig(inference_rope_scaling=True)
    ramp = yarn_ramp(config.head_dim, config.rope_theta, config.rope_scaling)
    return int((ramp == 0).sum()), int((ramp == 1).sum())


def _pi_step() -> float:
    factor = mm.MINIMIND_YARN["factor"]
    plain = rope_inverse_frequencies(_head_dim(), mm.MiniMindConfig().rope_theta)
    yarn = yarn_inverse_frequencies(_head_dim(), mm.MiniMindConfig().rope_theta, mm.MINIMIND_YARN)
    assert yarn[0] == plain[0], "YaRN keeps the fastest pair"
    return plain[0].item() / factor


ANSWERS = {
    "pair-count": _pair_count,
    "slowest-wavelength": _slowest_wavelength_millions,
    "decay-start": _decay_start,
    "yarn-kept": lambda: _yarn_counts()[0],
    "yarn-divided": lambda: _yarn_counts()[1],
    "pi-step": _pi_step,
}
