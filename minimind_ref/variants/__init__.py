"""Not MiniMind: attention variants the course builds beside it, for comparison.

MiniMind's model (`minimind_ref.model`) uses neither of these. Its `config.flash_attn=True` means
torch's fused kernel (`torch.nn.functional.scaled_dot_product_attention`), not the FlashAttention
written here.

    flash_attention.py       FlashAttention as the algorithm reads: tiles, running max and sum,
                             rescaling, causal tile skipping, the backward by recomputation (module 08)
    flash_attention_fast.py  the same algorithm with the tricks that make it fast in PyTorch
                             (buffers reused, the running maximum raised lazily); tested equal to
                             the readable one, and what `make bench` times
    mla.py                   DeepSeek's multi-head latent attention: a compressed key/value cache (module 04)
"""

from .flash_attention import flash_attention, key_tiles
from .flash_attention_fast import flash_attention_fast
from .mla import MultiHeadLatentAttention

__all__ = ["MultiHeadLatentAttention", "flash_attention", "flash_attention_fast", "key_tiles"]
