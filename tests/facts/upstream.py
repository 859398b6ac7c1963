"""Upstream MiniMind's model file, as read in a clone of github jingyaogong/minimind.

`git log --format='%H %ad %s' --date=short 9d898576^..dddedc68 -- model/model_minimind.py`, newest
last. Guides cite these commits by their first eight hex digits; tests/course/test_upstream_citations.py
and the facts that name commits read this table, so a claim such as "the last change before the
minimind-3 release" is computed from the history, not remembered.
"""

from __future__ import annotations

MODEL_FILE_HISTORY = [  # (commit, date, subject): every commit that changed model/model_minimind.py
    ("9d898576ac7e640b32cff2859d534668c292d339", "2026-01-01", "[update] aux loss"),
    ("1279a6168171c859d70d46727975eb541de4fa55", "2026-01-13", "[update] prompt prefill"),
    ("c090b69c4d41a2288301b600c9ca040127db0134", "2026-01-15", "[update] align loss"),
    ("101d7df2da053f55b915128a733ba8b34ebe1ae5", "2026-03-24", "[update] minimind-3"),
    ("2ab6455d9dbf4a753bd2091f7868fb47069ece0a", "2026-04-02", "[update] open causal"),
    ("5704766352e5a835c2ea90e0f9832186ecbc5711", "2026-04-19", "[update] tie embedding"),
    ("1718e9a44dad4f17ac12adc1afddfa31d9c61bb5", "2026-04-19", "[fix] transformers-5.x"),
    ("dddedc688121028dd8adab55b95d139ecd87205c", "2026-05-07", "[fix] repetition_penalty"),
]
MINIMIND3_RELEASE = "101d7df2"


def short(commit: str) -> str:
    return commit[:8]


def changes_between(older: str, newer: str) -> list[str]:
    """The commits (short) that changed the model file after `older` and before `newer`."""
    commits = [short(c) for c, _, _ in MODEL_FILE_HISTORY]
    return commits[commits.index(older) + 1:commits.index(newer)]


def last_before(commit: str) -> str:
    commits = [short(c) for c, _, _ in MODEL_FILE_HISTORY]
    return commits[commits.index(commit) - 1]


# Upstream's model table (README.md, "参考模型参数版本见下表"), the rows of the models the course
# names, copied from a clone (`git show <commit>:README.md`). At 9d898576 (2026-01-01) the table
# lists the MiniMind2 series; from the minimind-3 release on it lists minimind-3 first and keeps
# the MiniMind2 series, lower-cased, as earlier versions ("历史版本"), with the same sizes, as at
# d65ef2c0 (2026-08-21, the newest commit). `params` is what upstream's trainers print:
# `sum(p.numel() for p in model.parameters())` (trainer/trainer_utils.py, `get_model_params`),
# which counts the embedding that the LM head shares once, rounded to millions.
README_MODEL_TABLE = {
    "9d898576": """
| Model Name        | params | len_vocab | rope_theta | n_layers | d_model | kv_heads | q_heads | share+route |
| MiniMind2-Small   | 26M    | 6400      | 1e6        | 8        | 512     | 2        | 8       | -           |
| MiniMind2-MoE     | 145M   | 6400      | 1e6        | 8        | 640     | 2        | 8       | 1+4         |
| MiniMind2         | 104M   | 6400      | 1e6        | 16       | 768     | 2        | 8       | -           |
""",
    "d65ef2c0": """
| Model Name | params | len_vocab | max_pos | rope_theta | n_layers | d_model | kv_heads | q_heads | note |
| minimind-3 | 64M | 6400 | 32768 | 1e6 | 8 | 768 | 4 | 8 | Dense |
| minimind-3-moe | 198M-A64M | 6400 | 32768 | 1e6 | 8 | 768 | 4 | 8 | 4 experts / top-1 |
| minimind2-small | 26M | 6400 | 32768 | 1e6 | 8 | 512 | 2 | 8 | 历史版本 |
| minimind2-moe | 145M | 6400 | 32768 | 1e6 | 8 | 640 | 2 | 8 | 历史版本 |
| minimind2 | 104M | 6400 | 32768 | 1e6 | 16 | 768 | 2 | 8 | 历史版本 |
""",
}


def model_table(commit: str) -> dict[str, dict[str, str]]:
    """README_MODEL_TABLE[commit] as {model name, lower-cased: {column: cell}}."""
    header, *rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
                     for line in README_MODEL_TABLE[commit].strip().splitlines()]
    return {row[0].lower(): dict(zip(header, row, strict=True)) for row in rows}
