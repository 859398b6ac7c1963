"""What the papers say, and where: a guide paragraph that makes one of these claims cites its source.

Numbers and findings from papers cannot be computed, so they are cited (CONTRIBUTING.md, "Bound
facts"). Each rule below was read in the paper itself; it names the claim (a pattern that finds a
paragraph making it), the citation that paragraph must carry, and what it must not say, so that
crediting the right idea to the wrong paper or section fails here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDES = sorted((ROOT / "modules").glob("*/*.md"))


@dataclass(frozen=True)
class Claim:
    name: str
    makes: str  # a paragraph matching this makes the claim
    cites: str | None = None  # ... and must match this
    never: str | None = None  # ... and must not match this
    read: str = ""  # what the source says, where


CLAIMS = [
    Claim("causal tile skipping, credited to a FlashAttention paper",
          makes=r"(?s)(skip\w*.{0,80}\btiles?\b|\btiles?\b.{0,80}skip\w*).*(2205\.14135|2307\.08691)"
                r"|(2205\.14135|2307\.08691).*(skip\w*.{0,80}\btiles?\b|\btiles?\b.{0,80}skip\w*)",
          cites=r"(?s)2307\.08691.*section 3\.1\.1",
          read="arXiv 2307.08691, section 3.1.1, 'Causal masking': as FlashAttention and FlashAttention-2 both "
               "operate by blocks, blocks whose column indices all exceed the row indices are skipped; 1.7-1.8x"),
    Claim("the 1.7-1.8x causal speed-up", makes=r"1\.7-1\.8x", cites=r"(?s)2307\.08691.*section 3\.1\.1",
          read="arXiv 2307.08691, section 3.1.1"),
    Claim("what FlashAttention-2 changed does not include tile skipping, which both versions do",
          makes=r"What FlashAttention-2 changed", never=r"skip",
          read="arXiv 2307.08691, section 3.1.1 applies causal skipping to both versions"),
    Claim("the GQA paper's speed and quality", makes=r"0\.28 s per sample", cites=r"Table 1",
          read="arXiv 2305.13245, Table 1: MHA-XXL 1.51 s, GQA-8-XXL 0.28 s, MQA-XXL 0.24 s per sample; "
               "47.2 / 47.1 / 46.6 average"),
    Claim("the A100's memories", makes=r"192 KB of SRAM", cites=r"2205\.14135, section 2\.1",
          read="arXiv 2205.14135, section 2.1: 40-80 GB of HBM at 1.5-2.0 TB/s, 192 KB of SRAM per SM"),
    Claim("the A100's throughput", makes=r"19\.5 TFLOP/s", cites=r"2307\.08691, section 3\.1\b",
          read="arXiv 2307.08691, section 3.1: 312 TFLOP/s fp16/bf16 matmul, 19.5 TFLOP/s non-matmul fp32"),
    Claim("GPT-2 medium's measured traffic and runtime", makes=r"40\.3 GB", cites=r"2205\.14135, Fig\. 2",
          read="arXiv 2205.14135, Fig. 2 (left): 66.6/75.2 GFLOPs, 40.3/4.4 GB HBM R/W, 41.7/7.3 ms"),
    Claim("dropout's mask regenerated from the generator's state", makes=r"generator's state",
          cites=r"2205\.14135, Appendix B, Algorithm 2", read="arXiv 2205.14135, Appendix B, Algorithm 2"),
    Claim("Rabe and Staats' memory claims", makes=r"2112\.05682", cites=r"`O\(sqrt n\)`", never=r"linear memory",
          read="arXiv 2112.05682, abstract: O(1) memory for one query, O(log n) for self-attention, "
               "O(sqrt n) in practice"),
    Claim("FlashAttention-2's CUDA lse of an empty row", makes=r"lse = \+inf",
          cites=r"softmax\.h`, `normalize_softmax_lse`, at commit 765fbd92",
          read="github Dao-AILab/flash-attention, csrc/flash_attn/src/softmax.h, normalize_softmax_lse, 765fbd92"),
]


def english_citations(text: str) -> str:
    """A Chinese guide's citations as the English writes them (第 3.1 节 -> section 3.1, 图 2 -> Fig. 2,
    full-width punctuation -> ASCII), so that one rule checks a claim in both editions."""
    for chinese, english in (("，", ", "), ("、", ", "), ("（", "("), ("）", ")"), ("：", ": "), ("；", "; ")):
        text = text.replace(chinese, english)
    text = re.sub(r"第\s*([\d.]+)\s*节", r"section \1", text)
    text = re.sub(r"图\s*(\d+)", r"Fig. \1", text)
    return re.sub(r"(?:(?<=, )|位于|在|于)\s*commit", "at commit", text)


def paragraphs(text: str) -> list[str]:
    """Blank-line paragraphs, with each list item a paragraph of its own; fact markers removed."""
    text = english_citations(re.sub(r"<!--\s*/?fact\b[^>]*-->", "", text))
    return [p for block in re.split(r"\n\s*\n", text) for p in re.split(r"\n(?=- )", block) if p.strip()]


def test_every_claim_is_made_somewhere():
    text = "\n\n".join(guide.read_text() for guide in GUIDES)
    missing = [c.name for c in CLAIMS if not any(re.search(c.makes, p) for p in paragraphs(text))]
    assert not missing, f"no guide makes these claims any more; delete their rules: {missing}"


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.parent.name)
def test_claims_cite_what_the_paper_says_where(guide):
    wrong = []
    for paragraph in paragraphs(guide.read_text()):
        for claim in CLAIMS:
            if not re.search(claim.makes, paragraph):
                continue
            if claim.cites and not re.search(claim.cites, paragraph):
                wrong.append(f"{claim.name}: cite {claim.cites!r} ({claim.read})")
            if claim.never and re.search(claim.never, paragraph):
                wrong.append(f"{claim.name}: must not say {claim.never!r} ({claim.read})")
            if wrong and wrong[-1].startswith(claim.name):
                wrong[-1] += f"\n    in: {' '.join(paragraph.split())[:300]}"
    assert not wrong, f"{guide.relative_to(ROOT)}:\n" + "\n".join(wrong)
