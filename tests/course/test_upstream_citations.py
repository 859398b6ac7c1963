"""Every upstream MiniMind fact in a guide names the commit it was read at (issue 16, correction 8).

Upstream's `model/model_minimind.py` changed from MiniMind2 to MiniMind-3 in 2026, so "MiniMind's
defaults" without a commit no longer says which. A paragraph of a guide that points at upstream
(github jingyaogong/minimind, `model_minimind.py`, "upstream") must name one of the commits below,
each read in a clone of the repository (`git show <commit>:model/model_minimind.py`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# commit (as the guides abbreviate it) -> what was read there
UPSTREAM_COMMITS = {
    "9d898576": "2026-01-01, MiniMind2's defaults (hidden 512, 2 KV heads), the last before minimind-3",
    "1279a616": "2026-01-13, the causal mask aligned to the last T keys; SDPA only without a cache",
    "101d7df2": "2026-03-24, '[update] minimind-3': hidden 768, 4 KV heads of 96, q/k RMSNorm",
    "dddedc68": "2026-05-07, the newest change to the file: MiniMind-3's defaults unchanged",
    "d65ef2c0": "2026-08-21, the repository's newest commit: model_minimind.py as at dddedc68",
}
POINTS_UPSTREAM = re.compile(r"jingyaogong|model_minimind\.py|\bupstream\b", re.IGNORECASE)
GUIDES = sorted((ROOT / "modules").glob("*/README.md"))


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.parent.name)
def test_upstream_facts_name_their_commit(guide):
    for paragraph in paragraphs(guide.read_text()):
        if POINTS_UPSTREAM.search(paragraph):
            cited = set(re.findall(r"\b[0-9a-f]{8}\b", paragraph)) & set(UPSTREAM_COMMITS)
            assert cited, f"{guide.parent.name}: a paragraph cites upstream without a commit:\n{paragraph[:300]}"


def test_the_guides_cite_commits_that_are_listed():
    text = "\n".join(g.read_text() for g in GUIDES)
    for commit in ("9d898576", "101d7df2", "dddedc68"):
        assert commit in text, commit
