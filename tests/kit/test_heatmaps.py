"""show_heatmaps: layouts, one shared colour scale, labels, titles, inputs of every kind, clear
errors, and one figure shown once in a real notebook kernel."""

import matplotlib

matplotlib.use("Agg")  # headless, whatever the environment says

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_cells import run_cells  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from labkit.heatmaps import show_heatmaps  # noqa: E402

TOKENS = ["The", "cat", "sat", "down"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def maps(fig):
    """The axes that hold a heatmap, in grid order (the colour bar holds no image)."""
    return [ax for ax in fig.axes if ax.images]


def visible_labels(axis):
    return [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]


def shown_x(ax):
    return visible_labels(ax.xaxis) if ax.xaxis.get_tick_params()["labelbottom"] else []


def shown_y(ax):
    return visible_labels(ax.yaxis) if ax.yaxis.get_tick_params()["labelleft"] else []


# ------------------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("shape, grid", [((4, 4), (1, 1)), ((3, 4, 5), (1, 3)), ((2, 3, 4, 5), (2, 3))])
def test_one_image_per_map_in_the_right_grid(shape, grid):
    fig = show_heatmaps(torch.rand(shape))
    assert isinstance(fig, Figure)
    axes = maps(fig)
    assert len(axes) == grid[0] * grid[1]
    for ax in axes:
        assert ax.images[0].get_array().shape == shape[-2:]
    rows = sorted({round(ax.get_position().y0, 3) for ax in axes})
    cols = sorted({round(ax.get_position().x0, 3) for ax in axes})
    assert (len(rows), len(cols)) == grid


def test_the_maps_hold_the_weights_in_grid_order():
    weights = torch.arange(2 * 3 * 2 * 2, dtype=torch.float32).reshape(2, 3, 2, 2)
    axes = maps(show_heatmaps(weights))
    for i, ax in enumerate(axes):
        np.testing.assert_array_equal(ax.images[0].get_array(), weights.reshape(6, 2, 2)[i].numpy())


def test_it_never_calls_show(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("show_heatmaps called plt.show()"))
    fig = show_heatmaps(torch.rand(2, 3, 3))
    assert plt.fignum_exists(fig.number)  # left open: a notebook shows it, a script saves it


def test_savefig_writes_a_png(tmp_path):
    path = tmp_path / "maps.png"
    show_heatmaps(torch.rand(2, 2, 3, 3), x_labels=list("abc"), annotate=True, suptitle="all").savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_module_docstring_example_runs(tmp_path, monkeypatch):
    import doctest

    import labkit.heatmaps as module

    monkeypatch.chdir(tmp_path)  # the example saves attention.png
    result = doctest.testmod(module)
    assert result.attempted >= 7 and result.failed == 0
    assert (tmp_path / "attention.png").is_file()


# ------------------------------------------------------------------------------ colour scale


def test_every_map_shares_one_scale_and_one_colorbar():
    weights = torch.rand(2, 3, 4, 4)
    weights[1, 2] *= 5  # one map far brighter than the rest
    fig = show_heatmaps(weights)
    axes = maps(fig)
    norms = {id(ax.images[0].norm) for ax in axes}
    assert len(norms) == 1
    assert len(fig.axes) == len(axes) + 1  # one colour bar for all
    assert sum(ax.images[0].colorbar is not None for ax in axes) == 1


def test_default_scale_starts_at_zero_for_weights_and_at_the_minimum_for_scores():
    weights = torch.tensor([[0.2, 0.8], [0.5, 0.5]])
    norm = maps(show_heatmaps(weights))[0].images[0].norm
    assert (norm.vmin, norm.vmax) == (0.0, pytest.approx(0.8))
    scores = torch.tensor([[[-3.0, 1.0], [0.5, 2.0]], [[0.0, -1.0], [1.5, 0.25]]])
    norm = maps(show_heatmaps(scores))[1].images[0].norm
    assert (norm.vmin, norm.vmax) == (-3.0, 2.0)


def test_given_scale_is_used_and_one_end_can_default():
    norm = maps(show_heatmaps(torch.rand(3, 3), vmin=-1, vmax=2))[0].images[0].norm
    assert (norm.vmin, norm.vmax) == (-1.0, 2.0)
    norm = maps(show_heatmaps(torch.full((3, 3), 0.25), vmax=1))[0].images[0].norm
    assert (norm.vmin, norm.vmax) == (0.0, 1.0)


def test_a_constant_map_still_gets_a_scale():
    norm = maps(show_heatmaps(torch.zeros(3, 3)))[0].images[0].norm
    assert norm.vmin < norm.vmax


def test_no_colorbar_when_asked():
    fig = show_heatmaps(torch.rand(2, 3, 3), colorbar=False)
    assert len(fig.axes) == 2


# ------------------------------------------------------------------------------- labels, titles


def test_tokens_label_the_bottom_row_and_left_column_only():
    fig = show_heatmaps(torch.rand(2, 2, 4, 4), x_labels=TOKENS)
    (a, b), (c, d) = np.array(maps(fig)).reshape(2, 2)
    assert shown_x(c) == shown_x(d) == TOKENS
    assert shown_x(a) == shown_x(b) == []
    assert shown_y(a) == shown_y(c) == TOKENS  # y defaults to x when T == S
    assert shown_y(b) == shown_y(d) == []
    assert [ax.get_xlabel() for ax in (a, b, c, d)] == ["", "", "key", "key"]
    assert [ax.get_ylabel() for ax in (a, b, c, d)] == ["query", "", "query", ""]


def test_long_x_labels_are_rotated_single_characters_are_not():
    ax = maps(show_heatmaps(torch.rand(4, 4), x_labels=TOKENS))[0]
    assert all(t.get_rotation() > 0 for t in ax.get_xticklabels())
    ax = maps(show_heatmaps(torch.rand(4, 4), x_labels="abcd"))[0]
    assert all(t.get_rotation() == 0 for t in ax.get_xticklabels())


def test_separate_query_labels_and_custom_axis_names():
    ax = maps(show_heatmaps(torch.rand(2, 4), x_labels=TOKENS, y_labels=["q1", "q2"], xlabel="k", ylabel="q"))[0]
    assert shown_x(ax) == TOKENS and shown_y(ax) == ["q1", "q2"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("k", "q")


def test_without_labels_the_axes_show_whole_positions():
    ax = maps(show_heatmaps(torch.rand(2, 5), x_labels=TOKENS + ["."]))[0]
    assert shown_x(ax) == TOKENS + ["."]
    assert all(float(t).is_integer() for t in ax.get_yticks() if -0.5 <= t <= 1.5)  # T != S: no default


def test_label_sequences_of_any_kind_become_strings():
    ax = maps(show_heatmaps(torch.rand(3, 3), x_labels=torch.tensor([7, 8, 9])))[0]
    assert shown_x(ax) == ["7", "8", "9"]


def test_many_tokens_get_thinned_labels():
    tokens = [f"t{i}" for i in range(100)]
    ax = maps(show_heatmaps(torch.rand(100, 100), x_labels=tokens))[0]
    shown = shown_x(ax)
    assert 10 <= len(shown) <= 40
    assert shown[0] == "t0" and set(shown) <= set(tokens)
    assert len(shown_x(maps(show_heatmaps(torch.rand(30, 30), x_labels=tokens[:30]))[0])) == 30


def test_default_titles():
    assert [ax.get_title() for ax in maps(show_heatmaps(torch.rand(3, 3)))] == [""]
    assert [ax.get_title() for ax in maps(show_heatmaps(torch.rand(3, 2, 2)))] == ["head 0", "head 1", "head 2"]
    titles = [ax.get_title() for ax in maps(show_heatmaps(torch.rand(2, 2, 2, 2)))]
    assert titles == ["layer 0, head 0", "layer 0, head 1", "layer 1, head 0", "layer 1, head 1"]
    titles = [ax.get_title() for ax in maps(show_heatmaps(torch.rand(1, 2, 2, 2), row_name="batch", col_name="map"))]
    assert titles == ["batch 0, map 0", "batch 0, map 1"]


def test_custom_titles_flat_nested_and_single():
    weights = torch.rand(2, 2, 3, 3)
    flat = [ax.get_title() for ax in maps(show_heatmaps(weights, titles=["a", "b", "c", "d"]))]
    nested = [ax.get_title() for ax in maps(show_heatmaps(weights, titles=[["a", "b"], ["c", "d"]]))]
    assert flat == nested == ["a", "b", "c", "d"]
    assert [ax.get_title() for ax in maps(show_heatmaps(torch.rand(3, 3), titles="causal"))] == ["causal"]
    fig = show_heatmaps(torch.rand(2, 3, 3), titles=["", ""], suptitle="Layer 0")
    assert [ax.get_title() for ax in maps(fig)] == ["", ""]
    assert fig._suptitle.get_text() == "Layer 0"


# ------------------------------------------------------------------------------------- inputs


def test_a_tensor_that_requires_grad():
    weights = torch.rand(2, 3, 3, requires_grad=True).softmax(-1)
    assert len(maps(show_heatmaps(weights))) == 2


def test_a_bool_mask_is_drawn_as_zeros_and_ones():
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    image = maps(show_heatmaps(mask, x_labels=TOKENS, annotate=True, fmt=".0f"))[0].images[0]
    np.testing.assert_array_equal(image.get_array(), mask.numpy().astype(float))
    assert (image.norm.vmin, image.norm.vmax) == (0.0, 1.0)


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.float16, torch.bfloat16, torch.float64])
def test_other_dtypes(dtype):
    image = maps(show_heatmaps(torch.arange(6).reshape(2, 3).to(dtype)))[0].images[0]
    np.testing.assert_array_equal(image.get_array(), np.arange(6.0).reshape(2, 3))


def test_numpy_arrays_and_masked_arrays():
    assert len(maps(show_heatmaps(np.random.rand(2, 2, 3, 3)))) == 4
    masked = np.ma.masked_array(np.ones((2, 2)), mask=[[False, True], [False, False]])
    image = maps(show_heatmaps(masked))[0].images[0]
    assert image.get_array().mask.tolist() == [[False, True], [False, False]]


def test_nan_and_inf_are_blank_and_left_out_of_the_scale():
    scores = torch.tensor([[0.5, float("-inf")], [float("nan"), 2.0]])
    ax = maps(show_heatmaps(scores, annotate=True))[0]
    image = ax.images[0]
    assert image.get_array().mask.tolist() == [[False, True], [True, False]]
    assert (image.norm.vmin, image.norm.vmax) == (0.0, 2.0)
    assert sorted(t.get_text() for t in ax.texts) == ["-inf", "0.50", "2.00"]  # NaN: no text


# ----------------------------------------------------------------------------------- annotate


def test_annotate_writes_every_value_with_contrast():
    weights = torch.tensor([[0.0, 1.0, 0.25], [0.5, 0.75, 1.0]])
    axes = maps(show_heatmaps(torch.stack([weights, weights]), annotate=True))
    for ax in axes:
        assert len(ax.texts) == 2 * 3
    texts = {(t.get_position(), t.get_text()): t.get_color() for t in axes[0].texts}
    assert texts[((1, 0), "1.00")] == "black"  # viridis: yellow at the top of the scale
    assert texts[((0, 0), "0.00")] == "white"  # and dark purple at the bottom
    assert {t.get_text() for t in maps(show_heatmaps(weights, annotate=True, fmt=".1f"))[0].texts} >= {"0.2", "0.8"}
    assert len(maps(show_heatmaps(weights, annotate=False))[0].texts) == 0


# -------------------------------------------------------------------------------------- sizes


def test_map_size_sets_the_size_of_each_map():
    small = show_heatmaps(torch.rand(2, 3, 3), map_size=1.5).get_size_inches()
    large = show_heatmaps(torch.rand(2, 3, 3), map_size=(4, 3)).get_size_inches()
    assert large[0] - small[0] == pytest.approx(2 * (4 - 1.5))
    assert large[1] - small[1] == pytest.approx(3 - 1.5)


def test_default_size_grows_with_tokens_within_bounds():
    tiny = show_heatmaps(torch.rand(2, 2)).get_size_inches()
    medium = show_heatmaps(torch.rand(12, 12)).get_size_inches()
    huge = show_heatmaps(torch.rand(500, 500)).get_size_inches()
    assert tiny[0] < medium[0] < huge[0] <= 12
    grid = show_heatmaps(torch.rand(8, 8, 6, 6)).get_size_inches()
    assert grid[0] <= 12 + 8 * 0.3 and grid[1] <= 22, "about as wide as a notebook shows at full size"


def label_boxes(fig):
    """Every visible tick label's font size and its box on the drawn figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in maps(fig):
        for axis in (ax.xaxis, ax.yaxis):
            for label in axis.get_ticklabels():
                if label.get_visible() and label.get_text():
                    found.append((axis, label.get_fontsize(), label.get_window_extent(renderer)))
    return found


@pytest.mark.parametrize("weights, count, size", [
    (torch.rand(2, 4, 40, 40), 40, None),   # 09: a grid of layers x heads
    (torch.rand(3, 4, 12, 12), 12, 2.4),    # 04: rows of eight-head comparisons at map_size=2.4
    (torch.rand(8, 16, 16), 16, None),      # a row of eight heads
    (torch.rand(300, 300), 300, None),
])
def test_tick_labels_stay_readable_and_never_overlap(weights, count, size):
    tokens = [f"tok{i}" for i in range(count)]
    fig = show_heatmaps(weights, x_labels=tokens, map_size=size)
    boxes = label_boxes(fig)
    assert boxes and min(points for _, points, _ in boxes) >= 9
    for axis in {id(a): a for a, _, _ in boxes}.values():
        mine = sorted((box for a, _, box in boxes if a is axis), key=lambda b: (b.x0, b.y0))
        for before, after in zip(mine, mine[1:]):
            assert not before.overlaps(after), f"two tick labels overlap: {before} and {after}"
    # the figure is shown at full size in a notebook, so 9 points stay 9 points on the screen
    assert fig.get_size_inches()[0] <= 12.5


# ------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("weights, words", [
    (torch.rand(5), ["2-D [T, S]", "got 1-D with shape [5]", "weights[None]"]),
    (torch.rand(2, 1, 2, 3, 3), ["got 5-D with shape [2, 1, 2, 3, 3]", "weights[:, 0]"]),
    (torch.rand(2, 0, 3), ["weights has shape [2, 0, 3]", "at least 1"]),
    (torch.rand(0, 3), ["weights has shape [0, 3]"]),
    (torch.full((2, 2), float("nan")), ["no finite value", "all 4 entries are NaN or inf"]),
    (torch.rand(2, 2, dtype=torch.complex64), ["must be real"]),
    (np.array([["a", "b"]]), ["must hold numbers"]),
])
def test_bad_weights(weights, words):
    with pytest.raises(ValueError) as error:
        show_heatmaps(weights)
    for word in words:
        assert word in str(error.value)


def test_weights_of_the_wrong_type():
    with pytest.raises(TypeError, match="weights must be a torch.Tensor or a numpy array, got str"):
        show_heatmaps("attention")


def test_wrong_label_counts():
    with pytest.raises(ValueError, match=r"x_labels has 3 labels, expected 4 \(S, the number of keys"):
        show_heatmaps(torch.rand(4, 4), x_labels=TOKENS[:3])
    with pytest.raises(ValueError, match=r"y_labels has 4 labels, expected 2 \(T, the number of queries"):
        show_heatmaps(torch.rand(2, 4), x_labels=TOKENS, y_labels=TOKENS)
    with pytest.raises(ValueError, match=r"x_labels has 11 labels.*one string.*text.split\(\)"):
        show_heatmaps(torch.rand(3, 3), x_labels="the cat sat")


def test_wrong_titles():
    with pytest.raises(ValueError, match=r"titles has 3 entries, expected 4 \(one per map: 2 rows x 2 columns\)"):
        show_heatmaps(torch.rand(2, 2, 3, 3), titles=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"titles is nested with row lengths \[2, 1\], expected 2 rows of 2"):
        show_heatmaps(torch.rand(2, 2, 3, 3), titles=[["a", "b"], ["c"]])
    with pytest.raises(ValueError, match=r"titles is one string, but there are 3 maps.*suptitle"):
        show_heatmaps(torch.rand(3, 3, 3), titles="abc")
    with pytest.raises(TypeError, match="titles must be a list of strings, got int"):
        show_heatmaps(torch.rand(3, 3), titles=3)


def test_bad_colour_scales():
    with pytest.raises(ValueError, match=r"vmin must be below vmax, got vmin=1 and vmax=1 \(both given\)"):
        show_heatmaps(torch.rand(3, 3), vmin=1, vmax=1)
    with pytest.raises(ValueError,
                       match=r"vmin=2 and vmax=0.5 \(vmax defaulted to the largest value in weights, 0.5\)"):
        show_heatmaps(torch.full((2, 2), 0.5), vmin=2)
    with pytest.raises(ValueError, match=r"vmin=0 and vmax=-1 \(vmin defaulted to min\(0, the smallest value"):
        show_heatmaps(torch.rand(2, 2), vmax=-1)
    with pytest.raises(ValueError, match="vmax must be a finite number, got nan"):
        show_heatmaps(torch.rand(2, 2), vmax=float("nan"))
    with pytest.raises(TypeError, match="vmin must be a number, got str"):
        show_heatmaps(torch.rand(2, 2), vmin="low")


def test_bad_drawing_options():
    with pytest.raises(ValueError, match="cmap 'viridiss' is not a matplotlib colormap name"):
        show_heatmaps(torch.rand(2, 2), cmap="viridiss")
    with pytest.raises(ValueError, match="fmt must be a format spec for a number such as '.2f', got '%d'"):
        show_heatmaps(torch.rand(2, 2), annotate=True, fmt="%d")
    with pytest.raises(ValueError, match=r"map_size must be positive, got \(2, 0\)"):
        show_heatmaps(torch.rand(2, 2), map_size=(2, 0))
    with pytest.raises(ValueError, match="map_size must be a number of inches or"):
        show_heatmaps(torch.rand(2, 2), map_size="big")
    with pytest.raises(ValueError, match=r"map_size is in inches per map, at most 20; got 100000.0"):
        show_heatmaps(torch.rand(2, 2), map_size=1e5)


def test_a_large_map_is_drawn_quickly_and_refuses_a_number_per_cell():
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"annotate=True writes a number in each of the 1000 x 1000 cells"):
        show_heatmaps(torch.rand(1000, 1000), annotate=True)
    fig = show_heatmaps(torch.rand(1000, 1000), x_labels=[str(i) for i in range(1000)])
    fig.canvas.draw()
    assert not maps(fig)[0].texts, "annotate='auto' leaves a large map without numbers"
    assert time.perf_counter() - start < 30, "a 1000 x 1000 map must not hang"


# ---------------------------------------------------------------------------------- notebooks


def test_a_notebook_shows_each_figure_exactly_once(tmp_path, monkeypatch):
    """In a real kernel with the inline backend: assigned, with a semicolon, bare as the cell's
    value, and shown again from a later cell, each gives exactly one PNG."""
    monkeypatch.delenv("MPLBACKEND", raising=False)  # let the kernel pick its inline backend
    sources = [
        "from labkit.heatmaps import show_heatmaps; import torch; "
        "fig = show_heatmaps(torch.rand(2,3,3))",
        "show_heatmaps(torch.rand(2,3,3));",
        "show_heatmaps(torch.rand(2,3,3))",
        "fig",
    ]
    cells = run_cells(sources, tmp_path)
    for source, cell in zip(sources, cells):
        pngs = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(pngs) == 1, f"{source!r} gave {len(pngs)} images: {cell.outputs}"
        assert not [o for o in cell.outputs if o.output_type == "error"]


def test_small_maps_show_their_values_by_default_and_large_ones_do_not():
    small = maps(show_heatmaps(torch.softmax(torch.randn(4, 4), dim=-1)))[0]
    assert len(small.texts) == 16, "a 4 x 4 map is small enough to read its numbers"
    large = maps(show_heatmaps(torch.softmax(torch.randn(16, 16), dim=-1)))[0]
    assert not large.texts
    assert not maps(show_heatmaps(torch.rand(4, 4), annotate=False))[0].texts
    with pytest.raises(ValueError, match="annotate"):
        show_heatmaps(torch.rand(4, 4), annotate="yes")


def test_a_tiny_negative_is_written_as_zero_not_minus_zero():
    texts = {t.get_text() for t in maps(show_heatmaps(torch.tensor([[-1e-9, -0.5], [0.25, 1.0]])))[0].texts}
    assert texts == {"0.00", "-0.50", "0.25", "1.00"}


# ------------------------------------------------------------------------------- hostile inputs

NAMED = ("weights", "the colour scale", "show_heatmaps: ", "vmin", "vmax", "map_size", "annotate", "fmt", "x_labels",
         "titles", "cmap")
NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([1e308, -1e308, 1e300, -1e-320, 0.0]),
                   st.integers(-10 ** 20, 10 ** 20), st.booleans())
ROW = st.lists(NUMBER, min_size=1, max_size=3)


@settings(derandomize=True, database=None, deadline=None, max_examples=80,
          suppress_health_check=[HealthCheck.too_slow])
@given(weights=st.one_of(st.lists(ROW, min_size=1, max_size=3),  # ragged when the rows differ in length
                         st.lists(ROW, min_size=1, max_size=2).map(lambda rows: np.array(rows, dtype=object)),
                         st.lists(NUMBER, min_size=4, max_size=4).map(lambda xs: torch.tensor(xs, dtype=torch.float64)
                                                                       .reshape(2, 2)),
                         st.sampled_from([[[1, "a"]], [[None]], [[10 ** 400]], [[[1, 2], [3]]], "abc", 3.0])),
       vmin=st.one_of(st.none(), NUMBER, st.just("0")), vmax=st.one_of(st.none(), NUMBER))
def test_any_weights_draw_or_are_refused_by_name(weights, vmin, vmax):
    try:
        fig = show_heatmaps(weights, vmin=vmin, vmax=vmax)
    except (TypeError, ValueError) as error:
        assert str(error).startswith(NAMED), f"a raw error: {error!r}"
        return
    fig.canvas.draw()  # matplotlib's own arithmetic on the scale runs here
    plt.close(fig)


@pytest.mark.parametrize("weights, message", [
    ([[1.0, 2.0], [3.0]], "weights is a ragged list (rows of different lengths: [2, 1])"),
    ([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0]]], "weights is a ragged list (rows of different lengths: [2, 1])"),
    ([[1e308, -1e308], [0.0, 1.0]], "the colour scale runs from -1e+308 to 1e+308: beyond +-1e+300"),
    (torch.ones(2, 2, device="meta"), "weights is a meta tensor: it has a shape but no values to draw"),
    (torch.nested.nested_tensor([torch.ones(2, 2), torch.ones(3, 3)]), "weights is a nested tensor"),
    (torch.ones(17, 16, 2, 2), "weights has shape [17, 16, 2, 2]: 272 maps, more than the 256"),
    (torch.ones(1, 4097, 4097), "cells, more than the 16,777,216 a figure can show"),
    ([[10 ** 400, 1]], "weights holds an integer too large for a float"),
])
def test_hostile_weights_are_named(weights, message):
    with pytest.raises(ValueError) as error:
        show_heatmaps(weights)
    assert message in str(error.value)


def test_sparse_and_huge_but_finite_weights_are_drawn():
    sparse = torch.sparse_coo_tensor([[0, 1], [1, 0]], [0.25, 0.75], (2, 2))
    assert maps(show_heatmaps(sparse))[0].images[0].get_array().data.tolist() == [[0, 0.25], [0.75, 0]]
    big = show_heatmaps(np.array([[1e299, -1e299], [10 ** 30, 1]], dtype=object))
    big.canvas.draw()
    constant = show_heatmaps(torch.full((2, 2), -1e20))  # all equal: a scale around the value
    constant.canvas.draw()


def test_options_that_python_would_coerce_are_refused():
    with pytest.raises(TypeError, match="show_heatmaps: vmin must be a number, got str '0'"):
        show_heatmaps(torch.rand(2, 2), vmin="0")
    with pytest.raises(TypeError, match="show_heatmaps: vmax must be a number, got bool True"):
        show_heatmaps(torch.rand(2, 2), vmax=True)
    with pytest.raises(TypeError, match="show_heatmaps: colorbar must be True or False, got str 'no'"):
        show_heatmaps(torch.rand(2, 2), colorbar="no")
    with pytest.raises(ValueError, match="map_size must be a number of inches or .*got '3'"):
        show_heatmaps(torch.rand(2, 2), map_size="3")
    show_heatmaps(torch.rand(2, 2), vmin=np.float32(0), annotate=np.bool_(True), colorbar=np.bool_(False))
    fig = show_heatmaps(torch.rand(2, 2), x_labels=["x" * 5000, "y"])
    assert len(maps(fig)[0].get_xticklabels()[0].get_text()) == 40, "a huge label is cut, the figure stays a figure"
