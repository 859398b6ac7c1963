"""The reproduction checks' parts (reproduction.py): the machine fingerprint, the distances, and the
choice between bit for bit and within tolerance. tests/kit/test_tiny_model.py runs them on the tiny model."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save

from labkit import reproduction as rp


def test_the_fingerprint_names_what_decides_the_last_bits():
    here = rp.machine_fingerprint(threads=1)
    assert set(here) == {"torch", "machine", "cpu", "cpu_vendor", "cpu_family", "cpu_model", "cpu_stepping",
                         "cpu_flags", "cpu_capability", "blas", "mkl_cbwr", "threads"}
    assert here["torch"] == torch.__version__ and here["threads"] == 1
    assert here["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_the_cpu_is_told_apart_by_more_than_its_name(tmp_path):
    """Two chips sold as "AMD EPYC" (Zen 3 and Zen 4) compute different last bits: the family,
    model, stepping and flags tell them apart; a system that reports none of them pins nothing."""
    def identity(text):
        info = tmp_path / "cpuinfo"
        info.write_text(text)
        return rp._cpu_identity(str(info))

    zen3 = identity("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
                    "stepping\t: 1\nflags\t\t: fpu avx2\n\nprocessor\t: 1\n")
    zen4 = identity("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
                    "stepping\t: 1\nflags\t\t: fpu avx2 avx512f\n")
    assert zen3["cpu_family"] == zen4["cpu_family"] == "25"
    assert (zen3["cpu_model"], zen4["cpu_model"]) == ("1", "17")
    assert zen3["cpu_flags"] != zen4["cpu_flags"] and len(zen3["cpu_flags"]) == 16
    assert rp.fingerprint_differences(zen3, zen4) == [f"{key}: {zen3[key]!r} there, {zen4[key]!r} here"
                                                      for key in ("cpu_model", "cpu_flags")]
    silent = identity("processor\t: 0\n")
    assert set(silent.values()) == {rp.UNKNOWN}
    assert rp.fingerprint_differences(silent, silent) == [f"{key}: unknown on both, so it cannot be pinned"
                                                          for key in silent]


def test_differences_are_said_in_words():
    here = {"cpu": "B", "threads": 1}
    assert rp.fingerprint_differences({"cpu": "B", "threads": 1}, here) == []
    assert rp.fingerprint_differences({"cpu": "A", "threads": 1}, here) == ["cpu: 'A' there, 'B' here"]
    assert rp.fingerprint_differences(None, here) == ["the reference does not record the machine it was made on"]
    # a reference that predates a field cannot pin it
    assert rp.fingerprint_differences({"cpu": "B"}, here) == ["threads: not recorded there, 1 here"]


def test_weight_distance_is_relative_and_refuses_other_names():
    reference = {"a": torch.ones(4), "b": torch.zeros(2)}
    assert rp.weight_distance(reference, reference) == 0.0
    assert rp.weight_distance({"a": torch.full((4,), 1.5), "b": torch.zeros(2)}, reference) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="names"):
        rp.weight_distance({"a": torch.ones(4)}, reference)


def test_loss_differences_need_enough_losses():
    assert rp.largest_loss_difference([2.0, 1.01, 7.0], [2.0, 1.0]) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="1 losses to compare with 2"):
        rp.largest_loss_difference([2.0], [2.0, 1.0])


def test_compare_picks_the_check_by_fingerprint(tmp_path):
    tensors = {"w": torch.tensor([1.0, 2.0])}
    reference = tmp_path / "ref.safetensors"
    reference.write_bytes(save(tensors))
    here = {"cpu": "B"}
    same = rp.compare(save(tensors), tensors, [1.0], reference, [1.0], {"cpu": "B"}, here, 1e-5)
    assert (same.check, same.passed) == ("bit for bit", True)
    nudged = {"w": torch.tensor([1.0, 2.0 + 1e-6])}
    strict = rp.compare(save(nudged), nudged, [1.0], reference, [1.0], {"cpu": "B"}, here, 1e-5)
    assert (strict.check, strict.passed) == ("bit for bit", False)
    other = rp.compare(save(nudged), nudged, [1.0], reference, [1.0], {"cpu": "A"}, here, 1e-5)
    assert (other.check, other.passed) == ("within tolerance", True)
    assert other.reason == "made on another machine: cpu: 'A' there, 'B' here"
    assert other.lines()[-1] == "Result: reproduced."
    assert "  the bytes differ, as they may on another machine (not required)" in other.lines()
    identical = rp.compare(save(tensors), tensors, [1.0], reference, [1.0], {"cpu": "A"}, here, 1e-5)
    assert identical.passed and "  bonus: the bytes are identical too" in identical.lines()
    far = {"w": torch.tensor([1.0, 2.5])}
    assert not rp.compare(save(far), far, [1.0], reference, [1.0], {"cpu": "A"}, here, 1e-5).passed
    assert not rp.compare(save(nudged), nudged, [1.1], reference, [1.0], {"cpu": "A"}, here, 1e-5).passed
