"""The measuring tools of module 07's experiments, against oracles: the closed-form FLOP count
against torch's FlopCounterMode, the timed decoding loops against generate, the byte counter
against tensors' own sizes and minimind_ref's KVCache, the cache-size formula against
KVCache.nbytes(), and the hand-built decoding step of the pitfalls experiment against the model's
own forward (so that its "broken" variants differ from a faithful copy by the bug alone)."""

from __future__ import annotations

import pytest
import torch
from experiment_scripts import load_experiment
from torch.utils.flop_counter import FlopCounterMode

import minimind_ref as mm

cost = load_experiment("07", "exp2_cost_per_token")
timing = load_experiment("07", "exp6_time_per_token")
memory = load_experiment("07", "exp3_cache_memory")
growth = load_experiment("07", "exp4_cache_growth")
pitfalls = load_experiment("07", "exp5_pitfalls")


def small_config(**overrides):
    fields = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=96, max_position_embeddings=128, flash_attn=False)
    fields.update(overrides)
    return mm.MiniMindConfig(**fields)


@pytest.mark.parametrize("overrides", [dict(), dict(num_key_value_heads=4), dict(num_key_value_heads=1),
                                       dict(qk_norm=True), dict(hidden_size=48, num_attention_heads=3,
                                                                num_key_value_heads=1, intermediate_size=100)],
                         ids=["gqa", "mha", "mqa", "qk_norm", "odd_sizes"])
def test_forward_flops_equals_torch_flop_counter(overrides):
    torch.manual_seed(0)
    config = small_config(**overrides)
    model = mm.MiniMindForCausalLM(config).eval()
    for new, cached, batch in [(1, 0, 1), (9, 0, 1), (1, 13, 1), (4, 6, 3)]:
        assert cost.forward_flops(config, new, cached, batch=batch) == cost.counted_flops(model, new, cached, batch)


def test_forward_flops_counts_all_logits_when_asked():
    torch.manual_seed(0)
    config = small_config()
    model = mm.MiniMindForCausalLM(config).eval()
    ids = torch.randint(0, config.vocab_size, (2, 7))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(ids)  # logits at every position
    assert counter.get_total_flops() == cost.forward_flops(config, 7, logits_positions=7, batch=2)


def test_crossover_is_where_attention_equals_the_rest():
    config = mm.MiniMindConfig()
    keys = cost.attention_crossover(config)
    rest = cost.cached_step_rest(config)
    assert cost.attention_flops_per_key(config) * keys == pytest.approx(rest)
    # one more cached token adds exactly the per-key attention cost
    assert cost.forward_flops(config, 1, 11) - cost.forward_flops(config, 1, 10) == cost.attention_flops_per_key(config)


def test_growth_exponent_recovers_powers():
    lengths = [8, 16, 32, 64]
    assert cost.growth_exponent(lengths, [3.0 * n for n in lengths]) == pytest.approx(1.0)
    assert cost.growth_exponent(lengths, [0.5 * n * n for n in lengths]) == pytest.approx(2.0)


def test_timed_decoding_loops_feed_what_generate_feeds_in_turn():
    """exp6 times one forward per generated token: the whole sequence so far without the cache,
    the prompt and then one token at a time with it; the tokens are generate's. The two loops take
    turns, run after run."""
    config = small_config(flash_attn=True)
    model = pitfalls.random_minimind(config, seed=6)
    prompt = torch.randint(0, config.vocab_size, (1, 3), generator=torch.Generator().manual_seed(7))
    fed, produced = [], []
    feed = model.model.embed_tokens.register_forward_hook(lambda module, args, out: fed.append(args[0].clone()))
    pick = model.lm_head.register_forward_hook(lambda module, args, out: produced.append(out[:, -1].argmax(-1)))
    try:
        seconds = timing.step_times(model, prompt, 6, repeats=2)
    finally:
        feed.remove()
        pick.remove()
    assert [len(seconds[cached]) for cached in (False, True)] == [6, 6]
    assert all(s > 0 for cached in (False, True) for s in seconds[cached])
    expected = model.generate(prompt, 6, use_cache=False)[:, 3:]
    recompute, cache = [3, 4, 5, 6, 7, 8], [3, 1, 1, 1, 1, 1]
    assert [ids.shape[1] for ids in fed] == (recompute + cache) * 2, "one forward per token, the loops in turn"
    for run in range(4):
        assert torch.equal(torch.stack(produced[6 * run:6 * run + 6], 1), expected)


def test_bytes_written_counts_cat_copies_and_ignores_views():
    a, b = torch.randn(3, 5), torch.randn(2, 5)
    with growth.BytesWritten() as counter:
        joined = torch.cat([a, b])
    assert counter.bytes == joined.nbytes and counter.allocations == 1
    storage = torch.zeros(10, 5)
    with growth.BytesWritten() as counter:
        storage[4:6] = b  # a slice assignment writes the slice only
        view = storage[:6].transpose(0, 1)  # views write nothing
    assert counter.bytes == b.nbytes and view.shape == (5, 6)
    with growth.BytesWritten() as counter:
        storage.clone()
        torch.empty(100)
    assert counter.bytes == storage.nbytes and counter.allocations == 2


@pytest.mark.parametrize("steps, initial", [(1, 1), (5, 1), (16, 16), (17, 16), (40, 3), (64, 4), (100, 8)])
def test_bytes_written_by_kvcache_match_the_closed_forms(steps, initial):
    config = small_config(max_position_embeddings=256)
    b = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4
    tokens = growth.new_tokens(config, 1, steps, seed=0)
    closed = {"torch.cat (naive)": b * steps * (steps + 1) // 2, "preallocated": b * steps,
              "doubling": b * (steps + growth.doubling_copies(steps, initial))}
    for name, cache in growth.make_caches(config, 1, steps, initial).items():
        counter = growth.BytesWritten()
        for step in tokens:
            with counter:
                for layer, (k, v) in enumerate(step):
                    cache.update(layer, k, v)
        assert counter.bytes == closed[name], name
        keys = cache.keys[1] if name.startswith("torch.cat") else cache.layer(1)[0]
        assert torch.equal(keys, torch.cat([step[1][0] for step in tokens], dim=2)), name


def test_doubling_copies_matches_kvcache_growth():
    config = small_config(max_position_embeddings=1024)
    for steps, initial in [(1, 1), (9, 2), (33, 4), (300, 16)]:
        cache = mm.KVCache(config, batch_size=1, capacity=initial)
        capacities = []
        one = torch.zeros(1, config.num_key_value_heads, 1, config.head_dim)
        for _ in range(steps):
            before = cache.capacity if cache.keys[0] is not None else None
            cache.update(0, one, one)
            if before is not None and cache.capacity != before:
                capacities.append(before)  # a growth copies everything the old storage held
        assert sum(capacities) == growth.doubling_copies(steps, initial)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kv_heads, batch, tokens", [(1, 1, 1), (2, 3, 7), (4, 2, 5)])
def test_cache_bytes_formula_equals_kvcache(dtype, kv_heads, batch, tokens):
    config = small_config(num_key_value_heads=kv_heads)
    cache = memory.fill_random(config, tokens, dtype, batch=batch)
    element = torch.empty(0, dtype=dtype).element_size()
    expected = memory.cache_bytes(config.num_hidden_layers, kv_heads, config.head_dim, element, tokens, batch)
    assert cache.nbytes() == expected == memory.layer_tensor_bytes(cache)


def test_pitfalls_harness_reproduces_the_model_when_right():
    """blocks_forward with the right positions and the bottom-right mask is the model's own step."""
    config = small_config(flash_attn=True)
    model = pitfalls.random_minimind(config, seed=1)
    prompt = torch.randint(0, config.vocab_size, (2, 6), generator=torch.Generator().manual_seed(2))
    forced = torch.randint(0, config.vocab_size, (2, 5), generator=torch.Generator().manual_seed(3))
    _, reference = pitfalls.decode(model, prompt, 5, pitfalls.step_right, forced=forced)
    for step in (pitfalls.step_bottom_right_mask, pitfalls.step_position_offset):
        _, logits = pitfalls.decode(model, prompt, 5, step, forced=forced)
        assert torch.allclose(logits, reference, atol=1e-5), step.__name__
    for step in (pitfalls.step_top_left_mask, pitfalls.step_position_zero):
        _, logits = pitfalls.decode(model, prompt, 5, step, forced=forced)
        assert torch.allclose(logits[:, 0], reference[:, 0])  # the prefill is the same
        assert (logits[:, 1:] - reference[:, 1:]).abs().max() > 1e-2, step.__name__


def test_padded_decoding_with_extended_mask_equals_each_prompt_alone():
    config = small_config(flash_attn=True)
    model = pitfalls.random_minimind(config, seed=4)
    g = torch.Generator().manual_seed(5)
    short, long = torch.randint(1, 96, (1, 3), generator=g), torch.randint(1, 96, (1, 7), generator=g)
    ids = torch.cat([torch.cat([torch.zeros(1, 4, dtype=torch.long), short], 1), long])
    mask = torch.ones_like(ids)
    mask[0, :4] = 0
    tokens, _ = pitfalls.decode_padded(model, ids, mask, 8)
    assert torch.equal(tokens[0], model.generate(short, 8)[0, 3:])
    assert torch.equal(tokens[1], model.generate(long, 8)[0, 7:])
    assert torch.equal(tokens, model.generate(ids, 8, attention_mask=mask)[:, 7:])
