"""The course's one timer: every experiment, notebook and benchmark reads the clock through here.

A laptop's speed changes from second to second (other programs, frequency scaling, a cold cache),
and every disturbance only ever makes a run slower. So the fastest of a few runs is the closest
to what the code itself costs, and comparing two fastest times taken one after the other, in one
process, is fair. Absolute times mean nothing across machines; the course compares ratios.

Three functions, each built on the one before:

    time_call(fn)                  seconds of one call of fn: the one place the clock is read;
                                   benchmarks time interleaved rounds with it
    best_time(fn, repeats, warmup) seconds of the fastest of `repeats` calls
    best_step_times(run, repeats)  per-step times of a computation done step by step (greedy
                                   decoding, a cache filled token by token): each step's fastest
                                   time over `repeats` runs
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from .arguments import shown, whole

T = TypeVar("T")


def time_call(fn: Callable[[], object]) -> float:
    """Seconds one call of `fn` takes, by the highest-resolution clock Python has
    (`time.perf_counter`). One call proves little on a busy machine: take the best of several
    (`best_time`), or time contenders in turn, round after round, and compare within a round."""
    _check_function("time_call", fn)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_time(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    """Seconds of the fastest of `repeats` calls of `fn`, after `warmup` untimed calls (the first
    call of a torch function allocates and picks kernels, and would be timed too slow)."""
    _check_function("best_time", fn)
    repeats, warmup = whole("best_time", "repeats", repeats, low=1), whole("best_time", "warmup", warmup, low=0)
    for _ in range(warmup):
        fn()
    return min(time_call(fn) for _ in range(repeats))


def best_step_times(run: Callable[[Callable[[Callable[[], T]], T]], object], repeats: int = 3) -> list[float]:
    """Seconds of each step of a computation done step by step, each step's fastest over `repeats`
    runs (a step's time depends on its place in the run, as a decoding step's on the context: so
    the best is kept step by step, not run by run).

    `run(timed)` does the whole computation once and wraps the work of each step that is to be
    timed as `timed(fn)`: that calls `fn` once, times it with `time_call`, and returns what `fn`
    returned. What `run` does outside `timed` (appending a token, choosing the next input) is not
    timed. Every run must time the same number of steps:

        def decode(timed):
            cache, token = None, prompt
            for _ in range(n):
                out = timed(lambda: model(token, past_key_values=cache, use_cache=True))
                cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)

        seconds = best_step_times(decode, repeats=3)   # [n] floats
    """
    _check_function("best_step_times", run)
    repeats = whole("best_step_times", "repeats", repeats, low=1)
    best: list[float] = []
    for attempt in range(repeats):
        seconds: list[float] = []

        def timed(fn: Callable[[], T]) -> T:
            result = []
            seconds.append(time_call(lambda: result.append(fn())))
            return result[0]

        run(timed)
        if attempt and len(seconds) != len(best):
            raise ValueError(f"best_step_times: run timed {len(best)} steps the first time and "
                             f"{len(seconds)} the next; every run must time the same steps.")
        best = seconds if not attempt else [min(a, b) for a, b in zip(best, seconds)]
    return best


def _check_function(where: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{where}: the first argument must be a function to call (for example a lambda: "
                        f"lambda: model(ids)), got {type(fn).__name__} {shown(fn)}.")
