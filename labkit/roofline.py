"""Roofline arithmetic for attention: the operations it does, the bytes it moves, and the chips.

A kernel's arithmetic intensity is its floating-point operations per byte of memory (HBM) traffic.
A chip's ridge point is its peak FLOP/s over its memory bandwidth: a kernel below the ridge waits
on memory, one above it on arithmetic. Module 08 uses it twice: for the FlashAttention paper's
count of standard attention over N queries and keys (experiments/08_flash/exp4_io_counts.py), and
for one decoding step, a single query row against a KV cache of S keys (notebook 08).

`attention_steps(T, S, D, group)` counts the paper's Algorithm 0 (standard attention) for T queries
over S keys of width D, one kernel per line: S = Q K^T, P = softmax(S), O = P V, each as (operations,
elements read + written). `group` query heads share one key/value head (grouped-query attention) and
read it once. With T = S = N and group 1 the total is the paper's 4Nd + 4N^2 elements.
`fused_accesses` is what a kernel that never writes the scores (FlashAttention) must still move:
every input read once, the output written once.

`CHIPS`: peak dense BF16 tensor-core FLOP/s, HBM bandwidth and streaming multiprocessors of today's
data-centre GPUs, from NVIDIA's datasheets and architecture whitepapers (cited, not computed; the
datasheets print BF16 "with sparsity", twice the dense rate, and say so in a footnote).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from .arguments import real, shown, whole

BYTES_PER_ELEMENT = 2  # bf16 / fp16, as on the GPU
SOFTMAX_OPS_PER_SCORE = 5  # max, subtract, exp, sum, divide: on the vector units, not the tensor cores
# The largest count (of SMs, heads, keys, blocks) a chip and its launch grid are given: every count up
# to it is exact as a float, which the grid's arithmetic uses, and no chip or sequence comes near it.
MOST = 2**53


@dataclass(frozen=True)
class Chip:
    name: str
    bf16_flops_sparse: float  # the datasheet's BF16 tensor-core figure, "with sparsity"
    hbm_bytes_per_s: float
    sms: int  # streaming multiprocessors: how many thread blocks run at once, one per SM at least
    source: str

    def __post_init__(self):  # each field checked, and kept as Python's int, float or str (numpy's too)
        for name in ("name", "source"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Chip: {name} must be a str, got {type(getattr(self, name)).__name__}.")
        for name in ("bf16_flops_sparse", "hbm_bytes_per_s"):
            object.__setattr__(self, name, real("Chip", name, getattr(self, name), low=0, low_open=True))
        object.__setattr__(self, "sms", whole("Chip", "sms", self.sms, low=1, high=MOST))

    @property
    def bf16_flops(self) -> float:
        """Dense BF16 tensor-core FLOP/s: half the sparse figure (the datasheets' footnote)."""
        return self.bf16_flops_sparse / 2

    @property
    def ridge(self) -> float:
        """FLOPs per byte a kernel needs to keep the tensor cores busy rather than wait on memory."""
        return self.bf16_flops / self.hbm_bytes_per_s


A100_DATASHEET = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                  "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
H100_DATASHEET = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
H200_DATASHEET = "https://resources.nvidia.com/en-us-data-center-overview-mc/en-us-data-center-overview/hpc-datasheet-sc23-h200"

CHIPS: tuple[Chip, ...] = (
    # BF16 624 TFLOPS with sparsity (312 dense), 80GB SXM: 2,039 GB/s; 108 SMs (A100 whitepaper)
    Chip("A100 SXM 80GB", 624e12, 2.039e12, 108, A100_DATASHEET),
    # BF16 1,979 TFLOPS with sparsity, 3.35 TB/s; 132 SMs (H100 whitepaper, SXM5)
    Chip("H100 SXM", 1979e12, 3.35e12, 132, H100_DATASHEET),
    # the same GH100 compute, 141 GB of HBM3e at 4.8 TB/s
    Chip("H200 SXM", 1979e12, 4.8e12, 132, H200_DATASHEET),
)


def _sizes(where: str, query_len: object, key_len: object, head_dim: object, group: object) -> tuple[int, ...]:
    """The four sizes as ints of at least 1: a count of queries, keys, dimensions or heads is whole
    (a text '3' would repeat strings, 2.5 would count half a key, NaN would count nothing)."""
    return tuple(whole(where, name, value, low=1) for name, value in
                 (("query_len", query_len), ("key_len", key_len), ("head_dim", head_dim), ("group", group)))


def attention_steps(query_len: int, key_len: int, head_dim: int, group: int = 1) -> dict[str, tuple[int, int]]:
    """Algorithm 0, one kernel per line, for one key/value head and the `group` query heads that
    share it: {line: (operations, HBM elements read + written)}. Every size is an int of at least 1."""
    t, s, d, g = _sizes("attention_steps", query_len, key_len, head_dim, group)
    return {
        "S = Q K^T": (2 * g * t * s * d, g * t * d + s * d + g * t * s),  # read Q, K; write S
        "P = softmax(S)": (SOFTMAX_OPS_PER_SCORE * g * t * s, 2 * g * t * s),  # read S; write P
        "O = P V": (2 * g * t * s * d, g * t * s + s * d + g * t * d),  # read P, V; write O
    }


def matmul_flops(query_len: int, key_len: int, head_dim: int, group: int = 1) -> int:
    """The tensor-core work of attention: Q K^T and P V, 4 T S D per query head."""
    t, s, d, g = _sizes("matmul_flops", query_len, key_len, head_dim, group)
    return 4 * g * t * s * d


def standard_elements(query_len: int, key_len: int, head_dim: int, group: int = 1) -> int:
    """HBM elements standard attention moves: the three lines of attention_steps added up."""
    _sizes("standard_elements", query_len, key_len, head_dim, group)
    return sum(elements for _, elements in attention_steps(query_len, key_len, head_dim, group).values())


def fused_accesses(query_len: int, key_len: int, head_dim: int, group: int = 1) -> int:
    """HBM elements a kernel that keeps the scores on chip must move: Q, K, V in, O out."""
    t, s, d, g = _sizes("fused_accesses", query_len, key_len, head_dim, group)
    return 2 * g * t * d + 2 * s * d


def intensity(flops: float, elements: float) -> float:
    """FLOPs per byte moved. flops: at least 0; elements: more than 0 (finite numbers, ints or floats)."""
    real("intensity", "flops", flops, low=0)
    real("intensity", "elements", elements, low=0, low_open=True)
    flops, elements = (int(v) if isinstance(v, numbers.Integral) else float(v) for v in (flops, elements))
    try:
        ratio = flops / (elements * BYTES_PER_ELEMENT)  # ints divided exactly, then rounded once
    except OverflowError:
        ratio = math.inf
    if not math.isfinite(ratio):
        raise ValueError(f"intensity: flops / elements is too large for a float, got {shown(flops)} / "
                         f"{shown(elements)}: is elements a count of elements, not of gigabytes?")
    return ratio



# How the flash-attn library spreads one forward over the chip, as its release v2.8.3 does it
# (github Dao-AILab/flash-attention, tag v2.8.3, commit 060c9188, `csrc/flash_attn/flash_api.cpp`:
# `mha_fwd`, `set_params_splitkv` and `num_splits_heuristic`). The published algorithm
# (FlashAttention-2, arXiv 2307.08691, section 3.2) runs one thread block per sequence, head and
# tile of queries; since v2.2.0 the library's forward also splits the keys when those blocks would
# leave the chip mostly idle, and since v2.2.4 (commit 2d8ea9a5) a single query with grouped-query
# attention has its group's query heads folded into the rows of one tile.
FLASH_ATTN_RELEASE = "v2.8.3"
SPLIT_QUERY_TILE = 64  # rows of a query tile in the split-key kernels
MAX_SPLITS = 128


def _key_block(head_dim: int) -> int:
    """Keys a block of the split-key kernel takes per step (wider heads, fewer keys)."""
    return 256 if head_dim <= 64 else 128 if head_dim <= 128 else 64


def _fullness(blocks: int, slots: int) -> float:
    """The share of the slots that `blocks` keep busy, over the waves they need when `slots` run at
    once (1.0: every wave full)."""
    waves = blocks / slots
    return waves / math.ceil(waves)


def flash_attn_splits(work: int, slots: int, key_blocks: int) -> int:
    """The number of key splits flash-attn picks for `work` (batch x heads x query tiles) blocks,
    `slots` blocks at once and `key_blocks` blocks of keys: one if the work nearly fills the chip
    (80% of the slots); otherwise the fewest splits that keep the slots at least 85% as busy as the
    best split count would, counting only split counts that change the keys per split."""
    work, slots, key_blocks = (whole("flash_attn_splits", name, value, low=1, high=MOST) for name, value in
                               (("work", work), ("slots", slots), ("key_blocks", key_blocks)))
    if work >= 0.8 * slots:
        return 1
    most = min(MAX_SPLITS, slots, key_blocks)
    distinct = [n for n in range(1, most + 1)
                if n == 1 or math.ceil(key_blocks / n) != math.ceil(key_blocks / (n - 1))]
    best = max(_fullness(work * n, slots) for n in distinct)
    return next(n for n in distinct if _fullness(work * n, slots) >= 0.85 * best)


def flash_attn_decode_grid(batch: int, heads: int, kv_heads: int, key_len: int, head_dim: int,
                           sms: int) -> dict[str, int]:
    """The thread blocks flash-attn v2.8.3's forward launches for one decoding step, one query per
    sequence (no dropout, no window, no ALiBi): {"heads", "rows", "splits", "blocks"}. With grouped
    heads it folds each group's query heads into the rows of one tile, so a block runs per sequence,
    key/value head and key split; a chip with `sms` streaming multiprocessors runs two of these
    128-thread blocks on each at once."""
    batch, heads, kv_heads, key_len, head_dim, sms = (
        whole("flash_attn_decode_grid", name, value, low=1, high=MOST) for name, value in
        (("batch", batch), ("heads", heads), ("kv_heads", kv_heads), ("key_len", key_len), ("head_dim", head_dim),
         ("sms", sms)))
    if heads % kv_heads:
        raise ValueError(f"flash_attn_decode_grid: heads ({heads}) must be a multiple of kv_heads ({kv_heads}): "
                         "each key/value head serves a whole group of query heads.")
    rows, run_heads = 1, heads
    if heads > kv_heads:  # the GQA fold: g query heads become g rows of one query tile
        rows, run_heads = heads // kv_heads, kv_heads
    work = batch * run_heads * math.ceil(rows / SPLIT_QUERY_TILE)
    splits = flash_attn_splits(work, 2 * sms, math.ceil(key_len / _key_block(head_dim)))
    return {"heads": run_heads, "rows": rows, "splits": splits, "blocks": work * splits}
