"""minimind_ref.flash_attention against the oracles: torch's SDPA and explicit attention.

Forward: equal to `torch.nn.functional.scaled_dot_product_attention` (and to the course's explicit
attention) within 1e-5 in float32, for any lengths and tile sizes, causal or not, with fewer or
more queries than keys (causal needs T <= S), and for scores as large as 1e4. Backward: gradients equal autograd through
`minimind_ref.scaled_dot_product_attention`, and `torch.autograd.gradcheck` passes in float64.
Where torch's `is_causal` differs from the course (T != S: torch aligns top-left), the oracle is
SDPA given the explicit bottom-right mask.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import minimind_ref as mm
import minimind_ref.variants as variants
from minimind_ref.variants import flash_attention as readable_flash_attention
from minimind_ref.variants import flash_attention_fast, key_tiles

# Every test runs against both implementations: the readable one that module 08 teaches, and the
# fast one that make bench times. The oracles decide for each; test_the_two_implementations_agree
# holds them to each other as well.
IMPLEMENTATIONS = {"readable": readable_flash_attention, "fast": flash_attention_fast}
flash_attention = readable_flash_attention


@pytest.fixture(autouse=True, params=sorted(IMPLEMENTATIONS))
def implementation(request, monkeypatch):
    monkeypatch.setitem(globals(), "flash_attention", IMPLEMENTATIONS[request.param])
    return request.param

ATOL = 1e-5


def skip_if_fast(implementation):
    if implementation == "fast":
        pytest.skip("flash_attention_fast takes no attn_mask (its lazy running maximum starts from a key "
                    "every row is sure to see); the readable version takes one")


def qkv(query_len, key_len, batch=2, heads=3, dim=16, dtype=torch.float32, requires_grad=False, std=1.0):
    def make(length):
        return (torch.randn(batch, heads, length, dim, dtype=dtype) * std).requires_grad_(requires_grad)

    return make(query_len), make(key_len), make(key_len)


def bottom_right(query_len, key_len):
    """[T, S] bool: query i sees keys j <= i + S - T (works for T > S too, unlike causal_mask)."""
    return torch.ones(query_len, key_len, dtype=torch.bool).tril(key_len - query_len)


def reference_lse(q, k, mask=None, scale=None):
    scores = q @ k.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.logsumexp(scores, dim=-1)  # -inf for a row that sees nothing


def max_error(a, b):
    return (a - b).abs().max().item()


# -- forward: exact ------------------------------------------------------------------------------

SHAPES = [  # (T, S, block_q, block_k): odd lengths, lengths not multiples of the tiles, T != S
    (1, 1, 4, 4), (5, 5, 2, 3), (7, 13, 3, 4), (13, 7, 4, 3), (17, 17, 16, 16), (33, 65, 8, 32),
    (64, 64, 64, 64), (100, 37, 7, 11), (129, 300, 32, 64), (300, 300, 256, 512), (1, 257, 256, 512),
]


@pytest.mark.parametrize("query_len,key_len,block_q,block_k", SHAPES)
@pytest.mark.parametrize("is_causal", [False, True])
def test_equals_sdpa_for_any_lengths_and_tiles(query_len, key_len, block_q, block_k, is_causal):
    if is_causal and query_len > key_len:
        pytest.skip("bottom-right causal needs T <= S: test_causal_refuses_more_queries_than_keys")
    torch.manual_seed(query_len * 1000 + key_len)
    q, k, v = qkv(query_len, key_len)
    mask = bottom_right(query_len, key_len) if is_causal else None
    out, lse = flash_attention(q, k, v, is_causal=is_causal, block_q=block_q, block_k=block_k, return_lse=True)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.shape == q.shape and lse.shape == q.shape[:3]
    assert max_error(out, expected) <= ATOL
    expected_lse = reference_lse(q, k, mask)
    assert torch.equal(torch.isinf(lse), torch.isinf(expected_lse))
    finite = torch.isfinite(expected_lse)
    assert max_error(lse[finite], expected_lse[finite]) <= ATOL


def test_equals_explicit_attention_and_default_tiles():
    torch.manual_seed(0)
    q, k, v = qkv(300, 700, dim=64)
    for is_causal in (False, True):
        expected = mm.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
        assert max_error(flash_attention(q, k, v, is_causal=is_causal), expected) <= ATOL


def test_every_tile_size_gives_the_same_output():
    torch.manual_seed(0)
    q, k, v = qkv(23, 31, dim=8)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right(23, 31))
    for block_q in (1, 2, 5, 23, 64):
        for block_k in (1, 3, 8, 31, 100):
            out = flash_attention(q, k, v, is_causal=True, block_q=block_q, block_k=block_k)
            assert max_error(out, expected) <= ATOL, (block_q, block_k)


def test_custom_scale_and_float64():
    torch.manual_seed(0)
    q, k, v = qkv(9, 12, dtype=torch.float64)
    out = flash_attention(q, k, v, is_causal=True, scale=0.3, block_q=4, block_k=5)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right(9, 12), scale=0.3)
    assert out.dtype == torch.float64
    assert max_error(out, expected) <= 1e-12


def test_non_contiguous_inputs():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 11, 3, 8).transpose(1, 2) for _ in range(3))  # [B, T, H, D] -> [B, H, T, D]
    assert not q.is_contiguous()
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert max_error(flash_attention(q, k, v, is_causal=True, block_q=4, block_k=4), expected) <= ATOL


# -- causal alignment ----------------------------------------------------------------------------

def test_fewer_queries_than_keys_is_bottom_right_aligned():
    """Decoding with a cache: the 3 new tokens are the last 3 of 10, so query 0 sees keys 0..7."""
    torch.manual_seed(0)
    q, k, v = qkv(3, 10)
    out = flash_attention(q, k, v, is_causal=True, block_q=2, block_k=4)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mm.causal_mask(3, 10))
    assert max_error(out, expected) <= ATOL
    assert max_error(out, mm.scaled_dot_product_attention(q, k, v, is_causal=True)) <= ATOL
    # torch's own is_causal aligns to the top left: query 0 would see key 0 only
    assert max_error(out, F.scaled_dot_product_attention(q, k, v, is_causal=True)) > 1e-2


def test_one_new_token_sees_every_key():
    torch.manual_seed(0)
    q, k, v = qkv(1, 50)
    out = flash_attention(q, k, v, is_causal=True, block_k=16)
    assert max_error(out, F.scaled_dot_product_attention(q, k, v)) <= ATOL


def test_causal_refuses_more_queries_than_keys():
    """Bottom-right alignment makes the queries the last tokens of the keys: T <= S. The explicit
    path refuses the same call with the same words (test_attention_properties.py holds them equal)."""
    q, k, v = qkv(5, 4)
    with pytest.raises(ValueError, match="is_causal with 5 queries over 4 keys"):
        flash_attention(q, k, v, is_causal=True)


def test_rows_that_see_no_key_get_zero_output_and_minus_infinite_lse(implementation):
    """A mask that hides every key of some rows (here, a mask with more queries than keys, aligned
    bottom right, so the first T - S rows see nothing). They get output 0 and lse -inf (no NaN),
    like explicit attention's masked rows."""
    skip_if_fast(implementation)
    torch.manual_seed(0)
    q, k, v = qkv(9, 4, requires_grad=True)
    out, lse = flash_attention(q, k, v, attn_mask=bottom_right(9, 4), block_q=4, block_k=2, return_lse=True)
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    assert torch.equal(out[:, :, :5], torch.zeros_like(out[:, :, :5]))
    assert torch.isneginf(lse[:, :, :5]).all() and torch.isfinite(lse[:, :, 5:]).all()
    explicit = mm.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right(9, 4))
    assert max_error(out, explicit) <= ATOL
    out.sum().backward()  # and the gradients stay finite
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    assert torch.equal(q.grad[:, :, :5], torch.zeros_like(q.grad[:, :, :5]))


def test_no_keys_at_all():
    q = torch.randn(1, 2, 3, 4)
    empty = torch.randn(1, 2, 0, 4)
    out, lse = flash_attention(q, empty, empty, return_lse=True)
    assert torch.equal(out, torch.zeros_like(q)) and torch.isneginf(lse).all()
    assert flash_attention(q[:, :, :0], q, q).shape == (1, 2, 0, 4)  # no queries: nothing to do


def test_causal_tiles_skip_the_future_and_mask_only_the_diagonal():
    """key_tiles: which key tiles a row tile visits, checked against causal_mask cell by cell."""
    for query_len, key_len, block_q, block_k in [(12, 12, 4, 4), (8, 20, 3, 5), (20, 8, 6, 4), (7, 7, 16, 2)]:
        visible = bottom_right(query_len, key_len)
        for row_start in range(0, query_len, block_q):
            row_end = min(row_start + block_q, query_len)
            rows = visible[row_start:row_end]
            covered = torch.zeros(key_len, dtype=torch.bool)
            for key_start, key_end, needs_mask in key_tiles(row_start, row_end, key_len, query_len, block_k, True):
                tile = rows[:, key_start:key_end]
                assert tile.any(), "a visited tile holds at least one visible key"
                assert needs_mask == (not bool(tile.all())), "only tiles with hidden keys are masked"
                assert not covered[key_start:key_end].any(), "tiles do not overlap"
                covered[key_start:key_end] = True
            assert torch.equal(covered, rows.any(dim=0)), "every visible key is visited, no other"


def test_causal_visits_about_half_the_score_matrix():
    visited = sum((row_end - row_start) * (key_end - key_start)
                  for row_start in range(0, 4096, 256) for row_end in [row_start + 256]
                  for key_start, key_end, _ in key_tiles(row_start, row_end, 4096, 4096, 512, True))
    assert visited / 4096 ** 2 == pytest.approx(0.5 + 256 / 4096 / 2)  # half, plus the diagonal triangles


# -- large scores ----------------------------------------------------------------------------------

@pytest.mark.parametrize("is_causal", [False, True])
def test_scores_as_large_as_1e4(is_causal):
    """Scores of magnitude 1e4, where exp overflows float32 (past 88.7). Whole-number q and k make
    every score exact in float32 whatever the order of the sums (all below 2^24), so both
    implementations see the same scores and any difference would be the algorithm's."""
    torch.manual_seed(0)
    q = torch.randint(-100, 101, (2, 3, 70, 64)).float()
    k = torch.randint(-100, 101, (2, 3, 90, 64)).float()
    v = torch.randn(2, 3, 90, 64)
    scores = q @ k.transpose(-2, -1) / 8
    assert scores.abs().max() > 1e4 and scores.abs().median() > 1e3
    mask = bottom_right(70, 90) if is_causal else None
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out, lse = flash_attention(q, k, v, is_causal=is_causal, block_q=16, block_k=32, return_lse=True)
    assert torch.isfinite(out).all() and torch.isfinite(lse).all()
    assert max_error(out, expected) <= ATOL
    assert max_error(lse, reference_lse(q, k, mask)) <= 1e-2  # lse ~ 1e4: float32 keeps 1e-3 of it


def test_row_maximum_rising_across_tiles_is_rescaled_exactly():
    """Scores that grow by 1000 at every key tile: each tile raises the row maximum far past the
    last one, so every tile takes the rescaling path. float64 against float64 explicit attention."""
    torch.manual_seed(0)
    key_len, dim, block_k = 40, 8, 8
    q = torch.randn(1, 1, 6, dim, dtype=torch.float64)
    q[..., 0] = 1.0
    k = torch.randn(1, 1, key_len, dim, dtype=torch.float64)
    k[..., 0] = torch.arange(key_len, dtype=torch.float64) * 1000 / block_k  # +1000 per tile of keys
    v = torch.randn(1, 1, key_len, dim, dtype=torch.float64)
    for scale in (1.0, -1.0):  # rising, then falling scores
        out, lse = flash_attention(q, k, v, scale=scale, block_q=4, block_k=block_k, return_lse=True)
        expected = mm.scaled_dot_product_attention(q, k, v, scale=scale)
        assert max_error(out, expected) <= 1e-12
        assert max_error(lse, reference_lse(q, k, scale=scale)) <= 1e-9


def test_large_offset_with_small_differences_in_float64():
    """Every score near 1e4, differing by O(1): only the differences matter, and they survive."""
    torch.manual_seed(0)
    q, k, v = qkv(20, 30, dim=8, dtype=torch.float64)
    q[..., 0], k[..., 0] = 100.0, 100.0 * math.sqrt(8)  # adds 1e4 to every scaled score
    out = flash_attention(q, k, v, is_causal=True, block_q=8, block_k=8)
    expected = mm.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right(20, 30))
    assert max_error(out, expected) <= 1e-9


# -- log-sum-exp -----------------------------------------------------------------------------------

def test_lse_is_the_log_of_the_softmax_denominator():
    torch.manual_seed(0)
    q, k, v = qkv(10, 10)
    out, lse = flash_attention(q, k, v, is_causal=True, block_q=3, block_k=4, return_lse=True)
    weights = torch.exp(q @ k.transpose(-2, -1) / 4 - lse.unsqueeze(-1)).masked_fill(~bottom_right(10, 10), 0.0)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 10), atol=1e-5)  # exp(score - lse) is the softmax
    assert max_error(weights @ v, out) <= ATOL


def test_two_halves_merge_through_their_lse():
    """Attention over keys [A, B] = attention over A and over B, weighted by exp(lse - lse_total)."""
    torch.manual_seed(0)
    q, k, v = qkv(5, 12)
    o1, l1 = flash_attention(q, k[:, :, :7], v[:, :, :7], return_lse=True)
    o2, l2 = flash_attention(q, k[:, :, 7:], v[:, :, 7:], return_lse=True)
    total = torch.logaddexp(l1, l2)
    merged = torch.exp(l1 - total).unsqueeze(-1) * o1 + torch.exp(l2 - total).unsqueeze(-1) * o2
    out, lse = flash_attention(q, k, v, return_lse=True)
    assert max_error(merged, out) <= ATOL and max_error(total, lse) <= ATOL


# -- backward ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("query_len,key_len,is_causal",
                         [(9, 9, True), (5, 14, True), (14, 5, False), (7, 12, True), (33, 40, False)])
def test_gradients_equal_autograd_through_explicit_attention(query_len, key_len, is_causal):
    torch.manual_seed(0)
    q, k, v = qkv(query_len, key_len, requires_grad=True)
    mask = bottom_right(query_len, key_len) if is_causal else None
    grad = torch.randn(2, 3, query_len, 16)
    out = flash_attention(q, k, v, is_causal=is_causal, block_q=4, block_k=3)
    flash_grads = torch.autograd.grad(out, (q, k, v), grad)
    expected = mm.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    explicit_grads = torch.autograd.grad(expected, (q, k, v), grad)
    for name, a, b in zip("qkv", flash_grads, explicit_grads):
        assert max_error(a, b) <= 1e-5, name


def test_gradients_with_default_tiles_and_large_scores():
    torch.manual_seed(0)
    q, k, v = qkv(300, 300, batch=1, heads=2, dim=64, requires_grad=True)
    out = flash_attention(q, k, v, is_causal=True)
    expected = mm.scaled_dot_product_attention(q, k, v, is_causal=True)
    grad = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad(out, (q, k, v), grad), torch.autograd.grad(expected, (q, k, v), grad)):
        assert max_error(a, b) <= 1e-4


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("query_len,key_len", [(5, 5), (3, 7), (4, 6)])
def test_gradcheck_in_float64(query_len, key_len, is_causal):
    torch.manual_seed(0)
    q, k, v = qkv(query_len, key_len, batch=1, heads=2, dim=4, dtype=torch.float64, requires_grad=True)

    def output_and_lse(q, k, v):
        out, lse = flash_attention(q, k, v, is_causal=is_causal, block_q=2, block_k=3, return_lse=True)
        return out, lse.masked_fill(torch.isinf(lse), 0.0)  # rows with no key: lse -inf, no gradient

    assert torch.autograd.gradcheck(output_and_lse, (q, k, v))


def test_backward_saves_no_score_matrix():
    """What autograd keeps for the backward pass: q, k, v, the output and lse, nothing [T, S]."""
    torch.manual_seed(0)
    q, k, v = qkv(64, 64, batch=1, heads=2, dim=8, requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t, lambda t: t):
        flash_attention(q, k, v, is_causal=True, block_q=16, block_k=16)
    assert sorted(saved) == sorted([2 * 64 * 8] * 4 + [2 * 64])  # q, k, v, out: 2 x 64 x 8; lse: 2 x 64


# -- errors -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,error,words", [
    (dict(q=torch.randn(2, 5, 8)), ValueError, "q as [batch, heads, seq, head_dim]"),
    (dict(k=torch.randn(1, 2, 6, 8), v=torch.randn(1, 2, 7, 8)), ValueError, "k and v must agree on batch, heads"),
    (dict(k=torch.randn(1, 2, 6, 4), v=torch.randn(1, 2, 6, 4)), ValueError, "head_dim"),
    (dict(k=torch.randn(1, 1, 6, 8), v=torch.randn(1, 1, 6, 8)), ValueError, "enable_gqa=True"),
    (dict(q=torch.randn(1, 2, 5, 8).long()), TypeError, "q is torch.int64, but attention needs floating-point"),
    (dict(v=torch.randn(1, 2, 6, 8, dtype=torch.float64)), TypeError, "share one dtype"),
    (dict(attn_mask=torch.ones(5, 6, dtype=torch.long)), TypeError, "pass attn_mask.bool()"),
    (dict(block_q=0), ValueError, "block_q (a tile size) must be a positive int, got 0"),
    (dict(block_k=2.5), ValueError, "block_k (a tile size) must be a positive int, got 2.5"),
    (dict(block_k=True), ValueError, "block_k"),
    (dict(is_causal="yes"), TypeError, "is_causal must be True or False"),
    (dict(scale=float("nan")), ValueError, "scale must be finite"),
    (dict(scale="x"), TypeError, "scale must be a number"),
    (dict(q=[[1.0]]), TypeError, "q must be a torch.Tensor"),
])
def test_bad_arguments_are_named(kwargs, error, words, implementation):
    if "attn_mask" in kwargs:
        skip_if_fast(implementation)
    arguments = dict(q=torch.randn(1, 2, 5, 8), k=torch.randn(1, 2, 6, 8), v=torch.randn(1, 2, 6, 8))
    arguments.update(kwargs)
    with pytest.raises(error, match=None) as info:
        flash_attention(**arguments)
    assert words in str(info.value)


def test_the_variants_stand_apart_from_minimind():
    """FlashAttention is the course's, not MiniMind's: minimind_ref does not export it, and its
    docstrings say so."""
    assert not hasattr(mm, "flash_attention")
    assert variants.flash_attention is readable_flash_attention
    for function in (readable_flash_attention, flash_attention_fast):
        assert "Not part of MiniMind" in __import__(function.__module__, fromlist=["_"]).__doc__


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("query_len,key_len", [(37, 37), (20, 45), (19, 44)])
@pytest.mark.parametrize("implementation", ["both"])  # replaces the fixture: runs once, not per implementation
def test_the_two_implementations_agree(query_len, key_len, is_causal, implementation):
    torch.manual_seed(3)
    q = torch.randn(2, 3, query_len, 16, dtype=torch.float64, requires_grad=True)
    k, v = (torch.randn(2, 3, key_len, 16, dtype=torch.float64, requires_grad=True) for _ in range(2))
    results = []
    for function in (readable_flash_attention, flash_attention_fast):
        out, lse = function(q, k, v, is_causal=is_causal, block_q=8, block_k=12, return_lse=True)
        grads = torch.autograd.grad((out * out).sum() + lse.masked_fill(~lse.isfinite(), 0).sum(), (q, k, v))
        results.append((out, lse, *grads))
    for a, b in zip(*results):
        assert torch.allclose(a, b, atol=1e-12, rtol=0, equal_nan=False) or torch.equal(a, b)
