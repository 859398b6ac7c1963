"""RoPE and MiniMind's YaRN against the formulas, transformers and the complex-number form.

Oracles:
- the RoPE formula (angle of pair i at position p is p * base^(-2i/dim)), evaluated here in
  float64;
- MiniMind's YaRN as its model_minimind.py configures it, written out here from the YaRN paper
  (arXiv 2309.00071) in float64;
- transformers' rotary embedding (LlamaRotaryEmbedding, default and "yarn" rope types);
- the paper's complex-number form of RoPE (arXiv 2104.09864), which pairs neighbouring dimensions.

A float32 table cannot be compared to a float64 one with a fixed tolerance: an angle p * theta
near p = 30000 carries a float32 rounding of about 1e-3 rad. `assert_same_angles` therefore
recovers each angle's error from cos and sin and allows a relative error of a few float32 ulps
of the angle (plus 1e-6): a wrong frequency, ramp or factor is off by orders of magnitude more.
"""

import math

import pytest
import torch

import minimind_ref as mm
from minimind_ref.rope import apply_rotary_pos_emb, precompute_freqs_cis, rotate_half

YARN = dict(mm.MINIMIND_YARN)


# -- independent references (float64) ------------------------------------------------------------

def rope_angles(dim, end, base):
    """[end, dim]: p * base^(-2i/dim), each half of the last dimension holding the dim/2 angles."""
    theta = torch.tensor([base ** (-2.0 * i / dim) for i in range(dim // 2)], dtype=torch.float64)
    angles = torch.arange(end, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cat([angles, angles], dim=-1)


def yarn_bounds(dim, base, orig, beta_fast, beta_slow):
    """MiniMind's pair-index bounds of the ramp: the index at which a pair turns `beta` times over
    `orig` positions, floored (fast) / ceiled (slow), clamped to [0, dim/2 - 1]."""
    def index_for(turns):  # solve orig * base^(-2i/dim) / (2 pi) = turns for i
        return dim * math.log(orig / (turns * 2 * math.pi)) / (2 * math.log(base))

    raw_low, raw_high = math.floor(index_for(beta_fast)), math.ceil(index_for(beta_slow))
    return max(raw_low, 0), min(raw_high, dim // 2 - 1), raw_low, raw_high


def yarn_angles(dim, end, base, factor, beta_fast, beta_slow, orig):
    theta = torch.tensor([base ** (-2.0 * i / dim) for i in range(dim // 2)], dtype=torch.float64)
    low, high, _, _ = yarn_bounds(dim, base, orig, beta_fast, beta_slow)
    ramp = torch.tensor([min(max((i - low) / max(high - low, 0.001), 0.0), 1.0) for i in range(dim // 2)],
                        dtype=torch.float64)
    theta = theta * (1 - ramp) + theta / factor * ramp  # blend of kept and interpolated frequency
    angles = torch.arange(end, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cat([angles, angles], dim=-1)


def assert_same_angles(cos, sin, angles, amplitude=1.0, rel=5e-7, abs_=1e-6):
    """cos, sin [P, D] (float32) hold amplitude * cos/sin of `angles` [P, D] (float64)."""
    c, s = cos.double(), sin.double()
    assert torch.allclose(torch.sqrt(c * c + s * s), torch.full_like(c, amplitude), atol=1e-6)
    error = torch.atan2(s * torch.cos(angles) - c * torch.sin(angles), c * torch.cos(angles) + s * torch.sin(angles))
    allowed = abs_ + rel * angles.abs()
    worst = (error.abs() / allowed).max().item()
    assert worst <= 1.0, f"angle error up to {worst:.3g} x the float32 allowance"


def hf_rotary(dim, end, rope_parameters):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=dim * 4, num_attention_heads=4, head_dim=dim,
                         max_position_embeddings=end, rope_parameters=rope_parameters)
    rotary = LlamaRotaryEmbedding(config)
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.arange(end)[None])
    return cos[0], sin[0], rotary


def table_frequencies(cos, sin):
    """The angle at position 1 of each pair: the frequency the table uses. [dim/2]"""
    half = cos.shape[-1] // 2
    return torch.atan2(sin[1, :half].double(), cos[1, :half].double())


# -- plain RoPE ----------------------------------------------------------------------------------

def test_table_shape_and_dtype():
    cos, sin = precompute_freqs_cis(64, 100)
    assert cos.shape == sin.shape == (100, 64)
    assert cos.dtype == sin.dtype == torch.float32


@pytest.mark.parametrize("dim,end,base", [(64, 32768, 1e6), (16, 512, 1e4), (128, 300, 5e5)])
def test_plain_table_equals_formula(dim, end, base):
    cos, sin = precompute_freqs_cis(dim, end, base)
    angles = rope_angles(dim, end, base)
    assert_same_angles(cos, sin, angles)
    # near the start (angles below 16 rad) the values themselves agree to float32 precision
    assert torch.allclose(cos[:16].double(), torch.cos(angles[:16]), atol=2e-6)
    assert torch.allclose(sin[:16].double(), torch.sin(angles[:16]), atol=2e-6)


def test_plain_table_equals_transformers_default_rope():
    cos, sin = precompute_freqs_cis(64, 32768, 1e6)
    hf_cos, hf_sin, _ = hf_rotary(64, 32768, {"rope_type": "default", "rope_theta": 1e6})
    assert torch.allclose(cos, hf_cos, atol=1e-6, rtol=0)
    assert torch.allclose(sin, hf_sin, atol=1e-6, rtol=0)


def test_shorter_table_is_a_prefix_of_longer_one():
    short, _ = precompute_freqs_cis(32, 50)
    long_, _ = precompute_freqs_cis(32, 500)
    assert torch.equal(short, long_[:50])


# -- YaRN ----------------------------------------------------------------------------------------

YARN_CASES = {
    # name: (dim, end, base, rope_scaling)
    "minimind_default": (64, 32768, 1e6, YARN),
    "dim128_base1e4": (128, 8192, 1e4, {**YARN, "factor": 8, "original_max_position_embeddings": 4096}),
    "high_clamped": (16, 4096, 500.0, {**YARN, "factor": 4}),
    "low_clamped_attention_factor": (32, 200, 1e4, {**YARN, "factor": 2, "original_max_position_embeddings": 64,
                                                    "attention_factor": 0.7}),
}


@pytest.mark.parametrize("name", list(YARN_CASES))
def test_yarn_table_equals_paper_formula_as_minimind_configures_it(name):
    dim, end, base, scaling = YARN_CASES[name]
    cos, sin = precompute_freqs_cis(dim, end, base, scaling)
    angles = yarn_angles(dim, end, base, scaling["factor"], scaling["beta_fast"], scaling["beta_slow"],
                         scaling["original_max_position_embeddings"])
    assert_same_angles(cos, sin, angles, amplitude=scaling["attention_factor"])
    # the YaRN table really is different from plain RoPE here
    assert not torch.allclose(angles, rope_angles(dim, end, base))


def test_yarn_cases_cover_the_clamps():
    _, _, raw_low, raw_high = yarn_bounds(16, 500.0, 2048, 32, 1)
    assert raw_high > 16 // 2 - 1  # "high_clamped": the ceil passes the last pair
    _, _, raw_low, _ = yarn_bounds(32, 1e4, 64, 32, 1)
    assert raw_low < 0  # "low_clamped": the floor is negative


def test_yarn_default_matches_transformers():
    cos, sin = precompute_freqs_cis(64, 32768, 1e6, YARN)
    hf_cos, hf_sin, rotary = hf_rotary(64, 32768, {
        "rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0, "beta_fast": 32.0, "beta_slow": 1.0,
        "original_max_position_embeddings": 2048, "attention_factor": 1.0})
    assert rotary.attention_scaling == 1.0
    assert torch.allclose(table_frequencies(cos, sin), rotary.inv_freq.double(), rtol=1e-6, atol=0)
    hf_angles = torch.arange(32768, dtype=torch.float64)[:, None] * rotary.inv_freq.double()[None, :]
    assert_same_angles(cos, sin, torch.cat([hf_angles, hf_angles], dim=-1))
    # and table to table: equal up to float32 rounding of angles as large as 3e4 rad
    assert torch.allclose(cos, hf_cos, atol=5e-4, rtol=0) and torch.allclose(sin, hf_sin, atol=5e-4, rtol=0)


def test_yarn_engages_only_past_the_trained_length():
    plain_cos, plain_sin = precompute_freqs_cis(64, 2049, 1e6)
    cos, sin = precompute_freqs_cis(64, 2048, 1e6, YARN)
    assert torch.equal(cos, plain_cos[:2048]) and torch.equal(sin, plain_sin[:2048])
    cos, sin = precompute_freqs_cis(64, 2049, 1e6, YARN)
    assert not torch.allclose(cos, plain_cos, atol=1e-3)
    assert not torch.allclose(cos[:2048], plain_cos[:2048], atol=1e-3)  # every position changes


def test_yarn_default_keeps_fast_pairs_and_divides_slow_pairs_by_16():
    low, high, _, _ = yarn_bounds(64, 1e6, 2048, 32, 1)
    assert (low, high) == (5, 14)  # 64 ln(2048 / 64 pi) / (2 ln 1e6) = 5.38; 64 ln(2048 / 2 pi) / (2 ln 1e6) = 13.4
    plain_cos, plain_sin = precompute_freqs_cis(64, 32768, 1e6)
    cos, sin = precompute_freqs_cis(64, 32768, 1e6, YARN)
    kept = [i for i in range(32) if i <= low]
    divided = [i for i in range(32) if i >= high]
    blended = [i for i in range(32) if low < i < high]
    both = lambda pairs: pairs + [i + 32 for i in pairs]  # noqa: E731 (pair i is columns i and i + 32)
    # kept pairs: bit for bit the plain table
    assert torch.equal(cos[:, both(kept)], plain_cos[:, both(kept)])
    assert torch.equal(sin[:, both(kept)], plain_sin[:, both(kept)])
    # interpolated pairs: position 16 p sees exactly the angle plain RoPE gives position p
    p = torch.arange(0, 2048)
    assert torch.equal(cos[16 * p][:, both(divided)], plain_cos[p][:, both(divided)])
    assert torch.equal(sin[16 * p][:, both(divided)], plain_sin[p][:, both(divided)])
    # blended pairs: strictly between the two frequencies
    plain_f, yarn_f = table_frequencies(plain_cos, plain_sin), table_frequencies(cos, sin)
    assert torch.all(yarn_f[blended] < plain_f[blended] * (1 - 1e-4))
    assert torch.all(yarn_f[blended] > plain_f[blended] / 16 * (1 + 1e-4))
    # the paper's criterion: kept pairs turn at least beta_fast = 32 times over the trained 2048
    # positions, fully interpolated pairs at most beta_slow = 1 time
    turns = plain_f * 2048 / (2 * math.pi)
    assert torch.all(turns[kept] >= 32) and torch.all(turns[divided] <= 1)


def test_model_uses_the_yarn_table_when_asked(tiny_config):
    config = tiny_config(hidden_size=64, num_attention_heads=1, num_key_value_heads=1,
                         max_position_embeddings=32768, inference_rope_scaling=True)
    model = mm.MiniMindModel(config)
    cos, sin = precompute_freqs_cis(64, 32768, 1e6, YARN)
    assert torch.equal(model.freqs_cos, cos) and torch.equal(model.freqs_sin, sin)


# -- applying the rotation -----------------------------------------------------------------------

def test_rotate_half():
    x = torch.arange(1.0, 7.0)
    assert rotate_half(x).tolist() == [-4.0, -5.0, -6.0, 1.0, 2.0, 3.0]


def test_apply_equals_complex_form_after_permutation():
    torch.manual_seed(0)
    dim, end, base = 8, 16, 1e4
    cos, sin = precompute_freqs_cis(dim, end, base)
    x = torch.randn(2, 3, end, dim)  # interleaved layout: pair i is dimensions (2i, 2i + 1)
    # rotate-half layout: pair i is dimensions (i, i + dim/2)
    to_half = [2 * i for i in range(dim // 2)] + [2 * i + 1 for i in range(dim // 2)]
    rotated, _ = apply_rotary_pos_emb(x[..., to_half], x[..., to_half], cos, sin)
    back = torch.empty_like(rotated)
    back[..., to_half] = rotated
    # the paper's form: (x_2i + i x_2i+1) * exp(i p theta_i)
    z = torch.view_as_complex(x.double().reshape(2, 3, end, dim // 2, 2).contiguous())
    angles = rope_angles(dim, end, base)[:, : dim // 2]
    expected = torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).reshape(2, 3, end, dim)
    assert torch.allclose(back.double(), expected, atol=1e-5)


def test_apply_preserves_norms():
    torch.manual_seed(0)
    cos, sin = precompute_freqs_cis(64, 500)
    q = torch.randn(2, 8, 500, 64)
    k = torch.randn(2, 2, 500, 64)
    q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
    assert torch.allclose(q_rot.norm(dim=-1), q.norm(dim=-1), rtol=1e-5)
    assert torch.allclose(k_rot.norm(dim=-1), k.norm(dim=-1), rtol=1e-5)
    assert not torch.allclose(q_rot, q, atol=1e-2)  # and it did rotate


@pytest.mark.parametrize("dim,base", [(16, 1e4), (64, 1e6)])
def test_scores_depend_only_on_relative_position(dim, base):
    torch.manual_seed(0)
    positions = 48
    cos, sin = precompute_freqs_cis(dim, positions, base)
    q, k = torch.randn(dim), torch.randn(dim)
    q_all, k_all = apply_rotary_pos_emb(q.expand(1, 1, positions, dim), k.expand(1, 1, positions, dim), cos, sin)
    scores = (q_all[0, 0] @ k_all[0, 0].T).double()  # [m, n] = <R(q, m), R(k, n)>
    by_offset = []
    for offset in range(-positions + 1, positions):
        diagonal = torch.diagonal(scores, offset=-offset)  # entries with m - n = offset
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-4), offset
        by_offset.append(diagonal[0].item())
    assert torch.tensor(by_offset).std() > 0.1  # the score does change with the offset


def test_per_sequence_positions_equal_per_row_tables():
    torch.manual_seed(0)
    cos_table, sin_table = precompute_freqs_cis(16, 64)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12], [1, 1, 2, 3, 4, 5]])
    q = torch.randn(3, 4, 6, 16)
    k = torch.randn(3, 2, 6, 16)
    q_rot, k_rot = apply_rotary_pos_emb(q, k, cos_table[positions], sin_table[positions])  # [B, T, D]
    for b in range(3):
        q_b, k_b = apply_rotary_pos_emb(q[b:b + 1], k[b:b + 1], cos_table[positions[b]], sin_table[positions[b]])
        assert torch.allclose(q_rot[b:b + 1], q_b, atol=1e-6) and torch.allclose(k_rot[b:b + 1], k_b, atol=1e-6)
    same_as_row0, _ = apply_rotary_pos_emb(q[1:2], k[1:2], cos_table[:6], sin_table[:6])
    assert not torch.allclose(q_rot[1:2], same_as_row0, atol=1e-3)  # the positions mattered


@pytest.mark.parametrize("dim", [7, 1, 0])
def test_precompute_refuses_odd_or_empty_dim(dim):
    with pytest.raises(ValueError, match=rf"dim must be a positive even number.*got {dim}"):
        precompute_freqs_cis(dim, 16)


def test_precompute_refuses_no_positions():
    with pytest.raises(ValueError, match=r"end \(number of positions\) must be positive"):
        precompute_freqs_cis(8, 0)


def test_apply_rotary_pos_emb_refuses_a_head_size_mismatch():
    cos, sin = precompute_freqs_cis(32, 8)
    q, k = torch.randn(1, 4, 8, 64), torch.randn(1, 2, 8, 64)
    with pytest.raises(ValueError, match="head_dim"):
        apply_rotary_pos_emb(q, k, cos, sin)
