"""Module 07's facts: cache sizes measured on minimind_ref's KVCache (and, for the published models'
shapes, exp3's closed form, which exp3 holds to KVCache), a cached step's FLOPs counted by torch
on MiniMind2-Small (exp2's counter), growth from exp2's counts, bytes written counted by exp4 on
labkit's caches, the agreement exp1 measures and the tolerance it checks, the notebook's cells,
and upstream's history.
"""

from __future__ import annotations

import math

import torch

import minimind_ref as mm
from facts import fact, once, sources
from facts.measure import cache_bytes_per_token, parameters
from facts.upstream import MINIMIND3_RELEASE, changes_between

MINIMIND2 = mm.MiniMindConfig()
TOY_RECOMPUTED_CELL = "4746adb5"  # the toy: keys and values recomputed at every step
TOY_CACHED_CELL = "68732044"  # the toy with a cache
PUBLISHED_CELL = "c69dc998"  # the published models' caches
PADDED_CELL = "d0517d0c"  # two prompts, one padded


def script(name: str):
    return sources.experiment("07", name)


def default_of(name: str, flag: str):
    return vars(sources.defaults("07", name))[flag]


# ---------------------------------------------------------------------------- the cache's size

@fact
def minimind2_cache_shape():
    """(layers, KV heads, head_dim) of MiniMind2-Small."""
    return MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim


@fact
def minimind2_cache_bytes_per_token_float32():
    """Measured on minimind_ref's KVCache, float32."""
    return int(cache_bytes_per_token(MINIMIND2, torch.float32))


@fact
def minimind2_query_heads_per_kv_head():
    return MINIMIND2.num_attention_heads // MINIMIND2.num_key_value_heads


@fact
def minimind2_mha_cache_bytes_per_token_float32():
    """(KV heads, bytes): MiniMind2-Small with a KV head per query head."""
    mha = MINIMIND2.replace(num_key_value_heads=MINIMIND2.num_attention_heads)
    return mha.num_key_value_heads, int(cache_bytes_per_token(mha, torch.float32))


def _context() -> int:
    """The context of the table's first column of sizes, as the notebook's cell computes it."""
    return sources.read("07", PUBLISHED_CELL, r"per \* (\d+) / GiB")


@once
def _measured_16bit() -> dict[str, int]:
    """Bytes per token of each published shape, measured by exp3 on KVCaches in bfloat16."""
    with sources.seeded(0):
        measured, formula_holds = script("exp3_cache_memory").published_models(_context())
    assert formula_holds, "exp3's closed form no longer equals the bytes KVCache holds"
    return measured


@fact
def minimind2_104m_cache_shape():
    """(layers, KV heads, head_dim) of upstream's MiniMind2, the 104M model."""
    big = mm.MiniMindConfig.minimind2()
    return big.num_hidden_layers, big.num_key_value_heads, big.head_dim


@fact
def minimind2_104m_cache_bytes_per_token_float32():
    return int(cache_bytes_per_token(mm.MiniMindConfig.minimind2(), torch.float32))


def _row(name: str):
    shape = script("exp3_cache_memory").PUBLISHED[name]
    per_token = _measured_16bit()[name]
    at_4096 = per_token * _context()
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
    """exp3's row for MiniMind2-Small is minimind_ref's default, and its bytes are KVCache's."""
    shape = script("exp3_cache_memory").PUBLISHED["MiniMind2-Small"]
    assert (shape["layers"], shape["kv_heads"], shape["head_dim"]) == (
        MINIMIND2.num_hidden_layers, MINIMIND2.num_key_value_heads, MINIMIND2.head_dim)
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
    code = sources.cell("07", PUBLISHED_CELL)
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


def _bytes_16bit(name: str) -> int:
    _published()  # the notebook's shapes are exp3's
    return _measured_16bit()[name]


@fact
def llama2_7b_cache_grows_half_a_mib_per_token():
    return _bytes_16bit("Llama 2 7B") == 2 ** 20 // 2


@fact
def llama2_over_llama3_cache():
    return _bytes_16bit("Llama 2 7B") // _bytes_16bit("Llama 3 8B")


def _minimind3_bytes():
    """Bytes per token in bfloat16 of MiniMind-3's KVCache and of MiniMind2-Small's, measured."""
    per_token = int(cache_bytes_per_token(mm.MiniMindConfig.minimind3(), torch.bfloat16))
    old = int(cache_bytes_per_token(MINIMIND2, torch.bfloat16))
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

@once
def cached_step_flops() -> tuple[int, int]:
    """A cached step of MiniMind2 (random weights, explicit attention so that torch counts every
    product), counted by torch's FLOP counter as exp2 counts: (FLOPs besides attention, per key)."""
    counted_flops = script("exp2_cost_per_token").counted_flops
    with sources.seeded(0):
        model = mm.MiniMindForCausalLM(MINIMIND2.replace(flash_attn=False)).eval()
        one, two = (counted_flops(model, 1, cached) for cached in (1, 2))  # the new token sees 2, then 3 keys
    per_key = two - one
    return one - 2 * per_key, per_key


@fact
def cached_step_cost():
    """MiniMind2-Small's cached step: FLOPs besides attention, FLOPs per key, and the crossover in keys
    (where attention costs as much as the rest), all counted; exp2's closed form must agree."""
    rest, per_key = cached_step_flops()
    cost = script("exp2_cost_per_token")
    assert (rest, per_key) == (cost.cached_step_rest(MINIMIND2), cost.attention_flops_per_key(MINIMIND2)), \
        "exp2's closed form no longer counts what torch counts"
    return rest, per_key, rest / per_key


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
    rest, per_key = cached_step_flops()
    return rest / per_key / 1000


@fact
def exp2_growth_exponents():
    """(positions, exponent without a cache, exponent with one) of total FLOPs, as exp2 computes them
    at its defaults."""
    cost, n = script("exp2_cost_per_token"), default_of("exp2_cost_per_token", "tokens")
    _, _, _, exponents = cost.flop_growth(cost.counted_model(default_of("exp2_cost_per_token", "hidden"), n), n)
    return n, exponents[False], exponents[True]


@fact
def exp6_defaults_and_margins():
    """exp6's repeats, steps, step speed-up margin, the FLOP ratio of the last step, exponent margin."""
    timing, cost = script("exp6_time_per_token"), script("exp2_cost_per_token")
    n = default_of("exp6_time_per_token", "tokens")
    config = cost.counted_model(default_of("exp6_time_per_token", "hidden"), n)
    flops, *_ = cost.flop_growth(config, n)
    assert (n, config.hidden_size) == (default_of("exp2_cost_per_token", "tokens"),
                                      default_of("exp2_cost_per_token", "hidden")), "exp6 times the model exp2 counts"
    ratio = flops[False][-1] / flops[True][-1]  # the last step, as exp6 prints it
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


@once
def exp1_largest_logit_difference() -> float:
    """The largest |cached - recomputed| logit over exp1's layouts, decoded as exp1 decodes them at its
    defaults (seed 0; the generate() comparison left out)."""
    exp1, args = script("exp1_cached_equals_recompute"), sources.defaults("07", "exp1_cached_equals_recompute")
    base = dict(exp1.MODEL, max_position_embeddings=max(256, 2 * (args.prompt + args.new)))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as exp1 runs
    try:
        with sources.seeded(0):
            prompt = torch.randint(0, base["vocab_size"], (args.batch, args.prompt))
        errors = []
        for index, overrides in enumerate(exp1.LAYOUTS.values()):
            model = exp1.random_minimind(mm.MiniMindConfig(**base, **overrides), seed=index)
            _, cached, _ = exp1.decode_with_cache(model, prompt, args.new)
            _, recomputed = exp1.decode_by_recomputing(model, prompt, args.new)
            errors.append((cached - recomputed).abs().max().item())
    finally:
        torch.set_num_threads(threads)
    return max(errors)


@fact(magnitude=True, spread=1.0,
      why="'about 1e-5', an order of magnitude: 1.04e-5 here, 1.08e-5 with torch's portable kernels and up to "
          "1.76e-5 under last-bit noise, a relative spread of 0.7 (python -m facts.spread); the power of ten holds "
          "for anything within a factor of 2")
def cached_logits_agree_to():
    """'about 1e-5': the largest logit difference exp1 measures."""
    return exp1_largest_logit_difference()


@fact
def exp1_relative_tolerance():
    """'checked below 1e-4 of the largest logit': the tolerance exp1 checks."""
    return script("exp1_cached_equals_recompute").RELATIVE_TOLERANCE


@once
def exp4_bytes_written() -> dict[str, int]:
    """Bytes each of exp4's three caches writes over exp4's default steps, counted operation by operation
    by exp4 itself (labkit's BytesWritten on labkit's NaiveConcatCache and minimind_ref's KVCache). The
    ratios do not depend on the bytes per token, so the cache is one layer of one head of width 8."""
    exp4 = script("exp4_cache_growth")
    n, initial = default_of("exp4_cache_growth", "steps"), default_of("exp4_cache_growth", "initial")
    config = mm.MiniMindConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1)
    tokens = exp4.new_tokens(config, 1, n, seed=0)
    b = 2 * config.head_dim * 4  # bytes per step: K and V of one token, float32
    counted, _, _ = exp4.count_bytes_written(config, tokens, b, 1, initial)
    return {name: written for name, (written, _) in counted.items()}


@fact
def exp4_steps_and_cat_ratio():
    """(steps, how many times more torch.cat writes than preallocation), counted."""
    written = exp4_bytes_written()
    return default_of("exp4_cache_growth", "steps"), written["torch.cat (naive)"] / written["preallocated"]


@fact
def exp4_steps():
    return default_of("exp4_cache_growth", "steps")


@fact
def exp4_cat_ratio():
    written = exp4_bytes_written()
    return written["torch.cat (naive)"] / written["preallocated"]


# ---------------------------------------------------------------------------- the notebook's toy

@fact
def toy_projections():
    """`T (T + 1) = 30` projections against `2 T = 10`: the toy's counts, without and with the cache."""
    toy = sources.run_cells("07", TOY_RECOMPUTED_CELL, torch=torch, math=math, print=lambda *a, **k: None)
    recomputed = toy["projections"]
    toy = sources.run_cells("07", TOY_CACHED_CELL, **toy)
    T = toy["T"]
    assert (recomputed, toy["projections"]) == (T * (T + 1), 2 * T), "the toy counts another formula"
    return 1, recomputed, 2, toy["projections"]


@fact
def minimind2_million_parameters():
    return parameters(MINIMIND2) / 1e6


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
    return sources.read("07", PADDED_CELL, r"batch_mask\[0, :(\d+)\] = 0")


# ---------------------------------------------------------------------------- upstream

@fact
def upstream_model_changes_before_minimind3():
    return len(changes_between("9d898576", MINIMIND3_RELEASE))


@fact
def upstream_model_commits_before_minimind3():
    return tuple(changes_between("9d898576", MINIMIND3_RELEASE))
