"""flash_attention keeps what the guide says it keeps (the quiz's numbers are decided by its checks,
tests/course/test_quiz_checks.py). The guide's and the notebook's numbers are bound facts
(tests/facts/08_flash.py); the papers' figures are cited (tests/course/test_paper_citations.py).
"""

from __future__ import annotations

from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "08_flash" / "README.md").read_text()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_what_flash_attention_2_changed_and_what_the_course_follows():
    """The guide's three changes (arXiv 2307.08691) and the two it says the course follows, checked
    on the code: only lse is saved for the backward, and query tiles form the outer loop, so each
    tile's rows of O are written once."""
    import importlib

    fa = importlib.import_module("minimind_ref.variants.flash_attention")  # the module, not the function
    guide = flat(GUIDE)
    for change in ("*Fewer non-matmul FLOPs*", "*Parallelism over the sequence*",
                   "*Work partitioning between warps*"):
        assert change in guide
    q, k, v = (torch.randn(1, 2, 40, 8, requires_grad=True) for _ in range(3))
    out = fa.flash_attention(q, k, v, is_causal=True, block_q=16, block_k=8)
    saved = out.grad_fn.saved_tensors
    assert len(saved) == 5 and saved[-1].shape == (1, 2, 40)  # q, k, v, O and lse: no m, no l
    calls = []
    real = fa.key_tiles

    def recording(row_start, *rest):
        calls.append(row_start)
        return real(row_start, *rest)

    fa.key_tiles = recording
    try:
        with torch.no_grad():
            fa.flash_attention(q, k, v, is_causal=True, block_q=16, block_k=8)
    finally:
        fa.key_tiles = real
    assert calls == [0, 16, 32]  # one sweep over the key tiles per query tile, in order
