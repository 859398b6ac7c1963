"""Hostile inputs, each refused by name or computed correctly (issue 26), and hypothesis drawing
wrong values for every public function of minimind_ref: a wrong type, a degenerate number (0,
negative, inf, nan, a float where an int is meant, a bool, a string), a wrong shape. A refusal
must be the function's own, a TypeError or ValueError whose message names the argument; a raw
error from deep inside torch or Python, or a silent NaN, fails.

Draws are derandomised with fixed example counts, so every run tries the same inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minimind_ref as mm
from minimind_ref.variants import flash_attention
from minimind_ref.variants.flash_attention_fast import flash_attention_fast
from minimind_ref.variants.mla import LatentCache, MLAConfig, MultiHeadLatentAttention

HOSTILE = settings(derandomize=True, database=None, deadline=None, max_examples=40,
                   suppress_health_check=[HealthCheck.too_slow])

# Values that are not what a size, a count or a rate should be.
BAD_NUMBERS = st.sampled_from([0, -1, -2.5, 2.5, math.inf, -math.inf, math.nan, True, False, "2", None, 1e300,
                               -1e-300, [2], torch.tensor(2)])

CONFIG = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           vocab_size=64, max_position_embeddings=64)


def refused_by_name(fn, *names: str) -> None:
    """fn() raises a TypeError or ValueError of ours whose message names one of `names`."""
    with pytest.raises((TypeError, ValueError)) as info:
        fn()
    assert any(name in str(info.value) for name in names), str(info.value)


def finite(tensor: torch.Tensor) -> bool:
    return bool(torch.isfinite(tensor).all())


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return mm.MiniMindForCausalLM(CONFIG).eval()


# -- the kinds the probe found ---------------------------------------------------------------------

@pytest.mark.parametrize("fn", [mm.scaled_dot_product_attention, mm.fused_attention, flash_attention])
@pytest.mark.parametrize("mask_shape", [(2, 1, 3, 3), (1, 1, 1, 3, 3), (1, 3, 3, 3), (3, 4)])
def test_a_mask_that_would_grow_the_scores_is_refused_on_every_path(fn, mask_shape):
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    with pytest.raises(RuntimeError):  # torch refuses these too
        torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=torch.ones(mask_shape, dtype=torch.bool))
    refused_by_name(lambda: fn(q, k, k, attn_mask=torch.ones(mask_shape, dtype=torch.bool)), "attn_mask")


@given(base=st.sampled_from([0, -1.0, -1e6, 1.0, 0.5, math.inf, math.nan, "1e6", None]))
@HOSTILE
def test_rope_base_that_gives_no_frequencies_is_refused(base):
    refused_by_name(lambda: mm.precompute_freqs_cis(8, 16, base), "rope_base")
    refused_by_name(lambda: mm.MiniMindConfig(rope_theta=base), "rope_theta")


@given(eps=st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -1e-6, "1e-6", None]))
@HOSTILE
def test_norm_eps_degenerate_values_are_refused(eps):
    refused_by_name(lambda: MLAConfig(rms_norm_eps=eps), "rms_norm_eps")
    refused_by_name(lambda: mm.MiniMindConfig(rms_norm_eps=eps), "rms_norm_eps")


@given(keep=st.sampled_from([-1, -5, 2.5, "1", None, math.inf, True]))
@HOSTILE
def test_logits_to_keep_must_be_a_count(model, keep):
    refused_by_name(lambda: model(torch.randint(0, 64, (2, 5)), logits_to_keep=keep), "logits_to_keep")


def test_logits_to_keep_keeps_the_last_positions(model):
    ids = torch.randint(0, 64, (2, 5))
    with torch.no_grad():
        full = model(ids).logits
        assert torch.allclose(model(ids, logits_to_keep=2).logits, full[:, -2:], atol=1e-6)
        assert torch.equal(model(ids, logits_to_keep=9).logits, full)  # more than there are: all


def test_a_half_precision_cache_widens_rather_than_store_inf():
    cache = mm.KVCache(CONFIG, 1)
    k = torch.randn(1, 2, 2, 8).half()
    cache.update(0, k, k)
    big = torch.full((1, 2, 1, 8), 1e5, dtype=torch.float64)
    keys, values = cache.update(0, big, big)
    assert keys.dtype == torch.float64 and finite(keys) and keys[0, 0, 2, 0].item() == 1e5


@pytest.mark.parametrize("shape", [(0, 2, 3, 4), (1, 0, 3, 4), (1, 2, 0, 4), (0, 0, 3, 4)])
@pytest.mark.parametrize("fn", [flash_attention_fast, flash_attention])
def test_flash_attention_with_empty_sizes_equals_torch(fn, shape):
    q = torch.randn(shape)
    expected = torch.nn.functional.scaled_dot_product_attention(q, q, q)
    out = fn(q, q, q)
    assert out.shape == expected.shape and torch.equal(out, expected)


def test_mla_refuses_token_ids_and_a_kv_cache():
    config = MLAConfig(hidden_size=32, num_attention_heads=2, kv_lora_rank=8, qk_nope_head_dim=8,
                       qk_rope_head_dim=4, v_head_dim=8)
    mla = MultiHeadLatentAttention(config)
    refused_by_name(lambda: mla(torch.randint(0, 5, (1, 3, 32))), "hidden states")
    refused_by_name(lambda: mla(torch.randn(1, 3, 32), cache=mm.KVCache(CONFIG, 1)), "LatentCache")
    refused_by_name(lambda: mla(torch.randn(1, 3, 32), absorbed="yes"), "absorbed")
    refused_by_name(lambda: LatentCache(config, "2"), "batch_size")


@given(bad=BAD_NUMBERS)
@HOSTILE
def test_cache_sizes_must_be_positive_integers(bad):
    refused_by_name(lambda: mm.KVCache(CONFIG, bad), "batch_size")
    if bad is not None:
        refused_by_name(lambda: mm.KVCache(CONFIG, 1, capacity=bad), "capacity")


@pytest.mark.parametrize("field, value", [("hidden_size", 64), ("vocab_size", 80), ("intermediate_size", 192),
                                          ("num_key_value_heads", 4), ("head_dim", 16), ("num_hidden_layers", 3),
                                          ("qk_norm", True)])
def test_loading_weights_of_another_config_names_the_field(model, field, value):
    other = mm.MiniMindForCausalLM(CONFIG.replace(**{field: value}))
    refused_by_name(lambda: model.load_state_dict(other.state_dict(), strict=True), field)


@pytest.mark.parametrize("temperature", [1e-300, 1e-45, 5e-324])
def test_a_vanishing_temperature_is_greedy(model, temperature):
    ids = torch.randint(0, 64, (2, 5), generator=torch.Generator().manual_seed(3))
    assert torch.equal(model.generate(ids, 4, temperature=temperature), model.generate(ids, 4))
    logits = torch.tensor([[1e30, -1e30, 0.0], [-3.0, 2.0, 2.0 - 1e-6]])
    assert mm.select_next_token(logits, temperature=temperature).tolist() == [0, 1]


@pytest.mark.parametrize("logits", [
    torch.full((2, 5), -math.inf), torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]]), torch.tensor([[math.nan, 1.0]]),
    torch.tensor([[math.inf, 1.0]]), torch.zeros(0, 5), torch.zeros(2, 0), torch.zeros(5),
    torch.zeros(2, 5, dtype=torch.long)])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_logits_with_nothing_to_choose_are_refused(logits, temperature):
    refused_by_name(lambda: mm.select_next_token(logits, temperature=temperature), "logits")


# -- every public function, drawn wrong -------------------------------------------------------------

@given(value=BAD_NUMBERS, field=st.sampled_from(["hidden_size", "num_hidden_layers", "num_attention_heads",
                                                 "vocab_size", "max_position_embeddings", "dropout",
                                                 "initializer_range", "flash_attn", "qk_norm", "eos_token_id"]))
@HOSTILE
def test_config_fields(value, field):
    try:
        config = mm.MiniMindConfig(**{field: value})
    except (TypeError, ValueError) as error:
        assert field in str(error)
        return
    assert getattr(config, field) == value and type(value) in (int, float, bool)  # a valid value, kept


@given(value=BAD_NUMBERS, argument=st.sampled_from(["max_new_tokens", "temperature", "top_k", "top_p",
                                                    "eos_token_id", "use_cache"]))
@HOSTILE
def test_generate_arguments(model, value, argument):
    kwargs = {"max_new_tokens": 2, argument: value}
    if argument in ("top_k", "top_p"):
        kwargs["temperature"] = 1.0
    ids = torch.randint(0, 64, (1, 3))
    try:
        out = model.generate(ids, **kwargs)
    except (TypeError, ValueError) as error:
        assert argument in str(error), str(error)
        return
    assert out.shape[0] == 1 and out.dtype == torch.long


@given(ids=st.sampled_from([torch.zeros(3, dtype=torch.long), torch.zeros(1, 2, 3, dtype=torch.long),
                            torch.zeros(1, 3), torch.tensor([[64]]), torch.tensor([[-1]]), torch.zeros(0, 3).long(),
                            [[1, 2]], None, torch.zeros(1, 65, dtype=torch.long)]),
       mask=st.sampled_from([None, torch.ones(1, 4), torch.full((1, 3), 2), torch.ones(2, 3), torch.ones(1, 3, 1),
                             "mask"]))
@HOSTILE
def test_forward_inputs(model, ids, mask):
    try:
        out = model(ids, attention_mask=mask)
    except (TypeError, ValueError) as error:
        assert any(name in str(error) for name in ("input_ids", "attention_mask", "max_position")), str(error)
        return
    assert finite(out.logits)


@given(n_rep=BAD_NUMBERS, shape=st.sampled_from([(1, 2, 3, 4), (2, 3, 4), (1, 2, 3, 4, 1)]))
@HOSTILE
def test_repeat_kv(n_rep, shape):
    x = torch.randn(shape)
    try:
        out = mm.repeat_kv(x, n_rep)
    except (TypeError, ValueError) as error:
        assert "repeat_kv" in str(error)
        return
    assert out.shape == (shape[0], shape[1] * n_rep, *shape[2:])


@given(query_len=BAD_NUMBERS, key_len=st.sampled_from([3, 0, -1, 2.0, None]))
@HOSTILE
def test_mask_functions(query_len, key_len):
    for fn in (lambda: mm.causal_mask(query_len, key_len), lambda: mm.sliding_window_mask(query_len, key_len, 2),
               lambda: mm.combined_mask(torch.ones(1, 3), query_len, key_len)):
        try:
            mask = fn()
        except (TypeError, ValueError) as error:
            assert any(name in str(error) for name in ("query_len", "key_len", "attention_mask")), str(error)
            continue
        assert mask is None or mask.dtype == torch.bool


@given(scale=BAD_NUMBERS, dropout_p=st.sampled_from([0.0, -0.1, 1.5, math.nan, "0.1", None]),
       is_causal=st.sampled_from([False, True, 1, "yes"]))
@HOSTILE
def test_attention_functions(scale, dropout_p, is_causal):
    q = torch.randn(1, 2, 3, 4)
    for fn in (mm.scaled_dot_product_attention, mm.fused_attention):
        try:
            out = fn(q, q, q, scale=scale, dropout_p=dropout_p, is_causal=is_causal)
        except (TypeError, ValueError) as error:
            assert any(name in str(error) for name in ("scale", "dropout_p", "is_causal")), str(error)
            continue
        assert finite(out)


@given(dim=BAD_NUMBERS, end=st.sampled_from([8, 0, -1, 2.5, None]))
@HOSTILE
def test_rope_tables(dim, end):
    try:
        cos, sin = mm.precompute_freqs_cis(dim, end)
    except (TypeError, ValueError) as error:
        assert any(name in str(error) for name in ("dim", "end")), str(error)
        return
    assert finite(cos) and finite(sin)


@given(cos_shape=st.sampled_from([(3, 4), (1, 4), (3, 2), (2, 3, 4), (4,), (1, 3, 3, 4)]))
@HOSTILE
def test_apply_rotary_pos_emb(cos_shape):
    q = torch.randn(2, 2, 3, 4)
    try:
        q_rot, _ = mm.apply_rotary_pos_emb(q, q, torch.ones(cos_shape), torch.zeros(cos_shape))
    except (TypeError, ValueError) as error:
        assert "apply_rotary_pos_emb" in str(error)
        return
    assert torch.equal(q_rot, q)  # cos 1, sin 0: no rotation


# -- the kinds the second probe found (each a class: more of its kind are drawn) --------------------

NOT_CONFIGS = st.sampled_from([{}, 0, 1, None, "config", [CONFIG], 2.5, mm.RMSNorm(4)])
CONSTRUCTORS = {"Attention": lambda c: mm.Attention(c), "FeedForward": lambda c: mm.FeedForward(c),
                "MiniMindBlock": lambda c: mm.MiniMindBlock(0, c), "MiniMindModel": lambda c: mm.MiniMindModel(c),
                "MiniMindForCausalLM": lambda c: mm.MiniMindForCausalLM(c), "KVCache": lambda c: mm.KVCache(c, 1)}


@given(config=NOT_CONFIGS, owner=st.sampled_from(sorted(CONSTRUCTORS)))
@HOSTILE
def test_a_constructor_given_no_config_names_it(config, owner):
    if config is None and owner == "MiniMindForCausalLM":  # None, and only None, means the default config
        assert CONSTRUCTORS[owner](config).config == mm.MiniMindConfig()
        return
    with pytest.raises(TypeError, match=rf"{owner}.*config must be a MiniMindConfig, got {type(config).__name__}"):
        CONSTRUCTORS[owner](config)


def test_swapped_constructor_arguments_are_named():
    refused_by_name(lambda: mm.MiniMindBlock(CONFIG, 0), "MiniMindBlock(layer_idx, config): config")
    refused_by_name(lambda: mm.Attention(0, CONFIG), "Attention(config, layer_idx): config")
    refused_by_name(lambda: mm.KVCache(2, CONFIG), "KVCache: config")
    assert mm.MiniMindBlock(1, CONFIG).self_attn.layer_idx == 1


@given(layer_idx=BAD_NUMBERS.filter(lambda v: not (type(v) is int and v >= 0)))
@HOSTILE
def test_an_attention_layer_index_is_named_when_built(layer_idx):
    refused_by_name(lambda: mm.Attention(CONFIG, layer_idx=layer_idx), "layer_idx")
    refused_by_name(lambda: mm.MiniMindBlock(layer_idx, CONFIG), "layer_idx")


@given(dim=BAD_NUMBERS, eps=st.sampled_from([1e-5, 0.0, -1.0, math.nan, math.inf, "1e-5", None, True]))
@HOSTILE
def test_rms_norm_sizes(dim, eps):
    refused_by_name(lambda: mm.RMSNorm(dim, eps=eps), "dim", "eps")


@given(width=st.integers(0, 9).filter(lambda w: w != 4), lead=st.lists(st.integers(1, 3), max_size=2))
@HOSTILE
def test_norm_and_feed_forward_name_an_input_of_another_width(width, lead):
    refused_by_name(lambda: mm.RMSNorm(4)(torch.randn(*lead, width)), "[..., 4]")
    refused_by_name(lambda: mm.RMSNorm(1)(torch.randn(*lead, width + 2)), "[..., 1]")  # never a silent broadcast
    refused_by_name(lambda: mm.FeedForward(CONFIG)(torch.randn(*lead, width + 33)), "[..., 32]")


@pytest.mark.parametrize("x", [torch.ones(2, 4, dtype=torch.long), torch.ones(2, 4, dtype=torch.bool),
                               torch.tensor(1.0), [1.0, 2.0, 3.0, 4.0], None])
def test_norm_and_feed_forward_name_an_input_that_is_not_float_features(x):
    refused_by_name(lambda: mm.RMSNorm(4)(x), "RMSNorm: x")
    refused_by_name(lambda: mm.FeedForward(CONFIG.replace(hidden_size=4, num_attention_heads=2,
                                                          num_key_value_heads=1))(x), "FeedForward: x")


@given(shape=st.lists(st.integers(0, 5), max_size=3).map(tuple))
@HOSTILE
def test_rotate_half_turns_pairs_or_names_x(shape):
    x = torch.randn(shape)
    if not shape or shape[-1] % 2:
        refused_by_name(lambda: mm.rotate_half(x), "rotate_half: x")
        return
    half = shape[-1] // 2
    assert torch.equal(mm.rotate_half(x), torch.cat((-x[..., half:], x[..., :half]), dim=-1))
    assert torch.equal(mm.rotate_half(mm.rotate_half(x)), -x)  # two quarter turns: a half turn


def test_numpy_bools_are_bools_and_numpy_numbers_are_stored_as_pythons():
    config = mm.MiniMindConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, vocab_size=64,
                               num_hidden_layers=1, max_position_embeddings=16, qk_norm=np.True_,
                               flash_attn=np.False_, tie_word_embeddings=np.bool_(True))
    assert config.qk_norm is True and config.flash_attn is False and config.tie_word_embeddings is True
    cache = mm.KVCache(config, np.int64(2), np.int32(4))
    assert type(cache.batch_size) is int and type(cache.capacity) is int and cache.capacity == 4
    norm = mm.RMSNorm(np.int64(4), eps=np.float32(1e-5))
    assert type(norm.eps) is float and type(mm.Attention(config, np.int64(0)).layer_idx) is int
    model, ids = mm.MiniMindForCausalLM(config).eval(), torch.randint(0, 64, (1, 3))
    with torch.no_grad():
        out = model(ids, use_cache=np.True_, output_attentions=np.True_)
    assert out.past_key_values is not None and len(out.attentions) == 1
    assert model.generate(ids, 2, use_cache=np.False_).shape == (1, 5)
    q = torch.randn(1, 2, 3, 4)
    for fn in (mm.scaled_dot_product_attention, mm.fused_attention, flash_attention):
        assert torch.allclose(fn(q, q, q, is_causal=np.True_, enable_gqa=np.False_), fn(q, q, q, is_causal=True),
                              atol=1e-6)
    assert torch.equal(mm.combined_mask(torch.tensor([[0, 1, 1]]), 3, 3, causal=np.True_),
                       mm.combined_mask(torch.tensor([[0, 1, 1]]), 3, 3))


@pytest.mark.parametrize("hidden", ["768", None, math.nan, math.inf, 0, -5, True, 100.7, [768]])
def test_a_hidden_size_to_derive_from_is_named_first(hidden):
    with pytest.raises(mm.ConfigError, match="minimind3: hidden_size must be a positive integer"):
        mm.MiniMindConfig.minimind3(hidden_size=hidden)
    with pytest.raises(mm.ConfigError, match="minimind_intermediate_size: hidden_size must be a positive integer"):
        mm.minimind_intermediate_size(hidden)
    assert mm.minimind_intermediate_size(np.int64(512)) == 1408


def _meta(t):
    return t.to("meta")


def _sparse(t):
    return t.to_sparse()


@pytest.mark.parametrize("kind", [_meta, _sparse])
def test_tensors_without_values_are_named_everywhere(model, kind):
    """A meta tensor (shape, no values) or a sparse one, wherever a tensor goes in."""
    ids, q = torch.randint(0, 64, (2, 3)), torch.randn(1, 2, 3, 8)
    cos, sin = mm.precompute_freqs_cis(8, 3)
    bad_ids = kind(ids)
    calls = {"input_ids": lambda: model(bad_ids), "attention_mask": lambda: model(ids, attention_mask=bad_ids),
             "position_ids": lambda: model(ids, position_ids=bad_ids), "labels": lambda: model(ids, labels=bad_ids),
             "logits": lambda: mm.select_next_token(kind(torch.randn(2, 5))),
             "x": lambda: mm.repeat_kv(kind(q), 2), "cos": lambda: mm.apply_rotary_pos_emb(q, q, kind(cos), sin),
             "k": lambda: mm.KVCache(CONFIG, 1).update(0, kind(torch.zeros(1, 2, 1, 8)), torch.zeros(1, 2, 1, 8))}
    for name, call in calls.items():
        with pytest.raises(TypeError, match=f"{name} must be a dense tensor with values"):
            call()
    refused_by_name(lambda: mm.padding_mask(kind(torch.ones(2, 3))), "attention_mask must be a dense tensor")
    for fn in (mm.scaled_dot_product_attention, mm.fused_attention, flash_attention):
        for args in ((kind(q), q, q), (q, kind(q), q), (q, q, kind(q))):
            refused_by_name(lambda: fn(*args), "must be a dense tensor")
        refused_by_name(lambda: fn(q, q, q, attn_mask=kind(torch.ones(1, 1, 3, 3, dtype=torch.bool))), "attn_mask")
    layer = mm.Attention(CONFIG)
    refused_by_name(lambda: layer(kind(torch.randn(1, 3, 32)), (cos, sin)), "x must be a dense tensor")
    refused_by_name(lambda: layer(torch.randn(1, 3, 32), (kind(cos), sin)), "dense float tables on x's device")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device")
def test_position_tables_on_another_device_are_named():
    q, (cos, sin) = torch.randn(1, 2, 3, 8, device="cuda"), mm.precompute_freqs_cis(8, 3)
    refused_by_name(lambda: mm.apply_rotary_pos_emb(q, q, cos, sin), "cos.to(q.device)")
    layer = mm.Attention(CONFIG).cuda()
    refused_by_name(lambda: layer(torch.randn(1, 3, 32, device="cuda"), (cos, sin)), "x's device")


@pytest.mark.parametrize("fn", [mm.scaled_dot_product_attention, mm.fused_attention, flash_attention])
@pytest.mark.parametrize("mask", [torch.ones((), dtype=torch.bool), torch.ones(3, dtype=torch.bool), torch.zeros(3)])
def test_every_path_names_a_mask_of_fewer_than_two_dimensions(fn, mask):
    """torch's kernel raises a raw IndexError on them; [1, keys] says the same and every path takes it."""
    q = torch.randn(1, 2, 3, 4)
    for layer_path in (False, True):
        refused_by_name(lambda: fn(q, q, q, attn_mask=mask, is_causal=layer_path), "attn_mask of shape")
    key_mask = mask.reshape(1, -1).expand(1, 3) if mask.ndim else mask.reshape(1, 1)
    assert torch.allclose(fn(q, q, q, attn_mask=key_mask), torch.nn.functional.scaled_dot_product_attention(
        q, q, q, attn_mask=key_mask), atol=1e-6)
    layer, (cos, sin) = mm.Attention(CONFIG), mm.precompute_freqs_cis(8, 3)
    for fused in (True, False):
        layer.use_fused = fused
        refused_by_name(lambda: layer(torch.randn(1, 3, 32), (cos, sin), mask.bool()), "attn_mask of shape")


@given(top_p=st.sampled_from([1e-300, 5e-324, 1e-46, 1e-45, 1e-10, 0.5, 1.0]),
       logits=st.sampled_from([torch.randn(3, 7, generator=torch.Generator().manual_seed(0)),
                               torch.tensor([[0.0, 5.0, 1.0], [2.0, 2.0, -1.0]])]))
@HOSTILE
def test_the_smallest_top_p_keeps_the_most_likely_token(top_p, logits):
    token = mm.select_next_token(logits, 1.0, top_p=top_p, generator=torch.Generator().manual_seed(1))
    if top_p < 1e-10:  # nothing but the best is left
        assert torch.equal(token, logits.argmax(-1))
    assert token.shape == (logits.shape[0],)


@given(device=st.sampled_from(["nonsense", 5, -1, "cuda:99", "gpu", 2.5, [0], "cpu", torch.device("cpu"), None]))
@HOSTILE
def test_a_mask_device_is_named_unless_this_machine_has_it(device):
    for fn in (lambda: mm.causal_mask(2, 3, device=device), lambda: mm.sliding_window_mask(2, 3, 1, device=device)):
        try:
            mask = fn()
        except (TypeError, ValueError) as error:
            assert "device must be a device this machine has" in str(error), str(error)
            continue
        assert mask.shape == (2, 3) and mask.dtype == torch.bool


@pytest.mark.parametrize("layer_idx", [-1, -2, 2, 2.0, "0", None, True])
def test_a_cache_layer_index_outside_the_layers_is_named(layer_idx):
    cache, kv = mm.KVCache(CONFIG, 1), torch.zeros(1, 2, 1, 8)
    for call in (lambda: cache.update(layer_idx, kv, kv), lambda: cache.get_seq_length(layer_idx),
                 lambda: cache.layer(layer_idx)):
        with pytest.raises(mm.CacheError, match="layer_idx must be an integer in"):
            call()
    assert cache.lengths == [0, 0]  # -1 never wrote the last layer
