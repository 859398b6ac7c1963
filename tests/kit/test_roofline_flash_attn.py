"""labkit.roofline's restatement of how flash-attn spreads a decoding step over the chip, held to
the examples and rules its source states (github Dao-AILab/flash-attention, release v2.8.3,
`csrc/flash_attn/flash_api.cpp`)."""

from __future__ import annotations

import math

from labkit.roofline import flash_attn_decode_grid, flash_attn_splits


def test_the_sources_own_example():
    """flash_api.cpp's comment: batch x heads = 48 on 108 SMs, 2 splits (efficiency 0.89) beat 3 (0.67)."""
    assert flash_attn_splits(48, 108, 1024) == 2


def test_no_split_when_the_work_nearly_fills_the_chip():
    assert flash_attn_splits(212, 264, 128) == 1  # 212 >= 0.8 x 264
    assert flash_attn_splits(211, 264, 128) > 1


def test_only_split_counts_that_change_the_keys_per_split():
    """With 128 key blocks, 65 to 127 splits give 2 blocks each, as 64 does: only 64 and 128 count."""
    splits = flash_attn_splits(2, 264, 128)
    assert splits in (64, 128) and math.ceil(128 / splits) != math.ceil(128 / (splits - 1))


def test_grouped_heads_fold_into_rows_at_one_query():
    grouped = flash_attn_decode_grid(1, 8, 2, 32768, 64, 132)
    assert (grouped["heads"], grouped["rows"]) == (2, 4)
    plain = flash_attn_decode_grid(1, 8, 8, 32768, 64, 132)
    assert (plain["heads"], plain["rows"]) == (8, 1)
    for grid in (grouped, plain):  # either way the step fills most of the H100's two slots per SM
        assert 0.8 * 264 <= grid["blocks"] <= 264 and grid["blocks"] == grid["heads"] * grid["splits"]


def test_a_large_batch_needs_no_split():
    assert flash_attn_decode_grid(128, 8, 2, 32768, 64, 132)["splits"] == 1
