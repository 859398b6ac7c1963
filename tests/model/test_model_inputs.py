"""The model refuses what it cannot read, by name, and never returns a silently wrong loss (issue 17).

Before: an empty batch crashed inside the validator (min() of an empty tensor), labels outside the
vocabulary failed deep in cross_entropy ("Target 500 is out of bounds"), a batch whose labels were
all -100 gave a NaN loss without a word, and a padding mask of the wrong length spoke of a KV cache
that was not there.
"""

import math

import pytest
import torch

import minimind_ref as mm

VOCAB = 50


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               num_key_value_heads=1, vocab_size=VOCAB, max_position_embeddings=64)
    return mm.MiniMindForCausalLM(config).eval()


@pytest.fixture
def ids():
    return torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("shape", [(0, 3), (2, 0)])
def test_empty_batch_is_named(model, shape):
    with pytest.raises(ValueError, match=rf"input_ids has shape \({shape[0]}, {shape[1]}\): give at least one"):
        model(torch.zeros(shape, dtype=torch.long))


@pytest.mark.parametrize("bad,where", [(VOCAB, "labels\\[1, 2\\] is 50"), (-5, "labels\\[1, 2\\] is -5")])
def test_labels_outside_the_vocabulary_are_named(model, ids, bad, where):
    labels = ids.clone()
    labels[1, 2] = bad
    with pytest.raises(ValueError, match=rf"\[0, vocab_size={VOCAB}\) or -100.*{where}"):
        model(ids, labels=labels)


def test_all_labels_ignored_is_an_error_not_nan(model, ids):
    with pytest.raises(ValueError, match="every label that is predicted .* is -100"):
        model(ids, labels=torch.full_like(ids, -100))
    only_first = torch.full_like(ids, -100)
    only_first[:, 0] = ids[:, 0]  # position 0 is never predicted: still nothing to average
    with pytest.raises(ValueError, match="is -100"):
        model(ids, labels=only_first)


def test_one_counted_label_gives_a_finite_loss_equal_to_its_cross_entropy(model, ids):
    labels = torch.full_like(ids, -100)
    labels[0, 3] = ids[0, 3]
    out = model(ids, labels=labels)
    expected = -torch.log_softmax(out.logits[0, 2], dim=-1)[ids[0, 3]]
    assert math.isfinite(out.loss.item()) and torch.allclose(out.loss, expected, atol=1e-6)


def test_float_labels_are_named(model, ids):
    with pytest.raises(ValueError, match="labels must hold integer token ids"):
        model(ids, labels=ids.float())


def test_mask_length_mismatch_without_a_cache_does_not_speak_of_a_cache(model, ids):
    with pytest.raises(ValueError, match="covers 4 positions but there are 5 tokens") as info:
        model(ids, attention_mask=torch.ones(2, 4, dtype=torch.long))
    assert "cache" not in str(info.value)


def test_mask_length_mismatch_with_a_cache_counts_the_cached_tokens(model, ids):
    cache = model(ids, use_cache=True).past_key_values
    with pytest.raises(ValueError, match=r"sees 6 keys \(5 cached \+ 1 new tokens\)"):
        model(ids[:, -1:], attention_mask=torch.ones(2, 5, dtype=torch.long), past_key_values=cache)
