"""Change the code behind a module's facts, and the facts that describe it fail.

A fact that returns a constant, a formula in place of a measurement, or a map rebuilt beside the
notebook's own passes whatever the code does; these tests show that the course's facts do not. Each
sabotage is a change a maintainer could make by mistake (a tolerance, a size, a behaviour), applied
for one test only: monkeypatched into the module, the experiment script or the notebook cell that
the facts read (tests/facts/sources.py reads each once, and `forget()` clears every measurement
before and after, so the facts recompute from the changed code). The sentences the listed facts
bind are then false, and comparing each fact with its markers must say so, naming the fact.

Only the listed facts are recomputed, so the suite stays cheap. Every module has at least one
sabotage, aimed at its central numbers; the three that the audit of issue 35 made (exp1's tolerance,
notebook 09's planted maps, labkit's naive cache writing in place) are among them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from facts import FACTS, forget, mismatch, sources
from test_facts import markup

import minimind_ref as mm


def verdict(name: str) -> str | None:
    """Why fact `name` no longer states what its markers say (None: it still does)."""
    rule = FACTS[name]
    try:
        computed = rule.compute()
    except AssertionError as error:  # a premise of the sentence failed
        return f"its premise failed: {str(error).splitlines()[0] if str(error) else 'AssertionError'}"
    except Exception as error:  # noqa: BLE001 - the changed code no longer runs as the sentence says
        return f"it raised {type(error).__name__}: {error}"
    for marker in markup()[0]:
        if marker.name == name and (why := mismatch(rule, computed, marker.written)):
            return f"{marker.where}: written {marker.written!r}, {why}"
    return None


# ---------------------------------------------------------------------------- how to sabotage

def edit_cell(monkeypatch, number: str, cell_id: str, *changes: tuple[str, str]) -> None:
    """Notebook `number`'s cell `cell_id` with each (old, new) of `changes` made, for the facts that
    read it."""
    cell = next(c for c in sources.notebook(number).cells if c.get("id") == cell_id)
    source = cell.source
    for old, new in changes:
        assert old in source, f"notebook {number}, cell {cell_id} no longer holds {old!r}: update the sabotage"
        source = source.replace(old, new)
    monkeypatch.setitem(cell, "source", source)


def set_default(monkeypatch, module: str, script: str, **defaults) -> None:
    """An experiment script whose flags default to `defaults`."""
    loaded = sources.experiment(module, script)
    original = loaded.add_arguments

    def add_arguments(parser):
        original(parser)
        parser.set_defaults(**defaults)

    monkeypatch.setattr(loaded, "add_arguments", add_arguments)


def in_place_naive_cache(monkeypatch) -> None:
    """labkit's NaiveConcatCache made to write each new token in place, into storage it allocates
    once, instead of copying the whole cache with torch.cat (the audit's third sabotage)."""
    from labkit.memory import NaiveConcatCache

    def update(self, layer_idx, k, v):
        if not hasattr(self, "storage"):
            self.storage = {}
        if layer_idx not in self.storage:
            shape = (*k.shape[:2], 4096, k.shape[-1])
            self.storage[layer_idx] = (k.new_empty(shape), v.new_empty(shape))
        keys, values = self.storage[layer_idx]
        length = self.keys[layer_idx].shape[2]
        keys[:, :, length:length + k.shape[2]] = k
        values[:, :, length:length + v.shape[2]] = v
        self.keys[layer_idx] = keys[:, :, :length + k.shape[2]]
        self.values[layer_idx] = values[:, :, :length + v.shape[2]]
        return self.keys[layer_idx], self.values[layer_idx]

    monkeypatch.setattr(NaiveConcatCache, "update", update)


def planted_maps_lengthened(monkeypatch) -> None:
    """Notebook 09's planted maps on a span of 5, not 4 (the audit's second sabotage)."""
    four = 'n = 4\ntoy_labels = ["<s>", "a", "b", "c", "d", "a", "b", "c", "d"]'
    five = 'n = 5\ntoy_labels = ["<s>", "a", "b", "c", "d", "e", "a", "b", "c", "d", "e"]'
    edit_cell(monkeypatch, "09", "95680131", (four, five))


def cache_in_float64(monkeypatch) -> None:
    """minimind_ref's KVCache storing keys and values in float64, whatever the model's dtype."""
    update = mm.KVCache.update
    monkeypatch.setattr(mm.KVCache, "update", lambda self, layer, k, v: update(self, layer, k.double(), v.double()))


def untrained_tiny_model(monkeypatch) -> None:
    """The tiny model's attention projections (q and k) put back to random: its heads forget their jobs."""
    from labkit import tiny_model

    load = tiny_model.load_tiny_model

    def load_untrained(*args, **kwargs):
        model, tokenizer = load(*args, **kwargs)
        model = copy.deepcopy(model)
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for layer in model.model.layers:
                for projection in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                    projection.weight.copy_(0.02 * torch.randn(projection.weight.shape, generator=generator))
        return model, tokenizer

    monkeypatch.setattr(tiny_model, "load_tiny_model", load_untrained)


def scale_by_one_over_d(monkeypatch) -> None:
    """minimind_ref's explicit attention scaling scores by 1/D instead of 1/sqrt(D)."""
    attention = mm.scaled_dot_product_attention

    def scaled(q, k, v, *args, scale=None, **kwargs):
        return attention(q, k, v, *args, scale=1 / q.shape[-1] if scale is None else scale, **kwargs)

    monkeypatch.setattr(mm, "scaled_dot_product_attention", scaled)


def repeat_kv_tiled(monkeypatch) -> None:
    """repeat_kv tiling the key/value heads (0, 1, 0, 1, ...) instead of repeating each in place."""
    monkeypatch.setattr(mm, "repeat_kv", lambda x, n_rep: x.repeat(1, n_rep, 1, 1) if n_rep > 1 else x)


def rmsnorm_without_eps(monkeypatch) -> None:
    """minimind_ref's RMSNorm dividing by the root mean square alone, its eps dropped."""
    def forward(self, x):
        return self.weight * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True))).type_as(x)

    monkeypatch.setattr(mm.RMSNorm, "forward", forward)


def key_value_projection_with_bias(monkeypatch) -> None:
    """minimind_ref's Attention building k_proj and v_proj with a bias."""
    init = mm.Attention.__init__

    def with_bias(self, config, *args, **kwargs):
        init(self, config, *args, **kwargs)
        for name in ("k_proj", "v_proj"):
            old = getattr(self, name)
            setattr(self, name, torch.nn.Linear(old.in_features, old.out_features, bias=True,
                                                device=old.weight.device, dtype=old.weight.dtype))

    monkeypatch.setattr(mm.Attention, "__init__", with_bias)


def upstream_minimind2_fixed(monkeypatch) -> None:
    """labkit.upstream's restatement of MiniMind2 given MiniMind-3's fixed mask path."""
    from labkit import upstream

    monkeypatch.setattr(upstream, "minimind2_attention", upstream.minimind3_attention)


def top_left_causal_mask(monkeypatch) -> None:
    """exp2's causal_mask aligned top left, as torch's is_causal is."""
    monkeypatch.setattr(sources.experiment("05", "exp2_causal_alignment"), "causal_mask",
                        lambda t, s, *a, **k: torch.ones(t, s, dtype=torch.bool).tril())


def first_token_score_counts_query_0(monkeypatch) -> None:
    """labkit's first-token score averaged over every query, query 0 (which sees only BOS) included."""
    from labkit import tiny_heads

    monkeypatch.setattr(tiny_heads, "first_token_scores", lambda weights, last_query=None: weights[..., :, 0].mean(-1))


def yarn_beta_fast_16(monkeypatch) -> None:
    monkeypatch.setitem(mm.MINIMIND_YARN, "beta_fast", 16)


def flash_tiles_of_256_keys(monkeypatch) -> None:
    """flash_attention's default tile of keys changed from 512 to 256 in its signature."""
    from minimind_ref.variants import flash_attention

    names = list(flash_attention.__code__.co_varnames[3:flash_attention.__code__.co_argcount])
    defaults = dict(zip(names, flash_attention.__defaults__, strict=True))
    defaults["block_k"] = 256
    monkeypatch.setattr(flash_attention, "__defaults__", tuple(defaults.values()))


def grader_float32_tolerance(monkeypatch) -> None:
    """The grader's float32 tolerance ten times looser (its table is read-only: replaced, where it is read)."""
    from types import MappingProxyType

    from labkit.grader import compare, ladder

    looser = MappingProxyType({**ladder.TOLERANCE, torch.float32: (1e-3, 1e-3)})
    for module in (ladder, compare):
        monkeypatch.setattr(module, "TOLERANCE", looser)


def clock_reads_faster(monkeypatch) -> None:
    """The clock's reading speed ten times faster (1300 words a minute)."""
    from labkit.course import clock

    monkeypatch.setattr(clock, "WORDS_PER_MINUTE", 1300)


@dataclass(frozen=True)
class Sabotage:
    module: str  # the module whose facts it aims at ("00": the README, cheat-sheet and clock)
    name: str
    apply: Callable  # (monkeypatch) -> None
    facts: tuple[str, ...]  # each must fail


def experiment_constant(module: str, script: str, name: str, value) -> Callable:
    def apply(monkeypatch):
        monkeypatch.setattr(sources.experiment(module, script), name, value)
    return apply


def cell_edit(number: str, cell_id: str, *changes: tuple[str, str]) -> Callable:
    return lambda monkeypatch: edit_cell(monkeypatch, number, cell_id, *changes)


def default(module: str, script: str, **defaults) -> Callable:
    return lambda monkeypatch: set_default(monkeypatch, module, script, **defaults)


SABOTAGES = [
    # the three of issue 35's audit
    Sabotage("07", "exp1's relative tolerance 1e-4 -> 1e-2",
             experiment_constant("07", "exp1_cached_equals_recompute", "RELATIVE_TOLERANCE", 1e-2),
             ("exp1_relative_tolerance",)),
    Sabotage("09", "notebook 09's planted maps lengthened (n = 4 -> 5)", planted_maps_lengthened,
             ("even_previous_nine_tokens", "even_previous_long_and_short")),
    Sabotage("07", "labkit's naive cache writes in place", in_place_naive_cache,
             ("exp4_cat_ratio", "exp4_steps_and_cat_ratio")),
    # 00: the README, the cheat-sheet, the clock
    Sabotage("00", "the clock reads ten times as fast", clock_reads_faster,
             ("clock_01_express", "clock_05_express", "clock_route_express_hours", "clock_route_full_hours")),
    Sabotage("00", "k_proj and v_proj get a bias", key_value_projection_with_bias,
             ("readme_minimind2_parameters", "readme_minimind3_parameters", "cheatsheet_parameters_mm2",
              "minimind2_gqa_summary")),
    Sabotage("00", "the KV cache stores float64", cache_in_float64,
             ("cheatsheet_cache_bf16_mm2", "cheatsheet_cache_fp32_mm3", "minimind2_gqa_summary",
              "minimind3_cache_against_minimind2", "minimind2_cache_bytes_per_token_float32",
              "minimind2_mha_cache_bytes_per_token_float32")),
    # 01
    Sabotage("01", "scores scaled by 1/D", scale_by_one_over_d,
             ("minimind2_score_scale", "minimind2_score_scale_of_sqrt")),
    Sabotage("01", "the tiny model's q and k untrained", untrained_tiny_model,
             ("tiny_previous_token_head", "tiny_induction_heads", "tiny_sink_head", "previous_token_head_score",
              "induction_head_score_range", "previous_token_head_vs_even", "repeat_loss_without_copying")),
    # 02
    Sabotage("02", "exp2's dictionaries over 32 values",
             experiment_constant("02", "exp2_kv_retrieval", "NUM_VALUES", 32),
             ("exp2_lookup_task", "exp2_chance")),
    Sabotage("02", "the notebook asks 5 questions", cell_edit(
        "02", "f4d7e93c", ("NUM_KEYS, NUM_VALUES, PAIRS, QUESTIONS = 16, 16, 8, 4",
                           "NUM_KEYS, NUM_VALUES, PAIRS, QUESTIONS = 16, 16, 8, 5")), ("notebook_lookup_questions",)),
    Sabotage("02", "RMSNorm without eps", rmsnorm_without_eps, ("rmsnorm_length_of_a_small_query",)),
    # 03
    Sabotage("03", "the notebook's toy layer has 4 heads",
             cell_edit("03", "a6c2208e", ("T, C, H = 4, 8, 2", "T, C, H = 4, 8, 4")), ("toy_layer_sizes",)),
    Sabotage("03", "exp3 trains for 500 steps", default("03", "exp3_heads_specialise", steps=500),
             ("exp3_steps_and_batch", "topic_model")),
    # 04
    Sabotage("04", "repeat_kv tiles the heads", repeat_kv_tiled, ("minimind2_n_rep",)),
    Sabotage("04", "the notebook's cache of keys is 6 positions long", cell_edit(
        "04", "9e81a6ce", ("torch.randn(1, 2, 5, 4)", "torch.randn(1, 2, 6, 4)"),
        (".expand(1, 2, 4, 5, 4)", ".expand(1, 2, 4, 6, 4)"), (".reshape(1, 8, 5, 4)", ".reshape(1, 8, 6, 4)")),
        ("expanded_strides",)),
    # 05
    Sabotage("05", "exp3's vocabulary of 32", experiment_constant("05", "exp3_training_without_mask", "VOCAB", 32),
             ("masking_exp3_data", "masking_exp3_honest_floor", "masking_exp3_cheating_floor")),
    Sabotage("05", "upstream's MiniMind2 given the fixed mask", upstream_minimind2_fixed,
             ("minimind2_sdpa_chunk_after_cache_wrong", "minimind2_explicit_chunk_after_cache_errors")),
    Sabotage("05", "minimind_ref's causal mask aligned top left", top_left_causal_mask,
             ("bottom_right_paths_agree_with_float64",)),
    # 06
    Sabotage("06", "YaRN's beta_fast 32 -> 16", yarn_beta_fast_16, ("minimind_yarn_settings", "yarn_ramp_vs_paper")),
    Sabotage("06", "exp3's decay threshold a half, not a quarter",
             experiment_constant("06", "exp3_long_range_decay", "QUARTER", 0.5), ("rope_decay_quarter_crossings",)),
    # 07
    Sabotage("07", "exp2 counts a model of hidden 256", default("07", "exp2_cost_per_token", hidden=256),
             ("exp2_growth_exponents", "exp6_defaults_and_margins")),
    # 08
    Sabotage("08", "flash_attention's tiles of 256 keys", flash_tiles_of_256_keys,
             ("flash_attention_signature", "flash_largest_score_tile")),
    Sabotage("08", "exp4 prices the A100's HBM at 2.0 TB/s",
             experiment_constant("08", "exp4_io_counts", "HBM_BYTES_PER_S", 2.0e12),
             ("exp4_a100_rates", "io_memory_over_compute_range")),
    Sabotage("08", "exp2 measures 4 heads", experiment_constant("08", "exp2_memory", "HEADS", 4),
             ("exp2_lengths_and_sizes", "exp2_explicit_peak_and_matrix_mib", "exp2_flash_peak_mib")),
    # 09
    Sabotage("09", "the first-token score counts query 0", first_token_score_counts_query_0,
             ("sink_head_bos_weight", "sink_on_code", "sink_without_bos", "planted_induction_first_token_score")),
    # 10
    Sabotage("10", "the grader's float32 tolerance 1e-3", grader_float32_tolerance,
             ("grader_tolerance_float32", "grader_tolerance_float32_atol")),
]


@pytest.fixture
def fresh():
    """Every measurement made again from the code as the test changes it, and forgotten after."""
    forget()
    yield
    forget()


@pytest.mark.parametrize("sabotage", SABOTAGES, ids=lambda s: f"{s.module}: {s.name}")
def test_sabotage_fails_the_facts_that_describe_it(sabotage: Sabotage, fresh, monkeypatch):
    sabotage.apply(monkeypatch)
    verdicts = {name: verdict(name) for name in sabotage.facts}
    still_true = [name for name, why in verdicts.items() if why is None]
    assert not still_true, (f"after the sabotage '{sabotage.name}', these facts still pass: {still_true}. Each must "
                            f"compute its value from the code the sabotage changed")


def test_every_module_is_sabotaged():
    modules = {f"{n:02d}" for n in range(11)}
    assert modules <= {s.module for s in SABOTAGES}
    unknown = sorted({name for s in SABOTAGES for name in s.facts} - set(FACTS))
    assert not unknown, f"sabotages name facts that do not exist: {unknown}"
