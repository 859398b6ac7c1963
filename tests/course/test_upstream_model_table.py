"""Every MiniMind configuration the course names has the sizes and the parameter count that upstream's
model table gives that name (issue 35: the course called the 26M model "MiniMind2", which upstream
calls MiniMind2-Small; upstream's MiniMind2 is the 104M model).

The table is upstream's README at two commits (tests/facts/upstream.py, `README_MODEL_TABLE`). The
names come from the code that pairs a name with a config: minimind_ref's presets, the course map,
exp2_savings' `--preset` and exp3_cache_memory's published shapes. The parameters are counted on
minimind_ref's model as upstream's trainers count them (`model.parameters()`: the embedding that
the LM head shares counted once), on the meta device, so no weights are made.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import torch
from experiment_scripts import load_experiment
from facts.upstream import README_MODEL_TABLE, model_table

import minimind_ref as mm
from labkit import course_map

PRESETS = {"MiniMind2-Small": mm.MiniMindConfig(), "MiniMind2": mm.MiniMindConfig.minimind2(),
           "MiniMind-3": mm.MiniMindConfig.minimind3()}
COMMITS = sorted(README_MODEL_TABLE)


def named_configs() -> list[tuple[str, str, mm.MiniMindConfig]]:
    """(where, name, config) for every place the course's code gives a MiniMind config a name."""
    named = [("minimind_ref preset", name, config) for name, config in PRESETS.items()]
    named += [("labkit.course_map", name, config) for name, config in course_map._configs(None)]
    savings = load_experiment("04", "exp2_savings")
    named += [(f"exp2_savings --preset {key}", label, make()) for key, (label, make) in savings.PRESETS.items()]
    return named


def row_for(name: str, commit: str) -> dict[str, str]:
    table = model_table(commit)
    key = re.sub(r"\s*\(.*\)$", "", name).lower()  # "MiniMind2 (104M)" -> "minimind2"
    assert key in table, f"{name!r} is not a model in upstream's table at {commit}: {sorted(table)}"
    return table[key]


COUNTS: dict[str, tuple[int, int]] = {}  # a config's fields -> (upstream's count, every tensor counted)


def upstream_count(config: mm.MiniMindConfig, tied_once: bool = True) -> int:
    key = repr(config.to_dict())
    if key not in COUNTS:
        with torch.device("meta"):  # shapes only
            model = mm.MiniMindForCausalLM(config)
        COUNTS[key] = (sum(p.numel() for p in model.parameters()),
                       sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False)))
    return COUNTS[key][0 if tied_once else 1]


def millions(cell: str) -> int:
    assert re.fullmatch(r"\d+M", cell), cell
    return int(cell[:-1])


def sizes_differ(config: mm.MiniMindConfig, row: dict[str, str]) -> list[str]:
    ours = {"n_layers": config.num_hidden_layers, "d_model": config.hidden_size, "q_heads": config.num_attention_heads,
            "kv_heads": config.num_key_value_heads, "len_vocab": config.vocab_size, "rope_theta": config.rope_theta,
            "max_pos": config.max_position_embeddings}
    return [f"{column} {ours[column]} (upstream {row[column]})" for column in ours
            if column in row and float(row[column]) != ours[column]]


@pytest.mark.parametrize("commit", COMMITS)
@pytest.mark.parametrize("where, name, config", named_configs(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_named_config_has_upstreams_sizes_and_parameter_count(where, name, config, commit):
    table = model_table(commit)
    if re.sub(r"\s*\(.*\)$", "", name).lower() not in table:
        pytest.skip(f"{name} is not in the table at {commit}")  # MiniMind-3 came after 9d898576
    row = row_for(name, commit)
    assert not sizes_differ(config, row), f"{where}: {name} differs from upstream's table at {commit}: " \
        + ", ".join(sizes_differ(config, row))
    count = upstream_count(config)
    assert round(count / 1e6) == millions(row["params"]), (
        f"{where}: {name} has {count:,} parameters, upstream's table {row['params']} at {commit}")


def test_every_named_config_is_in_a_table():
    known = {name for commit in COMMITS for name in model_table(commit)}
    for where, name, _ in named_configs():
        assert re.sub(r"\s*\(.*\)$", "", name).lower() in known, f"{where} names {name!r}, which upstream does not"


def test_exp3s_published_minimind_shapes_are_upstreams():
    published = load_experiment("07", "exp3_cache_memory").PUBLISHED
    minimind = {name: shape for name, shape in published.items() if name.startswith("MiniMind")}
    assert set(minimind) >= {"MiniMind2-Small", "MiniMind2", "MiniMind-3"}, sorted(minimind)
    for name, shape in minimind.items():
        config = PRESETS[name]
        assert shape == dict(layers=config.num_hidden_layers, heads=config.num_attention_heads,
                             kv_heads=config.num_key_value_heads, head_dim=config.head_dim), name


def test_the_two_commits_agree_on_the_minimind2_series():
    old, new = model_table("9d898576"), model_table("d65ef2c0")
    for name in ("minimind2-small", "minimind2-moe", "minimind2"):
        shared = set(old[name]) & set(new[name]) - {"Model Name"}
        assert {c: old[name][c] for c in shared} == {c: new[name][c] for c in shared}, name


def test_upstream_counts_the_shared_embedding_once():
    """The rule the test above relies on decides something: counted twice (as if untied), no named
    config would match its row."""
    for name, config in PRESETS.items():
        row = row_for(name, "d65ef2c0")
        assert config.tie_word_embeddings
        assert round(upstream_count(config, tied_once=False) / 1e6) != millions(row["params"]), name


def test_the_26m_model_is_not_called_minimind2():
    """The misnaming of issue 35, in the table's own terms: MiniMind2 is 16 layers of 768."""
    small, large = model_table("9d898576")["minimind2-small"], model_table("9d898576")["minimind2"]
    assert sizes_differ(mm.MiniMindConfig(), large) and not sizes_differ(mm.MiniMindConfig(), small)


# The course's text, where a name and a size meet: every guide, README, docs page, the glossary,
# every quiz, every translation catalog, notebook (Markdown and code), experiment and library file.
BARE_MINIMIND2 = re.compile(r"MiniMind2(?![-\w])(?!'?s?\s+series|\s*系列|-series)")  # not -Small, -MoE, the series
SMALL_ONLY = re.compile(r"(?<![\d,.])(26M|512|8,?192|25,829,888|1408)(?!\d|,\d)"
                        r"|64[- ]wide|head_dim 64|D = 64|64 维|宽 512")


def course_texts() -> list[tuple[str, str]]:
    root = Path(__file__).resolve().parents[2]
    pages = [*root.glob("modules/*/*.md"), *root.glob("README*.md"), *root.glob("docs/*.md"),
             root / "docs" / "glossary.json", *root.glob("quizzes/*.json"), *root.glob("translations/zh-CN/**/*.md"),
             *root.glob("experiments/*/*.py"), *root.glob("labkit/**/*.py"), *root.glob("minimind_ref/**/*.py")]
    found = [(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(pages)]
    for path in sorted(root.glob("notebooks/*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        found.append((path.relative_to(root).as_posix(), "\n\n".join(cell.source for cell in cells)))
    return found


def misnamed(text: str) -> list[str]:
    """Sentences that call a model MiniMind2 and give it a size only MiniMind2-Small has."""
    return [" ".join(sentence.split())[:160] for sentence in re.split(r"(?<=[.;。；])\s|\n\s*\n", text)
            if BARE_MINIMIND2.search(sentence) and SMALL_ONLY.search(sentence) and "MiniMind2-Small" not in sentence]


def test_no_text_gives_minimind2_the_small_models_sizes():
    found = [f"{name}: {sentence}" for name, text in course_texts() for sentence in misnamed(text)]
    assert not found, ("MiniMind2 is upstream's 104M model (16 layers of 768, heads of 96); the 26M model with "
                       "hidden 512 and heads of 64 is MiniMind2-Small:\n" + "\n".join(found))


def test_the_misnaming_check_finds_the_old_wording():
    assert misnamed("Defaults are MiniMind2's: hidden size 512, 8 layers.")
    assert misnamed("MiniMind2 的头宽 64，所以 D = 64。")
    assert not misnamed("MiniMind2-Small is 512 wide; MiniMind2 is 768 wide.")
    assert not misnamed("The MiniMind2 series' code (commit 9d898576) builds 512-wide models too.")
