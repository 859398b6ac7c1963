"""labkit.roofline's counts take whole sizes of at least 1, and its intensity finite amounts: any
other argument is named where it was passed (a text '3' once repeated strings, a negative or NaN
size counted negative or NaN work). The counts themselves are bound facts (tests/facts/08_*)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit import roofline
from labkit.roofline import Chip, attention_steps, fused_accesses, intensity, matmul_flops, standard_elements

DERANDOMISED = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                        suppress_health_check=[HealthCheck.too_slow])
COUNTS = (attention_steps, matmul_flops, standard_elements, fused_accesses)
SIZE = st.one_of(st.integers(-3, 10 ** 6), st.integers(10 ** 20, 10 ** 40), st.floats(allow_nan=True),
                 st.sampled_from(["3", "", True, False, None, 2.0, [4]]), st.integers(1, 64).map(np.int64),
                 st.floats(1, 64, width=32).map(np.float32))


def test_the_reported_inputs_are_named():
    with pytest.raises(TypeError, match=r"matmul_flops: query_len must be a whole number \(an int\) of at least 1, "
                                        r"got str '3'"):
        matmul_flops("3", 4, 8)
    with pytest.raises(ValueError, match="fused_accesses: key_len must be a whole number of at least 1, got -4"):
        fused_accesses(3, -4, 8)
    with pytest.raises(TypeError, match="standard_elements: head_dim .* got float nan"):
        standard_elements(3, 4, float("nan"))
    with pytest.raises(ValueError, match="attention_steps: group must be a whole number of at least 1, got 0"):
        attention_steps(3, 4, 8, group=0)


@settings(DERANDOMISED, max_examples=300)
@given(count=st.sampled_from(COUNTS), sizes=st.tuples(SIZE, SIZE, SIZE, SIZE))
def test_a_count_is_an_exact_int_or_names_the_size(count, sizes):
    try:
        result = count(*sizes)
    except (TypeError, ValueError) as error:
        assert str(error).startswith(f"{count.__name__}: ") and " must be a whole number" in str(error)
        assert not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in sizes)
        return
    t, s, d, g = (int(x) for x in sizes)
    if count is matmul_flops:
        assert result == 4 * g * t * s * d and type(result) is int
    elif count is fused_accesses:
        assert result == 2 * g * t * d + 2 * s * d
    elif count is standard_elements:
        assert result == 4 * g * t * s + 2 * g * t * d + 2 * s * d  # the paper's 4Nd + 4N^2 at T = S, g = 1
    else:
        assert all(type(n) is int and n > 0 for line in result.values() for n in line)


AMOUNT = st.one_of(st.integers(-2, 10 ** 30), st.integers(10 ** 309, 10 ** 310), st.floats(allow_nan=True),
                   st.sampled_from(["1", None, True, [1]]), st.floats(0, 1e6, width=32).map(np.float32))


@settings(DERANDOMISED, max_examples=200)
@given(flops=AMOUNT, elements=AMOUNT)
def test_intensity_is_a_finite_ratio_or_names_the_amount(flops, elements):
    try:
        result = intensity(flops, elements)
    except (TypeError, ValueError) as error:
        assert str(error).startswith(("intensity: flops ", "intensity: elements "))
        return
    assert np.isfinite(result) and result >= 0 and result == pytest.approx(float(flops) / (2 * float(elements)))


def test_a_chip_must_have_positive_rates():
    assert [chip.ridge > 0 for chip in roofline.CHIPS] == [True] * len(roofline.CHIPS)
    with pytest.raises(ValueError, match="Chip: hbm_bytes_per_s must be a number above 0, got 0.0"):
        Chip("X", 1e12, 0, 1, "")
    with pytest.raises(TypeError, match="Chip: sms must be a whole number"):
        Chip("X", 1e12, 1e12, 1.5, "")


def test_the_flash_attn_grid_names_its_sizes():
    """flash_attn_decode_grid and flash_attn_splits take counts as the other counts do."""
    from labkit.roofline import flash_attn_decode_grid, flash_attn_splits

    for bad in ("3", 2.0, 0, -1, True, None, float("nan"), [4]):
        with pytest.raises((TypeError, ValueError), match=r"^flash_attn_decode_grid: batch must be a whole number"):
            flash_attn_decode_grid(bad, 8, 2, 4096, 64, 132)
        with pytest.raises((TypeError, ValueError), match=r"^flash_attn_splits: slots must be a whole number"):
            flash_attn_splits(4, bad, 16)
    with pytest.raises(ValueError, match=r"heads \(8\) must be a multiple of kv_heads \(3\)"):
        flash_attn_decode_grid(1, 8, 3, 4096, 64, 132)
    assert flash_attn_decode_grid(np.int64(1), 8, 2, 4096, 64, 132) == flash_attn_decode_grid(1, 8, 2, 4096, 64, 132)
