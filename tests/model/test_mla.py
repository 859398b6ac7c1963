"""Multi-head latent attention (minimind_ref/variants/mla.py) against transformers' DeepseekV3Attention.

Same weights (loaded with strict=True: every name and shape must match), same inputs, same outputs
in float32: transformers' MLA was written by other people from DeepSeek's code, so agreement is
evidence. Then the layer against itself: the absorbed computation equals the decompressed one,
decoding token by token through the latent cache equals the whole sequence at once, the cache holds
d_c + d_R numbers per token and layer, and bad configs are refused with a message that says why.
"""

from __future__ import annotations

import pytest
import torch

import minimind_ref as mm
from minimind_ref.variants.mla import (
    DEEPSEEK_V2,
    LatentCache,
    MLAConfig,
    MultiHeadLatentAttention,
    absorb_query,
    expand_output,
    rotate_from,
)

TOL = 1e-5
SMALL = dict(hidden_size=48, num_attention_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=6,
             v_head_dim=12, max_position_embeddings=64)


def random_layer(seed: int = 0, **overrides) -> MultiHeadLatentAttention:
    """A small MLA layer with every parameter random, the RMSNorm gains included."""
    layer = MultiHeadLatentAttention(MLAConfig(**{**SMALL, **overrides})).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3 + (1.0 if p.dim() == 1 else 0.0))
    return layer


def deepseek_twin(layer: MultiHeadLatentAttention, rope_interleave: bool | None = None):
    """transformers' DeepseekV3Attention with the same sizes and weights, and its rotary embedding."""
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

    cfg = layer.config
    hf = DeepseekV3Config(
        hidden_size=cfg.hidden_size, num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_attention_heads, kv_lora_rank=cfg.kv_lora_rank, q_lora_rank=cfg.q_lora_rank,
        qk_nope_head_dim=cfg.qk_nope_head_dim, qk_rope_head_dim=cfg.qk_rope_head_dim, v_head_dim=cfg.v_head_dim,
        max_position_embeddings=cfg.max_position_embeddings, attention_bias=False, attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_theta},
        rope_interleave=cfg.rope_interleave if rope_interleave is None else rope_interleave)
    hf._attn_implementation = "eager"
    twin = DeepseekV3Attention(hf, layer_idx=0).eval()
    twin.load_state_dict(layer.state_dict(), strict=True)
    return twin, DeepseekV3RotaryEmbedding(hf)


def twin_output(twin, rotary, x: torch.Tensor) -> torch.Tensor:
    batch, seq, _ = x.shape
    positions = torch.arange(seq)[None].expand(batch, -1)
    causal = torch.full((seq, seq), float("-inf")).triu(1)[None, None]  # additive mask [1, 1, T, T]
    with torch.no_grad():
        return twin(x, rotary(x, positions), causal)[0]


LAYOUTS = {
    "q_proj": dict(q_lora_rank=None),
    "q_lora": dict(q_lora_rank=20),
}


@pytest.mark.parametrize("interleave", [False, True], ids=["rotate_half", "interleaved"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("absorbed", [False, True], ids=["naive", "absorbed"])
def test_output_matches_transformers_deepseek_v3(layout, interleave, absorbed):
    layer = random_layer(**LAYOUTS[layout], rope_interleave=interleave)
    twin, rotary = deepseek_twin(layer)
    expected_names = {"kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight", "kv_b_proj.weight", "o_proj.weight"}
    assert expected_names <= set(layer.state_dict())
    x = torch.randn(3, 9, SMALL["hidden_size"], generator=torch.Generator().manual_seed(1))  # batch > 1, causal
    with torch.no_grad():
        ours = layer(x, absorbed=absorbed)
    theirs = twin_output(twin, rotary, x)
    assert ours.shape == theirs.shape == x.shape
    assert (ours - theirs).abs().max().item() <= TOL


def test_the_rope_layout_is_not_ignored():
    """Loaded into a twin that reads the rotary dimensions the other way, the outputs differ: the
    comparison above really checks the interleaved handling."""
    layer = random_layer(rope_interleave=True)
    twin, rotary = deepseek_twin(layer, rope_interleave=False)
    x = torch.randn(2, 7, SMALL["hidden_size"], generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert (layer(x) - twin_output(twin, rotary, x)).abs().max().item() > 1e-3


def test_interleaved_rope_equals_transformers_interleaved_rotation():
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import apply_rotary_pos_emb_interleave

    q, k = torch.randn(2, 3, 5, 8), torch.randn(2, 1, 5, 8)
    positions = torch.arange(4, 9, dtype=torch.float32)
    inv_freq = 1.0 / (1e4 ** (torch.arange(0, 8, 2, dtype=torch.float32) / 8))
    angles = torch.cat([positions[:, None] * inv_freq] * 2, -1)[None]  # [1, T, d] as transformers builds it
    theirs = apply_rotary_pos_emb_interleave(q, k, angles.cos(), angles.sin())
    ours = rotate_from(q, k, start=4, rope_theta=1e4, interleave=True)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_naive_equals_absorbed(layout):
    layer = random_layer(seed=3, **LAYOUTS[layout])
    x = torch.randn(2, 11, SMALL["hidden_size"], generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        naive, absorbed = layer(x), layer(x, absorbed=True)
    assert (naive - absorbed).abs().max().item() <= TOL


def test_absorption_identities():
    """q_C . (W_UK c) = (W_UK^T q_C) . c, and sum_j a_j W_UV c_j = W_UV sum_j a_j c_j, per head."""
    g = torch.Generator().manual_seed(5)
    q_nope, w_uk, w_uv = (torch.randn(2, 3, 4, 5, generator=g), torch.randn(3, 5, 7, generator=g),
                          torch.randn(3, 6, 7, generator=g))
    c = torch.randn(2, 9, 7, generator=g)
    keys = torch.einsum("hdc,bsc->bhsd", w_uk, c)  # every head's W_UK c
    assert torch.allclose(absorb_query(q_nope, w_uk) @ c[:, None].transpose(-2, -1),
                          q_nope @ keys.transpose(-2, -1), atol=1e-5)
    weights = torch.softmax(torch.randn(2, 3, 4, 9, generator=g), -1)
    values = torch.einsum("hvc,bsc->bhsv", w_uv, c)
    assert torch.allclose(expand_output(weights @ c[:, None], w_uv), weights @ values, atol=1e-5)


@pytest.mark.parametrize("absorbed", [False, True], ids=["naive", "absorbed"])
def test_cached_decoding_equals_the_whole_sequence(absorbed):
    layer = random_layer(seed=6, q_lora_rank=20, rope_interleave=True)
    x = torch.randn(2, 10, SMALL["hidden_size"], generator=torch.Generator().manual_seed(7))
    cache = LatentCache(layer.config, batch_size=2, capacity=2)  # small: it must grow on the way
    with torch.no_grad():
        whole = layer(x)
        parts = [layer(x[:, :4], cache=cache, absorbed=absorbed)]  # a prompt, then one token at a time
        parts += [layer(x[:, t:t + 1], cache=cache, absorbed=absorbed) for t in range(4, 10)]
    assert len(cache) == 10 and cache.rows[0].shape[1] >= 10
    assert (torch.cat(parts, 1) - whole).abs().max().item() <= TOL


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cache_bytes_per_token_are_the_closed_form(dtype):
    layers, batch, tokens = 3, 2, 5
    cfg = MLAConfig(**{**SMALL, "num_hidden_layers": layers})
    cache = LatentCache(cfg, batch_size=batch)
    with torch.no_grad():
        for i in range(layers):
            MultiHeadLatentAttention(cfg, layer_idx=i).to(dtype)(
                torch.randn(batch, tokens, cfg.hidden_size, dtype=dtype), cache=cache)
    element = torch.tensor([], dtype=dtype).element_size()
    per_token = cfg.cache_elements_per_token()
    assert per_token == cfg.kv_lora_rank + cfg.qk_rope_head_dim
    assert cache.nbytes() == layers * batch * tokens * per_token * element
    assert cache.allocated_nbytes() >= cache.nbytes()
    # what a layer stores is what it attends over: the normalised latent and the rotated shared key
    c_kv, k_rope = cache.rows[0][:, :tokens].split([cfg.kv_lora_rank, cfg.qk_rope_head_dim], -1)
    assert c_kv.dtype == dtype and k_rope.shape == (batch, tokens, cfg.qk_rope_head_dim)


def test_deepseek_v2_cache_is_576_numbers_a_layer():
    cache = LatentCache(DEEPSEEK_V2.replace(num_hidden_layers=1), batch_size=1)
    cache.update(0, torch.zeros(1, 3, DEEPSEEK_V2.kv_lora_rank), torch.zeros(1, 1, 3, DEEPSEEK_V2.qk_rope_head_dim))
    assert cache.nbytes() / 3 / 4 == DEEPSEEK_V2.cache_elements_per_token() == 576


def test_parameter_count_is_the_closed_form():
    for q_lora in (None, 20):
        layer = MultiHeadLatentAttention(MLAConfig(**{**SMALL, "q_lora_rank": q_lora}))
        c, h, d_c, d_n, d_r, d_v = 48, 4, 16, 8, 6, 12
        queries = c * h * (d_n + d_r) if q_lora is None else c * q_lora + q_lora + q_lora * h * (d_n + d_r)
        expected = queries + c * (d_c + d_r) + d_c + d_c * h * (d_n + d_v) + h * d_v * c
        assert sum(p.numel() for p in layer.parameters()) == expected


@pytest.mark.parametrize("change, words", [
    (dict(qk_rope_head_dim=5), "qk_rope_head_dim (5) must be even"),
    (dict(kv_lora_rank=0), "kv_lora_rank must be a positive integer"),
    (dict(num_attention_heads=2.5), "num_attention_heads must be a positive integer"),
    (dict(q_lora_rank=0), "q_lora_rank must be a positive integer"),
    (dict(v_head_dim=True), "v_head_dim must be a positive integer"),
    (dict(rope_theta=1.0), "rope_theta must be a finite number greater than 1"),
    (dict(rms_norm_eps=0.0), "rms_norm_eps must be a finite positive number"),
    (dict(rms_norm_eps=float("inf")), "rms_norm_eps must be a finite positive number, got inf"),
    (dict(rope_theta=float("nan")), "rope_theta must be a finite number greater than 1, got nan"),
    (dict(rope_interleave="yes"), "rope_interleave must be True or False"),
])
def test_bad_configs_are_refused_with_the_rule(change, words):
    with pytest.raises(mm.ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        MLAConfig(**{**SMALL, **change})


def test_bad_inputs_are_refused_with_the_rule():
    layer = random_layer()
    with pytest.raises(ValueError, match="hidden_size=48"):
        layer(torch.randn(1, 3, 40))
    cache = LatentCache(layer.config, batch_size=2)
    with pytest.raises(mm.CacheError, match="batch 2"):
        layer(torch.randn(1, 3, 48), cache=cache)
    with pytest.raises(ValueError, match="past max_position_embeddings"):
        layer(torch.randn(1, 65, 48))
    full = LatentCache(layer.config, batch_size=1)
    with torch.no_grad():
        layer(torch.randn(1, 64, 48), cache=full)
        with pytest.raises(ValueError, match="past max_position_embeddings"):
            layer(torch.randn(1, 1, 48), cache=full)
    with pytest.raises(mm.CacheError, match="batch_size must be a positive integer"):
        LatentCache(layer.config, batch_size=0)
