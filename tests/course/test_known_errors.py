"""Errors that audits found in the course's text, each kept from coming back.

The numbers and behaviours behind these corrections are bound facts (tests/facts/) or checked
citations; a fact only protects the sentence that carries its marker, so an old sentence pasted
back elsewhere (a summary, a docstring, a slide) would slip past it. Each pattern below is the
wrong claim itself, as the audit found it, matched in every guide, notebook (Markdown and code) and
experiment script. Keep a pattern narrow: it names a false statement, not a wording.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

KNOWN_ERRORS = {  # (issue, correction): (the false claim, as a pattern; what is true)
    (25, 2): (r"causal\s+with\s+`?T\s*>\s*S`?\)?\s+gets\s+output\s+0"
              r"|Check\s+with\s+`T\s*>\s*S`\s+and\s+a\s+causal\s+mask",
              "causal attention with more queries than keys raises ValueError; output 0 and lse -inf hold for rows "
              "an attn_mask empties"),
    (25, 4): (r"exactly\s+`?sqrt\(D\)`?",
              "with eps, RMSNorm's output has length at most sqrt(D), much less for a vector near zero"),
    (25, 5): (r"growing\s+input\s+(or\s+growing\s+weights\s+)?drives?",
              "MiniMind2's attention input is RMS-normalised by the block's pre-norm: only weight growth "
              "reaches its scores"),
    (25, 6): (r"no\s+score\s+saturates",
              "q/k norm bounds a score by max|g_q| max|g_k| sqrt(D); the gains are learned, and with unit gains "
              "and D = 96 a score still reaches 9.8"),
    (25, 11): (r"about\s+four\s+times\s+fewer\s+accesses",
               "with B_c = 200 and d = 64 the ratio is 3.2 at N = 512 and 4.1 at N = 16,384"),
    (25, 12): (r"catching\s+a\s+mistake\s+on\s+the\s+ladder\s+costs\s+under\s+half",
               "only mistakes of stages 1 to 9 cost under half of stage 10 alone; the slot-0 mistake costs 1.46x"),
}


def texts() -> list[tuple[str, str]]:
    found = [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in sorted((ROOT / "modules").glob("*/*.md"))]
    found += [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in sorted((ROOT / "experiments").glob("*/*.py"))]
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        found.append((path.relative_to(ROOT).as_posix(), "\n".join(cell.source for cell in cells)))
    return found


@pytest.mark.parametrize("correction", sorted(KNOWN_ERRORS), ids=lambda c: f"issue{c[0]}-correction{c[1]}")
def test_a_corrected_error_does_not_come_back(correction):
    pattern, truth = KNOWN_ERRORS[correction]
    back = [f"{name}: {' '.join(m.group().split())!r}" for name, text in texts()
            for m in re.finditer(pattern, text, re.IGNORECASE)]
    assert not back, f"issue {correction[0]}, correction {correction[1]} came back ({truth}):\n" + "\n".join(back)
