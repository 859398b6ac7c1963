"""Numbers written in module 06's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval and the experiments check their own
claims; this file covers the numbers typed into Markdown and JSON, where nothing else would catch
a wrong one. Text is compared with its line breaks and repeated spaces folded to single spaces.
"""

from __future__ import annotations

import argparse
import math
from functools import lru_cache
from pathlib import Path

import nbformat
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from minimind_ref.rope import (
    precompute_freqs_cis,
    rope_decay_bound,
    rope_inverse_frequencies,
    yarn_inverse_frequencies,
    yarn_ramp,
)

ROOT = Path(__file__).resolve().parents[2]
YARN = mm.MINIMIND_YARN


def folded(text: str) -> str:
    return " ".join(text.split())


def guide() -> str:
    return folded((ROOT / "modules" / "06_rope" / "README.md").read_text())


def notebook_markdown() -> str:
    cells = nbformat.read(ROOT / "notebooks" / "06_rope.ipynb", as_version=4).cells
    return folded("\n".join(cell.source for cell in cells if cell.cell_type == "markdown"))


def explanation(qid: str) -> str:
    from labkit.quiz import load_quiz

    quiz = load_quiz(ROOT / "quizzes" / "06_rope.json")
    question = next(q for q in quiz.questions if q.id == qid)
    return folded(question.question + " " + " ".join(getattr(question, "choices", None) or []) + " "
                  + question.explanation)


def script_defaults(name: str) -> argparse.Namespace:
    """The defaults of an experiment script's own flags."""
    parser = argparse.ArgumentParser()
    load_experiment("06", name).add_arguments(parser)
    return parser.parse_args([])


# -- the facts -----------------------------------------------------------------------------------

def head_dim() -> int:
    return mm.MiniMindConfig().head_dim


def base() -> float:
    return mm.MiniMindConfig().rope_theta


def theta(dim: int = None, rope_base: float = None) -> torch.Tensor:
    return rope_inverse_frequencies(dim or head_dim(), rope_base or base()).double()


@lru_cache(maxsize=None)
def quarter_crossing(rope_base: float, dim: int = 64, far: int = 32768) -> int:
    """The first octave start 2^o whose mean bound is below a quarter of the value at 0."""
    bound = rope_decay_bound(torch.arange(far), dim, rope_base)
    start = bound[0].item()
    for o in range(int(math.log2(far))):
        if bound[2 ** o: 2 ** (o + 1)].mean().item() < start / 4:
            return 2 ** o
    raise AssertionError("no crossing")


def yarn_groups() -> dict[str, list[int]]:
    ramp = yarn_ramp(head_dim(), base(), YARN)
    return {"kept": [i for i, r in enumerate(ramp.tolist()) if r == 0],
            "ramp": [i for i, r in enumerate(ramp.tolist()) if 0 < r < 1],
            "divided": [i for i, r in enumerate(ramp.tolist()) if r == 1]}


def span(pairs: list[int]) -> str:
    assert pairs == list(range(pairs[0], pairs[-1] + 1)), "a contiguous run of pairs"
    return f"{pairs[0]}-{pairs[-1]}"


def turns_in_training() -> torch.Tensor:
    return YARN["original_max_position_embeddings"] * theta() / (2 * math.pi)


def plain_ratio_past_training() -> float:
    """Largest angle over factor x trained positions / largest angle in training (plain RoPE)."""
    trained = YARN["original_max_position_embeddings"]
    return (YARN["factor"] * trained - 1) / (trained - 1)


# -- the tests -----------------------------------------------------------------------------------

def test_minimind_settings_that_the_prose_names():
    config = mm.MiniMindConfig()
    assert (config.head_dim, config.rope_theta, config.max_position_embeddings) == (64, 1e6, 32768)
    assert YARN == {"type": "yarn", "beta_fast": 32, "beta_slow": 1, "factor": 16,
                    "original_max_position_embeddings": 2048, "attention_factor": 1.0}
    assert mm.MiniMindConfig(inference_rope_scaling=True).rope_scaling == YARN
    assert YARN["factor"] * YARN["original_max_position_embeddings"] == config.max_position_embeddings


def test_module_06_guide_numbers():
    text = guide()
    th = theta()
    wavelengths = 2 * math.pi / th
    assert th[0].item() == 1.0
    assert f"a wavelength of `2π ≈ {wavelengths[0].item():.2f}` positions" in text
    assert (f"MiniMind2's heads are {head_dim()} wide with `rope_theta = {base():.0e}`".replace("e+0", "e")
            + f": {head_dim() // 2} pairs, the slowest turning once every {wavelengths[-1].item() / 1e6:.2f} "
              "million positions") in text
    start = (head_dim() / 2 + 1) / 2
    assert rope_decay_bound(torch.tensor([0]), head_dim(), base())[0].item() == start
    assert f"({start:g} for `d = {head_dim()}`)" in text
    assert (f"falls below a quarter of that start from distance {quarter_crossing(1e4)} with base 1e4 but only "
            f"from {quarter_crossing(1e6)} with base 1e6") in text
    assert (f"`factor` {YARN['factor']}, "
            f"`original_max_position_embeddings` {YARN['original_max_position_embeddings']}, "
            f"`beta_fast` {YARN['beta_fast']}, `beta_slow` {YARN['beta_slow']}, `attention_factor` "
            f"{YARN['attention_factor']}") in text
    groups = yarn_groups()
    assert (f"keeps pairs {span(groups['kept'])}, ramps pairs {span(groups['ramp'])} and divides pairs "
            f"{span(groups['divided'])} by {YARN['factor']}") in text
    trained = YARN["original_max_position_embeddings"]
    assert f"over {YARN['factor']} x {trained} = {YARN['factor'] * trained} positions" in text
    assert round(plain_ratio_past_training()) == YARN["factor"]
    assert f"to angles about {YARN['factor']} times larger" in text
    assert f"turns only {1 / YARN['factor']:g} rad per position: neighbours look {YARN['factor']} times closer" in text
    assert f"holds `max_position_embeddings` ({mm.MiniMindConfig().max_position_embeddings}) rows" in text


def test_module_06_guide_experiment_descriptions_match_the_defaults():
    text = guide()
    exp1, exp2 = script_defaults("exp1_complex_vs_rotate_half"), script_defaults("exp2_relative_position")
    assert exp1.positions == YARN["original_max_position_embeddings"]
    assert f"over MiniMind's {exp1.positions} trained positions" in text
    assert f"all pairs of {exp2.positions} positions" in text
    assert f"random pairs up to {exp2.far}" in text
    assert f"shifted by up to {exp2.far - exp2.tokens}" in text
    exp3 = script_defaults("exp3_long_range_decay")
    assert (exp3.head_dim, exp3.max_distance) == (64, 32768)
    assert f"per octave of distance up to {exp3.max_distance}" in text


def test_module_06_guide_yarn_changes_short_prompts():
    """'a 100-token prompt is rotated differently from training': the tables differ at position 100."""
    assert "a 100-token prompt is rotated differently" in guide()
    plain_cos, plain_sin = precompute_freqs_cis(head_dim(), 101, base())
    yarn_cos, yarn_sin = precompute_freqs_cis(head_dim(), mm.MiniMindConfig().max_position_embeddings, base(), YARN)
    change = torch.atan2(yarn_sin[100] * plain_cos[100] - yarn_cos[100] * plain_sin[100],
                         yarn_cos[100] * plain_cos[100] + yarn_sin[100] * plain_sin[100]).abs().max().item()
    assert change > 0.5  # radians: not a rounding difference


def test_module_06_guide_precision_facts():
    text = guide()
    assert "off by up to about `5e-8 × m` radians" in text
    positions = torch.arange(1, 32768, dtype=torch.float32)
    angles32 = torch.outer(positions, rope_inverse_frequencies(head_dim(), base())).double()
    exact = torch.outer(positions.double(),
                        base() ** (-torch.arange(0, head_dim(), 2, dtype=torch.float64) / head_dim()))
    per_position = ((angles32 - exact).abs() / positions.double()[:, None]).max().item()
    assert 2e-8 < per_position < 5e-8
    assert "in bfloat16 the position 257 itself rounds to 256" in text
    assert torch.tensor(257.0).to(torch.bfloat16).item() == 256.0
    assert torch.equal(torch.arange(257).to(torch.bfloat16).float(), torch.arange(257).float())


def test_module_06_notebook_prose_numbers():
    text = notebook_markdown()
    assert f"switches on to read {YARN['factor']} times past the length it was trained on" in text
    assert theta()[0].item() == 1.0 and "Pair 0 turns one radian per position" in text
    assert f"out to MiniMind's {mm.MiniMindConfig().max_position_embeddings} positions" in text
    assert "MiniMind uses base 1e6 (its `rope_theta`)" in text and base() == 1e6
    assert f"for `head_dim` {head_dim()}" in text
    assert f"so position `{YARN['factor']} m` looks like position `m`" in text
    assert f"neighbours become {YARN['factor']} times closer in every pair" in text
    assert f"MiniMind sets it to {YARN['attention_factor']}" in text


def test_yarn_temperature_and_the_papers_ramp():
    """Correction (issue 16): MiniMind's attention_factor 1.0 switches off YaRN's temperature
    (0.1 ln s + 1, transformers' default when the field is absent), and the paper's ramp is linear
    in turns per trained length, not in the pair index as MiniMind's."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from minimind_ref.oracles import hf_config

    guide = " ".join((ROOT / "modules" / "06_rope" / "README.md").read_text().split())
    s = YARN["factor"]
    temperature = 0.1 * math.log(s) + 1
    assert f"about {temperature:.2f} at MiniMind's `s = {s}`" in guide
    assert YARN["attention_factor"] == 1.0 != round(temperature, 2)
    assert "NTK-by-parts interpolation (section 3.2) without the temperature" in guide
    # transformers' YaRN: the temperature it applies when attention_factor is absent
    config = mm.MiniMindConfig(hidden_size=64, num_attention_heads=1, num_key_value_heads=1, num_hidden_layers=1,
                               vocab_size=8, inference_rope_scaling=True)
    hf = hf_config(config)
    hf.rope_parameters.pop("attention_factor")
    _, applied = ROPE_INIT_FUNCTIONS["yarn"](hf, "cpu")
    assert math.isclose(applied, temperature, rel_tol=1e-9)
    # the two ramps, pair by pair, on MiniMind2's heads
    d, trained = head_dim(), YARN["original_max_position_embeddings"]
    turns = trained * rope_inverse_frequencies(d, base()).double() / (2 * math.pi)
    gamma = ((turns - YARN["beta_slow"]) / (YARN["beta_fast"] - YARN["beta_slow"])).clamp(0, 1)
    paper = (1 - gamma) / s + gamma
    ours = yarn_inverse_frequencies(d, base(), YARN).double() / rope_inverse_frequencies(d, base()).double()
    outside = (turns >= YARN["beta_fast"]) | (turns <= YARN["beta_slow"])
    assert torch.allclose(paper[outside], ours[outside], atol=1e-6)
    pair = int((ours - paper).abs().argmax())
    assert f"at pair {pair} MiniMind keeps {ours[pair]:.3f} of the frequency, the paper {paper[pair]:.3f}" in guide
