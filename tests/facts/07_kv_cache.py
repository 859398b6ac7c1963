"""Module 07's facts: cache sizes from minimind_ref's configs and exp3's shapes, step costs from exp2's
closed forms, growth from exp4, the experiments' defaults, and upstream's history.

The cost and byte formulas come from the experiment scripts, whose own claims test them against
torch's FLOP counter and against bytes counted operation by operation.
"""

from __future__ import annotations

import argparse
import re
from functools import cache
from pathlib import Path

import nbformat
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm
from facts import fact
from facts.upstream import MINIMIND3_RELEASE, changes_between

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "07_kv_cache.ipynb"
MINIMIND2 = mm.MiniMindConfig()
FLOAT32 = torch.finfo(torch.float32).bits // 8


@cache
def script(name: str):
    return load_experiment("07", name)


def default_of(name: str, flag: str):
    parser = argparse.ArgumentParser()
    script(name).add_arguments(parser)
    return parser.get_default(flag)


def minimind2_bytes(kv_heads=None, dtype_bytes=FLOAT32):
    return (2 * MINIMIND2.num_hidden_layers * (kv_heads or MINIMIND2.num_key_value_heads) * MINIMIND2.head_dim
            * dtype_bytes)


def measured_bytes_per_token(config: mm.MiniMindConfig, dtype: torch.dtype = torch.float32, tokens: int = 3) -> float:
    """Bytes per token that minimind_ref's KVCache holds after every layer stored `tokens` positions."""
    cache = mm.KVCache(config, batch_size=1)
    for layer in range(config.num_hidden_layers):
        k = torch.zeros(1, config.num_key_value_heads, tokens, config.head_dim, dtype=dtype)
        cache.update(layer, k, k.clone())
    return cache.nbytes() / tokens


def _code() -> str:
    return "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code")


# ---------------------------------------------------------------------------- the cache's size

@fact
def minimind2_cache_shape():
    """(layers, KV heads, head_dim) of MiniMind2."""
    return MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim


@fact
def minimind2_cache_bytes_per_token_float32():
    return minimind2_bytes()


@fact
def minimind2_query_heads_per_kv_head():
    return MINIMIND2.num_attention_heads // MINIMIND2.num_key_value_heads


@fact
def minimind2_mha_cache_bytes_per_token_float32():
    """(KV heads, bytes): MiniMind2 with a KV head per query head."""
    return MINIMIND2.num_attention_heads, minimind2_bytes(kv_heads=MINIMIND2.num_attention_heads)


@fact
def minimind2_104m_cache_shape():
    """(layers, KV heads, head_dim) of upstream's MiniMind2, the 104M model."""
    big = mm.MiniMindConfig.minimind2()
    return big.num_hidden_layers, big.num_key_value_heads, big.head_dim


@fact
def minimind2_104m_cache_bytes_per_token_float32():
    return measured_bytes_per_token(mm.MiniMindConfig.minimind2())


def _row(name: str):
    memory = script("exp3_cache_memory")
    shape = memory.PUBLISHED[name]
    per_token = memory.cache_bytes(shape["layers"], shape["kv_heads"], shape["head_dim"], 2)
    at_4096 = per_token * 4096
    size = at_4096 / 2 ** 30 if at_4096 >= 2 ** 30 / 2 else at_4096 // 2 ** 20
    return shape["layers"], shape["kv_heads"], shape["head_dim"], per_token // 1024, size


@fact
def kv_table_llama2_7b():
    """A row of the guide's table: layers, KV heads, head_dim, KiB per token in 16 bits, 4096 tokens."""
    return _row("Llama 2 7B")


@fact
def kv_table_llama3_8b():
    return _row("Llama 3 8B")


@fact
def kv_table_mistral_7b():
    return _row("Mistral 7B v0.1")


@fact
def kv_table_minimind2_small():
    assert MINIMIND2.num_attention_heads * MINIMIND2.head_dim == MINIMIND2.hidden_size
    return _row("MiniMind2-Small")


@fact
def kv_table_minimind2():
    """Upstream's MiniMind2 (104M), the row exp3 reads from `MiniMindConfig.minimind2()`."""
    return _row("MiniMind2")


@fact
def kv_table_minimind3():
    return _row("MiniMind-3")


def _published():
    """exp3's shapes of the published models, which the notebook's code holds too."""
    shapes = script("exp3_cache_memory").PUBLISHED
    code = _code()
    for name, shape in shapes.items():
        if not name.startswith("MiniMind"):
            assert f'"{name}": ({shape["layers"]}, {shape["kv_heads"]}, {shape["head_dim"]})' in code
    return shapes


@fact
def llama2_7b_layers_and_kv_heads():
    shape = _published()["Llama 2 7B"]
    return shape["layers"], shape["kv_heads"]


@fact
def llama3_8b_and_mistral_layers_and_kv_heads():
    llama3, mistral = _published()["Llama 3 8B"], _published()["Mistral 7B v0.1"]
    assert (llama3["layers"], llama3["kv_heads"]) == (mistral["layers"], mistral["kv_heads"])
    return llama3["layers"], llama3["kv_heads"]


@fact
def published_models_head_dim():
    dims = {_published()[name]["head_dim"] for name in ("Llama 2 7B", "Llama 3 8B", "Mistral 7B v0.1")}
    assert len(dims) == 1
    return dims.pop()


@fact
def llama2_7b_cache_grows_half_a_mib_per_token():
    return script("exp3_cache_memory").cache_bytes(32, 32, 128, 2) == 2 ** 20 // 2


@fact
def llama2_over_llama3_cache():
    memory = script("exp3_cache_memory")
    return memory.cache_bytes(32, 32, 128, 2) // memory.cache_bytes(32, 8, 128, 2)


def _minimind3_bytes():
    memory = script("exp3_cache_memory")
    three = mm.MiniMindConfig.minimind3()
    per_token = memory.cache_bytes(three.num_hidden_layers, three.num_key_value_heads, three.head_dim, 2)
    old = memory.cache_bytes(MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim, 2)
    assert per_token % old == 0
    return per_token, old


@fact
def minimind3_cache_shape():
    """MiniMind-3's layers, KV heads and head width."""
    three = mm.MiniMindConfig.minimind3()
    return three.num_hidden_layers, three.num_key_value_heads, three.head_dim


@fact
def minimind3_cache_kib_per_token_16bit():
    return _minimind3_bytes()[0] // 1024


@fact
def minimind3_cache_over_minimind2():
    per_token, old = _minimind3_bytes()
    return per_token // old


# ---------------------------------------------------------------------------- what a step costs

@fact
def cached_step_cost():
    """MiniMind2's cached step: FLOPs besides attention, FLOPs per key, and the crossover in keys."""
    cost = script("exp2_cost_per_token")
    return (cost.cached_step_rest(MINIMIND2), cost.attention_flops_per_key(MINIMIND2),
            cost.attention_crossover(MINIMIND2))


@fact
def no_cache_cubic_crossover():
    """Generating n tokens without a cache, MiniMind2-Small: the first n at which the steps' attention
    FLOPs (L^2 per-key costs at step L, growing as n^3 in all) reach the rest of their FLOPs
    (projections, MLP and logits, growing as n^2), summed step by step with exp2's closed form."""
    cost = script("exp2_cost_per_token")
    per_key = cost.attention_flops_per_key(MINIMIND2)
    attention = rest = 0
    for length in range(1, 8 * MINIMIND2.max_position_embeddings):
        step, pairs = cost.forward_flops(MINIMIND2, length), length * length * per_key
        attention, rest = attention + pairs, rest + step - pairs
        if attention >= rest:
            return length
    raise AssertionError("attention never overtakes the rest")


@fact
def attention_crossover_thousands():
    """'past about three thousand tokens': the crossover in thousands of keys."""
    return script("exp2_cost_per_token").attention_crossover(MINIMIND2) / 1000


def _exp2_config(name: str):
    n = default_of(name, "tokens")
    return n, mm.MiniMindConfig(hidden_size=default_of(name, "hidden"), num_hidden_layers=4, num_attention_heads=8,
                                num_key_value_heads=2, vocab_size=256, max_position_embeddings=max(512, 2 * n))


@fact
def exp2_growth_exponents():
    """(positions, exponent without a cache, exponent with one) of total FLOPs."""
    cost = script("exp2_cost_per_token")
    n, config = _exp2_config("exp2_cost_per_token")
    lengths = [n // 8, n // 4, n // 2, n]
    exponents = []
    for cached in (False, True):
        flops = cost.step_flops(config, 1, n, cached)
        exponents.append(cost.growth_exponent(lengths, [sum(flops[:m]) for m in lengths]))
    return n, *exponents


@fact
def exp6_defaults_and_margins():
    """exp6's repeats, steps, step speed-up margin, the FLOP ratio of the last step, exponent margin."""
    timing, cost = script("exp6_time_per_token"), script("exp2_cost_per_token")
    n, config = _exp2_config("exp6_time_per_token")
    assert (n, config.hidden_size) == (default_of("exp2_cost_per_token", "tokens"),
                                      default_of("exp2_cost_per_token", "hidden")), "exp6 times the model exp2 counts"
    ratio = cost.forward_flops(config, n) / cost.forward_flops(config, 1, n - 1)  # the last step, as exp6 prints it
    return default_of("exp6_time_per_token", "repeats"), n, timing.MIN_STEP_SPEEDUP, ratio, timing.MIN_EXPONENT_GAP


# ---------------------------------------------------------------------------- the experiments

@fact
def exp1_decoding():
    """(new tokens, prompts) of exp1's greedy decoding."""
    return default_of("exp1_cached_equals_recompute", "new"), default_of("exp1_cached_equals_recompute", "batch")


@fact
def exp1_new_tokens():
    return default_of("exp1_cached_equals_recompute", "new")


@fact
def exp1_layouts():
    return len(script("exp1_cached_equals_recompute").LAYOUTS)


@fact
def exp5_generated_tokens():
    return default_of("exp5_pitfalls", "new")


@fact
def cached_logits_agree_to():
    """'about 1e-5 (checked below 1e-4 ...)': the order of magnitude exp1 measures, and its bound."""
    exp1 = script("exp1_cached_equals_recompute")
    config = mm.MiniMindConfig(hidden_size=128, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                               vocab_size=256, max_position_embeddings=256)
    model = exp1.random_minimind(config, seed=0)
    prompt = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _, cached, _ = exp1.decode_with_cache(model, prompt, 24)
        _, recomputed = exp1.decode_by_recomputing(model, prompt, 24)
    finally:
        torch.set_num_threads(threads)
    error = (cached - recomputed).abs().max().item()
    assert 1e-6 < error < 1e-4, error
    return 1e-5, 1e-4


@fact
def exp4_steps_and_cat_ratio():
    """(steps, how many times more torch.cat writes than preallocation)."""
    exp4 = script("exp4_cache_growth")
    n = default_of("exp4_cache_growth", "steps")
    for steps in range(1, 600):  # doubling's copies stay below 2n for every n
        for start in (1, 3, 4, 16):
            if start <= steps:
                assert exp4.doubling_copies(steps, start) < 2 * steps
    assert exp4.doubling_copies(n, default_of("exp4_cache_growth", "initial")) < n
    return n, (n + 1) / 2


@fact
def exp4_steps():
    return default_of("exp4_cache_growth", "steps")


@fact
def exp4_cat_ratio():
    return (default_of("exp4_cache_growth", "steps") + 1) / 2


# ---------------------------------------------------------------------------- the notebook's toy

@fact
def toy_projections():
    """`T (T + 1) = 30` projections against `2 T = 10`, for the toy's T = 5."""
    T = int(re.search(r"^d, T = \d+, (\d+)$", _code(), re.M).group(1))
    return 1, T * (T + 1), 2, 2 * T


@fact(tolerance=0.5)
def minimind2_million_parameters():
    with torch.device("meta"):
        model = mm.MiniMindForCausalLM(MINIMIND2)
    return sum(p.numel() for p in model.parameters()) / 1e6


@fact
def cache_capacity_after_prompt_and_first_step():
    """A forward that makes its own cache sizes it for the prompt (5); the first step doubles it."""
    model = mm.MiniMindForCausalLM(mm.MiniMindConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                     num_key_value_heads=1, vocab_size=8)).eval()
    with torch.no_grad():
        cache = model(torch.zeros(2, 5, dtype=torch.long), use_cache=True).past_key_values
        first = cache.capacity
        model(torch.zeros(2, 1, dtype=torch.long), past_key_values=cache)
    return first, cache.capacity


@fact
def minimind2_default_sizes():
    return MINIMIND2.hidden_size, MINIMIND2.num_hidden_layers, MINIMIND2.vocab_size


@fact
def padded_prompt_pads():
    """The short prompt's pads, as the notebook's code masks them."""
    return int(re.search(r"batch_mask\[0, :(\d+)\] = 0", _code()).group(1))


# ---------------------------------------------------------------------------- upstream

@fact
def upstream_model_changes_before_minimind3():
    return len(changes_between("9d898576", MINIMIND3_RELEASE))


@fact
def upstream_model_commits_before_minimind3():
    return tuple(changes_between("9d898576", MINIMIND3_RELEASE))
