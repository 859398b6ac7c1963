"""Module 05's prose and the code agree where no marker can say it.

The numbers and behaviours typed into the guide and the notebook's Markdown are bound facts
(tests/facts/05_masking.py, checked by tests/course/test_facts.py); printed outputs are re-checked
by nbval. What stays here: the notebook's code restates exp3's data, and the quiz cites the paper
the guide cites.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from experiment_scripts import load_experiment

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "modules" / "05_masking" / "README.md").read_text()


def code_of_notebook() -> str:
    cells = nbformat.read(ROOT / "notebooks" / "05_masking.ipynb", as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "code")


def test_notebook_data_constants_are_exp3s():
    exp3 = load_experiment("05", "exp3_training_without_mask")
    found = re.search(r"VOCAB, WORD, GAP = (\d+), (\d+), (\d+)", code_of_notebook())
    assert found, "the notebook no longer defines VOCAB, WORD, GAP in one line"
    assert tuple(map(int, found.groups())) == (exp3.VOCAB, exp3.WORD, exp3.GAP)


def test_quiz_mistral_arxiv_id_matches_the_guide():
    from labkit.quiz import load_quiz

    quiz = {q.id: q.explanation for q in load_quiz(ROOT / "quizzes" / "05_masking.json").questions}
    ids = re.findall(r"arXiv (\d{4}\.\d{4,5})", quiz["sliding-reach"])
    assert ids == ["2310.06825"]
    assert re.search(r"\*Mistral 7B\*, arXiv 2310\.06825", GUIDE), "the guide no longer cites Mistral 7B's arXiv id"
