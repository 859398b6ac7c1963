"""Module 04's default configuration, its quiz explanations' numbers, and no unbound large number in
the guide. The guide's and the notebook's numbers are bound facts (tests/facts/04_gqa.py).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "modules" / "04_gqa" / "README.md"
NOTEBOOK = ROOT / "notebooks" / "04_gqa.ipynb"
MIB = 2 ** 20


def flat(text: str) -> str:
    """Text with every run of whitespace (line breaks included) made one space."""
    return " ".join(text.split())


def notebook_text(kind: str) -> str:
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    return flat("\n".join(cell.source for cell in cells if cell.cell_type == kind))


def script_defaults(name: str) -> argparse.Namespace:
    """The default values of an experiment script's own flags."""
    module = load_experiment("04", name)
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args([]), module


def exp4_lengths() -> list[int]:
    """exp4_decode_speed's default cache lengths (its --lengths flag parses to a list of ints)."""
    defaults, _ = script_defaults("exp4_decode_speed")
    return sorted(defaults.lengths)


def model_params(config: mm.MiniMindConfig) -> int:
    with torch.device("meta"):  # shapes only: nothing allocated or initialised
        model = mm.MiniMindForCausalLM(config)
    return sum(p.numel() for p in model.parameters())


def attention_params(config: mm.MiniMindConfig) -> int:
    return sum(p.numel() for p in mm.Attention(config).parameters())


def cache_bytes_per_token(config: mm.MiniMindConfig, dtype: torch.dtype, tokens: int = 3) -> float:
    """Bytes per token of minimind_ref's KVCache after every layer stored `tokens` positions."""
    cache = mm.KVCache(config, batch_size=1)
    for layer in range(config.num_hidden_layers):
        k = torch.zeros(1, config.num_key_value_heads, tokens, config.head_dim, dtype=dtype)
        cache.update(layer, k, k.clone())
    return cache.nbytes() / tokens


DEFAULT = mm.MiniMindConfig()
MHA = DEFAULT.replace(num_key_value_heads=DEFAULT.num_attention_heads)


def n(value: float) -> str:
    """A whole number as the prose writes it: 655,360."""
    return f"{round(value):,}"


def test_the_default_configuration_is_the_one_described():
    assert (DEFAULT.hidden_size, DEFAULT.num_hidden_layers, DEFAULT.num_attention_heads,
            DEFAULT.num_key_value_heads, DEFAULT.head_dim) == (512, 8, 8, 2, 64)
    assert DEFAULT.num_key_value_groups == 4
    # which key/value head each query head reads, as repeat_kv pairs them
    kv = torch.arange(DEFAULT.num_key_value_heads, dtype=torch.float32).view(1, -1, 1, 1)
    reads = mm.repeat_kv(kv, DEFAULT.num_key_value_groups)[0, :, 0, 0].tolist()
    assert reads == [0, 0, 0, 0, 1, 1, 1, 1]


def test_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "04_gqa.json").questions}
    c, h, kv, d, layers = (DEFAULT.hidden_size, DEFAULT.num_attention_heads, DEFAULT.num_key_value_heads,
                           DEFAULT.head_dim, DEFAULT.num_hidden_layers)

    text = flat(quiz["kv-head-of-query"].explanation)
    assert f"n_rep = {h} / {kv} = {h // kv}" in text and f"6 // {h // kv} = {6 // (h // kv)}" in text

    text = flat(quiz["attn-params-gqa"].explanation)
    assert f"{c} x ({h} x {d}) each: 2 x {n(c * h * d)} = {n(2 * c * h * d)}" in text
    assert f"{c} x ({kv} x {d}) each: 2 x {n(c * kv * d)} = {n(2 * c * kv * d)}" in text
    assert (f"Together {n(attention_params(DEFAULT))}; "
            f"with 8 key/value heads (MHA) it would be {n(attention_params(MHA))}") in text

    text = flat(quiz["params-saved"].explanation)
    per_layer = attention_params(MHA) - attention_params(DEFAULT)
    assert per_layer == 2 * c * (c - kv * d)
    assert f"from {c} x {kv * d} to {c} x {c} each: 2 x {c} x ({c} - {kv * d}) = {n(per_layer)} more" in text
    assert (f"Over {layers} layers: {n(layers * per_layer)}, taking the model from {n(model_params(DEFAULT))} to "
            f"{n(model_params(MHA))} parameters") in text

    text = flat(quiz["cache-per-token-bf16"].explanation)
    assert (f"2 (K and V) x {layers} layers x {kv} key/value heads x {d} numbers x 2 bytes = "
            f"{n(cache_bytes_per_token(DEFAULT, torch.bfloat16))} bytes") in text

    text = flat(quiz["mha-cache-mib"].explanation)
    mha_bf16 = cache_bytes_per_token(MHA, torch.bfloat16)
    assert (f"2 x {layers} x {h} x {d} x 2 = {n(mha_bf16)} bytes per token, times 8192 tokens = "
            f"{n(mha_bf16 * 8192)} bytes = {n(mha_bf16 * 8192 / MIB)} MiB") in text
    assert f"a quarter of that, {n(cache_bytes_per_token(DEFAULT, torch.bfloat16) * 8192 / MIB)} MiB" in text

    text = flat(quiz["repeat-bytes"].explanation)
    k = torch.zeros(1, 2, 1024, 64)
    repeated = mm.repeat_kv(k, 4).untyped_storage().nbytes()
    assert f"8 x 1024 x 64 x 4 bytes = {n(repeated)} bytes, n_rep = 4 times the {n(k.nbytes)} bytes of k" in text

    text = flat(quiz["cpu-decode"].explanation)
    weights32 = model_params(DEFAULT) * 4 / MIB
    assert 95 <= weights32 <= 105 and "MiniMind's weights are about 100 MiB" in text
    assert (f"a 256-token cache is {n(256 * cache_bytes_per_token(MHA, torch.float32) / MIB)} MiB with 8 key/value "
            f"heads or {n(256 * cache_bytes_per_token(DEFAULT, torch.float32) / MIB)} MiB with 2") in text
    mha_4096 = 4096 * cache_bytes_per_token(MHA, torch.float32) / MIB
    assert mha_4096 > model_params(MHA) * 4 / MIB
    assert f"by 4096 tokens MHA's cache alone ({n(mha_4096)} MiB) outweighs the weights" in text
    # Correction (issue 16): bytes a step reads, weights + cache, MHA against GQA (exp4's "bytes read")
    def read_mib(config, length):
        return (model_params(config) * 4 + length * cache_bytes_per_token(config, torch.float32)) / MIB

    short = read_mib(MHA, 256) / read_mib(DEFAULT, 256)
    assert f"must read only about {short:.2f} times the bytes" in quiz["cpu-decode"].question
    assert (f"the 8-head model's are {n(model_params(MHA) * 4 / MIB)} MiB" in text
            and f"the totals are {n(read_mib(MHA, 256))} and {n(read_mib(DEFAULT, 256))} MiB, a ratio of "
                f"{short:.2f}" in text)
    assert f"the ratio of bytes is {read_mib(MHA, 4096) / read_mib(DEFAULT, 4096):.2f}" in text
    assert short < 1.3  # a close race: the notebook and exp4 claim nothing about timings at 256

    text = flat(quiz["uptraining-recipe"].explanation)
    assert "30 uptraining steps" in text and "steps=30," in notebook_text("code")
    # the paper's alpha = 0.05 (5% of the pre-training steps) is cited (arXiv 2305.13245), not computed


def test_no_unchecked_large_numbers_in_the_guide():
    """Every number of four or more digits in the guide is a bound fact (inside a marker) or one of
    these, which no code computes: papers' arXiv ids and upstream commits."""
    guide = re.sub(r"<!--\s*fact:.*?<!--\s*/fact\s*-->", "", GUIDE.read_text(), flags=re.S)
    allowed = {"2305.13245", "1911.02150", "1706.03762", "2211.05102", "2212.05055", "2307.09288", "2405.04434",
               "2412.19437",
               # upstream commits (checked in test_upstream_citations.py); the regex sees their digits
               "898576"}
    found = set(re.findall(r"\d[\d,.]{3,}\d", guide))
    assert found <= allowed, f"numbers in the guide that no fact binds: {sorted(found - allowed)}"
