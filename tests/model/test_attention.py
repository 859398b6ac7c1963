"""Explicit and fused attention against torch.nn.functional.scaled_dot_product_attention.

torch's SDPA is the oracle: the explicit path (`mm.scaled_dot_product_attention`) and the
course's fused wrapper (`mm.fused_attention`) must agree with it to 1e-5 in float32, in the
forward pass and in the gradients. Where the course deliberately differs from torch (bottom-right
causal alignment when there are fewer queries than keys) the oracle is torch given the explicit
bottom-right mask, and a test shows that torch's own `is_causal` would differ.
"""

import pytest
import torch
import torch.nn.functional as F

import minimind_ref as mm
from minimind_ref.masks import combined_mask
from minimind_ref.rope import precompute_freqs_cis

ATOL = 1e-5


def qkv(batch=2, heads=4, kv_heads=None, query_len=5, key_len=None, dim=8, requires_grad=False):
    kv_heads = kv_heads or heads
    key_len = key_len or query_len
    q = torch.randn(batch, heads, query_len, dim, requires_grad=requires_grad)
    k = torch.randn(batch, kv_heads, key_len, dim, requires_grad=requires_grad)
    v = torch.randn(batch, kv_heads, key_len, dim, requires_grad=requires_grad)
    return q, k, v


def close(a, b, atol=ATOL):
    return torch.allclose(a, b, atol=atol, rtol=0.0)


def assert_both_paths_give(expected, q, k, v, **kwargs):
    """The explicit path and the fused wrapper, given the same arguments, both return `expected`."""
    assert close(mm.scaled_dot_product_attention(q, k, v, **kwargs), expected), "explicit path"
    assert close(mm.fused_attention(q, k, v, **kwargs), expected), "fused wrapper"


# -- forward: equal to torch ---------------------------------------------------------------------

def test_no_mask_equals_torch():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=5, key_len=7)
    expected = F.scaled_dot_product_attention(q, k, v)
    assert_both_paths_give(expected, q, k, v)


def test_causal_square_equals_torch_is_causal():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=6)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_both_paths_give(expected, q, k, v, is_causal=True)
    # and it is not the unmasked result (the mask does something)
    assert not close(expected, F.scaled_dot_product_attention(q, k, v), atol=1e-3)


def test_bool_mask_equals_torch():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=4, key_len=6)
    mask = torch.rand(2, 1, 4, 6) > 0.4
    mask[..., 0] = True  # every row sees something
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_both_paths_give(expected, q, k, v, attn_mask=mask)


def test_float_additive_mask_equals_torch():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=4, key_len=6)
    mask = torch.randn(2, 4, 4, 6)  # arbitrary biases (ALiBi-like), broadcast over nothing
    mask[0, 0, 1, 2:] = float("-inf")  # and some hidden keys
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert close(mm.scaled_dot_product_attention(q, k, v, attn_mask=mask), expected)


def test_bool_mask_combined_with_causal_equals_torch_given_both():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=5)
    pad = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    pad[1, ..., :2] = False  # sequence 1 is left-padded by 2: its first two queries see nothing
    both = pad & torch.ones(5, 5, dtype=torch.bool).tril()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=both)
    assert_both_paths_give(expected, q, k, v, attn_mask=pad, is_causal=True)


@pytest.mark.parametrize("kv_heads", [1, 2], ids=["mqa", "gqa"])
def test_gqa_equals_torch_enable_gqa_and_repeated_heads(kv_heads):
    torch.manual_seed(0)
    q, k, v = qkv(heads=4, kv_heads=kv_heads, query_len=5, key_len=5)
    with_gqa = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    n_rep = 4 // kv_heads
    repeated = F.scaled_dot_product_attention(
        q, k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1), is_causal=True)
    assert close(with_gqa, repeated)
    ours = mm.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert close(ours, with_gqa) and close(ours, repeated)
    assert close(mm.fused_attention(q, k, v, is_causal=True, enable_gqa=True), with_gqa)


def test_repeat_kv_equals_repeat_interleave():
    torch.manual_seed(0)
    k = torch.randn(2, 3, 5, 4)
    assert torch.equal(mm.repeat_kv(k, 4), k.repeat_interleave(4, dim=1))
    assert mm.repeat_kv(k, 1) is k


@pytest.mark.parametrize("query_len,key_len", [(1, 7), (3, 7), (6, 7)])
def test_causal_with_fewer_queries_is_bottom_right(query_len, key_len):
    torch.manual_seed(0)
    q, k, v = qkv(query_len=query_len, key_len=key_len)
    bottom_right = torch.ones(query_len, key_len, dtype=torch.bool).tril(key_len - query_len)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right)
    assert_both_paths_give(expected, q, k, v, is_causal=True)


def test_torch_is_causal_is_top_left_so_it_differs_for_fewer_queries():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=3, key_len=7)
    top_left = torch.ones(3, 7, dtype=torch.bool).tril()
    torch_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    # documents torch's convention: is_causal aligns to the top left
    assert close(torch_causal, F.scaled_dot_product_attention(q, k, v, attn_mask=top_left))
    ours = mm.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (ours - torch_causal).abs().max() > 1e-2


# -- weights -------------------------------------------------------------------------------------

def test_weights_rows_sum_to_one_and_reproduce_output():
    torch.manual_seed(0)
    q, k, v = qkv(heads=4, kv_heads=2, query_len=4, key_len=6)
    mask = torch.rand(2, 1, 4, 6) > 0.5
    mask[..., -1] = True
    out, weights = mm.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True,
                                                   return_weights=True)
    assert weights.shape == (2, 4, 4, 6)
    assert close(weights.sum(-1), torch.ones(2, 4, 4))
    assert close(weights @ v.repeat_interleave(2, dim=1), out)
    assert torch.all(weights[~mask.expand_as(weights)] == 0.0)  # hidden keys get exactly 0
    assert torch.all(weights[mask.expand_as(weights)] > 0.0)


def test_weights_equal_softmax_written_independently():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=4, key_len=4, dim=16)
    _, weights = mm.scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
    scores = (q @ k.transpose(-1, -2)) / 4.0  # sqrt(16)
    scores = scores.masked_fill(torch.ones(4, 4).triu(1).bool(), float("-inf"))
    assert close(weights, scores.softmax(-1))


def test_fully_masked_row_gives_zeros_without_nan_also_in_backward():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=3, key_len=4, requires_grad=True)
    mask = torch.ones(2, 1, 3, 4, dtype=torch.bool)
    mask[0, 0, 1] = False  # query 1 of sequence 0 sees nothing
    out, weights = mm.scaled_dot_product_attention(q, k, v, attn_mask=mask, return_weights=True)
    assert not torch.isnan(out).any() and not torch.isnan(weights).any()
    assert torch.all(weights[0, :, 1] == 0.0)
    assert torch.all(out[0, :, 1] == 0.0)
    assert close(weights[1].sum(-1), torch.ones(4, 3))  # other rows untouched
    # torch's SDPA also returns zeros for such a row: the two conventions agree
    torch_out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.all(torch_out[0, :, 1] == 0.0)
    assert close(out, torch_out)
    out.sum().backward()
    for t in (q, k, v):
        assert not torch.isnan(t.grad).any()
    assert torch.all(q.grad[0, :, 1] == 0.0)  # a query that sees nothing gets no gradient


def test_fully_masked_row_with_float_mask_gives_zeros_like_torch():
    # The module docstring: "A row whose keys are all masked ... Both paths return zero weights
    # and a zero output for it, never NaN; torch's fused kernel does the same." A float mask hides
    # with -inf (the docstring of the explicit path says so); torch returns zeros for such a row.
    torch.manual_seed(0)
    q, k, v = qkv(batch=1, heads=2, query_len=3, key_len=5)
    mask = torch.zeros(3, 5)
    mask[1] = float("-inf")
    torch_out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.all(torch_out[0, :, 1] == 0.0)
    ours = mm.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert not torch.isnan(ours).any()
    assert close(ours, torch_out)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_softmax_precision_follows_the_input_never_below_float32(dtype):
    """float64 stays float64 (no silent round trip through float32); half precision gets its
    softmax in float32 and agrees with torch to the half type's rounding."""
    q, k, v = (torch.randn(2, 3, 7, 16, dtype=torch.float64) for _ in range(3))
    ours = mm.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), is_causal=True)
    assert ours.dtype == dtype
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tolerance = 1e-12 if dtype == torch.float64 else 4 * torch.finfo(dtype).eps
    assert (ours.double() - reference).abs().max() < tolerance


def test_scale_argument_is_honoured():
    torch.manual_seed(0)
    q, k, v = qkv(query_len=4, key_len=6)
    for scale in (0.05, 1.0, 3.0):
        expected = F.scaled_dot_product_attention(q, k, v, scale=scale)
        assert close(mm.scaled_dot_product_attention(q, k, v, scale=scale), expected)
    assert not close(mm.scaled_dot_product_attention(q, k, v, scale=3.0),
                     mm.scaled_dot_product_attention(q, k, v), atol=1e-3)


# -- gradients -----------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["causal", "bool_mask", "gqa_causal_fewer_queries"])
def test_gradients_equal_torch(case):
    torch.manual_seed(0)
    kv_heads = 2 if case.startswith("gqa") else 4
    query_len, key_len = (3, 6) if case.startswith("gqa") else (5, 5)
    q, k, v = qkv(heads=4, kv_heads=kv_heads, query_len=query_len, key_len=key_len, requires_grad=True)
    grad_out = torch.randn(2, 4, query_len, 8)
    kwargs, torch_kwargs = {}, {}
    if case == "causal":
        kwargs = torch_kwargs = dict(is_causal=True)
    elif case == "bool_mask":
        mask = torch.rand(2, 1, 5, 5) > 0.3
        mask[..., 0] = True
        kwargs = torch_kwargs = dict(attn_mask=mask)
    else:
        kwargs = dict(is_causal=True, enable_gqa=True)
        torch_kwargs = dict(attn_mask=torch.ones(query_len, key_len, dtype=torch.bool).tril(key_len - query_len),
                            enable_gqa=True)
    ours = torch.autograd.grad(mm.scaled_dot_product_attention(q, k, v, **kwargs), (q, k, v), grad_out)
    theirs = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, **torch_kwargs), (q, k, v), grad_out)
    for name, a, b in zip("qkv", ours, theirs):
        assert close(a, b), name


# -- errors --------------------------------------------------------------------------------------

def test_refuses_3d_inputs():
    q = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"q as \[batch, heads, seq, head_dim\], got shape \(2, 5, 8\)"):
        mm.scaled_dot_product_attention(q, q, q)


def test_refuses_k_v_length_mismatch():
    q, k, v = qkv(query_len=4, key_len=6)
    with pytest.raises(ValueError, match=r"k and v must agree on batch, heads and length"):
        mm.scaled_dot_product_attention(q, k, v[:, :, :5])


def test_value_width_may_differ_from_key_width_as_in_torch():
    # MLA (module 04) attends with 192-wide queries and keys but 128-wide values; torch allows it.
    torch.manual_seed(0)
    q, k, _ = qkv(heads=4, kv_heads=2, query_len=5, key_len=7, dim=12)
    v = torch.randn(2, 2, 7, 8)
    mask = torch.rand(2, 1, 5, 7) > 0.3
    mask[..., -1] = True  # every query sees at least one key
    for kwargs in (dict(is_causal=True), dict(attn_mask=mask)):
        out = mm.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
        assert out.shape == (2, 4, 5, 8)
        if "attn_mask" in kwargs:
            expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        else:  # T < S: build the bottom-right causal mask, as torch's is_causal is top-left
            expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mm.causal_mask(5, 7), enable_gqa=True)
        assert close(out, expected)


def test_refuses_head_mismatch_without_enable_gqa():
    q, k, v = qkv(heads=4, kv_heads=2)
    with pytest.raises(ValueError, match=r"q has 4 heads but k and v have 2: pass enable_gqa=True"):
        mm.scaled_dot_product_attention(q, k, v)


def test_refuses_heads_not_divisible():
    q, k, v = qkv(heads=6, kv_heads=4)
    with pytest.raises(ValueError, match=r"6 heads cannot be split into equal groups over k's 4 heads"):
        mm.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def test_refuses_mask_that_does_not_broadcast():
    q, k, v = qkv(query_len=4, key_len=6)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(4, 5\) does not broadcast .* \(2, 4, 4, 6\)"):
        mm.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(4, 5, dtype=torch.bool))


def test_refuses_head_dim_mismatch():
    q, _, _ = qkv(dim=8)
    _, k, v = qkv(dim=4)
    with pytest.raises(ValueError, match=r"head_dim"):
        mm.scaled_dot_product_attention(q, k, v)


# -- the Attention layer -------------------------------------------------------------------------

def _layer_pair(tiny_config, **overrides):
    torch.manual_seed(0)
    explicit = mm.Attention(tiny_config(flash_attn=False, **overrides)).eval()
    fused = mm.Attention(tiny_config(flash_attn=True, **overrides)).eval()
    fused.load_state_dict(explicit.state_dict(), strict=True)
    return explicit, fused


@pytest.mark.parametrize("qk_norm", [False, True], ids=["minimind2", "qk_norm"])
def test_attention_layer_explicit_equals_fused(tiny_config, qk_norm):
    explicit, fused = _layer_pair(tiny_config, qk_norm=qk_norm)
    x = torch.randn(2, 7, 64)
    cos, sin = precompute_freqs_cis(16, 7)
    a, weights_a = explicit(x, (cos, sin))
    b, weights_b = fused(x, (cos, sin))
    assert weights_b is None
    assert weights_a.shape == (2, 4, 7, 7)
    assert close(a, b)


def test_attention_layer_explicit_equals_fused_with_left_padding(tiny_config):
    explicit, fused = _layer_pair(tiny_config)
    x = torch.randn(2, 6, 64)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    mask = combined_mask(attention_mask, 6, 6)  # [B, 1, T, S], with fully masked pad-query rows
    cos, sin = precompute_freqs_cis(16, 6)
    a, _ = explicit(x, (cos, sin), attn_mask=mask)
    b, _ = fused(x, (cos, sin), attn_mask=mask)
    assert not torch.isnan(a).any() and not torch.isnan(b).any()
    assert close(a, b)


def test_attention_layer_output_attentions_shape_and_causality(tiny_config):
    _, fused = _layer_pair(tiny_config)
    x = torch.randn(3, 5, 64)
    cos, sin = precompute_freqs_cis(16, 5)
    out, weights = fused(x, (cos, sin), output_attentions=True)  # asking for weights works on either path
    assert out.shape == (3, 5, 64)
    assert weights.shape == (3, 4, 5, 5)
    assert torch.all(weights.triu(1) == 0.0)
    assert close(weights.sum(-1), torch.ones(3, 4, 5))
    plain, _ = fused(x, (cos, sin))
    assert close(out, plain)


def test_attention_layer_explicit_equals_fused_with_cache(tiny_config):
    explicit, fused = _layer_pair(tiny_config)
    config = tiny_config()
    x = torch.randn(2, 8, 64)
    cos, sin = precompute_freqs_cis(16, 8)
    outs = []
    for layer in (explicit, fused):
        cache = mm.KVCache(config, batch_size=2)
        first, _ = layer(x[:, :5], (cos[:5], sin[:5]), past_key_values=cache)
        second, _ = layer(x[:, 5:], (cos[5:], sin[5:]), past_key_values=cache)  # 3 queries, 8 keys
        outs.append(torch.cat([first, second], dim=1))
    full, _ = explicit(x, (cos, sin))  # the same 8 tokens in one pass, no cache
    assert close(outs[0], outs[1])
    assert close(outs[0], full)
