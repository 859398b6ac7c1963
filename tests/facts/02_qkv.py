"""Module 02's facts: MiniMind2-Small's and MiniMind-3's shapes from minimind_ref (the steps' shapes from
labkit's course map, which tests/kit/test_course_map.py holds to a real forward pass), the lookup
tasks from the experiment scripts' and the notebook's own cells, q/k norm's bound from
minimind_ref's RMSNorm, exp4's growth measured on its own layers."""

from __future__ import annotations

import math

import torch

import minimind_ref as mm
from facts import fact, sources
from labkit.course_map import forward_steps

CONFIG = mm.MiniMindConfig()
THREE = mm.MiniMindConfig.minimind3()
TASK_CELL = "f4d7e93c"  # the lookup task's constants and make_examples
HELD_OUT_CELL = "6554c8e7"  # the lookup layer, and the fresh examples it is measured on
BIG_WEIGHTS_CELL = "279b0ced"  # MiniMind's layer with tied and separate projections
COUPLES_CELL = "ae772ce2"  # the partner task


def experiment(name: str):
    """One of module 02's experiment scripts, for its own constants."""
    return sources.experiment("02", name)


def default_of(name: str, flag: str):
    return vars(sources.defaults("02", name))[flag]


def sizes() -> dict[str, int]:
    return {name: p.numel() for name, p in mm.Attention(CONFIG).named_parameters()}


def shapes(config: mm.MiniMindConfig) -> dict[str, dict[str, tuple]]:
    """Each forward step's tensors and their shapes, as the course map draws them."""
    return {step.key: dict(step.tensors) for step in forward_steps(config)}


def numbers(shape: tuple) -> tuple[int, ...]:
    return tuple(n for n in shape if isinstance(n, int))


# ---------------------------------------------------------------------------- MiniMind2-Small's shapes

@fact
def minimind2_attention_sizes():
    """`C = 512`, `H = 8` query heads, `H_kv = 2` key/value heads, `D = 64`."""
    return CONFIG.hidden_size, CONFIG.num_attention_heads, CONFIG.num_key_value_heads, CONFIG.head_dim


@fact
def minimind2_q_shapes():
    """q_proj's output [B, T, 512] -> view [B, T, 8, 64] -> transpose [B, 8, T, 64]: the view holds the
    numbers of the split heads, before the transpose moves the head axis."""
    steps = shapes(CONFIG)
    split = numbers(steps["split_heads"]["q"])
    return (*numbers(steps["project"]["q"]), *split, *split)


@fact
def minimind2_kv_shapes():
    """k_proj's and v_proj's output [B, T, 128] -> [B, 2, T, 64]."""
    steps = shapes(CONFIG)
    return (*numbers(steps["project"]["k,v"]), *numbers(steps["split_heads"]["k,v"]))


@fact
def minimind2_query_heads_per_kv_head_02():
    return CONFIG.num_attention_heads // CONFIG.num_key_value_heads


@fact
def minimind2_projection_weights():
    """`262,144 + 65,536 + 65,536 + 262,144 = 655,360`."""
    q, k, v, o = (sizes()[f"{n}_proj.weight"] for n in "qkvo")
    return q, k, v, o, q + k + v + o


@fact
def minimind2_q_proj_square():
    """MiniMind's `q_proj` is `512 × 512`: square, so multiplying by W instead of W.T runs."""
    out_features, in_features = mm.Attention(CONFIG).q_proj.weight.shape
    return out_features, in_features


@fact
def minimind2_head_width_02():
    return CONFIG.head_dim


# ---------------------------------------------------------------------------- MiniMind-3 and q/k norm

@fact
def minimind3_attention_sizes():
    """768 wide with 8 query heads over 4 key/value heads of `D = 96`."""
    return THREE.hidden_size, THREE.num_attention_heads, THREE.num_key_value_heads, THREE.head_dim


@fact
def minimind3_qk_norm_weights_per_head():
    """`q_norm` and `k_norm` hold `D` weights each."""
    layer = mm.Attention(THREE)
    return layer.q_norm.weight.numel() == layer.k_norm.weight.numel() == THREE.head_dim


@fact
def minimind3_score_bound_unit_gains():
    """(sqrt(96) = 9.80 with unit gains)."""
    return THREE.head_dim, math.sqrt(THREE.head_dim)


@fact
def rmsnorm_length_at_most_sqrt_d():
    """RMSNorm's output (unit gain) is never longer than sqrt(D), for large and tiny inputs alike."""
    norm = mm.RMSNorm(THREE.head_dim, eps=THREE.rms_norm_eps)
    x = torch.randn(1000, THREE.head_dim, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = x * torch.logspace(-6, 3, 1000, dtype=torch.float64)[:, None]
    with torch.no_grad():
        lengths = norm.double()(x).norm(dim=-1)
    return bool((lengths <= math.sqrt(THREE.head_dim) * (1 + 1e-6)).all())  # float32 inside: its rounding


@fact
def rmsnorm_length_of_a_small_query():
    """(length after MiniMind-3's q_norm of a query of root mean square 0.001, sqrt(D))."""
    norm = mm.RMSNorm(THREE.head_dim, eps=THREE.rms_norm_eps)
    with torch.no_grad():
        length = norm.double()(torch.full((THREE.head_dim,), 1e-3, dtype=torch.float64)).norm().item()
    return length, math.sqrt(THREE.head_dim)


@fact
def minimind2_attention_input_is_normalised():
    """Scaling a MiniMind2-Small block's residual stream by 100 leaves its attention weights unchanged: the
    pre-norm hands attention an RMS-normalised input."""
    config = CONFIG.replace(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                            num_hidden_layers=1, vocab_size=32)
    with sources.seeded(0):
        block = mm.MiniMindForCausalLM(config).model.layers[0].eval()
        x = torch.randn(1, 6, config.hidden_size)
    cos, sin = torch.ones(6, config.head_dim), torch.zeros(6, config.head_dim)
    with torch.no_grad():
        _, small = block(x, (cos, sin), output_attentions=True)
        _, large = block(100 * x, (cos, sin), output_attentions=True)
    return torch.allclose(small, large, atol=1e-5)


@fact
def exp4_scales_and_growth():
    """exp4's scales (1, 10 and 100) and how many times the largest unnormalised score grows between
    the first and the last, measured on exp4's own layer without the norm."""
    exp4 = experiment("exp4_qk_norm")
    scales = exp4.Experiment.parser(exp4.__doc__, exp4.__file__, exp4.add_arguments).parse_args([]).scales
    with sources.seeded(0):
        config, layers = exp4.layers()
        x = torch.randn(1, 8, config.hidden_size)
    plain = next(layer for layer in layers.values() if not layer.config.qk_norm)
    cos, sin = mm.precompute_freqs_cis(config.head_dim, x.shape[1], rope_base=config.rope_theta)
    with torch.no_grad():
        low, high = (exp4.attention_scores(plain, x * s, cos, sin).abs().max().item() for s in (scales[0], scales[-1]))
    return (*scales, high / low)


@fact
def scores_are_quadratic_in_the_input():
    """'twice the input, four times the scores': (2, 4), measured on a MiniMind2-Small layout's projections
    without q/k norm."""
    layer = mm.Attention(CONFIG.replace(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                        head_dim=16))
    assert not layer.config.qk_norm
    x = torch.randn(1, 5, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    layer = layer.double()

    def scores(z):
        q = layer.q_proj(z).view(1, 5, 4, 16)
        k = layer.k_proj(z).view(1, 5, 2, 16)
        return torch.einsum("bthd,bshd->bts", q[:, :, :2], k)

    with torch.no_grad():
        ratio = (scores(2 * x) / scores(x)).mean().item()
    return 2, ratio


# ---------------------------------------------------------------------------- the lookup tasks

@fact
def exp2_lookup_task():
    """(pairs, keys, values) of exp2's dictionaries."""
    exp2 = experiment("exp2_kv_retrieval")
    return default_of("exp2_kv_retrieval", "pairs"), exp2.NUM_KEYS, exp2.NUM_VALUES


@fact
def exp2_chance():
    """`1/16 = 0.0625`."""
    values = experiment("exp2_kv_retrieval").NUM_VALUES
    return 1, values, 1 / values


@fact
def exp2_held_out():
    return experiment("exp2_kv_retrieval").HELD_OUT


@fact
def exp3_tied_ceiling():
    """`1/2 + 1/32 ≈ 53%`: half, plus the partner's value agreeing by chance."""
    values = experiment("exp3_tied_cannot_look_away").NUM_VALUES
    return 1, 2, 1, 2 * values, 100 * (0.5 + 0.5 / values)


@fact
def exp3_tied_ceiling_fraction():
    """`1/2 + 1/32` alone."""
    return 1, 2, 1, 2 * experiment("exp3_tied_cannot_look_away").NUM_VALUES


@fact
def notebook_rows_see_all_tokens():
    """The tokens of the cell whose layer sees every token (no mask), from the mask it builds."""
    cell = sources.run_cells("02", BIG_WEIGHTS_CELL, torch=torch, mm=mm, print=lambda *a, **k: None)
    weights = cell["big_weights"]["separate"]  # [B, H, T, T]
    assert bool((weights > 0).all()), "some row of the cell's layer no longer sees every token"
    return weights.shape[-1]


def _notebook_task():
    return sources.read("02", TASK_CELL, r"^NUM_KEYS, NUM_VALUES, PAIRS, QUESTIONS = (\d+), (\d+), (\d+), (\d+)$")


@fact
def notebook_lookup_pairs():
    """`S = 8` pairs ... out of 16 keys and 16 values."""
    keys, values, pairs, _ = _notebook_task()
    return pairs, keys, values


@fact
def notebook_lookup_questions():
    return _notebook_task()[3]


@fact
def notebook_lookup_values():
    return _notebook_task()[1]


@fact
def notebook_held_out():
    return sources.read("02", HELD_OUT_CELL, r"fresh_inputs, fresh_answers = make_examples\((\d+),")


@fact
def notebook_couples():
    """(symbols, fixed couples) of the partner task."""
    symbols = sources.read("02", COUPLES_CELL, r"^SYMBOLS = (\d+)")
    return symbols, symbols // 2


@fact
def notebook_couples_per_sequence():
    return sources.read("02", COUPLES_CELL, r"def make_couples\(count, generator, couples=(\d+)\)")


@fact
def notebook_tied_ceiling():
    values = _notebook_task()[1]
    return 1, 2, 1, 2 * values, 100 * (0.5 + 0.5 / values)


@fact
def quiz_02_question_count():
    from labkit.quiz import load_quiz

    return len(load_quiz(sources.ROOT / "quizzes" / "02_qkv.json").questions)


# ---------------------------------------------------------------------------- behaviours (issue 16)

@fact
def values_may_differ_in_width_from_keys():
    """minimind_ref's attention accepts D_v != D and equals torch's SDPA."""
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 5, 8, generator=generator), torch.randn(2, 4, 7, 8, generator=generator)
    for value_width in (3, 8, 12):
        v = torch.randn(2, 4, 7, value_width, generator=generator)
        plain = mm.scaled_dot_product_attention(q, k, v)
        if plain.shape != (2, 4, 5, value_width) or not torch.allclose(plain, F.scaled_dot_product_attention(q, k, v),
                                                                        atol=1e-6):
            return False
    return True


@fact
def tied_scores_put_only_the_global_maximum_on_the_diagonal():
    """With W_k = W_q the matrix's largest score is on the diagonal, but a row's own may not be."""
    off_diagonal_rows = 0
    for seed in range(20):
        generator = torch.Generator().manual_seed(seed)
        q = torch.randn(5, 4, generator=generator) * torch.rand(5, 1, generator=generator)
        scores = q @ q.T / 2.0
        longest = scores.diagonal().argmax()
        if scores.max() != scores.diagonal().max() or scores[longest].argmax() != longest:
            return False
        off_diagonal_rows += int((scores.argmax(dim=-1) != torch.arange(5)).sum())
    return off_diagonal_rows > 0
