"""The FlashAttention benchmark runs. Its timings are not asserted here (timed tests flake on shared
machines); `make bench` reports them. This only proves the code paths work, at tiny sizes."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_flash_benchmark_runs_and_reports_its_three_targets():
    result = subprocess.run([sys.executable, "benchmarks/bench_flash.py", "--quick"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for target in ("flash_attention_fast vs explicit attention, speed", "flash_attention_fast time / torch SDPA time",
                   "explicit peak memory / flash_attention_fast peak memory"):
        assert target in result.stdout
    assert "Peak memory above the inputs" in result.stdout
