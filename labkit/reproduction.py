"""Is a retrained model the committed one? Bit for bit on the same machine, within a bound elsewhere.

Training is deterministic given its seed, but only on one machine. The last bits of every matrix
product depend on the torch build, the CPU instruction set its kernels use, the BLAS library and
the code path that library picks for the CPU (and the thread count, which the course fixes).
Retrained on another machine, the weights differ in their last bits, and training carries those
differences forward. So a reproduction check has two forms:

- **bit for bit**, when this machine's fingerprint equals the one recorded with the reference in
  everything that decides the bits: the torch build, ATen's kernels, the BLAS and its code path,
  the threads, and the CPU itself (vendor, family, model, stepping and instruction-set flags, not
  only its marketing name: "AMD EPYC" names Zen 3 and Zen 4 chips alike, whose last bits differ).
  The rebuilt checkpoint must then have exactly the committed bytes;
- **within tolerance**, otherwise: the losses of the first steps agree within a relative
  `LOSS_RTOL`, and the weights lie within a relative distance that was measured across machines
  (see the bounds where they are used), far below what any change of recipe, data or code causes.
  Identical bytes are then reported as a bonus, never required.

A fingerprint that cannot pin a part (a CPU whose family and flags the system does not report, a
reference that predates a field) asks for the tolerance check. Every check says which form it
applied, and why.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

UNKNOWN = "unknown"
LOSS_RTOL = 1e-4  # the first steps' losses; they agreed within 3e-7 across the machines tried


def machine_fingerprint(threads: int) -> dict[str, object]:
    """What, besides the recipe and the data, decides the last bits of trained weights."""
    return {
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        **_cpu_identity(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),  # ATen's kernels: DEFAULT, AVX2, AVX512, ...
        "blas": _blas(),
        "mkl_cbwr": os.environ.get("MKL_CBWR", ""),  # MKL's code-path choice, when pinned
        "threads": threads,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("model name", "Hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_identity(cpuinfo: str = "/proc/cpuinfo") -> dict[str, str]:
    """What tells one CPU design from another where its name does not: vendor, family, model,
    stepping, and a digest of its instruction-set flags (Linux's /proc/cpuinfo). "unknown" where the
    system does not say, which never matches (fingerprint_differences)."""
    fields = {"vendor_id": "cpu_vendor", "cpu family": "cpu_family", "model": "cpu_model",
              "stepping": "cpu_stepping", "flags": "cpu_flags"}
    found = dict.fromkeys(fields.values(), UNKNOWN)
    try:
        with open(cpuinfo) as info:
            for line in info:
                if not line.strip():
                    break  # the first processor's block is enough: the others are the same chip
                key, _, value = line.partition(":")
                if key.strip() in fields:
                    found[fields[key.strip()]] = value.strip()
    except OSError:
        pass
    if found["cpu_flags"] != UNKNOWN:
        flags = " ".join(sorted(found["cpu_flags"].split()))
        found["cpu_flags"] = hashlib.sha256(flags.encode()).hexdigest()[:16]
    return found


def _blas() -> str:
    """The BLAS torch was built with, and its version where torch reports it."""
    config = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    if mkl:
        return f"mkl {mkl.group(1)}"
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    return blas.group(1) if blas else "unknown"


def fingerprint_differences(made_on: Mapping[str, object] | None, here: Mapping[str, object]) -> list[str]:
    """What differs between the machine a reference was made on and this one, in words."""
    if not made_on:
        return ["the reference does not record the machine it was made on"]
    differences = []
    for key, value in here.items():
        if key not in made_on:
            differences.append(f"{key}: not recorded there, {value!r} here")
        elif made_on[key] != value:
            differences.append(f"{key}: {made_on[key]!r} there, {value!r} here")
        elif value == UNKNOWN:
            differences.append(f"{key}: unknown on both, so it cannot be pinned")
    return differences


def weight_distance(tensors: Mapping[str, torch.Tensor], reference: Mapping[str, torch.Tensor]) -> float:
    """||weights - reference|| / ||reference||, over all tensors together, in float64."""
    if set(tensors) != set(reference):
        raise ValueError(f"the tensors differ in names: {sorted(set(tensors) ^ set(reference))}")
    difference = sum(((tensors[name].double() - reference[name].double()) ** 2).sum() for name in reference)
    size = sum((reference[name].double() ** 2).sum() for name in reference)
    return float((difference / size).sqrt())


def largest_loss_difference(losses: Sequence[float], reference: Sequence[float]) -> float:
    """The largest relative difference between the first len(reference) losses and the reference's."""
    if len(losses) < len(reference):
        raise ValueError(f"{len(losses)} losses to compare with {len(reference)} recorded ones")
    return max(abs(a - b) / abs(b) for a, b in zip(losses, reference))


@dataclass
class Reproduction:
    """The verdict of a reproduction check, and which form of check gave it."""

    check: str  # "bit for bit" or "within tolerance"
    reason: str
    passed: bool
    findings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        verdict = "reproduced" if self.passed else "NOT reproduced"
        return [f"Check applied: {self.check} ({self.reason}).", *[f"  {line}" for line in self.findings],
                f"Result: {verdict}."]


def compare(rebuilt_bytes: bytes, tensors: Mapping[str, torch.Tensor], losses: Sequence[float],
            reference: Path, reference_losses: Sequence[float], made_on: Mapping[str, object] | None,
            here: Mapping[str, object], weights_rtol: float) -> Reproduction:
    """Compare a rebuilt checkpoint (its exact bytes, its tensors and its training losses) with the
    reference file and the losses recorded with it, by the form of check the fingerprints allow."""
    from safetensors.torch import load_file

    reference = Path(reference)
    differences = fingerprint_differences(made_on, here)
    if not differences:
        expected = hashlib.sha256(reference.read_bytes()).hexdigest()
        got = hashlib.sha256(rebuilt_bytes).hexdigest()
        return Reproduction("bit for bit", f"this machine's fingerprint matches the one {reference.name} was made on",
                            got == expected, [f"sha256 {got} (rebuilt)", f"sha256 {expected} ({reference.name})"])
    loss_error = largest_loss_difference(losses, reference_losses)
    distance = weight_distance(tensors, load_file(str(reference)))
    same_bytes = hashlib.sha256(rebuilt_bytes).digest() == hashlib.sha256(reference.read_bytes()).digest()
    findings = [f"first {len(reference_losses)} losses: largest relative difference {loss_error:.1e} "
                f"(bound {LOSS_RTOL:.0e})",
                f"weights: relative distance {distance:.1e} from {reference.name} (bound {weights_rtol:.0e})",
                "bonus: the bytes are identical too" if same_bytes
                else "the bytes differ, as they may on another machine (not required)"]
    return Reproduction("within tolerance", "made on another machine: " + "; ".join(differences),
                        loss_error <= LOSS_RTOL and distance <= weights_rtol, findings)
