"""MiniMindConfig: MiniMind2's defaults, MiniMind's YaRN dict, and every refused config.

The expected numbers are MiniMind2's published sizes (github jingyaogong/minimind, the MiniMind2
model card: hidden 512, 8 layers, 8 heads over 2 KV heads, vocab 6400, RoPE base 1e6), written
here as literals, not read back from minimind_ref.
"""

import math

import pytest

import minimind_ref as mm
from minimind_ref import ConfigError, MiniMindConfig

# MiniMind's model_minimind.py: inference_rope_scaling=True sets exactly this dict.
MINIMIND_YARN_LITERAL = {
    "beta_fast": 32,
    "beta_slow": 1,
    "factor": 16,
    "original_max_position_embeddings": 2048,
    "attention_factor": 1.0,
    "type": "yarn",
}


def test_defaults_are_minimind2():
    c = MiniMindConfig()
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads) == (512, 8, 8, 2)
    assert c.head_dim == 64
    assert c.num_key_value_groups == 4
    assert c.vocab_size == 6400
    assert c.rope_theta == 1e6
    assert c.rms_norm_eps == 1e-5
    assert c.max_position_embeddings == 32768
    assert c.tie_word_embeddings is True
    assert c.flash_attn is True
    assert c.qk_norm is False
    assert c.inference_rope_scaling is False and c.rope_scaling is None
    assert c.dropout == 0.0


def test_default_intermediate_size_is_minimind_rounding_of_8_thirds():
    # MiniMind2's FeedForward: int(hidden * 8 / 3) rounded up to a multiple of 64.
    assert int(512 * 8 / 3) == 1365
    assert 64 * math.ceil(1365 / 64) == 1408
    assert MiniMindConfig().intermediate_size == 1408
    # other widths, against the same rule written out with integer arithmetic
    for hidden in (64, 128, 256, 640, 768, 1024):
        raw = hidden * 8 // 3
        assert mm.minimind_intermediate_size(hidden) == (raw + 63) // 64 * 64, hidden
        assert MiniMindConfig(hidden_size=hidden, num_attention_heads=8).intermediate_size == (raw + 63) // 64 * 64


def test_inference_rope_scaling_gives_minimind_yarn_dict():
    c = MiniMindConfig(inference_rope_scaling=True)
    assert c.rope_scaling == MINIMIND_YARN_LITERAL
    assert mm.MINIMIND_YARN == MINIMIND_YARN_LITERAL


def test_partial_rope_scaling_is_completed_with_minimind_values():
    c = MiniMindConfig(rope_scaling={"factor": 4})
    assert c.rope_scaling == {**MINIMIND_YARN_LITERAL, "factor": 4}


def test_explicit_head_dim_and_intermediate_size_are_kept():
    c = MiniMindConfig(head_dim=32, intermediate_size=1000)
    assert (c.head_dim, c.intermediate_size) == (32, 1000)


def test_mha_and_mqa_are_valid():
    assert MiniMindConfig(num_key_value_heads=8).num_key_value_groups == 1
    assert MiniMindConfig(num_key_value_heads=1).num_key_value_groups == 8
    assert MiniMindConfig(num_key_value_heads=None).num_key_value_heads == 8  # None means MHA


REFUSED = [
    # (overrides, regex the message must match)
    (dict(hidden_size=100), r"hidden_size \(100\) is not divisible by num_attention_heads \(8\)"),
    (dict(num_key_value_heads=3), r"num_attention_heads \(8\) is not divisible by num_key_value_heads \(3\)"),
    (dict(num_key_value_heads=16), r"num_key_value_heads \(16\) is larger than num_attention_heads \(8\)"),
    (dict(head_dim=63), r"head_dim \(63\) must be even"),
    (dict(hidden_size=24, num_attention_heads=8, num_key_value_heads=8), r"head_dim \(3\) must be even"),
    (dict(hidden_size=0), r"hidden_size must be a positive integer"),
    (dict(hidden_size=-512), r"hidden_size must be a positive integer"),
    (dict(num_hidden_layers=0), r"num_hidden_layers must be a positive integer"),
    (dict(num_attention_heads=0), r"num_attention_heads must be a positive integer"),
    (dict(num_key_value_heads=0), r"num_key_value_heads must be a positive integer"),
    (dict(vocab_size=0), r"vocab_size must be a positive integer"),
    (dict(max_position_embeddings=0), r"max_position_embeddings must be a positive integer"),
    (dict(head_dim=0), r"head_dim must be a positive integer"),
    (dict(intermediate_size=-1), r"intermediate_size must be a positive integer"),
    (dict(num_hidden_layers=True), r"num_hidden_layers must be a positive integer, got True"),
    (dict(num_key_value_heads=True), r"num_key_value_heads must be a positive integer.*got True"),
    (dict(hidden_size=True), r"hidden_size must be a positive integer, got True"),
    (dict(head_dim=True), r"head_dim must be a positive integer or None"),
    (dict(hidden_size=512.0), r"hidden_size must be a positive integer, got 512.0"),
    (dict(dropout=1.0), r"dropout must be in \[0, 1\)"),
    (dict(dropout=-0.1), r"dropout must be in \[0, 1\)"),
    (dict(rope_theta=1.0), r"rope_theta must be a finite number greater than 1"),
    (dict(rms_norm_eps=0.0), r"rms_norm_eps must be a finite positive number"),
    # issue 17: types and finiteness, each named (a string is not a number, nor "False" a bool)
    (dict(rope_theta="1e6"), r"rope_theta must be a finite number greater than 1.*got str '1e6'"),
    (dict(dropout="0.1"), r"dropout must be in \[0, 1\), got str '0.1'"),
    (dict(rms_norm_eps="x"), r"rms_norm_eps must be a finite positive number, got str 'x'"),
    (dict(dropout=float("nan")), r"dropout must be in \[0, 1\)"),
    (dict(rope_theta=math.inf), r"rope_theta must be a finite number greater than 1"),
    (dict(rms_norm_eps=math.inf), r"rms_norm_eps must be a finite positive number"),
    (dict(initializer_range=-1), r"initializer_range must be a finite positive number, got -1"),
    (dict(initializer_range=math.nan), r"initializer_range must be a finite positive number"),
    (dict(tie_word_embeddings="False"), r"tie_word_embeddings must be True or False, got str 'False'"),
    (dict(qk_norm=1), r"qk_norm must be True or False, got 1"),
    (dict(flash_attn=None), r"flash_attn must be True or False"),
    (dict(inference_rope_scaling="yes"), r"inference_rope_scaling must be True or False"),
    (dict(bos_token_id=99999), r"bos_token_id \(99999\) must be a token id in \[0, vocab_size=6400\)"),
    (dict(eos_token_id=-1), r"eos_token_id \(-1\) must be a token id"),
    (dict(eos_token_id=2.0), r"eos_token_id must be an integer token id, got 2.0"),
    (dict(hidden_act=None), r"hidden_act must be 'silu'.*got None"),
    (dict(rope_scaling={"factor": "16"}), r"rope_scaling\['factor'\] must be a finite number.*got str '16'"),
    (dict(rope_scaling={"beta_fast": math.inf}), r"rope_scaling\['beta_fast'\] must be a finite number"),
    (dict(hidden_act="gelu"), r"hidden_act must be 'silu'"),
    (dict(rope_scaling={"factor": 16, "scale": 2}), r"rope_scaling has unknown keys \['scale'\]"),
    (dict(rope_scaling={"type": "linear"}), r"rope_scaling\['type'\] must be 'yarn'"),
    (dict(rope_scaling={"beta_fast": 1, "beta_slow": 1}), r"beta_fast > beta_slow.*beta_fast=1, beta_slow=1"),
    (dict(rope_scaling={"beta_fast": 1, "beta_slow": 32}), r"beta_fast > beta_slow"),
    (dict(rope_scaling={"factor": 0.5}), r"rope_scaling\['factor'\] must be a finite number, at least 1"),
    (dict(rope_scaling={"original_max_position_embeddings": 0}), r"original_max_position_embeddings"),
    (dict(rope_scaling={"attention_factor": 0.0}), r"attention_factor"),
    (dict(rope_scaling=[("factor", 16)]), r"rope_scaling must be a dict"),
]


@pytest.mark.parametrize("overrides,message", REFUSED, ids=[m for _, m in REFUSED])
def test_refused_config_names_the_field(overrides, message):
    with pytest.raises(ConfigError, match=message):
        MiniMindConfig(**overrides)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_heads_not_divisible_message_lists_valid_kv_heads():
    with pytest.raises(ConfigError, match=r"Valid num_key_value_heads for 12 heads: \[1, 2, 3, 4, 6, 12\]"):
        MiniMindConfig(hidden_size=768, num_attention_heads=12, num_key_value_heads=5)


def test_replace_changes_a_copy_and_revalidates():
    base = MiniMindConfig()
    mqa = base.replace(num_key_value_heads=1)
    assert mqa.num_key_value_heads == 1 and base.num_key_value_heads == 2
    with pytest.raises(ConfigError, match="num_key_value_heads"):
        base.replace(num_key_value_heads=3)
    with pytest.raises(ConfigError, match="dropout"):
        base.replace(dropout=2.0)
    with pytest.raises(ConfigError, match="rope_scaling"):
        base.replace(rope_scaling={"bogus": 1})


def test_replace_rederives_head_dim_and_intermediate_size():
    # The docstring of replace(): "derived fields are re-derived unless given". The default config
    # was made without head_dim or intermediate_size, so halving hidden_size must halve head_dim
    # (256 // 8 = 32) and give MiniMind's width for 256 (int(256*8/3) = 682 -> 704).
    small = MiniMindConfig().replace(hidden_size=256)
    assert small.head_dim == 32
    assert small.intermediate_size == 704
    # given explicitly, they are kept
    kept = MiniMindConfig().replace(hidden_size=256, head_dim=64, intermediate_size=1408)
    assert (kept.head_dim, kept.intermediate_size) == (64, 1408)
