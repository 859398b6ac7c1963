"""The course map (labkit/course_map.py) states the shapes a real forward pass produces, names only
modules that exist, highlights every module, and reads on a slide."""

from __future__ import annotations

import pytest
import torch

import minimind_ref as mm
from labkit.course.slide_deck import CELL_GAP, SLIDE_HEIGHT, SLIDE_WIDTH, title_height
from labkit.course_map import MIN_TEXT_PX, block_rows, forward_steps, map_figures
from labkit.syllabus import PLANNED_MODULES

CONFIGS = {"MiniMind2-Small": mm.MiniMindConfig(), "MiniMind-3": mm.MiniMindConfig.minimind3()}
B, CACHED, T = 2, 4, 3
SIZES = {"B": B, "T": T, "S": CACHED + T}


def _concrete(shape) -> tuple[int, ...]:
    return tuple(SIZES.get(n, n) for n in shape)


def _record_attention(config: mm.MiniMindConfig) -> dict[str, list[tuple[int, ...]]]:
    """Run layer 0's attention of a real model after a prefill, through `model(...)`, recording
    the shapes every step of `minimind_ref.Attention` produces."""
    torch.manual_seed(0)
    model = mm.MiniMindForCausalLM(config.replace(num_hidden_layers=1)).eval()
    attention = model.model.layers[0].self_attn
    seen: dict[str, list[tuple[int, ...]]] = {}

    def shapes(value):
        values = value if isinstance(value, tuple) else (value,)
        return [tuple(v.shape) for v in values if isinstance(v, torch.Tensor)]

    def wrap(method: str, key: str, what=lambda args, out: out):
        original = getattr(attention, method)

        def recorded(*args):
            out = original(*args)
            seen.setdefault(key, []).extend(shapes(what(args, out)))
            return out
        setattr(attention, method, recorded)

    wrap("split_heads", "input", lambda args, out: args[0])
    wrap("split_heads", "split_heads")
    wrap("normalise", "qk_norm")
    wrap("rotate", "rope", lambda args, out: out[:2])
    wrap("append_to_cache", "cache")
    wrap("share_kv", "repeat_kv")
    wrap("scores", "scores")
    wrap("mask", "mask")
    wrap("softmax", "softmax")
    wrap("merge_heads", "weighted_sum", lambda args, out: args[0])
    wrap("merge_heads", "merge_heads")
    for name in ("q_proj", "k_proj", "v_proj"):
        getattr(attention, name).register_forward_hook(
            lambda module, args, out: seen.setdefault("project", []).append(tuple(out.shape)))
    attention.o_proj.register_forward_hook(
        lambda module, args, out: seen.setdefault("o_proj", []).append(tuple(out.shape)))
    with torch.no_grad():
        prefill = model(torch.randint(0, config.vocab_size, (B, CACHED)), use_cache=True)
        seen.clear()
        model(torch.randint(0, config.vocab_size, (B, T)), past_key_values=prefill.past_key_values,
              use_cache=True, output_attentions=True)
    return seen


@pytest.mark.parametrize("name", CONFIGS)
def test_every_shape_on_the_map_is_the_shape_a_forward_pass_produces(name):
    config = CONFIGS[name]
    seen = _record_attention(config)
    steps = forward_steps(config)
    assert {s.key for s in steps if s.tensors} == set(seen), "the map and the layer have the same steps"
    for step in steps:
        if not step.tensors:
            assert step.key == "qk_norm" and not config.qk_norm
            continue
        stated = [_concrete(shape) for label, shape in step.tensors for _ in label.split(",")]
        # k and v are recorded in the order the layer makes them: "k,v" stands for both
        produced = seen[step.key]
        if step.key == "rope":
            stated = stated[:2]
        assert sorted(stated) == sorted(produced[: len(stated)]), f"{name}, {step.name}: map {stated}, layer {produced}"


@pytest.mark.parametrize("name", CONFIGS)
def test_the_block_states_the_models_sizes(name):
    config = CONFIGS[name]
    model = mm.MiniMindForCausalLM(config.replace(num_hidden_layers=1)).eval()
    ids = torch.randint(0, config.vocab_size, (B, T))
    with torch.no_grad():
        logits = model(ids).logits
        hidden = model.model.embed_tokens(ids)
    rows = {row.key: row for row in block_rows(config)}
    assert _concrete(rows["ids"].tensors[0][1]) == tuple(ids.shape)
    assert _concrete(rows["embed"].tensors[0][1]) == tuple(hidden.shape)
    assert _concrete(rows["lm_head"].tensors[0][1]) == tuple(logits.shape)
    assert rows["layer.ffn"].detail == f"width {model.model.layers[0].mlp.gate_proj.out_features}"
    assert sum(key.startswith("layer.") for key in rows) == 6  # norm, attention, +, norm, ffn, +


def test_every_step_names_a_module_of_the_course():
    for config in CONFIGS.values():
        for step in forward_steps(config):
            assert step.modules and set(step.modules) <= set(PLANNED_MODULES), step
        for row in block_rows(config):
            assert set(row.modules) <= set(PLANNED_MODULES), row
    taught = {step.modules[0] for step in forward_steps(CONFIGS["MiniMind-3"])}
    assert {f"{n:02d}" for n in range(1, 8)} <= taught, "modules 01-07 each teach a step"


@pytest.mark.parametrize("module", ["00", *PLANNED_MODULES])
def test_each_module_highlights_its_steps(module):
    figures = map_figures(module)
    assert len(figures) == 2
    bold = [t.get_text() for t in figures[1].axes[0].texts if t.get_fontweight() == "bold"]
    steps = forward_steps(CONFIGS["MiniMind-3"])
    mine = [s.name for s in steps if module in s.modules or module == "10"]
    if module in ("00",):
        assert not any(s.name in bold for s in steps), "notebook 00 draws the map plain"
    else:
        assert mine and all(name in bold for name in mine), (module, mine, bold)
        assert f"module {module}" in figures[1].axes[0].texts[0].get_text()


def test_a_module_that_does_not_exist_is_named():
    with pytest.raises(ValueError, match="no such module"):
        map_figures("42")


def test_text_reads_on_a_slide():
    """Shown alone on a 16:9 slide (slide_deck's room for a figure), no text is under 16 px."""
    for figure in map_figures("05"):
        width, height = (figure.get_size_inches() * figure.dpi).round()
        room = SLIDE_HEIGHT - title_height("A section title of a usual length (9/9)") - CELL_GAP - 8
        scale = min(1.0, SLIDE_WIDTH / width, room / height)
        smallest = min(t.get_fontsize() for t in figure.axes[0].texts if t.get_text()) * figure.dpi / 72 * scale
        assert smallest >= MIN_TEXT_PX, f"text at {smallest:.1f} px on a slide"


def test_it_is_deterministic():
    import io

    def png(figure) -> bytes:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
        return buffer.getvalue()
    assert [png(f) for f in map_figures("03")] == [png(f) for f in map_figures("03")]
