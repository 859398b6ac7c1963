"""The other machines that `make portability` and CI's second pass stand in for (standard library
only, so the command line can offer them as choices without importing torch).

Each entry names environment variables that make this machine compute as another would: torch's
portable kernels and MKL's code path common to every x86 CPU (as on a learner's older or non-Intel
CPU), one thread (as on a busy laptop: reductions split differently), and a matplotlib backend that
cannot show figures (as on a headless machine).
"""

from __future__ import annotations

# name -> variables set for the notebook's kernel
ENVIRONMENTS: dict[str, dict[str, str]] = {
    "other-kernels": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"},
    "one-thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "agg": {"MPLBACKEND": "Agg"},
}
