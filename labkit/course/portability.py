"""Run a notebook as other machines would, and list the stored outputs that would change there.

A learner's laptop is not the machine a notebook was recorded on. Another CPU, another BLAS or
another thread count adds floating-point numbers in another order, so the last bits of a result
differ; anything trained from such results drifts further. A stored output that depends on those
bits passes here and fails strict nbval on the learner's machine. This tool shows such outputs
before a learner does: it executes a notebook under several stand-ins for other machines and
compares every cell's text output with the stored one, as strict nbval does.

    make portability M=05                      # every stand-in below, one notebook
    make portability M=05 ARGS="--noise-seeds 4"   # more noisy machines: the spread of trained numbers
    python -m labkit.course portability 05 --machines one-thread

The stand-ins:
- `other-kernels`: ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE, torch's portable C++ kernels
  instead of the AVX2/AVX-512 ones, and MKL's code path that every x86 CPU shares;
- `one-thread`: OMP_NUM_THREADS=1 MKL_NUM_THREADS=1, sums no longer split across threads;
- `agg`: MPLBACKEND=Agg, a non-interactive matplotlib backend that headless servers set;
- `noise-S`: last-bit noise (`LastBitNoise`, seed S): every result of a matrix product, a
  reduction, a softmax or a transcendental function is moved by one unit in the last place, up or
  down or not at all, as a function of its own bits. That is the size of the difference between
  two real machines, but in places no single real machine would choose, so it finds fragile
  outputs that the environment variables above happen to leave alone. The same computation still
  gives the same bits, as on any one machine; two different computations of the same number
  (a loop and a batched product, say) no longer agree exactly, as on real machines. The noise is
  a torch dispatch mode, and torch treats code under any dispatch mode a little differently: a
  cell that counts torch.profiler's events sees the mode's own frames, and torch's `CausalBias`
  masks (`causal_lower_right`) refuse to be built. Such a cell changes under `noise-S` and nowhere
  else; judge it by the stand-ins above.

Exit status: 0 when every stored output survives every stand-in, 1 when some would change (each
such cell is listed with its stored and its new text), 2 for a usage mistake.
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .machines import ENVIRONMENTS

NOISE_PREFIX = "noise-"

# Output parts strict nbval does not compare: pictures (compared as their text form) and widget
# model ids (random on every run).
SKIPPED_DATA = ("image/png", "image/jpeg", "image/svg+xml", "application/vnd.jupyter.widget-view+json")
IGNORE_MARK = "NBVAL_IGNORE_OUTPUT"

# aten operators whose results depend on the machine: matrix products and reductions (the order of
# the additions), softmax, and transcendental functions (vectorised approximations differ from
# the C library's). Elementwise +, -, *, /, sqrt, comparisons and copies are exact in IEEE
# arithmetic, the same everywhere, and are left alone.
_MACHINE_DEPENDENT = {
    "mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "dot", "vdot", "matmul", "linear",
    "sum", "mean", "var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm", "prod",
    "cumsum", "logsumexp", "_softmax", "_log_softmax", "exp", "expm1", "log", "log1p", "log2",
    "sin", "cos", "tan", "tanh", "sigmoid", "silu", "gelu", "erf", "pow", "rsqrt", "atan2",
    "polar", "_scaled_dot_product_flash_attention_for_cpu",
}


# Bit layouts: (integer dtype of the same width, mantissa bits, exponent mask).
_LAYOUT = {
    torch.float64: (torch.int64, 52, 0x7FF0000000000000),
    torch.float32: (torch.int32, 23, 0x7F800000),
    torch.float16: (torch.int16, 10, 0x7C00),
    torch.bfloat16: (torch.int16, 7, 0x7F80),
}


class LastBitNoise(TorchDispatchMode):
    """While active, move every float result of a machine-dependent operator by -1, 0 or +1 unit
    in the last place, chosen from the result's own bits and `seed`: a stand-in for another CPU.

        with LastBitNoise(seed=1):
            out = model(ids)          # as another machine might compute it

    The nudge works on the result's bits in place, through numpy, so it allocates no torch memory:
    a cell that measures memory (torch.profiler, TensorMemory) sees what it would see without it.
    """

    def __init__(self, seed: int = 0):
        super().__init__()
        self.seed = int(seed)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__.rstrip("_") in _MACHINE_DEPENDENT:
            for tensor in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(tensor, torch.Tensor):
                    self._nudge(tensor)
        return out

    def _nudge(self, tensor: torch.Tensor) -> None:
        if (tensor.dtype not in _LAYOUT or tensor.numel() == 0 or tensor.layout != torch.strided
                or tensor.device.type != "cpu" or not tensor.is_contiguous()):
            return
        int_dtype, mantissa, exponent = _LAYOUT[tensor.dtype]
        bits = tensor.detach().view(int_dtype).reshape(-1).numpy()  # the result's own memory, as integers
        unsigned = bits.astype(np.uint64)
        step = ((unsigned * np.uint64(2654435761) + np.uint64(self.seed * 40503 + 12345)) >> np.uint64(7)) % 3
        step = step.astype(np.int64) - 1  # -1, 0 or +1
        magnitude = unsigned & np.uint64((1 << (8 * tensor.element_size() - 1)) - 1)  # without the sign bit
        # Leave alone: inf and NaN; the largest finite values (one more step is inf); and values
        # whose lower half of the mantissa is all zeros (0, 2.0, 0.375, 1024), which are almost
        # surely exact results of short numbers, the same on every machine.
        keep = ((magnitude & np.uint64(exponent)) == np.uint64(exponent)) | \
            ((magnitude + np.uint64(1)) & np.uint64(exponent) == np.uint64(exponent)) | \
            ((magnitude & np.uint64((1 << (mantissa // 2)) - 1)) == 0)
        step[keep] = 0
        bits += step.astype(bits.dtype)  # one unit in the last place, away from or toward zero


# ------------------------------------------------------------------------------- notebooks


@dataclass
class CellChange:
    """A code cell whose compared output differs from the stored one on some stand-in."""

    index: int
    first_line: str
    stored: str
    new: str

    def diff(self, context: int = 0) -> list[str]:
        return [line for line in difflib.unified_diff(self.stored.splitlines(), self.new.splitlines(),
                                                      "stored", "this machine", n=context, lineterm="")
                if not line.startswith(("---", "+++"))]


@dataclass
class Run:
    """What one stand-in did to one notebook."""

    machine: str
    changes: list[CellChange] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.changes


def compared_text(cell) -> str | None:
    """The part of a code cell's outputs that strict nbval compares, as one text (None for a cell
    marked NBVAL_IGNORE_OUTPUT): streams, text data, error names; not pictures or widget ids."""
    if IGNORE_MARK in cell.source:
        return None
    parts: list[str] = []
    last_stream = None
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream":
            if last_stream == output["name"]:  # consecutive writes to one stream: one text, as nbval joins them
                parts[-1] += output["text"]
            else:
                parts.append(f"[{output['name']}]\n{output['text']}")
            last_stream = output["name"]
            continue
        last_stream = None
        if kind in ("display_data", "execute_result"):
            for key, value in sorted(output.get("data", {}).items()):
                if key not in SKIPPED_DATA:
                    parts.append(f"[{key}]\n{value if isinstance(value, str) else ''.join(value)}")
        elif kind == "error":
            parts.append(f"[error] {output['ename']}: {output['evalue']}")
    return "\n".join(parts)


def _code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """os.environ with `variables` set, for the kernel started inside the block (kernels inherit
    the environment of the process that starts them)."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _noise_cell(seed: int) -> str:
    return ("from labkit.course.portability import LastBitNoise\n"
            f"LastBitNoise(seed={seed}).__enter__()  # active in this kernel from now on")


def run_on(path: Path, machine: str, cell_timeout: int = 300) -> Run:
    """Execute the notebook at `path` on the stand-in `machine` and compare its outputs with the
    stored ones. The file itself is never written."""
    import nbformat

    from .notebook_runner import execute_notebook

    stored = nbformat.read(path, as_version=4)
    notebook = nbformat.read(path, as_version=4)
    variables = dict(ENVIRONMENTS.get(machine, {}))
    if machine.startswith(NOISE_PREFIX):
        notebook.cells.insert(0, nbformat.v4.new_code_cell(_noise_cell(int(machine[len(NOISE_PREFIX):]))))
    run = Run(machine)
    try:
        with _environment(variables):
            execute_notebook(notebook, path.parent, cell_timeout, allow_errors=True)
    except Exception as error:  # a dead kernel or a cell past its time: the run says so
        run.error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    executed = _code_cells(notebook)[1:] if machine.startswith(NOISE_PREFIX) else _code_cells(notebook)
    for index, (before, after) in enumerate(zip(_code_cells(stored), executed)):
        old, new = compared_text(before), compared_text(after)
        if old is not None and old != new:
            run.changes.append(CellChange(index, before.source.splitlines()[0] if before.source else "",
                                          old, new or ""))
    return run


def cell_numbers(path: Path) -> dict[int, int]:
    """Code-cell index -> the cell's index among all cells (what nbval's 'Cell N' counts)."""
    import nbformat

    cells = nbformat.read(path, as_version=4).cells
    code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
    return dict(enumerate(code))


def machines_from(names: Sequence[str], noise_seeds: int) -> list[str]:
    chosen = list(names) if names else list(ENVIRONMENTS)
    return chosen + [f"{NOISE_PREFIX}{seed}" for seed in range(1, noise_seeds + 1)]


def report(path: Path, runs: list[Run], root: Path) -> int:
    """Print, per stand-in, the cells whose outputs would change; 1 if any would."""
    numbers = cell_numbers(path)
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    for run in runs:
        verdict = "same outputs" if run.ok else f"{len(run.changes)} cell(s) change"
        print(f"{name} on {run.machine}: {verdict}" + (f"; {run.error}" if run.error else ""))
        for change in run.changes:
            print(f"  Cell {numbers[change.index]} ({change.first_line[:60]!r}):")
            for line in change.diff()[:12]:
                print(f"    {line[:160]}")
    return 0 if all(run.ok for run in runs) else 1
