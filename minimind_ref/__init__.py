"""minimind_ref: a small, verified reference implementation of the MiniMind LLM.

Each concept lives in its own file, named after it, and each file says which module teaches it:

    config.py       MiniMindConfig: sizes and switches, validated
    norm.py         RMSNorm
    feedforward.py  the SwiGLU feed-forward network
    rope.py         rotary position embeddings, with YaRN scaling       (module 06)
    gqa.py          repeat_kv: shared key/value heads                   (module 04)
    masks.py        causal, padding and sliding-window masks            (module 05)
    attention.py    the Attention layer, one method per step; the attention functions (01-05)
    kv_cache.py     the KV cache                                        (module 07)
    sampling.py     choosing the next token
    model.py        MiniMindForCausalLM: the whole model and generate()
    oracles.py      the same model in transformers (Llama, Qwen3), for the tests to compare against

Every input check lives in `_checks.py`; each public function calls its check once, at its top, so
that the files above show the ideas.

Not MiniMind, and kept apart in `variants/`: the attention variants the course builds beside it,
FlashAttention (module 08) and multi-head latent attention (module 04).

Pure PyTorch: the course's kit (heatmaps, checks, quizzes, training) is the separate package `labkit`.
"""

from .attention import Attention, fused_attention, scaled_dot_product_attention
from .config import ConfigError, MiniMindConfig, minimind_intermediate_size
from .feedforward import FeedForward
from .gqa import repeat_kv
from .kv_cache import CacheError, KVCache
from .masks import causal_mask, combined_mask, padding_mask, sliding_window_mask
from .model import CausalLMOutput, MiniMindBlock, MiniMindForCausalLM, MiniMindModel
from .norm import RMSNorm
from .rope import MINIMIND_YARN, apply_rotary_pos_emb, precompute_freqs_cis, rotate_half
from .sampling import select_next_token

__all__ = ["Attention", "CacheError", "CausalLMOutput", "ConfigError", "FeedForward", "KVCache", "MINIMIND_YARN",
           "MiniMindBlock", "MiniMindConfig", "MiniMindForCausalLM", "MiniMindModel", "RMSNorm", "apply_rotary_pos_emb",
           "causal_mask", "combined_mask", "fused_attention", "minimind_intermediate_size", "padding_mask",
           "precompute_freqs_cis", "repeat_kv", "rotate_half", "scaled_dot_product_attention", "select_next_token",
           "sliding_window_mask"]
