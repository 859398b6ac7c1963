"""MiniMindConfig: every size and switch of the model, checked when it is made.

The field names are MiniMind's (github jingyaogong/minimind, `model/model_minimind.py`), so a
learner can read its config next to this one. The defaults are MiniMind2-Small's (upstream's 26M
model), as the course's source notes describe it: hidden 512, 8 layers, 8 query heads sharing 2
key/value heads (grouped-query attention), a 6400-token vocabulary, RoPE with base 1e6.

One field is ours: `qk_norm`. False gives the MiniMind2 series (no normalisation of q and k); True
gives MiniMind3's per-head RMSNorm on q and k before RoPE, the layout of Qwen3.
`minimind2()` gives upstream's MiniMind2 (104M); `minimind3()` MiniMind-3, as upstream computes it today.

A config that cannot build a working model is refused when it is made, naming the field and the
rule it broke (one table, minimind_ref/_checks.py). numpy's numbers become Python's (np.int64(512)
is kept as 512), so a config prints, compares and saves as JSON as any other.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from ._checks import ConfigError, check_arguments, check_minimind_config
from .rope import MINIMIND_YARN

__all__ = ["ConfigError", "MiniMindConfig", "minimind_intermediate_size"]


def minimind_intermediate_size(hidden_size: int) -> int:
    """The feed-forward width the MiniMind2 series derives from the hidden size.

    SwiGLU has three weight matrices instead of two, so LLaMA-style models shrink the usual 4x
    width to 8/3 x to keep the parameter count, then round up to a multiple of 64. For hidden
    512 this is 1408 (int(512 * 8 / 3) = 1365, rounded up to the next multiple of 64).
    """
    check_arguments("minimind_intermediate_size", error=ConfigError, hidden_size=hidden_size)
    return 64 * math.ceil(int(hidden_size * 8 / 3) / 64)


@dataclass
class MiniMindConfig:
    """Sizes and switches of a MiniMind model (MiniMind2-Small defaults; see the module docstring).

    `head_dim` and `intermediate_size` may be left as None: they are then derived as MiniMind
    derives them (hidden_size // num_attention_heads, and `minimind_intermediate_size`).
    `num_key_value_heads` picks the attention variant: equal to `num_attention_heads` is MHA,
    1 is MQA, anything in between that divides it is GQA (module 04).
    """

    hidden_size: int = 512
    num_hidden_layers: int = 8
    num_attention_heads: int = 8
    num_key_value_heads: int | None = 2
    head_dim: int | None = None
    intermediate_size: int | None = None
    vocab_size: int = 6400
    max_position_embeddings: int = 32768
    rope_theta: float = 1e6
    inference_rope_scaling: bool = False
    rope_scaling: dict | None = None
    rms_norm_eps: float = 1e-5
    dropout: float = 0.0
    flash_attn: bool = True
    tie_word_embeddings: bool = True
    qk_norm: bool = False
    hidden_act: str = "silu"
    bos_token_id: int = 1
    eos_token_id: int = 2
    initializer_range: float = 0.02
    # Which fields were filled in from others (so that `replace` derives them again).
    _derived: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_minimind_config(self, MINIMIND_YARN)  # every field's type and range: _checks.py
        derivable = ("num_key_value_heads", "head_dim", "intermediate_size")
        derived = {name for name in derivable if getattr(self, name) is None}
        self.num_key_value_heads = self.num_key_value_heads or self.num_attention_heads
        self.head_dim = self.head_dim or self.hidden_size // self.num_attention_heads
        self.intermediate_size = self.intermediate_size or minimind_intermediate_size(self.hidden_size)
        if self.inference_rope_scaling and self.rope_scaling is None:
            derived.add("rope_scaling")
        if self.inference_rope_scaling or self.rope_scaling is not None:
            self.rope_scaling = {**MINIMIND_YARN, **(self.rope_scaling or {})}  # unset keys take MiniMind's values
        self._derived = frozenset(derived)

    # -- presets ----------------------------------------------------------------------------
    @classmethod
    def minimind2(cls, **overrides: Any) -> MiniMindConfig:
        """MiniMind2, upstream's 104M model (README model table at 9d898576, sizes unchanged at
        d65ef2c0): 16 layers, d_model 768, 8 q heads over 2 kv heads; the rest is the defaults, as
        upstream's trainer builds it (head_dim 96, SwiGLU width 2048, tied embeddings, no q/k norm)."""
        return cls(**{"hidden_size": 768, "num_hidden_layers": 16, **overrides})

    @classmethod
    def minimind3(cls, **overrides: Any) -> MiniMindConfig:
        """MiniMind-3: the defaults of upstream's `MiniMindConfig` since the `minimind-3` release.

        Read in github jingyaogong/minimind, `model/model_minimind.py`, at commit 101d7df2
        ("[update] minimind-3", 2026-03-24), unchanged in these fields at dddedc68: hidden 768,
        8 layers, 8 query heads over 4 key/value heads (head_dim 96), a SwiGLU width of
        ceil(hidden * pi / 64) * 64 = 2432 (the MiniMind2 series used 8/3 of the hidden size),
        rms_norm_eps 1e-6, and the per-head q/k RMSNorm; the rest as the defaults. `overrides`
        change any field; derived fields follow the new values unless given.
        """
        hidden = overrides.pop("hidden_size", 768)
        check_arguments("MiniMindConfig.minimind3", error=ConfigError, hidden_size=hidden)
        return cls(**{"hidden_size": hidden, "num_key_value_heads": 4, "rms_norm_eps": 1e-6, "qk_norm": True,
                      "intermediate_size": math.ceil(hidden * math.pi / 64) * 64, **overrides})

    # -- conveniences -----------------------------------------------------------------------
    @property
    def num_key_value_groups(self) -> int:
        """How many query heads share each key/value head (1 for MHA, all of them for MQA)."""
        return self.num_attention_heads // self.num_key_value_heads

    def to_dict(self) -> dict[str, Any]:
        """Every field, derived ones included, as plain values."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    def replace(self, **changes: Any) -> MiniMindConfig:
        """A copy with some fields changed, validated again. Fields that were derived (head_dim,
        intermediate_size, ...) are derived again from the new values unless given."""
        fields = {k: v for k, v in self.to_dict().items() if k not in self._derived}
        fields.update(changes)
        return MiniMindConfig(**fields)
