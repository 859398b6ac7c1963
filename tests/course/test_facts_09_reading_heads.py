"""Numbers written in module 09's prose (guide, notebook text, quiz explanations) are the ones code
computes, on the committed tiny MiniMind.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown and JSON, where nothing else would catch a wrong one. The head scores, losses and
ablations are measured here with the same calls and prompts as the experiment scripts' defaults.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest
import torch
from quoting import quoted

from labkit import tiny_data as td
from labkit import tiny_heads as th
from labkit import tiny_model as tm
from labkit.quiz import load_quiz

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "modules" / "09_reading_heads" / "README.md"


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def guide():
    return one_line(GUIDE.read_text())


@pytest.fixture(scope="module")
def markdown():
    cells = nbformat.read(ROOT / "notebooks" / "09_reading_heads.ipynb", as_version=4).cells
    return one_line("\n".join(cell.source for cell in cells if cell.cell_type == "markdown"))


@pytest.fixture(scope="module")
def quiz():
    return {q.id: q for q in load_quiz(ROOT / "quizzes" / "09_reading_heads.json").questions}


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return tm.load_tiny_model()[0]


@pytest.fixture(scope="module")
def measured(model):
    """What the experiments measure with their defaults (seed 0)."""
    scores = th.measure_head_scores(model)  # exp1: 16 prompts, n = 24
    probe = th.repeated_probe(32, 24, seed=1000)  # exp2's prompts

    def without(heads, mode):
        with th.ablated(model, heads, mode):
            return th.repeat_loss(model, probe, 24)

    spans = th.repeated_probe(16, 24, seed=0)  # exp3's prompts
    code = th.attention_weights(model, th.text_probe(16, 64, seed=0)).mean(0)
    return {
        "scores": scores,
        "intact": th.repeat_loss(model, probe, 24),
        "without_previous": without([scores.previous_token_head], "mean"),
        "without_inductions": without(scores.induction_heads(), "mean"),
        "zero_0_2": without([(0, 2)], "zero"),
        "mean_0_2": without([(0, 2)], "mean"),
        "sink_on_code": th.first_token_scores(code)[scores.sink_head].item(),
        "sink_without_bos": th.first_token_scores(
            th.attention_weights(model, spans[:, 1:]).mean(0))[scores.sink_head].item(),
    }


def even_scores(span: int) -> tuple:
    T = 2 * span + 1
    even = torch.tril(torch.ones(T, T, dtype=torch.float64))
    even = even / even.sum(-1, keepdim=True)
    return (th.previous_token_scores(even).item(), th.induction_scores(even, span).item(),
            th.first_token_scores(even).item())


def test_module_09_guide_model_and_training(guide, model):
    config, recipe = model.config, tm.Recipe()
    report = tm.load_report()
    assert f"(2 layers of 4 heads, {tm.parameter_count(model):,} parameters)" in guide
    assert (config.num_hidden_layers, config.num_attention_heads, config.hidden_size) == (2, 4, 128)
    assert (f"hidden size {config.hidden_size}, {config.num_hidden_layers} layers, {config.num_attention_heads} heads "
            f"of width {config.head_dim}") in guide
    assert config.num_key_value_heads == config.num_attention_heads and config.rope_theta == 1e6
    assert f"feed-forward width {config.intermediate_size}" in guide and config.tie_word_embeddings
    assert f"vocabulary of {td.VOCAB_SIZE} tokens (the {td.VOCAB_SIZE - 1} bytes and BOS = {td.BOS})" in guide
    assert (f"for {recipe.steps} steps of {recipe.batch_size} sequences of {recipe.seq_len} tokens, with AdamW at "
            f"`3e-3`") in guide and recipe.lr == 3e-3
    assert recipe.synthetic * 2 == recipe.batch_size  # "half the rows"
    assert f"windows of {len(td.TRAIN_FILES)} standard-library files" in guide
    assert "Three more files are held out" in guide and len(td.HELD_OUT_FILES) == 3
    assert f"The checkpoint is {report['bytes'] / 1e6:.2f} MB" in guide
    assert (f"held-out loss is {quoted(report['held_out_loss'], '.3f')} nats per byte "
            f"against `ln 257 = {math.log(257):.3f}`") in guide
    assert f"the first {tm.PREFIX_STEPS} steps of the real recipe" in guide
    # "about three minutes": the time measured when the committed checkpoint was made
    assert 150 <= report["training"]["wall_seconds"] <= 210 and "about three minutes" in guide


def test_module_09_guide_head_scores(guide, measured):
    scores = measured["scores"]
    previous, induction, first = even_scores(24)
    assert f"scores about {previous:.2f}, {induction:.2f} and {first:.2f} on these prompts with `n = 24`" in guide
    prev_head, sink = scores.previous_token_head, scores.sink_head
    inductions = scores.induction_heads()
    assert (prev_head, inductions, sink) == ((0, 1), [(1, 0), (1, 1), (1, 3)], (1, 2))
    assert f"head 0.1 is a previous-token head (score {quoted(scores.previous[prev_head].item(), '.2f')})" in guide
    values = sorted(scores.induction[h].item() for h in inductions)
    assert (f"heads 1.0, 1.1 and 1.3 are induction heads "
            f"({quoted(values[0], '.2f')} to {quoted(values[-1], '.2f')})") in guide
    assert f"head 1.2 puts {quoted(scores.first[sink].item(), '.3f')} of its weight on BOS" in guide
    others_prev = [v for i, v in enumerate(scores.previous.flatten().tolist()) if i != 1]
    others_ind = [v for i, v in enumerate(scores.induction.flatten().tolist()) if i not in (4, 5, 7)]
    assert max(others_prev + others_ind) < 0.25 and "Every other head scores below 0.25 on the first two" in guide
    # exp1's ratios to the even head
    assert f"about {quoted(scores.previous[prev_head].item() / previous, '.0f')} times the yardstick" in guide
    assert f"(about {quoted(min(values) / induction, '.0f')} times)" in guide


def test_module_09_guide_ablations_and_sinks(guide, measured):
    assert f"loss on the second copy from about {quoted(measured['intact'], '.2f')} to about 4.5" in guide
    assert quoted(measured["without_previous"], ".1f") == quoted(measured["without_inductions"], ".1f") == "4.5"
    characters = len(td.PRINTABLE)  # what the probes' spans are drawn from
    assert f"guessing among {characters} characters, `ln {characters} = {math.log(characters):.2f}`" in guide
    assert f"Zeroing it breaks copying (loss about {quoted(measured['zero_0_2'], '.1f')})" in guide
    assert measured["mean_0_2"] < 0.05  # "replacing it by its mean changes nothing"
    assert f"hardly at all on code ({quoted(measured['sink_on_code'], '.3f')})" in guide
    assert f"its weight on position 0 falls to {quoted(measured['sink_without_bos'], '.3f')}" in guide
    assert f"already scores {even_scores(24)[0]:.2f} on the previous token" in guide
    assert f"({_even_previous(9):.2f} on 9 tokens)" in guide


def _even_previous(T: int) -> float:
    even = torch.tril(torch.ones(T, T, dtype=torch.float64))
    return th.previous_token_scores(even / even.sum(-1, keepdim=True)).item()


def test_module_09_notebook_prose_numbers(markdown, model):
    words = {2: "two", 4: "four"}
    config = model.config
    assert f"{words[config.num_hidden_layers]} layers of {words[config.num_attention_heads]} heads" in markdown
    # "about three minutes": the time measured when the committed checkpoint was made
    assert 150 <= tm.load_report()["training"]["wall_seconds"] <= 210 and "about three minutes on a CPU" in markdown
    assert f"probability 1/{td.VOCAB_SIZE}, a loss of `ln {td.VOCAB_SIZE}` nats per byte" in markdown
    assert "measured on three standard-library files" in markdown and len(td.HELD_OUT_FILES) == 3
    # the planted induction map of n = 4 parks half its queries on BOS
    n, T = 4, 9
    planted = torch.zeros(T, T)
    planted[: n + 1, 0] = 1
    second = torch.arange(n + 1, T)
    planted[second, second - n + 1] = 1
    assert th.first_token_scores(planted).item() == 0.5
    assert "also scores 0.5 on the first token: half its queries park on BOS" in markdown
    assert "measured on 16 prompts like the one above" in markdown
    assert "over the 16 prompts of the checks (spans of 24 characters)" in markdown
    assert th.measure_head_scores.__defaults__[1:3] == (16, 24)
