"""Module 02's quiz explanations state the numbers code computes.

The guide's and the notebook's numbers are bound facts (tests/facts/02_qkv.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat
from experiment_scripts import load_experiment

import minimind_ref as mm

ROOT = Path(__file__).resolve().parents[2]
# The experiment scripts' own constants.
EXP2 = load_experiment("02", "exp2_kv_retrieval")
EXP3 = load_experiment("02", "exp3_tied_cannot_look_away")


def flat(text: str) -> str:
    return " ".join(text.split())


def notebook_cells():
    return nbformat.read(ROOT / "notebooks" / "02_qkv.ipynb", as_version=4).cells


def markdown_of_notebook() -> str:
    return flat("\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "markdown"))


def code_of_notebook() -> str:
    return "\n".join(cell.source for cell in notebook_cells() if cell.cell_type == "code")


def minimind_sizes():
    config = mm.MiniMindConfig()
    layer = mm.Attention(config)
    sizes = {name: p.numel() for name, p in layer.named_parameters()}
    return config, sizes


def default_of(script, flag: str):
    """The default of one of an experiment script's own flags, read from its parser."""
    parser = argparse.ArgumentParser()
    script.add_arguments(parser)
    return parser.parse_args([]).__dict__[flag]
