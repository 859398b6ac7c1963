"""Module 08's decode-time facts (issues 25 and 35): one query row against a cache of S keys, its
arithmetic intensity for MiniMind2-Small's, MiniMind2's and MiniMind-3's shapes, the chips' ridge
points, and how flash-attn spreads a decoding step over an H100, from labkit.roofline.

The chips' peak FLOP/s, bandwidth and SM counts are the vendors' (NVIDIA's datasheets and
whitepapers, addresses in labkit/roofline.py): cited, not computed. What is derived from them is
a fact here. (A file of its own beside 08_flash.py: the facts loader reads every file here.)
"""

from __future__ import annotations

import math

import minimind_ref as mm
from facts import fact
from labkit.roofline import (
    CHIPS,
    flash_attn_decode_grid,
    fused_accesses,
    intensity,
    matmul_flops,
    standard_elements,
)

CACHE_LENGTH = mm.MiniMindConfig().max_position_embeddings  # the longest cache MiniMind's RoPE table allows
BY_NAME = {chip.name.split()[0]: chip for chip in CHIPS}
SHAPES = {"MiniMind2-Small": mm.MiniMindConfig(), "MiniMind2": mm.MiniMindConfig.minimind2(),
          "MiniMind-3": mm.MiniMindConfig.minimind3()}


def group(config: mm.MiniMindConfig) -> int:
    return config.num_attention_heads // config.num_key_value_heads


def decode_intensity(config: mm.MiniMindConfig, fused: bool = True) -> float:
    d, g = config.head_dim, group(config)
    elements = (fused_accesses if fused else standard_elements)(1, CACHE_LENGTH, d, g)
    return intensity(matmul_flops(1, CACHE_LENGTH, d, g), elements)


@fact
def decode_cache_length():
    assert CACHE_LENGTH == mm.MiniMindConfig().max_position_embeddings
    assert CACHE_LENGTH == mm.MiniMindConfig.minimind3().max_position_embeddings
    return CACHE_LENGTH


@fact
def decode_intensity_minimind2():
    config = SHAPES["MiniMind2-Small"]
    assert (config.head_dim, config.num_attention_heads, config.num_key_value_heads) == (64, 8, 2)
    return decode_intensity(config)


@fact
def decode_intensity_minimind3():
    config = SHAPES["MiniMind-3"]
    assert (config.head_dim, config.num_attention_heads, config.num_key_value_heads) == (96, 8, 4)
    return decode_intensity(config)


@fact
def decode_intensity_unfused():
    return decode_intensity(SHAPES["MiniMind2-Small"], fused=False), decode_intensity(SHAPES["MiniMind-3"], fused=False)


@fact
def decode_fusing_saves_percent():
    """The share of a decoding step's HBM traffic that never writing the score row saves, in %, for
    MiniMind2-Small and MiniMind-3: 1 - fused elements / standard elements."""
    def saved(config):
        d, g = config.head_dim, group(config)
        return 100 * (1 - fused_accesses(1, CACHE_LENGTH, d, g) / standard_elements(1, CACHE_LENGTH, d, g))
    return saved(SHAPES["MiniMind2-Small"]), saved(SHAPES["MiniMind-3"])


@fact
def ridge_a100():
    return BY_NAME["A100"].ridge


@fact
def ridge_h100():
    return BY_NAME["H100"].ridge


@fact
def ridge_h200():
    return BY_NAME["H200"].ridge


@fact
def decode_below_ridge_factor():
    """The lowest ridge over the highest decode intensity, rounded down: memory-bound by at least this."""
    factor = min(chip.ridge for chip in CHIPS) / max(decode_intensity(c) for c in SHAPES.values())
    return math.floor(factor)


def decode_step(config: mm.MiniMindConfig, chip) -> tuple[float, int, float, float]:
    """MiB of keys and values one step reads over all layers (bf16), the layers, and the time to read
    them and to do the arithmetic on `chip`, in microseconds."""
    layers_kv = config.num_hidden_layers * config.num_key_value_heads
    cache_bytes = layers_kv * fused_accesses(1, CACHE_LENGTH, config.head_dim, group(config)) * 2
    flops = layers_kv * matmul_flops(1, CACHE_LENGTH, config.head_dim, group(config))
    return (cache_bytes / 2 ** 20, config.num_hidden_layers, cache_bytes / chip.hbm_bytes_per_s * 1e6,
            flops / chip.bf16_flops * 1e6)


@fact
def decode_step_minimind2_h100():
    return decode_step(SHAPES["MiniMind2-Small"], BY_NAME["H100"])


@fact
def decode_step_minimind2_104m_h100():
    """Upstream's MiniMind2 (104M): MiB read per step, layers, microseconds on an H100."""
    return decode_step(SHAPES["MiniMind2"], BY_NAME["H100"])[:3]


@fact
def decode_blocks_h100():
    """Batch 1: one thread block per (sequence, head); the share of the H100's SMs they occupy, in %."""
    blocks, chip = SHAPES["MiniMind2-Small"].num_attention_heads, BY_NAME["H100"]
    assert blocks == SHAPES["MiniMind-3"].num_attention_heads
    return blocks, chip.sms, 100 * blocks / chip.sms


@fact
def flash_attn_decode_grid_h100():
    """flash-attn v2.8.3 at batch 1 on an H100, MiniMind2-Small: (key/value heads after the GQA fold,
    key splits, blocks); the blocks fill most of the chip's two-per-SM slots."""
    config, chip = SHAPES["MiniMind2-Small"], BY_NAME["H100"]
    grid = flash_attn_decode_grid(1, config.num_attention_heads, config.num_key_value_heads, CACHE_LENGTH,
                                  config.head_dim, chip.sms)
    assert grid["rows"] == group(config) and 0.8 * 2 * chip.sms <= grid["blocks"] <= 2 * chip.sms
    return grid["heads"], grid["splits"], grid["blocks"]
