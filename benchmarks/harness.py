"""What every benchmark shares: fixed threads, interleaved timing, and targets checked in one run.

Speed claims in this course are ratios measured in one process, one after the other, never
absolute times compared across runs: a shared laptop or CI machine changes speed from minute to
minute, but two things timed in turn within seconds see the same machine. Each round times every
contender once, in turn, with the course's one timer (`labkit.timing.time_call`); the median over
rounds is reported, so one slow round does not decide.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from labkit import time_call


def fix_threads(threads: int) -> None:
    """Run on a fixed number of CPU threads, as the targets are stated (2: a laptop's share)."""
    torch.set_num_threads(threads)


def interleaved_times(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each contender in each round, timing each once per round, in turn: the i-th times
    of all contenders were taken under the same machine load."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            times[name].append(time_call(fn))
    return times


def interleaved_medians(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per contender, timing each once per round, in turn."""
    return {name: statistics.median(ts) for name, ts in interleaved_times(contenders, rounds).items()}


def python_calls(fn: Callable[[], object]) -> int:
    """How many Python functions `fn` enters and C functions it calls from Python: a measure of
    interpreter overhead that, unlike time, does not change with the machine's load."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count - 1  # the call to sys.setprofile that ends the count is the profiler's last event


@dataclass
class Target:
    """A measured ratio and the bound it must reach (`at_least`) or stay under (`at_most`)."""

    name: str
    value: float
    at_least: float | None = None
    at_most: float | None = None

    @property
    def met(self) -> bool:
        return ((self.at_least is None or self.value >= self.at_least)
                and (self.at_most is None or self.value <= self.at_most))

    def line(self) -> str:
        bound = f">= {self.at_least:g}" if self.at_least is not None else f"<= {self.at_most:g}"
        verdict = "PASS" if self.met else "FAIL"
        return f"  [{verdict}] {self.name}: {self.value:.2f}x (target {bound}x)"


def report(targets: list[Target], check: bool) -> int:
    """Print each target with its verdict; the exit status is 1 if a checked target is missed."""
    print("Targets:")
    for target in targets:
        print(target.line())
    missed = [t.name for t in targets if not t.met]
    if missed and check:
        print(f"Missed: {', '.join(missed)}.")
        return 1
    return 0
