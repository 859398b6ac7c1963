"""The benchmarks run. Their timings are not asserted here (timed tests flake on shared machines);
`make bench` reports them. This only proves the code paths work, on a tiny model."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generate_benchmark_runs_and_reports_its_targets():
    result = subprocess.run([sys.executable, "benchmarks/bench_generate.py", "--quick"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for target in ("time beyond weight streaming, minimind_ref / transformers",
                   "Python-level calls per token, minimind_ref / transformers",
                   "per-token time's growth with context, recomputing / cache"):
        assert target in result.stdout
    assert "Raw tokens per second are not a target" in result.stdout
    assert "Raw speed-up of the cache" in result.stdout


def test_harness_target_verdicts():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from harness import Target, report

    assert Target("fast", 1.3, at_least=1.2).met
    assert not Target("slow", 1.1, at_least=1.2).met
    assert Target("lean", 0.04, at_most=0.05).met and not Target("fat", 0.06, at_most=0.05).met
    assert report([Target("slow", 1.1, at_least=1.2)], check=True) == 1
    assert report([Target("slow", 1.1, at_least=1.2)], check=False) == 0


def test_python_calls_counts_functions_entered_and_c_calls():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from harness import python_calls

    def helper():
        return len([1, 2])  # one C call

    def three_helpers():
        for _ in (1, 2, 3):
            helper()

    assert python_calls(three_helpers) == 1 + 3 * 2  # three_helpers, 3 x (helper + len)
    assert sys.getprofile() is None
