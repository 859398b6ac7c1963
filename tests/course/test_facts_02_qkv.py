"""Numbers written in module 02's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown and JSON, where nothing else would catch a wrong one.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
from experiment_scripts import load_experiment

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]
# The experiment scripts' own constants.
EXP2 = load_experiment("02", "exp2_kv_retrieval")
EXP3 = load_experiment("02", "exp3_tied_cannot_look_away")


def flat(text: str) -> str:
    return " ".join(text.split())


def notebook_cells():
    return nbformat.read(ROOT / "notebooks" / "02_qkv.ipynb", as_version=4).cells


def markdown_of_notebook() -> str:
    return flat("\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "markdown"))


def code_of_notebook() -> str:
    return "\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "code")


def minimind_sizes():
    config = mm.MiniMindConfig()
    layer = mm.Attention(config)
    sizes = {name: p.numel() for name, p in layer.named_parameters()}
    return config, sizes


def default_of(script, flag: str):
    """The default of one of an experiment script's own flags, read from its parser."""
    parser = argparse.ArgumentParser()
    script.add_arguments(parser)
    return parser.parse_args([]).__dict__[flag]


def test_module_02_guide_numbers():
    guide = flat((ROOT / "modules" / "02_qkv" / "README.md").read_text())
    config, sizes = minimind_sizes()
    C, H, H_kv, D = config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim
    assert f"Hidden size `C = {C}`, `H = {H}` query heads, `H_kv = {H_kv}` key/value heads, `D = {D}`" in guide
    assert f"[B, T, H*D] = [B, T, {H * D}] -> view [B, T, {H}, {D}] -> transpose [B, {H}, T, {D}]" in guide
    assert f"[B, T, H_kv*D] = [B, T, {H_kv * D}] -> [B, {H_kv}, T, {D}]" in guide
    assert f"H / H_kv = {H // H_kv} query heads" in guide
    q, k, v, o = (sizes[f"{n}_proj.weight"] for n in "qkvo")
    assert f"`{q:,} + {k:,} + {v:,} + {o:,} = {q + k + v + o:,}` weights" in guide
    assert f"In `d = {D}` dimensions" in guide
    assert f"`H_kv * D = {H_kv * D}` features, not {H * D}" in guide
    assert f"MiniMind's `q_proj` is `{C} × {H * D}`" in guide
    # the lookup task, as exp2 runs it
    pairs = default_of(EXP2, "pairs")
    assert f"dictionaries of {pairs} (key, value) pairs over {EXP2.NUM_KEYS} keys and {EXP2.NUM_VALUES} values" in guide
    assert f"Chance is `1/{EXP2.NUM_VALUES} = {1 / EXP2.NUM_VALUES:g}`" in guide
    assert f"measures it on {EXP2.HELD_OUT} fresh examples" in guide
    ceiling = 0.5 + 0.5 / EXP3.NUM_VALUES
    assert f"`1/2 + 1/{2 * EXP3.NUM_VALUES} ≈ {round(100 * ceiling)}%` right" in guide
    assert f"`1/2 + 1/{2 * EXP3.NUM_VALUES}` of splitting its weight evenly" in guide


def test_module_02_notebook_prose_numbers():
    text, code = markdown_of_notebook(), code_of_notebook()
    config = mm.MiniMindConfig()
    assert f"heads are {config.head_dim} wide" in text
    # the MiniMind-sized measurement: every row sees all `length` tokens
    length = int(re.search(r"batch, length, D = \d+, (\d+), mha\.head_dim", code).group(1))
    assert f"every row sees all {length} tokens" in text
    # the lookup task of section 7
    keys, values, pairs, questions = map(int, re.search(
        r"NUM_KEYS, NUM_VALUES, PAIRS, QUESTIONS = (\d+), (\d+), (\d+), (\d+)", code).groups())
    assert (f"Each example holds `S = {pairs}` pairs (key, value) with distinct keys, "
            f"out of {keys} keys and {values} values") in text
    assert f"asks `T = {questions}` questions" in text
    assert f"scores the {values} values" in text
    held_out = int(re.search(r"fresh_inputs, fresh_answers = make_examples\((\d+),", code).group(1))
    assert f"measure it on the {held_out} fresh examples" in text
    # section 8: the partner task
    symbols = int(re.search(r"SYMBOLS = (\d+)", code).group(1))
    couples = int(re.search(r"def make_couples\(count, generator, couples=(\d+)\)", code).group(1))
    assert f"the {symbols} symbols form {symbols // 2} fixed couples" in text
    assert f"both members of {couples} couples" in text
    ceiling = 0.5 + 0.5 / values
    assert f"`1/2 + 1/{2 * values} ≈ {round(100 * ceiling)}%`" in text
    # the quiz section
    from labkit.quiz import load_quiz

    count = len(load_quiz(ROOT / "quizzes" / "02_qkv.json").questions)
    words = {12: "Twelve", 11: "Eleven", 10: "Ten", 9: "Nine", 8: "Eight"}
    assert f"{words[count]} questions on this module" in text


def test_values_may_be_narrower_or_wider_than_keys():
    """Correction (issue 16): minimind_ref's attention accepts D_v != D and equals torch's SDPA."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 5, 8, generator=generator), torch.randn(2, 4, 7, 8, generator=generator)
    for value_width in (3, 8, 12):
        v = torch.randn(2, 4, 7, value_width, generator=generator)
        plain = mm.scaled_dot_product_attention(q, k, v)
        assert plain.shape == (2, 4, 5, value_width)
        assert torch.allclose(plain, F.scaled_dot_product_attention(q, k, v), atol=1e-6)
    guide = flat((ROOT / "modules" / "02_qkv" / "README.md").read_text())
    assert "`v` may be narrower or wider than `k`" in guide
    assert "requires `v` to be as wide" not in guide
    assert "and so does `minimind_ref`'s" in markdown_of_notebook()
    assert "would refuse these values" not in markdown_of_notebook()
    assert "requires values as wide as keys" not in code_of_notebook()


def test_tied_scores_guarantee_only_the_global_maximum_on_the_diagonal():
    """Correction (issue 16): with W_k = W_q the matrix's largest score is on the diagonal (in
    the longest query's row), but a row's own largest entry need not be: the summary says so."""
    import torch

    off_diagonal_rows = 0
    for seed in range(20):
        generator = torch.Generator().manual_seed(seed)
        q = torch.randn(5, 4, generator=generator) * torch.rand(5, 1, generator=generator)
        scores = q @ q.T / 2.0
        assert scores.max() == scores.diagonal().max()
        longest = scores.diagonal().argmax()
        assert scores[longest].argmax() == longest
        off_diagonal_rows += int((scores.argmax(dim=-1) != torch.arange(5)).sum())
    assert off_diagonal_rows > 0  # so "each row peaks on its diagonal" would be false
    summary = flat(notebook_cells()[59].source)
    assert "largest score of the whole matrix on the diagonal" in summary
    assert "the largest entries on the diagonal" not in summary


def test_minimind3_qk_norm_paragraph():
    """The guide's MiniMind-3 paragraph (issue 16): sizes from the preset, the bound sqrt(D) from
    RMSNorm's definition, and exp4_qk_norm's default scales."""
    import math

    import torch

    guide = flat((ROOT / "modules" / "02_qkv" / "README.md").read_text())
    three = mm.MiniMindConfig.minimind3()
    d = three.head_dim
    assert (f"is {three.hidden_size} wide with {three.num_attention_heads} query heads over "
            f"{three.num_key_value_heads} key/value heads of `D = {d}`") in guide
    assert f"(sqrt({d}) = {math.sqrt(d):.2f} with unit gains)" in guide
    layer = mm.Attention(three)
    assert layer.q_norm.weight.numel() == layer.k_norm.weight.numel() == d and "`D` weights each" in guide
    # RMSNorm with unit gain gives length sqrt(D), so unit-gain scores never pass sqrt(D)
    x = torch.randn(1000, d) * 37.0
    assert torch.allclose(layer.q_norm(x).norm(dim=-1), torch.full((1000,), math.sqrt(d)), rtol=1e-4)
    assert "twice the input, four times the scores" in guide
    exp4 = load_experiment("02", "exp4_qk_norm")
    scales = exp4.Experiment.parser(exp4.__doc__, exp4.__file__, exp4.add_arguments).parse_args([]).scales
    assert scales == [1, 10, 100] and "multiplied by 1, 10 and 100" in guide
    assert f"the largest score grows {(scales[-1] // scales[0]) ** 2:,} times" in guide
