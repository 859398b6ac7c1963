"""Errors that audits found in the course's text, each kept from coming back.

The numbers and behaviours behind these corrections are bound facts (tests/facts/) or checked
citations; a fact only protects the sentence that carries its marker, so an old sentence pasted
back elsewhere (a summary, a docstring, a slide) would slip past it. Each pattern below is the
wrong claim itself, as the audit found it, matched in every guide, README, docs page, the glossary,
every quiz, every translation catalog, notebook (Markdown and code) and experiment script. Keep a
pattern narrow: it names a false statement, not a wording.
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
    # Issue 35: each false claim in English and as the Chinese edition wrote it (glossary glosses,
    # catalogs, hand-translated guides). Where a number or behaviour is at stake a fact binds it too.
    (35, 1): (r"after\s+NTK-aware\s+base\s+scaling|在\s*NTK-aware\s*的基数缩放之后",
              "NTK-by-parts changes no base: fast pairs keep their frequency, slow ones are divided by the factor "
              "(fact ntk_by_parts_keeps_the_base)"),
    (35, 2): (r"plus\s+an\s+attention\s+temperature:\s+MiniMind's\s+long-context\s+switch"
              r"|外加一个注意力温度：MiniMind\s*的长上下文开关",
              "MiniMind's YaRN sets attention_factor to 1: no temperature (fact minimind_yarn_without_temperature)"),
    (35, 3): (r"score\s+between\s+far\s+positions\s+tends\s+to\s+shrink|远距离位置之间的分数倾向于变小",
              "RoFormer's decay is of an upper bound; the score need not shrink (fact long_range_decay_is_the_bounds)"),
    (35, 4): (r"would\s+be\s+NaN;\s+MiniMind\s+gives\s+zeros|会是\s*NaN；MiniMind\s*给出零",
              "minimind_ref gives zeros; upstream gives a uniform row in float32 and NaN in float16 "
              "(fact fully_masked_row_outputs)"),
    (35, 5): (r"cheapest\s+first:\s+one\s+head,\s+masks|由便宜到贵：一个头、掩码",
              "the ladder runs one head, all heads, grouped KV, RoPE, causal, padded, cache, several tokens, "
              "q/k norm, whole model, backward; the backward is not cheapest"),
    (35, 6): (r"Switching\s+a\s+head\s+off\s+\(zeroing\s+its\s+output\)|关掉一个头（把它的输出置零）",
              "module 09 teaches mean ablation; zeroing is one kind of ablation"),
    (35, 7): (r"`?view`?\s+needs\s+a\s+contiguous\s+layout|not\s+\*\*contiguous\*\*,\s+and\s+`view`\s+refuses\s+it"
              r"|`view`\s*要求内存布局连续|\*\*连续\*\*（contiguous），`view`\s*会拒绝它",
              "view needs strides that reach the new shape; a transposed tensor can still be split "
              "(fact view_needs_compatible_strides)"),
    (35, 9): (r"156\s*(?:to|到|至|-|–)\s*208(?![\s\S]{0,600}80\s*GB)",
              "156-208 are the paper's rounded A100 rates (40 GB and 80 GB parts); the 80 GB SXM datasheet gives 153"),
    (35, 10): (r"say\s+in\s+a\s+footnote\s+that\s+dense\s+is\s+half|并在脚注中说明稠密是其一半",
               "the A100 datasheet prints the dense BF16 figure itself; the H100 and H200 sheets print sparse only"),
    (35, 11): (r"dot\s+products\s+nearly\s+0|点积几乎为\s*0",
               "an untrained MiniMind2-Small's rows differ from even by up to about 0.2 (quiz 09's check)"),
    (35, 12): (r"costs\s+about\s+`n\^2\s*/\s*2`\s+cached\s+steps\s+without\s+a\s+cache"
               r"|so\s+`n`\s+tokens\s+cost\s+about\s+`n\^2\s*/\s*2`\.|没有缓存时约花\s*`n\^2\s*/\s*2`\s*个带缓存步"
               r"|所以\s*`n`\s*个\s*token\s*约花\s*`n\^2\s*/\s*2`。",
               "without a cache the n^3 attention term overtakes the n^2 rest past 4,128 tokens "
               "(fact no_cache_cubic_crossover)"),
    (35, 13): (r"a\s+few\s+percent\s+of\s+the\s+traffic|只占流量的百分之几|占流量的百分之几",
               "fusing saves 11% of a decode step's traffic for MiniMind2-Small, 4% for MiniMind-3 "
               "(fact decode_fusing_saves_percent)"),
    (35, 14): (r"(keeps|keeps\s+also)\s+(its|FlashAttention's)\s+way\s+of\s+(splitting|dividing)\s+the\s+work"
               r"|保留了自己的分工方式|沿用了\s*FlashAttention\s*划分工作的方式",
               "flash-attn splits the keys itself since v2.2.0 and folds GQA groups since v2.2.4 "
               "(fact flash_attn_decode_grid_h100)"),
}


def texts() -> list[tuple[str, str]]:
    pages = [*sorted((ROOT / "modules").glob("*/*.md")), *sorted(ROOT.glob("README*.md")),
             *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs" / "glossary.json",
             *sorted((ROOT / "quizzes").glob("*.json")), *sorted((ROOT / "translations").rglob("*.md")),
             *sorted((ROOT / "experiments").glob("*/*.py"))]
    found = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in pages]
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
