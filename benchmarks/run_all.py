"""`make bench`: run every benchmarks/bench_*.py in turn and summarise.

Each benchmark prints its measurements and its targets, and exits 1 if a target is missed.
Extra arguments (e.g. --quick) are passed to every benchmark.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    results = {}
    for script in scripts:
        print(f"=== {script.name}", flush=True)
        results[script.name] = subprocess.run([sys.executable, str(script), *argv], cwd=HERE).returncode
        print(flush=True)
    print("Summary:")
    for name, code in results.items():
        print(f"  {'PASS' if code == 0 else 'FAIL'}  {name}")
    return 0 if all(code == 0 for code in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
