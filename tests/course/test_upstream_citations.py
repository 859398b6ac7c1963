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
from facts.upstream import MODEL_FILE_HISTORY, last_before, short

ROOT = Path(__file__).resolve().parents[2]
# commit (as the guides abbreviate it) -> what was read there
UPSTREAM_COMMITS = {
    "9d898576": "2026-01-01, defaults of MiniMind2-Small's sizes (hidden 512, 2 KV heads), unchanged until minimind-3",
    "1279a616": "2026-01-13, the causal mask aligned to the last T keys; SDPA only without a cache",
    "c090b69c": "2026-01-15, the loss computed in forward; the last change before minimind-3",
    "101d7df2": "2026-03-24, '[update] minimind-3': hidden 768, 4 KV heads of 96, q/k RMSNorm",
    "dddedc68": "2026-05-07, the newest change to the file: MiniMind-3's defaults unchanged",
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


def test_the_commit_table_is_the_model_files_history():
    history = [short(commit) for commit, _, _ in MODEL_FILE_HISTORY]
    assert set(UPSTREAM_COMMITS) <= set(history), set(UPSTREAM_COMMITS) - set(history)


LAST_BEFORE = re.compile(r"\b([0-9a-f]{8})\b[^.]{0,80}?\bthe last\b[^.]{0,40}?\bbefore\b[^.]{0,40}?"
                         r"(\b[0-9a-f]{8}\b|minimind-3)")


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.parent.name)
def test_the_last_commit_before_a_release_is_the_last_in_the_history(guide):
    """'commit X (..., the last before the minimind-3 release)' holds only if no commit changed the
    model file between X and that release (issue 25, correction 3)."""
    text = " ".join(re.sub(r"<!--\s*/?fact\b[^>]*-->", "", guide.read_text()).split())
    for cited, release in LAST_BEFORE.findall(text):
        release = "101d7df2" if release == "minimind-3" else release
        assert cited == last_before(release), (
            f"{guide.parent.name}: {cited} is called the last change before {release}, but the model file "
            f"changed after it, the last time at {last_before(release)} (tests/facts/upstream.py)")
