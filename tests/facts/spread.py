"""How much a fact's value moves from one machine to another: the spread a tolerance must cover.

    PYTHONPATH=tests .venv/bin/python -m facts.spread                    # every fact that compares loosely
    PYTHONPATH=tests .venv/bin/python -m facts.spread cached_logits_agree_to sink_on_code
    PYTHONPATH=tests .venv/bin/python -m facts.spread --all              # every fact: finds a fragile one

Each fact is computed here, then under the stand-ins for other machines that `make portability`
uses (labkit/course/portability.py): last-bit noise with seeds 0 to 3 (every machine-dependent
operation moved by one unit in the last place), and, each in a fresh process, torch's portable
kernels with MKL's common code path, and one thread. It prints every value and the largest relative
distance from this machine's: the spread that a fact's `spread=`, `tolerance=` or `rel=` must
cover, and that its `why=` reports. A maintainer's tool: it runs each fact about seven times.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys

from facts import FACTS, forget

NOISE_SEEDS = range(4)


def loose() -> list[str]:
    return sorted(name for name, rule in FACTS.items()
                  if rule.tolerance is not None or rule.rel is not None or rule.spread or rule.below or rule.magnitude)


def numbers(value) -> list[float]:
    values = value if isinstance(value, tuple | list) else [value]
    return [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]


def compute(names: list[str]) -> dict[str, list[float] | str]:
    """Each fact's numbers, or why it could not be computed (under last-bit noise torch refuses to
    build its CausalBias masks, for one)."""
    values = {}
    forget()  # measured afresh on this stand-in, each measurement once for all the facts that share it
    for name in names:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # what the experiments print
                values[name] = numbers(FACTS[name].compute())
        except Exception as error:  # noqa: BLE001 - reported, and the other stand-ins still count
            values[name] = f"{type(error).__name__}: {str(error)[:80]}"
    forget()
    return values


def under_noise(names: list[str], seed: int) -> dict[str, list[float]]:
    from labkit.course.portability import LastBitNoise

    with LastBitNoise(seed):
        return compute(names)


def in_a_process(names: list[str], variables: dict[str, str]) -> dict[str, list[float]]:
    environment = {**os.environ, **variables, "PYTHONPATH": os.pathsep.join(filter(None, [
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "facts.spread", "--values", *names], env=environment,
                          capture_output=True, text=True)
    if done.returncode:
        failure = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return dict.fromkeys(names, f"the stand-in's process failed: {failure}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--values"]:
        print(json.dumps(compute(argv[1:])))
        return 0
    names = sorted(FACTS) if argv == ["--all"] else argv or loose()
    unknown = [n for n in names if n not in FACTS]
    if unknown:
        print(f"no fact named {', '.join(unknown)}", file=sys.stderr)
        return 2
    from labkit.course.machines import ENVIRONMENTS

    here = compute(names)
    runs = {f"noise-{seed}": under_noise(names, seed) for seed in NOISE_SEEDS}
    for machine in ("other-kernels", "one-thread"):
        runs[machine] = in_a_process(names, ENVIRONMENTS[machine])
    for name in names:
        worst = 0.0
        if isinstance(here[name], str):
            print(f"{name}: {here[name]}")
            continue
        for values in runs.values():
            if isinstance(values[name], str):
                continue
            for mine, theirs in zip(here[name], values[name], strict=True):
                if mine != theirs:
                    worst = max(worst, abs(theirs - mine) / abs(mine) if mine else math.inf)
        if argv == ["--all"] and not worst:
            continue
        print(f"{name}: here {here[name]}; relative spread {worst:.2g}")
        for machine, values in runs.items():
            print(f"    {machine:14} {values[name]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
