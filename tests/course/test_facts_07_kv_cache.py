"""Numbers written in module 07's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval; this file covers the numbers typed into
Markdown, where nothing else would catch a wrong one. The cost and byte formulas come from the
experiment scripts, whose own claims test them against torch's FLOP counter and against bytes
counted operation by operation.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from labkit.quiz import load_quiz

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "07_kv_cache" / "README.md").read_text()
GUIDE_FLAT = " ".join(GUIDE.split())


def default_of(script, flag: str):
    """The default value of a script's own command-line flag."""
    import argparse

    parser = argparse.ArgumentParser()
    script.add_arguments(parser)
    return parser.get_default(flag)


def notebook_markdown() -> str:
    cells = nbformat.read(ROOT / "notebooks" / "07_kv_cache.ipynb", as_version=4).cells
    return " ".join(" ".join(cell.source for cell in cells if cell.cell_type == "markdown").split())


def notebook_code() -> str:
    cells = nbformat.read(ROOT / "notebooks" / "07_kv_cache.ipynb", as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "code")


MINIMIND2 = mm.MiniMindConfig()
FLOAT32 = torch.finfo(torch.float32).bits // 8


@pytest.fixture(scope="module")
def cost():
    return load_experiment("07", "exp2_cost_per_token")


@pytest.fixture(scope="module")
def memory():
    return load_experiment("07", "exp3_cache_memory")


def minimind2_bytes(kv_heads=None, dtype_bytes=FLOAT32):
    return (2 * MINIMIND2.num_hidden_layers * (kv_heads or MINIMIND2.num_key_value_heads) * MINIMIND2.head_dim
            * dtype_bytes)


def test_minimind2_cache_numbers_in_guide_notebook_and_quiz():
    per_token, mha = minimind2_bytes(), minimind2_bytes(kv_heads=MINIMIND2.num_attention_heads)
    assert (MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim) == (8, 2, 64)
    assert f"MiniMind2 (8 layers, 2 KV heads, head_dim 64) caches {per_token} bytes per token in float32" in GUIDE_FLAT
    assert f"(4 for MiniMind2; MHA with 8 KV heads would cache {mha} bytes per token)" in GUIDE_FLAT
    assert MINIMIND2.num_attention_heads // MINIMIND2.num_key_value_heads == 4
    text = notebook_markdown()
    assert (f"`2 x layers x kv_heads x head_dim x bytes` per token and sequence: "
            f"{per_token} bytes for MiniMind2 in float32") in text
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}
    assert f"= {per_token}$" in quiz["minimind2-bytes"].explanation
    assert f"= {mha}$, 4 times more" in quiz["mha-instead"].explanation


def test_published_models_table_in_guide(memory):
    """The guide's table, row by row, from the shapes exp3 measures (and the notebook uses)."""
    for name, shape in memory.PUBLISHED.items():
        per_token = memory.cache_bytes(shape["layers"], shape["kv_heads"], shape["head_dim"], 2)
        kib = per_token // 1024
        at_4096 = per_token * 4096
        size = f"{at_4096 / 2**30:g} GiB" if at_4096 >= 2**30 / 2 else f"{at_4096 // 2**20} MiB"
        row = f"| {name} | {shape['layers']} | {shape['kv_heads']} | {shape['head_dim']} | {kib} KiB | {size} |"
        assert row in GUIDE, f"guide row for {name}: expected {row!r}"
    code = notebook_code()
    for name, shape in memory.PUBLISHED.items():
        if not name.startswith("MiniMind"):  # the notebook keeps the three published models only
            assert f'"{name}": ({shape["layers"]}, {shape["kv_heads"]}, {shape["head_dim"]})' in code
    assert MINIMIND2.num_attention_heads * MINIMIND2.head_dim == MINIMIND2.hidden_size


def test_published_models_prose_in_notebook_and_quiz(memory):
    text = notebook_markdown()
    shapes = memory.PUBLISHED
    assert (shapes["Llama 2 7B"]["layers"], shapes["Llama 2 7B"]["kv_heads"]) == (32, 32)
    assert all(shapes[m]["layers"] == 32 and shapes[m]["kv_heads"] == 8 for m in ("Llama 3 8B", "Mistral 7B v0.1"))
    assert all(shapes[m]["head_dim"] == 128 for m in ("Llama 2 7B", "Llama 3 8B", "Mistral 7B v0.1"))
    assert ("Llama 2 7B has 32 layers and 32 KV heads (no GQA), Llama 3 8B and Mistral 7B v0.1 have 32 layers "
            "and 8 KV heads; all three have `head_dim` 128") in text
    llama2 = memory.cache_bytes(32, 32, 128, 2)
    llama3 = memory.cache_bytes(32, 8, 128, 2)
    assert llama2 == 2**20 // 2 and "grows by half a MiB per token" in text
    assert llama2 // llama3 == 4 and "a cache 4 times smaller" in text
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}
    explanation = quiz["llama3-8k"].explanation
    assert f"= {llama3}$ bytes ({llama3 // 1024} KiB)" in explanation
    assert llama3 * 8192 == 2**30 and "is $2^{30}$ bytes, 1 GiB" in explanation
    assert "Llama 2 7B, with 32 KV heads, needs 4 times as much" in explanation


def test_cost_numbers_in_guide_and_quiz(cost):
    rest, per_key = cost.cached_step_rest(MINIMIND2), cost.attention_flops_per_key(MINIMIND2)
    crossover = cost.attention_crossover(MINIMIND2)
    assert (f"a cached step costs {rest:,} FLOPs plus {per_key:,} per key, "
            f"so attention is half of it at {crossover:,.0f} keys") in GUIDE_FLAT
    assert round(crossover, -3) == 3000
    assert "past about three thousand tokens" in notebook_markdown()
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}
    assert f"equals the rest of the step at about {crossover:.0f} keys" in quiz["cached-step-cost"].explanation


def test_cost_exponents_and_script_defaults_in_guide(cost):
    n = default_of(cost, "tokens")
    config = mm.MiniMindConfig(hidden_size=default_of(cost, "hidden"), num_hidden_layers=4, num_attention_heads=8,
                               num_key_value_heads=2, vocab_size=256, max_position_embeddings=max(512, 2 * n))
    lengths = [n // 8, n // 4, n // 2, n]
    exponents = {}
    for cached in (False, True):
        flops = cost.step_flops(config, 1, n, cached)
        exponents[cached] = cost.growth_exponent(lengths, [sum(flops[:m]) for m in lengths])
    assert (f"across {n} positions; total FLOPs grow with exponent about {exponents[False]:.2f} without a cache "
            f"and {exponents[True]:.2f} with it") in GUIDE_FLAT


def test_time_script_defaults_and_margins_in_guide(cost):
    """exp6 times exp2's loops: the guide quotes its defaults, its margins and the FLOP ratio beside them."""
    timing = load_experiment("07", "exp6_time_per_token")
    n, hidden = default_of(timing, "tokens"), default_of(timing, "hidden")
    assert (n, hidden) == (default_of(cost, "tokens"), default_of(cost, "hidden")), "exp6 times the model exp2 counts"
    config = mm.MiniMindConfig(hidden_size=hidden, num_hidden_layers=4, num_attention_heads=8,
                               num_key_value_heads=2, vocab_size=256, max_position_embeddings=max(512, 2 * n))
    ratio = cost.forward_flops(config, n) / cost.forward_flops(config, 1, n - 1)  # the last step, as exp6 prints it
    assert (f"(each step its fastest of {default_of(timing, 'repeats')} runs): over the last tenth of {n} steps "
            f"a cached step is at least {timing.MIN_STEP_SPEEDUP:g} times faster than recomputing, where the FLOP "
            f"ratio is {ratio:.0f}, and the total time's growth exponent is at least {timing.MIN_EXPONENT_GAP:g} "
            f"lower with the cache") in GUIDE_FLAT


def test_experiment_defaults_named_in_guide_and_notebook():
    exp1 = load_experiment("07", "exp1_cached_equals_recompute")
    new, batch = default_of(exp1, "new"), default_of(exp1, "batch")
    assert f"greedy decoding of {new} tokens for a batch of {batch} prompts" in GUIDE_FLAT
    assert f"over {new} tokens" in notebook_markdown()
    assert len(exp1.LAYOUTS) == 4
    exp5 = load_experiment("07", "exp5_pitfalls")
    assert f"most of the {default_of(exp5, 'new')} generated tokens" in GUIDE_FLAT


def test_guide_cached_logit_error_is_about_1e_5():
    """'logits agree to about 1e-5': the order of magnitude exp1 measures, on one of its layouts."""
    exp1 = load_experiment("07", "exp1_cached_equals_recompute")
    config = mm.MiniMindConfig(hidden_size=128, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                               vocab_size=256, max_position_embeddings=256)
    model = exp1.random_minimind(config, seed=0)
    prompt = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(0))
    torch.set_num_threads(1)
    _, cached, _ = exp1.decode_with_cache(model, prompt, 24)
    _, recomputed = exp1.decode_by_recomputing(model, prompt, 24)
    error = (cached - recomputed).abs().max().item()
    assert 1e-6 < error < 1e-4, error
    assert "logits agree to about 1e-5 (checked below 1e-4 of the largest logit)" in GUIDE_FLAT
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}
    assert "logits within about 1e-5" in quiz["why-cacheable"].explanation


def test_growth_numbers_in_guide_notebook_and_quiz():
    exp4 = load_experiment("07", "exp4_cache_growth")
    n = default_of(exp4, "steps")
    ratio = (n + 1) / 2
    assert (f"bytes written to cache {n} tokens" in GUIDE_FLAT
            and f"`torch.cat` writes {ratio:g} times more" in GUIDE_FLAT)
    assert f"over {n} steps (torch.cat writes {ratio:g} times the bytes of preallocation there" in notebook_markdown()
    # doubling's copies stay below 2n for every n, and below n when n is c times a power of two
    for steps in range(1, 600):
        for start in (1, 3, 4, 16):
            if start <= steps:
                assert exp4.doubling_copies(steps, start) < 2 * steps
    assert exp4.doubling_copies(n, default_of(exp4, "initial")) < n
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}
    assert f"\\frac{{n+1}}{{2}} = {(1000 + 1) / 2:g}$" in quiz["cat-vs-prealloc"].explanation


def test_toy_and_notebook_prose_numbers():
    text = notebook_markdown()
    T = 5
    assert f"`T (T + 1) = {T * (T + 1)}` projections against `2 T = {2 * T}`" in text
    params = sum(p.numel() for p in mm.MiniMindForCausalLM(MINIMIND2).parameters())
    assert round(params / 1e6) == 26 and "default model (26 million parameters" in text
    # a forward that makes its own cache sizes it for the prompt (5), the first step doubles it
    model = mm.MiniMindForCausalLM(mm.MiniMindConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                     num_key_value_heads=1, vocab_size=8)).eval()
    with torch.no_grad():
        cache = model(torch.zeros(2, 5, dtype=torch.long), use_cache=True).past_key_values
        assert cache.capacity == 5
        model(torch.zeros(2, 1, dtype=torch.long), past_key_values=cache)
        assert cache.capacity == 10
    assert "sizes it for the prompt (capacity 5), and the first decoding step doubles it to 10" in text
    assert (MINIMIND2.hidden_size, MINIMIND2.num_hidden_layers, MINIMIND2.vocab_size) == (512, 8, 6400)
    assert "MiniMind2's default sizes (hidden 512, 8 layers, vocabulary 6400)" in text
    assert "a short one after 6 pads" in text and "batch_mask[0, :6] = 0" in notebook_code()
    assert "shift every position of the short prompt by 6" in text


def test_quiz_explanation_counts():
    quiz = {q.id: q for q in load_quiz(ROOT / "quizzes" / "07_kv_cache.json").questions}
    n = 100
    assert (f"${n} \\times {n + 1} / 2 = {n * (n + 1) // 2}$ positions, against {n} with a cache"
            in quiz["forwards-without-cache"].explanation)
    layers, kv_heads, head_dim = MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim
    assert (f"$2 \\times {layers} \\times {kv_heads} \\times {head_dim} \\times {FLOAT32} = "
            f"{minimind2_bytes()}$") in quiz["minimind2-bytes"].explanation
    gqa = quiz["gqa-what-is-cached"]
    heads, kv = 32, 8  # the question's model
    assert f"{heads} query heads and {kv} key/value heads" in gqa.question
    assert f"{heads} / {kv} = {heads // kv} times fewer" in gqa.explanation
    text = quiz["doubling"].explanation
    assert "sum to c (2^k - 1) < 2n" in text and "under 3 b n" in text


def test_minimind3_cache_sentence(memory):
    """The guide's MiniMind-3 sentence, from the preset (issue 16)."""
    three, two = mm.MiniMindConfig.minimind3(), mm.MiniMindConfig()
    per_token = memory.cache_bytes(three.num_hidden_layers, three.num_key_value_heads, three.head_dim, 2)
    old = memory.cache_bytes(two.num_hidden_layers, two.num_key_value_heads, two.head_dim, 2)
    assert (f"{three.num_hidden_layers} layers, {three.num_key_value_heads} KV heads of width {three.head_dim}, "
            f"so {per_token // 1024} KiB per token in 16 bits, {per_token // old} times MiniMind2's") in GUIDE_FLAT
    assert per_token % old == 0
