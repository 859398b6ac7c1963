"""labkit.timing, the course's one timer, on a clock the test controls: every experiment, notebook
and benchmark that times code reads the clock through `time_call`, so what these functions keep
(the fastest call, each step's fastest run) is what they report."""

from __future__ import annotations

import pytest

from labkit import timing


@pytest.fixture
def clock(monkeypatch):
    """A fake perf_counter: `clock.advance(s)` inside a timed function makes it take s seconds."""

    class Clock:
        now = 0.0

        def advance(self, seconds):
            self.now += seconds
            return seconds

    fake = Clock()
    monkeypatch.setattr(timing.time, "perf_counter", lambda: fake.now)
    return fake


def test_time_call_measures_one_call(clock):
    calls = []
    assert timing.time_call(lambda: calls.append(clock.advance(0.25))) == 0.25
    assert calls == [0.25]


def test_best_time_keeps_the_fastest_after_warmup(clock):
    durations = iter([8.0, 0.5, 0.25, 0.75])  # the warm-up call is the slow one, and is not timed
    assert timing.best_time(lambda: clock.advance(next(durations)), repeats=3, warmup=1) == 0.25
    with pytest.raises(ValueError, match="repeats"):
        timing.best_time(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        timing.best_time(lambda: None, warmup=-1)


def test_best_step_times_keeps_each_steps_fastest_and_returns_results(clock):
    runs = iter([[0.75, 0.125, 0.5], [0.25, 0.5, 0.625], [1.0, 0.25, 0.375]])  # exact in binary
    results = []

    def run(timed):
        for i, seconds in enumerate(next(runs)):
            results.append(timed(lambda: (clock.advance(seconds), i)[1]))
            clock.advance(4.0)  # work between the steps is not timed

    assert timing.best_step_times(run, repeats=3) == [0.25, 0.125, 0.375]
    assert results == [0, 1, 2] * 3


def test_best_step_times_refuses_runs_of_different_lengths():
    lengths = iter([3, 2])

    def run(timed):
        for _ in range(next(lengths)):
            timed(lambda: None)

    with pytest.raises(ValueError, match="same steps"):
        timing.best_step_times(run, repeats=2)
    with pytest.raises(ValueError, match="repeats"):
        timing.best_step_times(run, repeats=0)


def test_the_timer_is_public_under_its_short_names():
    import labkit

    assert (labkit.time_call, labkit.best_time, labkit.best_step_times) == (
        timing.time_call, timing.best_time, timing.best_step_times)
