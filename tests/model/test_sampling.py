"""select_next_token: greedy, top-k, top-p and temperature, checked on logits whose probabilities
are known by construction, by sampling many times with a seeded generator."""

import math

import pytest
import torch

import minimind_ref as mm
from minimind_ref._checks import check_sampling as check_sampling_args

DRAWS = 4000


def sample_many(logits_row, generator_seed=0, draws=DRAWS, **kwargs):
    """Draw `draws` tokens from one row of logits (as a batch of identical rows). [draws]"""
    logits = logits_row.expand(draws, -1)
    return mm.select_next_token(logits, generator=torch.Generator().manual_seed(generator_seed), **kwargs)


def frequencies(tokens, vocab):
    return torch.bincount(tokens, minlength=vocab).double() / tokens.numel()


def logits_from(probs):
    return torch.tensor(probs, dtype=torch.float64).log().float()


def test_temperature_zero_is_argmax():
    torch.manual_seed(0)
    logits = torch.randn(5, 50)
    best = torch.tensor([3, 17, 0, 49, 25])
    logits[torch.arange(5), best] = 10.0  # known best token per row
    assert torch.equal(mm.select_next_token(logits, temperature=0.0), best)
    # top_k and top_p change nothing when greedy
    assert torch.equal(mm.select_next_token(logits, temperature=0.0, top_k=2, top_p=0.1), best)


def test_top_k_support_is_exactly_the_k_best():
    torch.manual_seed(0)
    logits = torch.randn(20)
    k = 5
    best = set(sorted(range(20), key=lambda i: -logits[i].item())[:k])
    tokens = sample_many(logits, temperature=1.0, top_k=k)
    assert set(tokens.tolist()) == best


def test_top_k_one_is_greedy():
    torch.manual_seed(0)
    logits = torch.randn(20)
    tokens = sample_many(logits, temperature=1.5, top_k=1, draws=200)
    assert set(tokens.tolist()) == {int(logits.argmax())}


def test_top_k_renormalises_over_the_kept_tokens():
    torch.manual_seed(0)
    probs = [0.4, 0.1, 0.3, 0.2]
    freq = frequencies(sample_many(logits_from(probs), temperature=1.0, top_k=2), 4)
    assert torch.allclose(freq, torch.tensor([0.4 / 0.7, 0.0, 0.3 / 0.7, 0.0], dtype=torch.float64), atol=0.03)


@pytest.mark.parametrize("top_p,support", [(0.4, {0}), (0.7, {0, 1}), (0.8, {0, 1}), (0.81, {0, 1, 2}),
                                           (0.96, {0, 1, 2, 3}), (1.0, {0, 1, 2, 3})])
def test_top_p_keeps_smallest_prefix_reaching_p(top_p, support):
    torch.manual_seed(0)
    probs = [0.5, 0.3, 0.15, 0.05]
    tokens = sample_many(logits_from(probs), temperature=1.0, top_p=top_p)
    assert set(tokens.tolist()) == support


def test_top_p_works_on_unsorted_vocabulary_and_renormalises():
    torch.manual_seed(0)
    # token ids in another order than their probabilities: 3 (0.5), 0 (0.3), 4 (0.15), 1 (0.04), 2 (0.01)
    probs = [0.3, 0.04, 0.01, 0.5, 0.15]
    tokens = sample_many(logits_from(probs), temperature=1.0, top_p=0.75)
    assert set(tokens.tolist()) == {3, 0}
    freq = frequencies(tokens, 5)
    assert abs(freq[3].item() - 0.5 / 0.8) < 0.03 and abs(freq[0].item() - 0.3 / 0.8) < 0.03


def test_top_p_and_top_k_together():
    torch.manual_seed(0)
    probs = [0.5, 0.3, 0.15, 0.05]
    tokens = sample_many(logits_from(probs), temperature=1.0, top_k=3, top_p=0.9)
    # top-k 3 leaves [0.5, 0.3, 0.15] -> renormalised 0.526, 0.316, 0.158: 0.9 needs all three
    assert set(tokens.tolist()) == {0, 1, 2}


def test_temperature_scales_the_logits():
    torch.manual_seed(0)
    probs = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    for temperature in (0.5, 2.0):
        expected = probs ** (1 / temperature)
        expected /= expected.sum()
        freq = frequencies(sample_many(logits_from(probs.tolist()), temperature=temperature), 3)
        assert torch.allclose(freq, expected, atol=0.03), temperature


def test_seeded_generator_reproduces():
    torch.manual_seed(0)
    logits = torch.randn(8, 100)
    draw = lambda seed: mm.select_next_token(  # noqa: E731
        logits, temperature=1.0, top_k=50, top_p=0.9, generator=torch.Generator().manual_seed(seed))
    assert torch.equal(draw(123), draw(123))
    assert not all(torch.equal(draw(123), draw(seed)) for seed in (1, 2, 3))


def test_output_shape_and_dtype():
    torch.manual_seed(0)
    logits = torch.randn(3, 10)
    for temperature in (0.0, 1.0):
        tokens = mm.select_next_token(logits, temperature=temperature)
        assert tokens.shape == (3,) and tokens.dtype == torch.int64


BAD_ARGUMENTS = [
    (dict(temperature=-1.0), r"temperature must be >= 0"),
    (dict(temperature=math.nan), r"temperature must be >= 0"),
    (dict(temperature=1.0, top_k=0), r"top_k must be an integer in \[1, vocab_size=10\]"),
    (dict(temperature=1.0, top_k=11), r"top_k must be an integer in \[1, vocab_size=10\]"),
    (dict(temperature=1.0, top_k=2.5), r"top_k must be an integer"),
    (dict(temperature=1.0, top_k=True), r"top_k must be an integer"),
    (dict(temperature=1.0, top_p=0.0), r"top_p must be in \(0, 1\]"),
    (dict(temperature=1.0, top_p=1.5), r"top_p must be in \(0, 1\]"),
]
BAD_IDS = ["negative_temperature", "nan_temperature", "top_k_0", "top_k_past_vocab", "top_k_float",
           "top_k_bool", "top_p_0", "top_p_1.5"]


@pytest.mark.parametrize("kwargs,message", BAD_ARGUMENTS, ids=BAD_IDS)
def test_check_sampling_args_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_sampling_args(**{"top_k": None, "top_p": None, **kwargs}, vocab_size=10)


@pytest.mark.parametrize("kwargs,message", BAD_ARGUMENTS, ids=BAD_IDS)
def test_generate_refuses_bad_sampling_arguments(tiny_config, kwargs, message):
    torch.manual_seed(0)
    model = mm.MiniMindForCausalLM(tiny_config(vocab_size=10))
    with pytest.raises(ValueError, match=message):
        model.generate(torch.zeros(1, 2, dtype=torch.long), 1, **kwargs)


@pytest.mark.parametrize("kwargs,message", BAD_ARGUMENTS, ids=BAD_IDS)
def test_select_next_token_refuses_bad_arguments(kwargs, message):
    # select_next_token is exported on its own; the course's rule is that bad input gets an error
    # naming the argument, never a silent wrong answer or a bare shape error from deep in torch.
    torch.manual_seed(0)
    with pytest.raises(ValueError, match=message):
        mm.select_next_token(torch.randn(2, 10), **kwargs)


def test_top_k_keeps_exactly_k_tokens_even_with_ties():
    logits = torch.tensor([[3.0, 1.0, 1.0, 1.0, 0.0]])  # the 2nd best is a three-way tie
    tokens = {int(mm.select_next_token(logits, temperature=1.0, top_k=2, generator=torch.Generator().manual_seed(s)))
              for s in range(200)}
    assert len(tokens) == 2 and 0 in tokens
