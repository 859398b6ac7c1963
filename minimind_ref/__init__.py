"""minimind_ref: a small, verified reference implementation of the MiniMind LLM.

Each concept lives in its own file, named after it, and each file says which module teaches it:

    config.py       MiniMindConfig: sizes and switches, validated
    norm.py         RMSNorm
    feedforward.py  the SwiGLU feed-forward network
    rope.py         rotary position embeddings, with YaRN scaling       (module 06)
    gqa.py          repeat_kv: shared key/value heads                   (module 04)
    mla.py          multi-head latent attention, for comparison         (module 04; not in MiniMind)
    masks.py        causal, padding and sliding-window masks            (module 05)
    attention.py    explicit and fused attention, the Attention layer   (modules 01-05)
    flash.py        FlashAttention: exact attention by tiles            (module 08)
    kv_cache.py     the KV cache                                        (module 07)
    sampling.py     choosing the next token
    model.py        MiniMindForCausalLM: the whole model and generate()

Pure PyTorch: nothing here imports transformers, matplotlib or ipywidgets. The oracles that the
tests compare against live in `minimind_ref.oracles`; teaching helpers in `minimind_ref.teaching`.
"""

from .attention import Attention, fused_attention, scaled_dot_product_attention
from .config import MINIMIND_YARN, ConfigError, MiniMindConfig, minimind_intermediate_size
from .feedforward import FeedForward
from .flash import flash_attention
from .gqa import repeat_kv
from .kv_cache import CacheError, KVCache
from .masks import causal_mask, combined_mask, padding_mask, sliding_window_mask
from .model import CausalLMOutput, MiniMindBlock, MiniMindForCausalLM, MiniMindModel
from .norm import RMSNorm
from .rope import apply_rotary_pos_emb, precompute_freqs_cis, rotate_half
from .sampling import select_next_token

__all__ = [
    "Attention", "CacheError", "CausalLMOutput", "ConfigError", "FeedForward", "KVCache",
    "MINIMIND_YARN", "MiniMindBlock", "MiniMindConfig", "MiniMindForCausalLM", "MiniMindModel",
    "RMSNorm", "apply_rotary_pos_emb", "causal_mask", "combined_mask", "flash_attention", "fused_attention",
    "minimind_intermediate_size", "padding_mask", "precompute_freqs_cis", "repeat_kv",
    "rotate_half", "scaled_dot_product_attention", "select_next_token", "sliding_window_mask",
]
