"""Numbers written in module 05's prose (guide, notebook text, quiz explanations) are the ones code
computes.

Printed outputs of the notebook are re-checked by nbval, and the experiments check their own claims;
this file covers the numbers typed into Markdown, where nothing else would catch a wrong one.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from experiment_scripts import load_experiment

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "05_masking" / "README.md").read_text()


def flat(text: str) -> str:
    """The text with every run of whitespace as one space, so phrases can span line breaks."""
    return " ".join(text.split())


def notebook_cells():
    return nbformat.read(ROOT / "notebooks" / "05_masking.ipynb", as_version=4).cells


def markdown_of_notebook() -> str:
    return flat("\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "markdown"))


def code_of_notebook() -> str:
    return "\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "code")


def default_of(name: str, flag: str):
    """The default value of a script's command-line flag."""
    import argparse

    parser = argparse.ArgumentParser()
    load_experiment("05", name).add_arguments(parser)
    return parser.get_default(flag.lstrip("-").replace("-", "_"))


def float16_overflow_score() -> float:
    """The score closest to 0 for which finfo.min + score is -inf in float16, over every float16."""
    scores = torch.arange(-(2 ** 15), 0, dtype=torch.int32).to(torch.int16).view(torch.float16)
    scores = scores[torch.isfinite(scores)]
    lowest = torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16)
    return scores[torch.isneginf(lowest + scores)].max().item()


def float16_spacing_at_max() -> float:
    info = torch.finfo(torch.float16)
    below = (torch.tensor(info.max, dtype=torch.float16).view(torch.int16) - 1).view(torch.float16).item()
    return info.max - below


# ------------------------------------------------------------------------------------ guide


def test_guide_float16_numbers():
    text = flat(GUIDE)
    largest = torch.finfo(torch.float16).max
    assert f"(largest number {largest:.0f})" in text
    assert f"in float16 that is a score of only {float16_overflow_score():.0f}" in text
    assert torch.isneginf(torch.tensor(-1e9).to(torch.float16)), "-1e9 becomes -inf in float16"


def test_guide_training_floors():
    exp3 = load_experiment("05", "exp3_training_without_mask")
    targets = exp3.LENGTH - 1
    random_targets = targets - exp3.WORD
    text = flat(GUIDE)
    assert (f"exp3's data ({exp3.LENGTH} tokens, vocabulary {exp3.VOCAB}, {random_targets} of the {targets} "
            f"targets random)") in text
    assert f"`{random_targets}/{targets} ln {exp3.VOCAB} = {exp3.honest_floor():.2f}`" in text
    assert f"`ln {exp3.VOCAB} / {targets} = {exp3.cheating_floor():.3f}`" in text
    assert f"within 0.1 of {exp3.cheating_floor():.3f}" in text and f"below {exp3.honest_floor():.2f}" in text
    assert math.isclose(exp3.honest_floor(), random_targets / targets * math.log(exp3.VOCAB))


def test_guide_experiment_defaults():
    text = flat(GUIDE)
    assert f"over {default_of('exp1_fill_values', '--rows')} random rows" in text
    exp3 = load_experiment("05", "exp3_training_without_mask")
    prompts = default_of("exp4_padding_side", "--prompts")
    first, last = exp3.SECOND, exp3.SECOND + exp3.WORD - 1  # prompts stop inside the word's second copy
    assert f"decodes {prompts} prompts of {first} to {last} tokens" in text


def test_guide_alignment_numbers():
    """'agree to about 1e-7', and 'a single new token sees only key 0', measured."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8, 16, generator=generator, dtype=torch.float64) for _ in range(3))
    truth = mm.scaled_dot_product_attention(q, k, v, is_causal=True)[:, :, -2:]
    q, k, v = q.float(), k.float(), v.float()
    right = [F.scaled_dot_product_attention(q[:, :, -2:], k, v, attn_mask=mm.causal_mask(2, 8)),
             mm.scaled_dot_product_attention(q[:, :, -2:], k, v, is_causal=True),
             mm.fused_attention(q[:, :, -2:], k, v, is_causal=True)]
    errors = [((out.double() - truth).abs().max() / truth.abs().max()).item() for out in right]
    assert max(errors) < 5e-7 and "agree to about 1e-7" in flat(GUIDE)
    weights = F.scaled_dot_product_attention(torch.zeros(1, 1, 1, 8), torch.randn(1, 1, 8, 8),
                                             torch.eye(8)[None, None], is_causal=True)[0, 0, 0]
    assert (weights > 0).nonzero().flatten().tolist() == [0]
    assert "a single new token sees only key 0" in flat(GUIDE)


# --------------------------------------------------------------------------------- notebook


def test_notebook_prose_numbers():
    text = markdown_of_notebook()
    code = code_of_notebook()
    # the fill table's random rows
    assert "over 1000 random rows" in text and "torch.randn(1000, 6)" in code
    # the error message quoted for -1e9 in float16
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half without overflow"):
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
    assert "`value cannot be converted to type c10::Half without overflow`" in text
    # two new tokens after four cached ones: the newest (position 5) sees keys 0 and 1 under is_causal
    q = torch.zeros(1, 1, 2, 6)
    seen = F.scaled_dot_product_attention(q, torch.randn(1, 1, 6, 6), torch.eye(6)[None, None], is_causal=True)
    assert (seen[0, 0, 1] > 0).nonzero().flatten().tolist() == [0, 1]
    assert "torch lets the newest token (position 5) see only keys 0 and 1" in text
    # the training data and the causal model's look-back
    exp3 = load_experiment("05", "exp3_training_without_mask")
    assert (exp3.VOCAB, exp3.WORD, exp3.GAP) == (16, 4, 4) and "VOCAB, WORD, GAP = 16, 4, 4" in code
    assert (f"sequences of {exp3.LENGTH} tokens from a vocabulary of {exp3.VOCAB}, a {exp3.WORD}-token "
            f"\"word\", {exp3.GAP} random tokens") in text
    random_targets, targets = exp3.LENGTH - 1 - exp3.WORD, exp3.LENGTH - 1
    assert f"`ln {exp3.VOCAB}` for {random_targets} of the {targets} targets" in text
    assert f"(look {exp3.SECOND - 1} positions back)" in text  # target t + 1 = token t + 1 - 8: key t - 7
    assert "give them the first 8 tokens (the word and the noise)" in text and exp3.SECOND == 8
    assert "let them **decode** the next 4" in text and exp3.WORD == 4
    # the padded-decoding demo and the experiment it points to
    assert "Two prompts, of 8 and 10 tokens" in text and "held_out[0, :8], held_out[1, :10]" in code
    prompts = default_of("exp4_padding_side", "--prompts")
    assert f"Experiment `exp4_padding_side` runs {prompts} prompts." in text


# ------------------------------------------------------------------------------------- quiz


def quiz_explanations() -> dict[str, str]:
    from labkit.quiz import load_quiz

    quiz = load_quiz(ROOT / "quizzes" / "05_masking.json")
    return {q.id: flat(q.explanation) for q in quiz.questions}


def test_quiz_mistral_arxiv_id_matches_the_guide():
    ids = re.findall(r"arXiv (\d{4}\.\d{4,5})", quiz_explanations()["sliding-reach"])
    assert ids == ["2310.06825"] and "Jiang et al., *Mistral 7B*, arXiv 2310.06825" in GUIDE


def test_minimind_upstream_causal_fix_worked_example():
    """Module 05's worked example (issue 16): upstream MiniMind2's paths fail on a chunk after a
    cache (SDPA top-left: wrong; explicit: a shape error), MiniMind-3's are right at every step."""
    import torch

    from labkit.upstream import minimind2_attention, minimind3_attention

    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=generator) for _ in range(3))
    full = mm.scaled_dot_product_attention(q, k, v, is_causal=True)

    def verdict(path, past, new, flash):
        try:
            out = path(q[:, :, past:past + new], k[:, :, :past + new], v[:, :, :past + new],
                       cached=past > 0, flash=flash)
        except RuntimeError:
            return "error"
        return "right" if torch.allclose(out, full[:, :, past:past + new], atol=1e-5) else "wrong"

    for past, new in ((0, 6), (5, 1), (4, 2)):
        for flash in (True, False):
            assert verdict(minimind3_attention, past, new, flash) == "right"
            expected = "right" if past == 0 or new == 1 else ("wrong" if flash else "error")
            assert verdict(minimind2_attention, past, new, flash) == expected
    guide = " ".join((ROOT / "modules" / "05_masking" / "README.md").read_text().split())
    assert "(top left: wrong outputs, no error)" in guide and "(a shape error after a cache)" in guide
    assert "Both paths agree on a prompt and on single-token steps" in guide
