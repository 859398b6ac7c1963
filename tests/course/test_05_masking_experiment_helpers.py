"""The mechanisms module 05's experiments rely on, tested on their own: the forward pre-hooks that
swap the mask of minimind_ref's attention layers (exp2, exp3), and the batch padding of exp4."""

from __future__ import annotations

import pytest
import torch
from experiment_scripts import load_experiment

import minimind_ref as mm


@pytest.fixture(scope="module")
def exp2():
    return load_experiment("05", "exp2_causal_alignment")


@pytest.fixture(scope="module")
def exp3():
    return load_experiment("05", "exp3_training_without_mask")


def first_logits(model, ids):
    with torch.no_grad():
        return model(ids).logits[0, 0]  # position 0: under a causal mask it sees only token 0


def test_see_everything_lets_position_0_read_the_future(exp3):
    model = exp3.build_model(seed=0).eval()
    ids = torch.randint(0, exp3.VOCAB, (1, 8), generator=torch.Generator().manual_seed(0))
    changed = ids.clone()
    changed[0, -1] = (ids[0, -1] + 1) % exp3.VOCAB  # only the last token differs
    assert torch.equal(first_logits(model, ids), first_logits(model, changed)), "causal: the future is hidden"
    exp3.remove_causal_mask(model)
    assert not torch.allclose(first_logits(model, ids), first_logits(model, changed)), "no mask: it is not"


def test_see_everything_refuses_a_kv_cache(exp3):
    model = exp3.build_model(seed=0).eval()
    exp3.remove_causal_mask(model)
    with pytest.raises(ValueError, match="without a KV cache"):
        model(torch.zeros(1, 3, dtype=torch.long), use_cache=True)


def test_word_sequences_repeat_the_word(exp3):
    ids = exp3.word_sequences(5, torch.Generator().manual_seed(0))
    assert ids.shape == (5, exp3.LENGTH)
    assert torch.equal(ids[:, exp3.SECOND:exp3.SECOND + exp3.WORD], ids[:, :exp3.WORD])


def test_forced_top_left_mask_changes_nothing_without_a_cache(exp2):
    """With as many queries as keys, top left and bottom right are the same mask."""
    model = exp2.build_model(hidden=32, vocab=16, max_len=16)
    ids = torch.randint(0, 16, (1, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        plain = model(ids).logits
        hooks = [layer.self_attn.register_forward_pre_hook(exp2.force_top_left) for layer in model.model.layers]
        forced = model(ids).logits
    for hook in hooks:
        hook.remove()
    assert torch.allclose(plain, forced, atol=1e-6)


def test_chunk_logits_with_a_cache_equal_one_full_pass(exp2):
    model = exp2.build_model(hidden=32, vocab=16, max_len=16)
    ids = torch.randint(0, 16, (1, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids).logits[:, -3:]
    assert torch.allclose(exp2.chunk_logits(model, ids, new=3), full, atol=1e-5)


def test_mask_torch_applies_is_top_left(exp2):
    torch.manual_seed(0)
    assert torch.equal(exp2.mask_torch_applies(2, 5), exp2.top_left(2, 5))
    assert torch.equal(exp2.mask_torch_applies(5, 5), mm.causal_mask(5, 5))


def test_pad_batch_left_and_right():
    exp4 = load_experiment("05", "exp4_padding_side")  # it imports exp3 from beside it
    prompts = [torch.tensor([5, 6, 7]), torch.tensor([8])]
    ids, mask = exp4.pad_batch(prompts, "left")
    assert ids.tolist() == [[5, 6, 7], [exp4.PAD, exp4.PAD, 8]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    ids, mask = exp4.pad_batch(prompts, "right")
    assert ids.tolist() == [[5, 6, 7], [8, exp4.PAD, exp4.PAD]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
