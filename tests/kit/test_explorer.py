"""The attention explorer (explorer.py), driven headless: set its widgets as a learner would and
read the figure it drew and the top keys it printed; and once in a real kernel, where the figure
must land in the widget's output area."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless, whatever the environment says

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import minimind_ref as mm  # noqa: E402
from labkit.course.notebook_runner import execute_notebook  # noqa: E402
from labkit.explorer import explore, top_keys  # noqa: E402
from labkit.tiny_data import ByteTokenizer  # noqa: E402

PROMPT = "abcab"  # 5 characters + BOS = 6 tokens
LABELS = ["<s>", "a", "b", "c", "a", "b"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, vocab_size=257, max_position_embeddings=128)
    return mm.MiniMindForCausalLM(config).eval()


def maps(explorer):
    return [ax for ax in explorer.figure.axes if ax.images]


def weights_of(model, text):
    ids = torch.tensor([ByteTokenizer().encode(text)])
    with torch.no_grad():
        return torch.stack(model(ids, output_attentions=True).attentions)[:, 0]  # [L, H, T, T]


def test_it_opens_on_every_layer_and_head_with_token_labels(model):
    explorer = explore(model, ByteTokenizer(), prompt=PROMPT)
    axes = maps(explorer)
    assert len(axes) == 2 * 4
    assert [t.get_text() for t in axes[-1].get_xticklabels()] == LABELS
    assert [t.get_text() for t in axes[0].get_yticklabels()] == LABELS
    assert axes[5].get_title() == "layer 1, head 1"
    assert explorer.query.max == len(LABELS) - 1 and explorer.query.value == len(LABELS) - 1
    weights = weights_of(model, PROMPT)
    torch.testing.assert_close(torch.as_tensor(axes[6].images[0].get_array().data), weights[1, 2].double())


def test_the_menus_pick_a_layer_a_head_or_both(model):
    explorer = explore(model, ByteTokenizer(), prompt=PROMPT)
    weights = weights_of(model, PROMPT)
    explorer.layer.value = 1
    assert [ax.get_title() for ax in maps(explorer)] == [f"layer 1, head {h}" for h in range(4)]
    explorer.head.value = 3
    (ax,) = maps(explorer)
    assert ax.get_title() == "layer 1, head 3"
    torch.testing.assert_close(torch.as_tensor(ax.images[0].get_array().data), weights[1, 3].double())
    explorer.layer.value = "all"
    assert [ax.get_title() for ax in maps(explorer)] == ["layer 0, head 3", "layer 1, head 3"]


def test_the_query_slider_moves_the_outline_and_the_top_keys(model):
    explorer = explore(model, ByteTokenizer(), prompt=PROMPT, layer=0, head=1, top_k=2)
    weights = weights_of(model, PROMPT)[0, 1]  # [T, T]
    explorer.query.value = 3
    (ax,) = maps(explorer)
    (outline,) = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert outline.get_y() == pytest.approx(3 - 0.5) and outline.get_width() == len(LABELS)
    expected = top_keys(weights[3], LABELS, 2)
    assert explorer.top_keys_text.splitlines()[0] == "query 3 'c': the 2 keys it weighs most"
    line = explorer.top_keys_text.splitlines()[1]
    assert line == "  layer 0, head 1: " + ", ".join(f"{p} {l!r} {w:.2f}" for p, l, w in expected)
    assert "&lt;s&gt;" in explore(model, ByteTokenizer(), prompt=PROMPT, layer=0, head=0, query=0).top_keys_html.value
    explorer.top_k.value = 4
    assert explorer.top_keys_text.splitlines()[1].count("'") == 2 * 4


def test_a_new_prompt_recomputes_the_weights_and_the_slider(model):
    explorer = explore(model, ByteTokenizer(), prompt=PROMPT, layer=1, head=0)
    explorer.query.value = 2
    explorer.prompt.value = "hello world"
    assert explorer.query.max == len("hello world") and explorer.query.value == len("hello world")
    (ax,) = maps(explorer)
    assert [t.get_text() for t in ax.get_xticklabels()] == ByteTokenizer().labels(ByteTokenizer().encode("hello world"))
    torch.testing.assert_close(torch.as_tensor(ax.images[0].get_array().data),
                               weights_of(model, "hello world")[1, 0].double())
    explorer.prompt.value = ""  # BOS alone: one token, still drawn
    assert explorer.query.max == 0 and len(maps(explorer)) == 1


def test_long_prompts_are_cut_and_bad_choices_are_named(model):
    explorer = explore(model, ByteTokenizer(), prompt="x" * 100, max_tokens=20)
    assert explorer.weights.shape[-1] == 20
    with pytest.raises(ValueError, match="layer"):
        explore(model, ByteTokenizer(), layer=2)
    with pytest.raises(ValueError, match="head"):
        explore(model, ByteTokenizer(), head=-1)


def test_top_keys_sorts_by_weight():
    row = torch.tensor([0.1, 0.6, 0.0, 0.3])
    assert top_keys(row, list("wxyz"), 2) == [(1, "x", pytest.approx(0.6)), (3, "z", pytest.approx(0.3))]
    assert len(top_keys(row, list("wxyz"), 10)) == 4
    with pytest.raises(ValueError, match="row"):
        top_keys(row, list("xyz"))


@pytest.mark.parametrize("arguments, error, message", [
    ({"layer": "0"}, TypeError, "layer must be \"all\" or an int from 0 to 1, got the string '0' (write 0 without "
                                "quotes)"),
    ({"layer": 1.0}, TypeError, "layer must be a whole number (an int) from 0 to 1, got float 1.0"),
    ({"layer": True}, TypeError, "got bool True"),
    ({"head": float("nan")}, TypeError, "head must be a whole number (an int) from 0 to 3, got float nan"),
    ({"max_tokens": 2.5}, TypeError, "max_tokens must be a whole number (an int) of at least 1, got float 2.5"),
    ({"max_tokens": 0}, ValueError, "max_tokens must be a whole number of at least 1, got 0"),
    ({"top_k": float("nan")}, TypeError, "top_k must be a whole number (an int) from 1 to 10, got float nan"),
    ({"top_k": 11}, ValueError, "top_k must be a whole number from 1 to 10, got 11"),
    ({"query": 6}, ValueError, "query must be a position of the prompt's 6 tokens, 0 to 5 (or None for the last)"),
    ({"query": -1}, ValueError, "query must be a whole number of at least 0, got -1"),
    ({"prompt": None}, TypeError, "prompt must be a string, got NoneType None"),
    ({"prompt": "\ud800"}, ValueError, "the prompt cannot be encoded"),
])
def test_each_wrong_argument_is_named_where_explore_was_called(model, arguments, error, message):
    with pytest.raises(error) as raised:
        explore(model, ByteTokenizer(), **{"prompt": PROMPT, **arguments})
    assert str(raised.value).startswith("explore: ") and message in str(raised.value)


def test_a_model_and_a_tokenizer_of_the_wrong_kind_are_named(model):
    with pytest.raises(TypeError, match="explore: model must be a MiniMind model"):
        explore(None, ByteTokenizer())
    with pytest.raises(TypeError, match=r"explore: tokenizer must have encode\(text\) -> ids"):
        explore(model, "abc")

    class Silent:  # a tokenizer that gives no token for an empty prompt
        def encode(self, text):
            return list(text.encode())

        def labels(self, ids):
            return [chr(i) for i in ids]

    with pytest.raises(ValueError, match="explore: the prompt '' has no tokens"):
        explore(model, Silent(), prompt="")
    explorer = explore(model, Silent(), prompt="ab")
    before = explorer.weights
    explorer.prompt.value = ""  # typed in the box: said under the maps, the last prompt's maps kept
    assert explorer.weights is before and "no tokens" in explorer.top_keys_html.value


class Fixed:
    """A tokenizer that returns what it was given, whatever the prompt: a tokenizer of another model."""

    def __init__(self, ids):
        self.ids = ids

    def encode(self, text):
        return self.ids

    def labels(self, ids):
        return [str(i) for i in ids]


@pytest.mark.parametrize("ids, error, message", [
    ([1, 257], ValueError, "each token id tokenizer.encode(prompt) returns must be a whole number from 0 to 256, "
                           "got 257"),
    ([-1], ValueError, "from 0 to 256, got -1"),
    (["a", "b"], TypeError, "must be a whole number (an int) from 0 to 256, got str 'a'"),
    ([1.0], TypeError, "got float 1.0"),
    ([[1, 2]], TypeError, "got list [1, 2]"),
    (None, TypeError, "tokenizer.encode(prompt) must return a list of token ids, got NoneType None"),
    (torch.tensor([[1, 2]]), TypeError, "must return a list of token ids, got Tensor"),
])
def test_what_the_tokenizer_returns_is_named_as_the_tokenizers(model, ids, error, message):
    with pytest.raises(error) as raised:
        explore(model, Fixed(ids), prompt="x")
    assert str(raised.value).startswith("explore: ") and message in str(raised.value)
    explorer = explore(model, Fixed(torch.tensor([1, 2, 3])), prompt="x")  # a tensor of ids is a list of ids
    explorer.tokenizer = Fixed([1, 999])
    explorer.prompt.value = "typed"  # typed in the box: said under the maps, the last prompt's maps kept
    assert explorer.weights.shape[-1] == 3 and "got 999" in explorer.top_keys_html.value


def test_a_model_without_weights_is_named(model):
    with pytest.raises(ValueError, match="explore: model is on the meta device: it has shapes but no weights"):
        explore(mm.MiniMindForCausalLM(model.config).to("meta"), ByteTokenizer(), prompt=PROMPT)


def test_numpy_integers_are_integers_and_long_prompts_stop_at_the_models_positions(model):
    explorer = explore(model, ByteTokenizer(), prompt="y" * 300, layer=np.int64(1), head=np.int32(2),
                       top_k=np.int64(2), query=np.int64(3), max_tokens=10 ** 30)
    assert explorer.layer.value == 1 and explorer.head.value == 2 and explorer.query.value == 3
    assert explorer.weights.shape[-1] == model.config.max_position_embeddings


CHOICE = st.one_of(st.integers(-2, 12), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                   st.sampled_from(["all", "All", "1", "", 10 ** 30, [0]]), st.integers(0, 3).map(np.int64))


@settings(derandomize=True, database=None, deadline=None, max_examples=60,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(layer=CHOICE, head=CHOICE, query=CHOICE, top_k=CHOICE, max_tokens=CHOICE)
def test_explore_draws_what_it_was_asked_or_names_the_argument(model, layer, head, query, top_k, max_tokens):
    try:
        explorer = explore(model, ByteTokenizer(), prompt=PROMPT, layer=layer, head=head, query=query, top_k=top_k,
                           max_tokens=max_tokens)
    except (TypeError, ValueError) as error:
        assert str(error).startswith("explore: ") and len(str(error)) < 300
        return
    finally:
        plt.close("all")
    assert explorer.layer.value == layer and explorer.head.value == head and explorer.top_k.value == top_k
    assert explorer.query.value == (explorer.query.max if query is None else query)


@settings(derandomize=True, database=None, deadline=None, max_examples=150)
@given(k=CHOICE, row=st.one_of(st.lists(st.floats(allow_nan=True), min_size=3, max_size=3).map(torch.tensor),
                               st.sampled_from([[0.1, 0.2, 0.7], torch.tensor([1, 2, 3]), torch.ones(3, 1),
                                                torch.ones(3, dtype=torch.complex64), torch.ones(3, device="meta"),
                                                torch.ones(3).to_sparse(), np.ones(3), [[0.1], [0.2, 0.7]],
                                                torch.tensor([1e308, -1e308, 0.0], dtype=torch.float64)])),
       labels=st.sampled_from([list("abc"), ("a", "b", "c"), "abc", None, ["a"], 3]))
def test_top_keys_lists_at_most_k_keys_or_names_the_argument(k, row, labels):
    try:
        keys = top_keys(row, labels, k)
    except (TypeError, ValueError) as error:
        assert str(error).startswith("top_keys: ") and len(str(error)) < 300
        return
    positions = [p for p, _, _ in keys]
    assert len(keys) == min(k, 3) and len(set(positions)) == len(positions)


def test_in_a_kernel_the_figure_lands_in_the_widget(tmp_path):
    source = """
import torch
import minimind_ref as mm
from labkit.explorer import explore
from labkit.tiny_data import ByteTokenizer
torch.manual_seed(0)
model = mm.MiniMindForCausalLM(mm.MiniMindConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                 vocab_size=257, max_position_embeddings=64)).eval()
explorer = explore(model, ByteTokenizer(), prompt="abab")
explorer.head.value = 1
explorer
"""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    execute_notebook(notebook, tmp_path)
    (cell,) = notebook.cells
    assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    assert not [o for o in cell.outputs if "image/png" in o.get("data", {})], "the figure goes in the widget only"
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in cell.outputs)
    state = notebook.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    areas = [m["state"].get("outputs", []) for m in state.values() if m["model_name"] == "OutputModel"]
    (outputs,) = [a for a in areas if a]  # one output area, holding the latest figure only
    assert len(outputs) == 1 and "image/png" in outputs[0]["data"]


# ------------------------------------------------------------------------ events in any order


def shown_selection(explorer):
    """What the figure on show says it is, and the maps it holds: (suptitle, map titles)."""
    return explorer.figure._suptitle.get_text(), [ax.get_title() for ax in maps(explorer)]


def expected_selection(explorer):
    layers = range(2) if explorer.layer.value == "all" else [explorer.layer.value]
    heads = range(4) if explorer.head.value == "all" else [explorer.head.value]
    titles = [f"layer {l}, head {h}" for l in layers for h in heads]
    return explorer.title(), titles if len(titles) > 1 else [titles[0]]


@pytest.mark.parametrize("changes", [
    [("layer", "all"), ("head", "all")],
    [("head", "all"), ("layer", "all")],
    [("layer", 1), ("head", 3), ("layer", "all"), ("query", 2), ("head", "all")],
])
def test_changes_that_arrive_while_a_figure_is_drawn_are_never_lost(model, monkeypatch, changes):
    """A front end may deliver a control's change while the figure of an earlier one is still being
    drawn (the learner moves the menus faster than the figure draws). Here every change after the
    first arrives in the middle of a drawing; the figure on show must end as the controls say."""
    import labkit.explorer as explorer_module

    explorer = explore(model, ByteTokenizer(), prompt=PROMPT, layer=0, head=2)
    pending = list(changes[1:])
    draw = explorer_module.show_heatmaps

    def slow_draw(*args, **kwargs):
        if pending:  # the next event arrives now, mid-draw
            name, value = pending.pop(0)
            getattr(explorer, name).value = value
        return draw(*args, **kwargs)

    monkeypatch.setattr(explorer_module, "show_heatmaps", slow_draw)
    name, value = changes[0]
    getattr(explorer, name).value = value
    assert not pending
    assert explorer.drawn_state == explorer.state()
    assert shown_selection(explorer) == expected_selection(explorer)
    query = explorer.query.value
    weights = weights_of(model, PROMPT)
    for ax, title in zip(maps(explorer), shown_selection(explorer)[1]):
        layer, head = (int(word.strip(",")) for word in title.split()[1::2])
        torch.testing.assert_close(torch.as_tensor(ax.images[0].get_array().data), weights[layer, head].double())
        (outline,) = [p for p in ax.patches if isinstance(p, Rectangle)]
        assert outline.get_y() == pytest.approx(query - 0.5)
