"""One door, in fact (issues 26 and 37), measured by tests/model/code_measure.py: the teaching files
show the ideas and minimind_ref with its checks is no larger than before the checks moved out; each
idea has one name (no checked public function beside an unchecked private twin); every public
function checks its arguments once per call, and those the model runs on every token answer
ordinary arguments in that one call; what the docstrings say about call paths holds on the default
path; and the calls per generated token stay within `make bench`'s target."""

from __future__ import annotations

import ast

import pytest
import torch
from code_measure import (
    PACKAGE,
    TEACHING_FILES,
    calls_made_by_checks,
    calls_of,
    calls_per_token,
    depth_to,
    file_measures,
    package_lines,
    profiled_calls,
    small_model,
    teaching_share,
)

import minimind_ref as mm
import minimind_ref._checks as checks

F = torch.nn.functional


def test_checks_are_at_most_a_tenth_of_the_teaching_files_and_a_fifth_of_each():
    checked, code = teaching_share()
    assert checked <= 0.10 * code, f"{checked} of {code} code lines are argument checks"
    for name in TEACHING_FILES:
        m = file_measures(PACKAGE / name)
        assert m["share"] <= 0.20, f"{name}: {m['checks']} of {m['code']} code lines are argument checks"


def test_minimind_ref_with_its_checks_is_no_larger_than_before_they_moved_out():
    """1,535 lines at 1df987d, the commit before issue 26 moved the checks out (variants/ apart)."""
    assert package_lines() <= 1535


def test_attention_is_four_calls_from_the_model_on_either_path():
    """The default path (flash_attn=True) reaches torch's fused kernel and never the softmax step;
    asking for the weights takes the steps written out, down to Attention.softmax."""
    model, ids = small_model(), torch.randint(0, 64, (2, 6))
    assert model.config.flash_attn
    assert depth_to(model, ids, F, "scaled_dot_product_attention") == 4
    assert depth_to(model, ids, torch, "softmax") is None
    assert depth_to(model, ids, torch, "softmax", output_attentions=True) == 4
    assert depth_to(model, ids, F, "scaled_dot_product_attention", output_attentions=True) is None


@pytest.mark.parametrize("flash_attn", [True, False])
@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("padded", [False, True])
def test_generate_checks_its_arguments_once_and_each_step_in_one_call(flash_attn, use_cache, padded):
    """generate's door runs once however many tokens; the model's door never (its steps call forward);
    each public function a step runs (RoPE, the cache, the masks, the sampling) checks in one call."""
    model = small_model()
    for block in model.model.layers:
        block.self_attn.use_fused = flash_attn
    ids = torch.randint(0, 64, (2, 5), generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]]) if padded else None
    for n in (2, 8):
        def run(n=n):
            return model.generate(ids, n, use_cache=use_cache, attention_mask=mask)
        assert calls_of(run, checks.check_generate.__code__) == 1
        assert calls_of(run, checks.check_forward.__code__) == 0
        assert calls_of(run, checks.check_attention_layer.__code__) == 0
    step_mask = None if mask is None else torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], dim=-1).bool()
    cache = mm.KVCache(model.config, 2)
    with torch.no_grad():
        model(ids, attention_mask=mask, past_key_values=cache, use_cache=True)
        assert calls_made_by_checks(lambda: model.forward(ids[:, :1], step_mask, cache, True)) == 0
        assert calls_made_by_checks(lambda: mm.select_next_token(torch.randn(2, 64))) == 0


def test_model_call_checks_once_and_its_layers_not_again():
    model, ids = small_model(), torch.randint(0, 64, (2, 5))

    def run():
        with torch.no_grad():
            model(ids, attention_mask=torch.ones(2, 5, dtype=torch.long), output_attentions=True)

    assert calls_of(run, checks.check_forward.__code__) == 1
    assert calls_of(run, checks.check_attention_layer.__code__) == 0  # the blocks removed their layers' doors
    layer = mm.Attention(model.config)
    cos, sin = mm.precompute_freqs_cis(model.config.head_dim, 5)
    assert calls_of(lambda: layer(torch.randn(2, 5, 32), (cos, sin)), checks.check_attention_layer.__code__) == 1


def test_generation_calls_per_token():
    """A count, not a timing. 280 per token for this model (2 layers) before issue 26 (1df987d, torch
    2.13.0), 276 after it, with the per-token functions' checks skipped through private twins; issue
    37 gave the twins up: each public function the model runs per token checks in one call (RoPE, the
    cache, fused attention: per layer; the mask, get_seq_length, sampling: per token), and sampling
    refuses a row of logits with no finite maximum (2 calls): 287, 299 for a padded batch of two."""
    model = small_model()
    assert calls_per_token(model) <= 287
    assert calls_per_token(model, batch=2, padded=True) <= 299


def test_generation_calls_per_token_meet_the_bench_target():
    """make bench's target, as a count: Python-level calls per token at most 0.55x transformers'
    (LlamaForCausalLM.generate, same weights), at MiniMind2's depth of 8 layers. The count depends on
    the layers, not on the widths, so small widths measure it as the bench's full model does."""
    from minimind_ref.oracles import hf_twin

    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, vocab_size=64,
                               max_position_embeddings=64)
    model = mm.MiniMindForCausalLM(config).eval()
    twin = hf_twin(model)
    prompt = torch.randint(0, 64, (1, 4), generator=torch.Generator().manual_seed(0))

    def theirs(n):
        with torch.inference_mode():
            twin.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None,
                          pad_token_id=0)

    theirs(2)
    per_token = (profiled_calls(lambda: theirs(16)) - profiled_calls(lambda: theirs(8))) / 8
    assert config.num_hidden_layers == 8 and calls_per_token(model) <= 0.55 * per_token


def _functions(path, public: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and node.name.startswith("_") != public}


def test_one_name_per_idea():
    """No public function beside a private twin that does its work unchecked, and no name twice."""
    for gone in ("explicit_attention", "torch_fused_attention", "padding_and_causal", "check_inputs"):
        assert not any(gone in _functions(p, public=True) for p in PACKAGE.rglob("*.py")), gone
    assert not hasattr(mm.MiniMindModel, "run") and not hasattr(mm.MiniMindForCausalLM, "_run")
    public = {name: path.name for path in sorted(PACKAGE.rglob("*.py")) for name in _functions(path, public=True)}
    seen: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _functions(path, public=True):
            assert name not in seen, f"{name} is defined in {seen.get(name)} and {path.name}"
            seen[name] = path.name
        for name in _functions(path, public=False):
            assert name.lstrip("_") not in public, f"{path.name}: {name} twins {public.get(name.lstrip('_'))}'s"
    for twin in ("_causal_mask", "_combined_mask", "_repeat_kv", "_apply_rotary_pos_emb", "_select_next_token",
                 "_fused_attention"):
        assert not any(twin in _functions(p, public=False) for p in PACKAGE.rglob("*.py")), twin


def test_a_model_saved_whole_keeps_its_doors():
    """torch.save(model) pickles its forward pre-hooks: a door must be picklable, and checks once loaded."""
    import io

    model, buffer = small_model(), io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert torch.equal(loaded(torch.tensor([[1, 2]])).logits, model(torch.tensor([[1, 2]])).logits)
    with pytest.raises(ValueError, match="input_ids must hold integer token ids"):
        loaded(torch.tensor([[1.5]]))
    layer = mm.Attention(model.config)
    torch.save(layer, io.BytesIO())
