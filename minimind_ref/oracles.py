"""Independent twins of a MiniMind model, for checking it against code nobody here wrote.

`hf_twin(model)` builds transformers' LlamaForCausalLM (qk_norm=False, the MiniMind2 layout) or
Qwen3ForCausalLM (qk_norm=True, MiniMind3) with the same sizes, and loads the MiniMind state dict
into it with `strict=True`: every parameter name and shape must match, none may be missing or
left over. Same weights in, same logits out, is the test that the reference is right.
transformers is imported only here, and only when a twin is asked for.
"""

from __future__ import annotations

import math

from .config import MiniMindConfig
from .model import MiniMindForCausalLM
from .rope import yarn_correction_dim


def hf_config(config: MiniMindConfig, attn_implementation: str = "sdpa"):
    """The transformers config that describes the same network as `config`."""
    from transformers import LlamaConfig, Qwen3Config

    rope_parameters = {"rope_type": "default", "rope_theta": config.rope_theta}
    if config.rope_scaling is not None:
        # transformers applies YaRN whatever the table length; MiniMind only when the table
        # (max_position_embeddings) reaches past the trained length, so refuse a mismatch.
        if config.max_position_embeddings <= config.rope_scaling["original_max_position_embeddings"]:
            raise ValueError("YaRN twin needs max_position_embeddings > original_max_position_embeddings.")
        # MiniMind caps the ramp's upper pair index at head_dim/2 - 1, transformers at head_dim - 1:
        # the two agree only while the uncapped index stays below MiniMind's cap.
        scaling = config.rope_scaling
        high = math.ceil(yarn_correction_dim(scaling["beta_slow"], config.head_dim, config.rope_theta,
                                             scaling["original_max_position_embeddings"]))
        if high > config.head_dim // 2 - 1:
            raise ValueError(
                f"No transformers twin for this YaRN config: the ramp's upper pair index ({high}) passes "
                f"head_dim/2 - 1 = {config.head_dim // 2 - 1}, where MiniMind and transformers cap it differently.")
        floats = {key: float(scaling[key]) for key in ("factor", "beta_fast", "beta_slow", "attention_factor")}
        rope_parameters = {"rope_type": "yarn", "rope_theta": config.rope_theta, **floats,
                           "original_max_position_embeddings": scaling["original_max_position_embeddings"]}
    named_alike = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                   "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings",
                   "bos_token_id", "eos_token_id")
    common = dict({name: getattr(config, name) for name in named_alike}, rope_parameters=rope_parameters,
                  attention_dropout=0.0, hidden_act="silu", attention_bias=False)
    if config.qk_norm:
        hf = Qwen3Config(**common, use_sliding_window=False)
    else:
        hf = LlamaConfig(**common, mlp_bias=False)
    hf._attn_implementation = attn_implementation
    return hf


def hf_twin(model: MiniMindForCausalLM, attn_implementation: str = "sdpa"):
    """transformers' model with this model's weights, loaded strictly, in eval mode."""
    from transformers import LlamaForCausalLM, Qwen3ForCausalLM

    config = hf_config(model.config, attn_implementation)
    cls = Qwen3ForCausalLM if model.config.qk_norm else LlamaForCausalLM
    twin = cls(config)
    twin.load_state_dict(model.state_dict(), strict=True)
    return twin.to(dtype=next(model.parameters()).dtype).eval()
