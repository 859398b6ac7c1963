"""The configs' fields, declared: one table per config of each field's type and range, and the
rules between fields. `MiniMindConfig` and `MLAConfig` call their check once, when made."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .values import is_int, is_real, require_real


class ConfigError(ValueError):
    """A config field breaks a rule; the message names the field and the fix."""


@dataclass(frozen=True)
class Rule:
    """A field's type and range: `ok(value)` says whether it holds; the message says
    "<field> must be <what>, got <value>"."""

    what: str
    ok: Callable[[Any], bool]
    optional: str = ""  # what None means, where None is allowed ("" if it is not)

    def check(self, name: str, value) -> None:
        if value is None and self.optional:
            return
        if not self.ok(value):
            none = f" or None ({self.optional})" if self.optional else ""
            plain = is_real(value) or value is None or isinstance(value, bool)
            got = repr(value) if plain else f"{type(value).__name__} {value!r}"
            raise ConfigError(f"{name} must be {self.what}{none}, got {got}.")


def integer(low: int | None = 1, what: str = "a positive integer", optional: str = "") -> Rule:
    return Rule(what, lambda v: is_int(v) and (low is None or v >= low), optional)


def number(ok: Callable[[float], bool], what: str) -> Rule:
    return Rule(what, lambda v: is_real(v) and math.isfinite(v) and ok(v))


BOOL = Rule("True or False", lambda v: isinstance(v, bool))
DICT = Rule("a dict", lambda v: isinstance(v, dict), optional="no YaRN")

MINIMIND_FIELDS: dict[str, Rule] = {
    "hidden_size": integer(),
    "num_hidden_layers": integer(),
    "num_attention_heads": integer(),
    "num_key_value_heads": integer(optional="as many as num_attention_heads"),
    "head_dim": integer(optional="hidden_size // num_attention_heads"),
    "intermediate_size": integer(optional="derived from hidden_size, as the MiniMind2 series does"),
    "vocab_size": integer(),
    "max_position_embeddings": integer(),
    # a base of 1 or less makes no geometric frequencies (0 or less: NaN angles)
    "rope_theta": number(lambda v: v > 1, "a finite number greater than 1 (MiniMind uses 1e6)"),
    "inference_rope_scaling": BOOL,
    "rope_scaling": DICT,
    "rms_norm_eps": number(lambda v: v > 0, "a finite positive number"),
    "dropout": number(lambda v: 0 <= v < 1, "in [0, 1)"),
    "flash_attn": BOOL,
    "tie_word_embeddings": BOOL,
    "qk_norm": BOOL,
    "hidden_act": Rule("'silu' (SwiGLU, as MiniMind)", lambda v: v == "silu"),
    "bos_token_id": integer(None, "an integer token id"),
    "eos_token_id": integer(None, "an integer token id"),
    "initializer_range": number(lambda v: v > 0, "a finite positive number"),
}

MLA_FIELDS: dict[str, Rule] = {
    "hidden_size": integer(),
    "num_attention_heads": integer(),
    "kv_lora_rank": integer(),
    "qk_nope_head_dim": integer(),
    "qk_rope_head_dim": integer(),
    "v_head_dim": integer(),
    "q_lora_rank": integer(what="a positive integer (the compressed query size d_c')",
                           optional="no query compression: a plain q_proj"),
    "num_hidden_layers": integer(),
    "max_position_embeddings": integer(),
    "rope_theta": number(lambda v: v > 1, "a finite number greater than 1"),
    "rope_interleave": BOOL,
    "rms_norm_eps": number(lambda v: v > 0, "a finite positive number"),
}

YARN_FIELDS: dict[str, Rule] = {
    "type": Rule("'yarn'", lambda v: v == "yarn"),
    "beta_fast": number(lambda v: v > 0, "a finite number > 0"),
    "beta_slow": number(lambda v: v > 0, "a finite number > 0"),
    "factor": number(lambda v: v >= 1, "a finite number, at least 1"),
    "original_max_position_embeddings": integer(),
    "attention_factor": number(lambda v: v > 0, "a finite positive number"),
}


def check_fields(table: dict[str, Rule], values: dict[str, Any], name=lambda field: field) -> None:
    for field_name, rule in table.items():
        rule.check(name(field_name), values[field_name])


def check_minimind_config(config) -> None:
    """MiniMindConfig, before its derived fields are filled in."""
    check_fields(MINIMIND_FIELDS, vars(config))
    heads = config.num_attention_heads
    kv = config.num_key_value_heads if config.num_key_value_heads is not None else heads
    if kv > heads:
        raise ConfigError(
            f"num_key_value_heads ({kv}) is larger than num_attention_heads ({heads}): each "
            f"key/value head is shared by a group of query heads, so use at most {heads}.")
    if heads % kv:
        divisors = [d for d in range(1, heads + 1) if heads % d == 0]
        raise ConfigError(
            f"num_attention_heads ({heads}) is not divisible by num_key_value_heads ({kv}): "
            f"query heads are split into equal groups that share one key/value head. "
            f"Valid num_key_value_heads for {heads} heads: {divisors}.")
    if config.head_dim is None and config.hidden_size % heads:
        raise ConfigError(
            f"hidden_size ({config.hidden_size}) is not divisible by num_attention_heads ({heads}), "
            f"so head_dim cannot be derived: choose a hidden_size that is a multiple of {heads}, "
            f"or set head_dim explicitly.")
    head_dim = config.head_dim or config.hidden_size // heads
    if head_dim % 2:
        raise ConfigError(f"head_dim ({head_dim}) must be even: RoPE rotates pairs of dimensions.")
    for name in ("bos_token_id", "eos_token_id"):
        if not 0 <= getattr(config, name) < config.vocab_size:
            raise ConfigError(
                f"{name} ({getattr(config, name)}) must be a token id in [0, vocab_size={config.vocab_size}).")
    if config.rope_scaling is not None:
        check_rope_scaling(config.rope_scaling)


def check_rope_scaling(rope_scaling: dict, defaults: dict | None = None) -> dict:
    """MiniMind's YaRN settings; returns them merged over `defaults` (MINIMIND_YARN)."""
    from ..config import MINIMIND_YARN

    if not isinstance(rope_scaling, dict):
        raise ConfigError(f"rope_scaling must be a dict (or None), got {type(rope_scaling).__name__}.")
    unknown = set(rope_scaling) - set(YARN_FIELDS)
    if unknown:
        raise ConfigError(
            f"rope_scaling has unknown keys {sorted(unknown)}; MiniMind's YaRN uses {sorted(YARN_FIELDS)}.")
    merged = {**(defaults or MINIMIND_YARN), **rope_scaling}
    check_fields(YARN_FIELDS, merged, lambda key: f"rope_scaling[{key!r}]")
    if not merged["beta_fast"] > merged["beta_slow"]:
        raise ConfigError(
            f"rope_scaling needs beta_fast > beta_slow > 0 (rotations that bound the ramp), "
            f"got beta_fast={merged['beta_fast']!r}, beta_slow={merged['beta_slow']!r}.")
    return merged


def check_mla_config(config) -> None:
    check_fields(MLA_FIELDS, vars(config), lambda field: f"MLAConfig.{field}")
    if config.qk_rope_head_dim % 2:
        raise ConfigError(
            f"MLAConfig.qk_rope_head_dim ({config.qk_rope_head_dim}) must be even: RoPE rotates pairs of "
            f"dimensions.")


def check_rope_table(dim, end, rope_base, rope_scaling) -> dict | None:
    """precompute_freqs_cis's arguments; returns the YaRN settings merged with MiniMind's."""
    if not is_int(dim) or dim < 2 or dim % 2:
        raise ValueError(
            f"precompute_freqs_cis: dim must be a positive even number (pairs of dimensions), got {dim!r}.")
    if not is_int(end) or end < 1:
        raise ValueError(f"precompute_freqs_cis: end (number of positions) must be positive, got {end!r}.")
    require_real("precompute_freqs_cis: ", "rope_base", rope_base, 1.0, low_open=True)
    return None if rope_scaling is None else check_rope_scaling(rope_scaling)
