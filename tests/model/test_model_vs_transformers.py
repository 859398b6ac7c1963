"""The whole model against transformers' LlamaForCausalLM and Qwen3ForCausalLM.

Same weights (loaded with strict=True, so every name and shape must match), same inputs, same
logits within 1e-4 in float32. transformers was written by other people from other papers'
code: agreement with it is evidence, not agreement with ourselves.
"""

import pytest
import torch
from model_factory import random_model, small_config

import minimind_ref as mm
from minimind_ref.oracles import hf_twin

TOL = 1e-4

VARIANTS = {
    "MHA": dict(num_attention_heads=4, num_key_value_heads=4),
    "GQA": dict(num_attention_heads=4, num_key_value_heads=2),
    "MQA": dict(num_attention_heads=4, num_key_value_heads=1),
}


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("qk_norm", [False, True], ids=["llama", "qwen3"])
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("flash_attn", [True, False], ids=["fused", "explicit"])
def test_logits_match_transformers(qk_norm, variant, flash_attn):
    model = random_model(small_config(qk_norm=qk_norm, flash_attn=flash_attn, **VARIANTS[variant]))
    twin = hf_twin(model)
    expected_cls = "Qwen3ForCausalLM" if qk_norm else "LlamaForCausalLM"
    assert type(twin).__name__ == expected_cls
    torch.manual_seed(1)
    for batch, length in [(1, 1), (3, 7), (2, 13)]:  # odd lengths, batch > 1
        ids = torch.randint(0, model.config.vocab_size, (batch, length))
        with torch.no_grad():
            ours, theirs = model(ids).logits, twin(ids).logits
        assert ours.shape == theirs.shape == (batch, length, model.config.vocab_size)
        assert max_diff(ours, theirs) <= TOL, (variant, batch, length)


@pytest.mark.parametrize("qk_norm", [False, True], ids=["llama", "qwen3"])
def test_default_config_matches_transformers(qk_norm):
    """MiniMind2's real sizes (hidden 512, 8 layers, 8 heads over 2 KV heads, vocab 6400)."""
    model = random_model(mm.MiniMindConfig(qk_norm=qk_norm), std=0.02)
    twin = hf_twin(model)
    ids = torch.randint(0, 6400, (2, 19), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert max_diff(model(ids).logits, twin(ids).logits) <= TOL


def test_yarn_matches_transformers_yarn():
    """inference_rope_scaling=True (MiniMind's YaRN) against transformers' own YaRN code."""
    config = small_config(inference_rope_scaling=True, max_position_embeddings=4096,
                          rope_scaling={"original_max_position_embeddings": 256, "factor": 4})
    model = random_model(config)
    twin = hf_twin(model)
    ids = torch.randint(0, config.vocab_size, (2, 300), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert max_diff(model(ids).logits, twin(ids).logits) <= TOL
        # and the scaling really is engaged: plain RoPE gives other logits
        plain = random_model(config.replace(inference_rope_scaling=False, rope_scaling=None))
        assert max_diff(model(ids).logits, plain(ids).logits) > 1e-3


def left_padded_batch(vocab_size: int):
    """Three sequences of lengths 9, 5 and 1, left-padded to 9 (pad id 0), and their mask."""
    g = torch.Generator().manual_seed(3)
    lengths = [9, 5, 1]
    ids = torch.zeros(3, 9, dtype=torch.long)
    mask = torch.zeros(3, 9, dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, 9 - n:] = torch.randint(1, vocab_size, (n,), generator=g)
        mask[row, 9 - n:] = 1
    return ids, mask, lengths


@pytest.mark.parametrize("qk_norm", [False, True], ids=["llama", "qwen3"])
@pytest.mark.parametrize("flash_attn", [True, False], ids=["fused", "explicit"])
def test_left_padded_batch_matches_transformers(qk_norm, flash_attn):
    model = random_model(small_config(qk_norm=qk_norm, flash_attn=flash_attn))
    twin = hf_twin(model)
    ids, mask, _ = left_padded_batch(model.config.vocab_size)
    real = mask.bool()
    with torch.no_grad():
        ours = model(ids, attention_mask=mask).logits
        theirs = twin(ids, attention_mask=mask).logits
        assert not torch.isnan(ours).any()
        assert max_diff(ours[real], theirs[real]) <= TOL
        # with positions counted from each sequence's first real token, as generation does
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        ours = model(ids, attention_mask=mask, position_ids=positions).logits
        theirs = twin(ids, attention_mask=mask, position_ids=positions).logits
        assert max_diff(ours[real], theirs[real]) <= TOL


def test_left_padding_with_positions_equals_unpadded_sequences():
    """Padding must change nothing for the real tokens: each row equals that sequence alone."""
    model = random_model(small_config())
    ids, mask, lengths = left_padded_batch(model.config.vocab_size)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        padded = model(ids, attention_mask=mask, position_ids=positions).logits
        for row, n in enumerate(lengths):
            alone = model(ids[row:row + 1, 9 - n:]).logits[0]
            assert max_diff(padded[row, 9 - n:], alone) <= TOL


@pytest.mark.parametrize("qk_norm", [False, True], ids=["llama", "qwen3"])
def test_attention_weights_match_transformers_eager(qk_norm):
    """output_attentions: the weights every heatmap in the course shows, against transformers'."""
    model = random_model(small_config(qk_norm=qk_norm))
    twin = hf_twin(model, attn_implementation="eager")
    ids, mask, _ = left_padded_batch(model.config.vocab_size)
    with torch.no_grad():
        ours = model(ids, attention_mask=mask, output_attentions=True).attentions
        theirs = twin(ids, attention_mask=mask, output_attentions=True).attentions
    assert len(ours) == len(theirs) == model.config.num_hidden_layers
    real_queries = mask.bool()  # [B, T]: compare the rows of real tokens
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape == (3, 4, 9, 9)
        a, b = a.permute(0, 2, 1, 3)[real_queries], b.permute(0, 2, 1, 3)[real_queries]
        assert max_diff(a, b) <= 1e-5


def test_cached_forward_equals_full_forward():
    """Prefill, a chunk of 3, then single tokens, all through the cache: the logits at every
    position equal one forward over the whole sequence."""
    model = random_model(small_config())
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(ids).logits
        out = model(ids[:, :5], use_cache=True)
        pieces = [out.logits]
        cache = out.past_key_values
        for chunk in (ids[:, 5:8], ids[:, 8:9], ids[:, 9:10], ids[:, 10:12]):
            pieces.append(model(chunk, past_key_values=cache, use_cache=True).logits)
        assert len(cache) == 12
    assert max_diff(torch.cat(pieces, dim=1), full) <= TOL


def test_state_dict_names_are_minimind_names():
    model = mm.MiniMindForCausalLM(small_config(qk_norm=True))
    names = set(model.state_dict())
    layer0 = {f"model.layers.0.{n}.weight" for n in (
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "self_attn.q_norm", "self_attn.k_norm", "input_layernorm", "post_attention_layernorm",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}
    assert layer0 <= names
    assert {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"} <= names
    assert not any("freqs" in n for n in names), "RoPE tables are derived, not saved"
    plain = set(mm.MiniMindForCausalLM(small_config()).state_dict())
    assert not any("q_norm" in n or "k_norm" in n for n in plain)


def test_tied_embeddings_share_one_matrix():
    model = mm.MiniMindForCausalLM(small_config())
    assert model.lm_head.weight is model.model.embed_tokens.weight
    untied = mm.MiniMindForCausalLM(small_config(tie_word_embeddings=False))
    assert untied.lm_head.weight is not untied.model.embed_tokens.weight


def test_default_parameter_count_matches_closed_form():
    """MiniMind2's 26M: embeddings (tied with the head) + 8 x (attention + SwiGLU + 2 norms) + final norm."""
    c = mm.MiniMindConfig()
    attention = c.hidden_size * c.head_dim * (2 * c.num_attention_heads + 2 * c.num_key_value_heads)
    swiglu = 3 * c.hidden_size * c.intermediate_size
    per_layer = attention + swiglu + 2 * c.hidden_size
    closed_form = c.vocab_size * c.hidden_size + c.num_hidden_layers * per_layer + c.hidden_size
    model = mm.MiniMindForCausalLM(c)
    assert sum(p.numel() for p in model.parameters()) == closed_form == 25_829_888


def test_strict_loading_catches_a_layout_mismatch():
    """strict=True is what makes the oracle tests meaningful: a MiniMind3 state dict (with q/k
    norms) does not load into a Llama twin."""
    from transformers import LlamaForCausalLM

    from minimind_ref.oracles import hf_config

    qwen_like = mm.MiniMindForCausalLM(small_config(qk_norm=True))
    llama = LlamaForCausalLM(hf_config(small_config()))
    with pytest.raises(RuntimeError, match="q_norm"):
        llama.load_state_dict(qwen_like.state_dict(), strict=True)


def test_loss_is_next_token_cross_entropy():
    model = random_model(small_config())
    ids = torch.randint(0, 128, (2, 10), generator=torch.Generator().manual_seed(0))
    out = model(ids, labels=ids)
    expected = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, 128), ids[:, 1:].reshape(-1))
    assert torch.allclose(out.loss, expected)
    twin = hf_twin(model)
    assert abs(out.loss.item() - twin(ids, labels=ids).loss.item()) <= 1e-5


def test_forward_input_errors_are_clear():
    model = mm.MiniMindForCausalLM(small_config())
    with pytest.raises(ValueError, match="input_ids must be 2-D"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size=128"):
        model(torch.tensor([[1, 128]]))
    with pytest.raises(ValueError, match="integer token ids"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(torch.zeros(1, 513, dtype=torch.long))
    with pytest.raises(ValueError, match="key_len"):
        model(torch.zeros(2, 4, dtype=torch.long), attention_mask=torch.ones(2, 4, 1))
    with pytest.raises(ValueError, match="covers 3 positions but there are 4 tokens"):
        model(torch.zeros(2, 4, dtype=torch.long), attention_mask=torch.ones(2, 3))
    with pytest.raises(ValueError, match="position_ids"):
        model(torch.zeros(2, 4, dtype=torch.long), position_ids=torch.arange(5)[None])
    cache = model(torch.zeros(2, 4, dtype=torch.long), use_cache=True).past_key_values
    with pytest.raises(mm.CacheError, match="batch size 2"):
        model(torch.zeros(3, 1, dtype=torch.long), past_key_values=cache)


def test_no_yarn_twin_where_minimind_and_transformers_cap_the_ramp_differently():
    """MiniMind caps the ramp's upper pair at head_dim/2 - 1, transformers at head_dim - 1: with
    head_dim 16 and base 500 the uncapped index passes 7, so no faithful twin exists."""
    from minimind_ref.oracles import hf_config

    config = small_config(inference_rope_scaling=True, rope_theta=500.0, max_position_embeddings=4096)
    with pytest.raises(ValueError, match="cap it differently"):
        hf_config(config)
