"""The course's one timer: the best of several runs, as experiments, notebooks and benchmarks time code.

A laptop's speed changes from second to second (other programs, frequency scaling, a cold cache),
and every disturbance only ever makes a run slower. So the fastest of a few runs is the closest
to what the code itself costs, and comparing two fastest times taken one after the other, in one
process, is fair. Absolute times mean nothing across machines; the course compares ratios.
"""

from __future__ import annotations

import time
from typing import Callable


def best_time(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    """Seconds of the fastest of `repeats` calls of `fn`, after `warmup` untimed calls (the first
    call of a torch function allocates and picks kernels, and would be timed too slow)."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"best_time: repeats must be a positive int, got {repeats!r}.")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"best_time: warmup must be a non-negative int, got {warmup!r}.")
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
