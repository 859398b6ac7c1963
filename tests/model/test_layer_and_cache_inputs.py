"""The inputs a probe found refused by a raw error or accepted wrongly (issue 37), each kind refused by
name or computed right: the public `Attention` layer given hidden states or a position table of the
wrong size (and their siblings: the wrong dtype, mask or cache); `KVCache.update` given keys of the
wrong head size, keys and values that disagree, a layer that is not there, or more positions than
`max_position_embeddings`; and numpy's numbers in a config, which are kept as Python's own.

Hypothesis draws the sizes (derandomised, fixed example counts), so that more inputs of each kind are
tried than the ones listed."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minimind_ref as mm
from minimind_ref.variants.mla import LatentCache, MLAConfig

DRAWN = settings(derandomize=True, database=None, deadline=None, max_examples=40,
                 suppress_health_check=[HealthCheck.too_slow])
CONFIG = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           vocab_size=64, max_position_embeddings=16)  # head_dim 8
B, T, C, D = 2, 3, 32, 8


def refused(fn, *words: str, error=(TypeError, ValueError)) -> str:
    """fn() raises an error of ours whose message names one of `words`; the message, for more checks."""
    with pytest.raises(error) as info:
        fn()
    assert any(word in str(info.value) for word in words), str(info.value)
    return str(info.value)


@pytest.fixture(scope="module")
def layer():
    torch.manual_seed(0)
    return mm.Attention(CONFIG).eval()


def angles(*shape):
    cos, sin = mm.precompute_freqs_cis(D, CONFIG.max_position_embeddings)
    return cos[:shape[-2]].expand(*shape).contiguous(), sin[:shape[-2]].expand(*shape).contiguous()


# -- the Attention layer ---------------------------------------------------------------------------

@given(hidden=st.integers(0, 70).filter(lambda h: h != C))
@DRAWN
def test_a_layer_given_hidden_states_of_another_width_names_hidden_size(layer, hidden):
    refused(lambda: layer(torch.randn(B, T, hidden), angles(T, D)), f"hidden_size={C}")


@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4).map(tuple))
@DRAWN
def test_a_layer_computes_with_a_right_position_table_and_names_a_wrong_one(layer, shape):
    """Any table shape: [T, D] and [B, T, D] are computed (and equal the model's own angles); every
    other is refused by name, where torch would broadcast some silently or fail deep inside."""
    x = torch.randn(B, T, C)
    cos, sin = (torch.ones(shape), torch.zeros(shape))
    if shape in ((T, D), (B, T, D)):
        with torch.no_grad():
            out, _ = layer(x, (cos, sin))
            assert torch.allclose(out, layer(x, (torch.ones(T, D), torch.zeros(T, D)))[0])
    else:
        refused(lambda: layer(x, (cos, sin)), "position_embeddings")


@pytest.mark.parametrize("tables", [
    "cos", (torch.ones(T, D),), (torch.ones(T, D), torch.zeros(T, D), torch.zeros(T, D)),
    (torch.ones(T, D), torch.zeros(T + 1, D)), (torch.ones(T, D, dtype=torch.long),) * 2, [np.ones((T, D))] * 2])
def test_a_layer_names_position_embeddings_that_are_not_a_pair_of_float_tables(layer, tables):
    refused(lambda: layer(torch.randn(B, T, C), tables), "position_embeddings")


@pytest.mark.parametrize("x, words", [
    (torch.randint(0, 64, (B, T)), ["x must be 3-D"]), (torch.randint(0, 64, (B, T, C)), ["token ids"]),
    (torch.randn(B, 0, C), ["at least one token"]), (torch.randn(T, C), ["x must be 3-D"]),
    ([[0.0] * C] * T, ["x must be a torch.Tensor"]), (torch.randn(B, T, C, dtype=torch.float64), ["layer.to"])])
def test_a_layer_names_hidden_states_it_cannot_read(layer, x, words):
    refused(lambda: layer(x, angles(T, D)), *words)


@pytest.mark.parametrize("mask", [
    torch.ones(B, 1, T, T + 1, dtype=torch.bool), torch.ones(3, 1, T, T, dtype=torch.bool),
    torch.ones(1, 1, 1, T, T, dtype=torch.bool), torch.zeros(B, 1, T, T), torch.ones(B, 1, T, T, dtype=torch.long),
    "causal"])
def test_a_layer_names_a_mask_that_is_not_its_bool_mask(layer, mask):
    refused(lambda: layer(torch.randn(B, T, C), angles(T, D), mask), "attn_mask")


def test_a_layer_names_a_cache_it_cannot_use():
    torch.manual_seed(0)
    layer = mm.Attention(CONFIG, layer_idx=1).eval()
    x = torch.randn(B, T, C)
    refused(lambda: layer(x, angles(T, D), None, LatentCache(MLAConfig(), B)), "KVCache")
    refused(lambda: layer(x, angles(T, D), None, mm.KVCache(CONFIG.replace(num_key_value_heads=4), B)),
            "num_key_value_heads")
    refused(lambda: layer(x, angles(T, D), None, mm.KVCache(CONFIG, B + 1)), "batch size")
    refused(lambda: mm.Attention(CONFIG, layer_idx=5)(x, angles(T, D), None, mm.KVCache(CONFIG, B)), "layer_idx")
    full = mm.KVCache(CONFIG, B)
    full.update(1, *torch.zeros(2, B, 2, 15, D))
    refused(lambda: layer(x, angles(T, D), None, full), "max_position_embeddings")
    assert full.get_seq_length(1) == 15  # refused before it wrote anything
    refused(lambda: layer(x, angles(T, D), output_attentions="yes"), "output_attentions")


def test_a_layer_on_its_own_needs_only_its_slot_of_a_cache(layer):
    """A cache of one layer (as quizzes/04's check builds it) serves layer 0 of an 8-layer config."""
    cache = mm.KVCache(CONFIG.replace(num_hidden_layers=1), B)
    with torch.no_grad():
        layer(torch.randn(B, T, C), angles(T, D), None, cache)
    assert cache.get_seq_length(0) == T


def test_a_half_precision_layer_takes_float32_angles_as_the_grader_gives_them(layer):
    half = mm.Attention(CONFIG).half().eval()
    out, weights = half(torch.randn(B, T, C).half(), angles(T, D), None, None, True)
    assert out.dtype == torch.float16 and bool(torch.isfinite(out).all())


def test_inside_the_model_the_layers_carry_no_door_of_their_own(layer):
    model = mm.MiniMindForCausalLM(CONFIG)
    assert all(not block.self_attn._forward_pre_hooks for block in model.model.layers)
    assert len(layer._forward_pre_hooks) == 1


# -- KVCache.update ----------------------------------------------------------------------------------

@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 3), st.integers(1, 12)))
@DRAWN
def test_update_names_keys_of_another_layout_and_keeps_what_it_holds(shape):
    """[batch, num_key_value_heads, new, head_dim] must be [2, 2, T, 8]: any other batch, head count
    or head size is refused by name, and the cache is left as it was."""
    cache = mm.KVCache(CONFIG, B)
    cache.update(0, *torch.zeros(2, B, 2, 1, D))
    keys = torch.randn(shape)
    if (shape[0], shape[1], shape[3]) == (B, 2, D):
        assert cache.update(0, keys, keys)[0].shape == (B, 2, 1 + shape[2], D)
    else:
        refused(lambda: cache.update(0, keys, keys), "num_key_value_heads, new positions", error=mm.CacheError)
        assert cache.get_seq_length(0) == 1


@pytest.mark.parametrize("k, v", [
    (torch.zeros(B, 2, 3, D), torch.zeros(B, 2, 2, D)),  # keys and values of different lengths
    (torch.zeros(B, 2, 3, D), torch.zeros(B, 2, 3, D + 2)),
    (torch.zeros(B, 2, 3, D), torch.zeros(B, 2, 3, D, dtype=torch.float64)),
    (torch.zeros(2, 3, D), torch.zeros(2, 3, D))])
def test_update_names_keys_and_values_that_disagree(k, v):
    refused(lambda: mm.KVCache(CONFIG, B).update(0, k, v), "k and v", error=mm.CacheError)


@pytest.mark.parametrize("k", [torch.zeros(B, 2, 1, D, dtype=torch.long), [[0.0]], None])
def test_update_names_keys_that_are_not_float_tensors(k):
    refused(lambda: mm.KVCache(CONFIG, B).update(0, k, k), "KVCache.update: k")


@pytest.mark.parametrize("layer_idx", [2, 5, -1, -3, 1.0, True, "0", None, torch.tensor(0)])
def test_a_layer_index_the_cache_does_not_hold_is_named_everywhere(layer_idx):
    cache = mm.KVCache(CONFIG, B)
    keys = torch.zeros(B, 2, 1, D)
    for fn in (lambda: cache.update(layer_idx, keys, keys), lambda: cache.get_seq_length(layer_idx),
               lambda: cache.layer(layer_idx)):
        refused(fn, "layer_idx must be an integer in [0, 1]", error=mm.CacheError)
    assert cache.lengths == [0, 0]


def test_numpy_layer_indices_are_layers():
    cache = mm.KVCache(CONFIG, B)
    cache.update(np.int64(1), *torch.zeros(2, B, 2, 1, D))
    assert cache.get_seq_length(np.int32(1)) == 1 and cache.layer(np.int64(1))[0].shape[2] == 1


@given(steps=st.lists(st.integers(1, 9), min_size=1, max_size=6))
@DRAWN
def test_update_refuses_to_grow_past_max_position_embeddings(steps):
    """Each update either fits in the 16 positions and is stored, or is refused by name and leaves
    the cache as it was; the storage never holds more than 16."""
    cache, held = mm.KVCache(CONFIG, 1, capacity=2), 0
    for new in steps:
        keys = torch.randn(1, 2, new, D)
        if held + new <= CONFIG.max_position_embeddings:
            held += new
            assert torch.equal(cache.update(0, keys, keys)[0][:, :, -new:], keys)
        else:
            refused(lambda: cache.update(0, keys, keys), "max_position_embeddings (16)", error=mm.CacheError)
        assert cache.get_seq_length(0) == held and cache.capacity <= CONFIG.max_position_embeddings


# -- numpy's numbers ---------------------------------------------------------------------------------

def test_numpy_numbers_in_a_config_are_kept_as_pythons_own():
    """Converted, not refused: a number computed with numpy is a number, and the config then holds
    values that print, compare and save as JSON like any other (np.int64 is no JSON number)."""
    config = mm.MiniMindConfig(hidden_size=np.int64(64), num_hidden_layers=np.int32(2), num_attention_heads=np.uint8(4),
                               num_key_value_heads=np.int16(2), vocab_size=np.int64(100), rope_theta=np.float32(1e4),
                               dropout=Fraction(1, 10), rms_norm_eps=np.float64(1e-6), eos_token_id=np.int64(3),
                               rope_scaling={"factor": np.int64(4), "beta_slow": np.float32(2.0)})
    for name, value in config.to_dict().items():
        assert type(value) in (int, float, bool, str, dict, type(None)), (name, type(value))
    assert type(config.rope_scaling["factor"]) is int and type(config.rope_scaling["beta_slow"]) is float
    assert config == mm.MiniMindConfig(**json.loads(json.dumps(config.to_dict())))
    assert type(config.replace(hidden_size=np.int64(128)).head_dim) is int
    assert type(MLAConfig(hidden_size=np.int64(64)).hidden_size) is int
    model = mm.MiniMindForCausalLM(config)
    assert model.config.hidden_size == 64 and model(torch.zeros(1, 2, dtype=torch.long)).logits.shape == (1, 2, 100)


@pytest.mark.parametrize("field, value", [
    ("hidden_size", np.float64(64.0)), ("hidden_size", torch.tensor(64)), ("flash_attn", np.int64(1)),
    ("dropout", np.nan), ("num_attention_heads", np.int64(0)), ("rope_theta", "1e4")])
def test_numeric_likes_that_are_not_the_fields_kind_are_named(field, value):
    refused(lambda: mm.MiniMindConfig(**{field: value}), field, error=mm.ConfigError)


def test_numpy_numbers_drive_the_rest_of_the_model_too():
    torch.manual_seed(0)
    model = mm.MiniMindForCausalLM(CONFIG).eval()
    ids = torch.randint(0, 64, (1, 3))
    plain = model.generate(ids, 2, temperature=1.0, top_k=5, generator=torch.Generator().manual_seed(1))
    numpy = model.generate(ids, np.int64(2), temperature=np.float32(1.0), top_k=np.int64(5),
                           generator=torch.Generator().manual_seed(1))
    assert torch.equal(plain, numpy)
    assert mm.KVCache(CONFIG, np.int64(2), capacity=np.int32(4)).capacity == 4
    assert mm.repeat_kv(torch.zeros(1, 2, 3, 4), np.int64(2)).shape == (1, 4, 3, 4)
    assert mm.causal_mask(np.int64(2), np.int32(3)).shape == (2, 3)
