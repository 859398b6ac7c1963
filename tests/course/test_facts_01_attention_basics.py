"""Numbers written in module 01's prose (guide and notebook text) are the ones code computes.

Printed outputs of notebooks are re-checked by nbval; this file covers the numbers typed into
Markdown, where nothing else would catch a wrong one.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import torch

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]


def markdown_of(notebook: str) -> str:
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")


def code_of(notebook: str) -> str:
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "code")


def overflow_threshold(dtype: torch.dtype) -> float:
    """The logit past which exp overflows: ln of the dtype's largest finite number."""
    return math.log(torch.finfo(dtype).max)


def test_module_01_guide_numbers():
    guide = (ROOT / "modules" / "01_attention_basics" / "README.md").read_text()
    f16, bf16, f32, f64 = (overflow_threshold(d) for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    assert f"about {f16:.2f} in\nfloat16, {f32:.2f} in bfloat16 and float32, {f64:.2f} in float64" in guide
    assert round(bf16, 2) == round(f32, 2), "the guide gives bfloat16 and float32 one threshold"
    config = mm.MiniMindConfig()
    head = config.hidden_size // config.num_attention_heads
    assert head == config.head_dim
    assert (f"`{config.hidden_size} / {config.num_attention_heads} = {head}` wide, so it multiplies scores by "
            f"`1/{math.isqrt(head)} = {1 / math.sqrt(head):g}`") in guide.replace("\n", " ")


def test_module_01_notebook_prose_numbers():
    text = markdown_of("01_attention_basics.ipynb").replace("\n", " ")
    f32_max = torch.finfo(torch.float32).max
    f16, f32 = overflow_threshold(torch.float16), overflow_threshold(torch.float32)
    assert f"past `ln({f32_max:.1e}) ≈ {f32:.1f}`".replace("e+", "e") in text
    assert f"float16 overflows past a score of about {round(f16)}, float32 past about {f32:.1f}" in text
    assert f"overflows at a score of only about {round(f16)}" in text
    head = mm.MiniMindConfig().head_dim
    assert f"heads are {head} wide, so it multiplies scores by `1/sqrt({head}) = {1 / math.sqrt(head):g}`" in text


def test_module_01_quiz_explanation_numbers():
    from labkit.quiz import load_quiz

    quiz = load_quiz(ROOT / "quizzes" / "01_attention_basics.json")
    overflow = next(q for q in quiz.questions if q.id == "float16-overflow")
    f16, f32, f64 = (overflow_threshold(d) for d in (torch.float16, torch.float32, torch.float64))
    assert f"ln({torch.finfo(torch.float16).max:.0f}) = {f16:.2f}" in overflow.explanation
    assert f"float32 lasts until about {f32:.1f}, float64 until about {f64:.1f}" in overflow.explanation
    assert f"as small as {math.ceil(f16)} is already inf" in overflow.explanation


def test_module_01_trained_heads_prose():
    """Section 8's preview of a trained model names heads and what they do: the tiny MiniMind shows
    exactly that on the notebook's own strings (each written twice)."""
    from labkit import tiny_heads as th
    from labkit.tiny_model import fixed_threads, load_tiny_model

    code = code_of("01_attention_basics.ipynb")
    span = re.search(r'^span = "([^"]+)"$', code, re.M).group(1)
    english = re.search(r'^for text in \(span, "([^"]+)"\):$', code, re.M).group(1)
    text = " ".join(markdown_of("01_attention_basics.ipynb").split())  # list items wrap with an indent
    model, tokenizer = load_tiny_model()
    words = {2: "two", 4: "four"}
    assert (f"{words[model.config.num_hidden_layers]} layers of {words[model.config.num_attention_heads]} "
            f"heads") in text

    def run(line):
        ids = torch.tensor([tokenizer.encode(line + line)])  # BOS, the line, the line again
        with torch.no_grad(), fixed_threads():
            out = model(ids, output_attentions=True)
        n = len(line)
        weights = torch.stack(out.attentions)[:, 0]  # [L, H, T, T]
        right = (out.logits[0, n + 1:-1].argmax(-1) == ids[0, n + 2:]).float().mean().item()
        return ids[0], weights, right

    ids, weights, right = run(span)
    n, T = len(span), len(ids)
    even = torch.tril(torch.ones(T, T))
    even = even / even.sum(-1, keepdim=True)
    heads_above = lambda scores: [tuple(h) for h in (scores > 0.5).nonzero().tolist()]  # noqa: E731

    # "layer 0, head 1 is bright just below the diagonal: each character looks at the one before it"
    previous = th.previous_token_scores(weights)
    assert heads_above(previous) == [(0, 1)]
    assert "**layer 0, head 1** is bright just below the diagonal: each character looks at the one before it" in text
    queries = torch.arange(1, T)
    assert torch.equal(weights[0, 1, 1:].argmax(-1), queries - 1)
    assert previous[0, 1] > 3 * th.previous_token_scores(even)

    # "layer 1, heads 0, 1 and 3: in the second copy, each query looks ... at the character that came
    # after its own character there (the second `a` looks at the first `1`)"
    induction = th.induction_scores(weights, n)
    assert heads_above(induction) == [(1, 0), (1, 1), (1, 3)]
    assert "**layer 1, heads 0, 1 and 3**: in the second copy" in text
    second = torch.arange(n + 1, T)
    for head in (0, 1, 3):
        assert torch.equal(weights[1, head, n + 1:].argmax(-1), second - n + 1)
        assert induction[1, head] > 3 * th.induction_scores(even, n)
    assert tokenizer.decode(ids[[n + 1, 2]]) == "a1" and "(the second `a` looks at the first `1`)" in text
    assert right == 1.0, "the model continues the repeated string without a mistake"

    # "layer 1, head 2 puts most of its weight on <s>, for every query"
    assert "**layer 1, head 2** puts most of its weight on `<s>`, for every query" in text
    assert weights[1, 2, :, 0].min() > 0.5
    first = th.first_token_scores(weights)
    assert first.argmax().item() == 1 * first.shape[1] + 2
    assert first[1, 2] > 3 * th.first_token_scores(even)

    # "On the English line the same heads put almost no weight on the earlier copy, and the model
    # continues it far worse."
    _, english_weights, english_right = run(english)
    assert english in "the cat sat on the mat " and "Try this notebook's sentence, written twice" in text
    assert th.induction_scores(english_weights, len(english))[1].max() < 0.05
    assert english_right < 0.5 * right
    assert "the same heads put almost no weight on the earlier copy, and the model continues it far worse" in text
