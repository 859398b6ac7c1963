"""KVCache: contents (against torch.cat of what went in), growth, byte counts (against the closed
form 2 x layers x kv_heads x head_dim x bytes per element x tokens x batch), and refusals."""

import pytest
import torch

import minimind_ref as mm
from minimind_ref import CacheError, KVCache
from minimind_ref._checks import check_cache_fits


def kv(config, batch, tokens):
    shape = (batch, config.num_key_value_heads, tokens, config.head_dim)
    return torch.randn(shape), torch.randn(shape)


def test_update_returns_all_keys_and_values_so_far(tiny_config):
    torch.manual_seed(0)
    config = tiny_config()
    cache = KVCache(config, batch_size=2)
    k1, v1 = kv(config, 2, 3)
    k, v = cache.update(0, k1, v1)
    assert torch.equal(k, k1) and torch.equal(v, v1)
    k2, v2 = kv(config, 2, 1)
    k, v = cache.update(0, k2, v2)
    assert torch.equal(k, torch.cat([k1, k2], dim=2)) and torch.equal(v, torch.cat([v1, v2], dim=2))
    assert cache.get_seq_length(0) == 4 and cache.get_seq_length(1) == 0
    assert torch.equal(cache.layer(0)[0], k)


def test_growth_past_capacity_doubles_and_keeps_earlier_contents(tiny_config):
    torch.manual_seed(0)
    config = tiny_config()
    cache = KVCache(config, batch_size=1, capacity=4)
    keys, values, capacities = [], [], []
    for tokens in (3, 1, 1, 4, 2, 6):  # 3, 4, 5, 9, 11, 17 positions
        k, v = kv(config, 1, tokens)
        keys.append(k)
        values.append(v)
        all_k, all_v = cache.update(1, k, v)
        capacities.append(cache.keys[1].shape[2])
        assert torch.equal(all_k, torch.cat(keys, dim=2)) and torch.equal(all_v, torch.cat(values, dim=2))
    assert capacities == [4, 4, 8, 16, 16, 32]
    assert len(cache.lengths) == 2 and cache.get_seq_length(1) == 17


def test_capacity_never_passes_max_position_embeddings(tiny_config):
    config = tiny_config(max_position_embeddings=20)
    cache = KVCache(config, batch_size=1, capacity=64)
    assert cache.capacity == 20
    cache = KVCache(config, batch_size=1, capacity=8)
    cache.update(0, *kv(config, 1, 17))  # 8 -> 16 -> 32, cut to 20
    assert cache.keys[0].shape[2] == 20


def test_nbytes_closed_form_for_default_minimind_after_forward():
    torch.manual_seed(0)
    config = mm.MiniMindConfig(vocab_size=64)  # MiniMind2's attention sizes; a small vocabulary for speed
    model = mm.MiniMindForCausalLM(config).eval()
    batch, prompt = 2, 5
    ids = torch.randint(0, 64, (batch, prompt))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
    bytes_per_element = torch.finfo(torch.float32).bits // 8
    per_token = 2 * 8 * 2 * 64 * bytes_per_element  # K and V, 8 layers, 2 KV heads, head_dim 64
    assert per_token == 8192
    assert cache.nbytes() == per_token * prompt * batch
    assert cache.allocated_nbytes() >= cache.nbytes()
    with torch.no_grad():  # one decoding step: one more position per sequence
        model(ids[:, :1], past_key_values=cache, use_cache=True)
    assert len(cache) == prompt + 1
    assert cache.nbytes() == per_token * (prompt + 1) * batch
    assert cache.allocated_nbytes() >= cache.nbytes()
    # what is stored is exactly the layers' key/value tensors
    assert cache.nbytes() == sum(k.nbytes + v.nbytes for k, v in (cache.layer(i) for i in range(8)))


def test_nbytes_counts_half_precision_at_two_bytes(tiny_config):
    config = tiny_config()  # 2 layers, 2 KV heads, head_dim 16
    cache = KVCache(config, batch_size=3, capacity=8)
    for layer in range(2):
        k, v = kv(config, 3, 5)
        cache.update(layer, k.half(), v.half())
    assert cache.nbytes() == 2 * 2 * 2 * 16 * 2 * 5 * 3
    assert cache.allocated_nbytes() == 2 * 2 * 2 * 16 * 2 * 8 * 3  # capacity 8, spare included


def test_refuses_another_batch_size_or_model(tiny_config):
    config = tiny_config()
    cache = KVCache(config, batch_size=2)
    with pytest.raises(CacheError, match=r"built for batch size 2, but the input has batch size 3"):
        check_cache_fits(cache, config, 3, 1)
    with pytest.raises(CacheError, match=r"num_key_value_heads"):
        check_cache_fits(KVCache(config.replace(num_key_value_heads=4), 2), config, 2, 1)


def test_refuses_passing_max_position_embeddings(tiny_config):
    config = tiny_config(max_position_embeddings=10)
    cache = KVCache(config, batch_size=1)
    cache.update(0, *kv(config, 1, 8))
    with pytest.raises(CacheError, match=r"max_position_embeddings \(10\)"):
        check_cache_fits(cache, config, 1, 3)
    check_cache_fits(cache, config, 1, 2)  # exactly reaching the limit is fine


def test_wider_keys_widen_the_storage_rather_than_overflow(tiny_config):
    """A float64 key of 1e5 written into a float16 cache would become inf: the storage widens."""
    config = tiny_config()
    cache = KVCache(config, batch_size=1)
    cache.update(0, *(t.half() for t in kv(config, 1, 2)))
    k, v = kv(config, 1, 1)
    keys, _ = cache.update(0, (k * 0 + 1e5).double(), v.double())
    assert keys.dtype == torch.float64 and torch.isfinite(keys).all() and keys[0, 0, 2, 0].item() == 1e5
    assert torch.equal(keys[:, :, :2].half(), cache.layer(0)[0][:, :, :2].half())


def test_refuses_bad_batch_size_and_empty_layer(tiny_config):
    for bad in (0, -1, "2", 2.5, True):
        with pytest.raises(CacheError, match="batch_size must be a positive integer"):
            KVCache(tiny_config(), batch_size=bad)
    for bad in (0, 2.5, "8"):
        with pytest.raises(CacheError, match="capacity must be a positive integer"):
            KVCache(tiny_config(), batch_size=1, capacity=bad)
    with pytest.raises(TypeError, match="MiniMindConfig"):
        KVCache(None, batch_size=1)
    with pytest.raises(CacheError, match="layer 1 of the KV cache holds nothing"):
        KVCache(tiny_config(), batch_size=1).layer(1)


def test_model_refuses_cache_of_another_batch_size_before_running(tiny_config):
    torch.manual_seed(0)
    model = mm.MiniMindForCausalLM(tiny_config()).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, 128, (2, 4)), use_cache=True).past_key_values
    calls = []
    model.model.embed_tokens.register_forward_hook(lambda *args: calls.append(1))
    with pytest.raises(CacheError, match=r"batch size 2.*batch size 3"):
        model(torch.randint(0, 128, (3, 1)), past_key_values=cache)
    assert calls == []  # refused before any layer ran
    assert len(cache) == 4 and all(length == 4 for length in cache.lengths)


def test_cached_decoding_equals_full_forward(tiny_config):
    torch.manual_seed(0)
    model = mm.MiniMindForCausalLM(tiny_config()).eval()
    ids = torch.randint(0, 128, (2, 9))
    with torch.no_grad():
        full = model(ids).logits
        out = model(ids[:, :5], use_cache=True)
        steps = [out.logits]
        for t in range(5, 9):
            out = model(ids[:, t:t + 1], past_key_values=out.past_key_values, use_cache=True)
            steps.append(out.logits)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
