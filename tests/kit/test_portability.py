"""What keeps stored outputs true on other machines: inline figures whatever MPLBACKEND says, the
last-bit noise that stands in for another CPU, and the tool that runs a notebook as other
machines would (`make portability`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from kernel_cells import run_cells

from labkit.course import portability as pt

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------ inline figures

FIGURE = "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0]);"


def images(cell) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.outputs)


def test_figures_are_drawn_inline_in_a_kernel_told_to_use_agg(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    switched, figure = run_cells(["from labkit.figures import show_figures_inline\n"
                                  "print(show_figures_inline())", FIGURE], tmp_path)
    assert switched.outputs[0]["text"] == "True\n"
    assert images(figure) == 1


def test_a_figure_is_drawn_only_for_its_picture_and_plt_ioff_still_works(tmp_path):
    """pyplot's drawing after each cell comes after the inline backend has drawn the cell's figures
    as their pictures and closed them, so a figure is drawn as often as its picture alone asks
    (matplotlib lays it out, then draws it), not once more for nothing; plt.ioff() and plt.ion(),
    which take pyplot's hook out and put it back, still work."""
    setup, shown, counted, toggled = run_cells([
        "from labkit.figures import show_figures_inline\nshow_figures_inline()\n"
        "import io\nimport matplotlib.pyplot as plt\ndraws, alone = [], []",
        "fig, ax = plt.subplots(layout='constrained'); ax.plot([0, 1])\n"
        "fig.canvas.mpl_connect('draw_event', lambda event: draws.append(event))",
        "other, ax = plt.subplots(layout='constrained'); ax.plot([0, 1]); plt.close(other)\n"
        "other.canvas.mpl_connect('draw_event', lambda event: alone.append(event))\n"
        "other.savefig(io.BytesIO(), format='png', bbox_inches='tight')\nprint(len(draws), len(alone))",
        "plt.ioff(); plt.ion(); print('switched')"], tmp_path)
    assert images(shown) == 1
    drawn, picture_alone = counted.outputs[0]["text"].split()
    assert drawn == picture_alone, f"drawn {drawn} times; its picture alone draws it {picture_alone} times"
    assert toggled.outputs[0]["text"] == "switched\n"


def test_without_it_agg_draws_nothing(tmp_path, monkeypatch):
    """The failure the helper exists for: the figure is made and never shown."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (figure,) = run_cells([FIGURE], tmp_path)
    assert images(figure) == 0


PLAIN_FIGURE = ("from matplotlib.figure import Figure\n"
                "from IPython.display import display\n"
                "figure = Figure(figsize=(2, 1)); figure.add_subplot().plot([0, 1])\n"
                "display(figure)")


def test_a_figure_made_without_pyplot_is_a_picture_in_a_fresh_kernel(tmp_path, monkeypatch):
    """Jupyter's default backend, inline: a Figure built without pyplot (as the course map is) and
    displayed before pyplot draws anything is a picture, not `<Figure size ...>` text."""
    monkeypatch.delenv("MPLBACKEND", raising=False)
    switched, figure = run_cells(["from labkit.figures import show_figures_inline\n"
                                  "import matplotlib\nprint(show_figures_inline(), matplotlib.get_backend())",
                                  PLAIN_FIGURE], tmp_path)
    assert switched.outputs[0]["text"].startswith("True") and "inline" in switched.outputs[0]["text"]
    assert images(figure) == 1


def test_without_it_the_default_kernel_shows_a_plain_figure_as_text(tmp_path, monkeypatch):
    """The failure that kept the map off every learner's screen."""
    monkeypatch.delenv("MPLBACKEND", raising=False)
    (figure,) = run_cells([PLAIN_FIGURE], tmp_path)
    assert images(figure) == 0 and figure.outputs[0]["data"]["text/plain"].startswith("<Figure size")


def test_a_backend_that_shows_figures_another_way_is_kept(tmp_path, monkeypatch):
    """A backend that is neither inline nor one that draws nothing (ipympl's widget, a window) is
    the learner's choice: it stays."""
    (tmp_path / "window_backend.py").write_text("from matplotlib.backends.backend_agg import FigureCanvasAgg as "
                                                 "FigureCanvas  # noqa: F401\n")
    monkeypatch.setenv("MPLBACKEND", "module://window_backend")
    (switched,) = run_cells(["from labkit.figures import show_figures_inline\n"
                             "import matplotlib\nprint(show_figures_inline(), matplotlib.get_backend())"], tmp_path)
    assert switched.outputs[0]["text"].split() == ["False", "module://window_backend"]


def test_outside_a_kernel_nothing_changes():
    code = ("import matplotlib; matplotlib.use('Agg')\n"
            "from labkit.figures import show_figures_inline\n"
            "print(show_figures_inline(), matplotlib.get_backend())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "Agg"]


def test_every_notebook_with_figures_asks_for_them_inline_first():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        draws = any(word in source for source in code for word in ("plt.", "show_heatmaps(", "explore("))
        if draws:
            assert "show_figures_inline()" in code[0], (
                f"{path.name}: its first code cell should call show_figures_inline()")


# ------------------------------------------------------------------------------ last-bit noise


def test_noise_moves_a_matrix_product_by_at_most_one_unit_in_the_last_place():
    a, b = torch.randn(64, 64, dtype=torch.float64), torch.randn(64, 64, dtype=torch.float64)
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        plain = a.to(dtype) @ b.to(dtype)
        with pt.LastBitNoise(seed=1):
            noisy = a.to(dtype) @ b.to(dtype)
        changed = noisy != plain
        assert 0.2 < changed.float().mean() < 0.9, dtype  # about two thirds move
        relative = ((noisy - plain).abs() / plain.abs()).max().item()
        assert relative <= torch.finfo(dtype).eps, dtype


def test_noise_is_a_function_of_the_value_so_one_computation_repeats_exactly():
    x = torch.randn(200, 50)
    with pt.LastBitNoise(seed=3):
        first, second = torch.softmax(x @ x.T, -1), torch.softmax(x @ x.T, -1)
    with pt.LastBitNoise(seed=4):
        other = torch.softmax(x @ x.T, -1)
    assert torch.equal(first, second)
    assert not torch.equal(first, other)


def test_noise_leaves_exact_arithmetic_and_special_values_alone():
    x = torch.tensor([1.5, -2.0, float("inf"), float("nan"), 0.0])
    with pt.LastBitNoise(seed=2):
        assert torch.equal(x[:2] + x[:2], torch.tensor([3.0, -4.0]))  # elementwise +: exact everywhere
        assert torch.equal(torch.arange(5) * 3, torch.arange(0, 15, 3))  # integers
        e = torch.exp(x)
        assert torch.isinf(e[2]) and torch.isnan(e[3]) and e[4] == 1.0
        ids = torch.tensor([[3, 1, 2]])
        assert torch.equal(ids.sum(-1), torch.tensor([6]))
        keys = torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.5]])
        assert torch.equal(keys @ torch.tensor([1.0, 0.5]), torch.tensor([2.0, 1.5, -0.75]))  # exact results stay


def test_noise_allocates_no_torch_memory():
    """The nudge works through numpy on the result's own memory: torch.profiler sees the same
    allocations as under a dispatch mode that does nothing. (Any dispatch mode, this one too, adds
    its own frame to the profiler's events: a cell that counts those events differs under noise-N,
    and is judged by the environment stand-ins.)"""
    from torch.profiler import ProfilerActivity, profile
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def allocations(mode):
        x = torch.randn(128, 128)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof, mode:
            torch.softmax(x @ x, -1).sum()
        return sorted((e.name, e.cpu_memory_usage) for e in prof.events() if e.cpu_memory_usage > 0)

    assert allocations(pt.LastBitNoise(seed=1)) == allocations(PassThrough())


def test_noise_reaches_autograd_and_fused_attention():
    q = torch.randn(1, 2, 5, 8, requires_grad=True)
    plain = torch.nn.functional.scaled_dot_product_attention(q, q, q)
    with pt.LastBitNoise(seed=1):
        noisy = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        noisy.sum().backward()
    assert not torch.equal(plain, noisy) and torch.allclose(plain, noisy, atol=1e-6)
    assert q.grad is not None and torch.isfinite(q.grad).all()


# --------------------------------------------------------------------------- the notebook tool


def test_compared_text_is_what_strict_nbval_compares():
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a "),
                    nbformat.v4.new_output("stream", name="stdout", text="b\n"),
                    nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>", "image/png": "AAAA"})]
    text = pt.compared_text(cell)
    assert "a b\n" in text and "<Figure>" in text and "AAAA" not in text
    cell.source = "# NBVAL_IGNORE_OUTPUT\nx"
    assert pt.compared_text(cell) is None


@pytest.fixture(scope="module")
def fragile_notebook(tmp_path_factory) -> Path:
    """Three outputs: two that rounding cannot change, and one that prints products to the last bit."""
    folder = tmp_path_factory.mktemp("fragile")
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import torch\ng = torch.Generator().manual_seed(0)\n"
                                  "x = torch.randn(300, 300, generator=g)\nprint(tuple((x @ x).shape))"),
        nbformat.v4.new_code_cell("print((x @ x)[0, :32].tolist())"),  # raw float32 products, to the last bit
        nbformat.v4.new_code_cell("print(f'{(x @ x).abs().mean().item():.2f}')"),
    ])
    path = folder / "fragile.ipynb"
    from labkit.course.notebook_runner import execute_notebook
    nbformat.write(execute_notebook(notebook, folder), path)
    return path


def test_noise_finds_the_output_that_prints_the_last_bits(fragile_notebook):
    run = pt.run_on(fragile_notebook, "noise-1")
    assert run.error is None
    assert [change.index for change in run.changes] == [1]  # the full-precision products, nothing else
    assert run.changes[0].diff()[0].startswith("@@") and any(line.startswith("+") for line in run.changes[0].diff())


def test_an_environment_stand_in_runs_the_notebook_and_reports_it(fragile_notebook, capsys):
    run = pt.run_on(fragile_notebook, "agg")
    assert run.error is None and run.ok
    assert pt.report(fragile_notebook, [run], fragile_notebook.parent) == 0
    assert "on agg: same outputs" in capsys.readouterr().out
    noisy = pt.run_on(fragile_notebook, "noise-2")
    assert pt.report(fragile_notebook, [noisy], fragile_notebook.parent) == 1
    assert "Cell 1" in capsys.readouterr().out


def test_the_command_line_names_a_bad_module_and_range():
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "labkit.course", "portability", *args],
                              capture_output=True, text=True, cwd=ROOT)
    unknown = cli("77")
    assert unknown.returncode == 2 and "Unknown module '77'" in unknown.stderr
    too_many = cli("01", "--noise-seeds", "99")
    assert too_many.returncode == 2 and "--noise-seeds" in too_many.stderr and "0..16" in too_many.stderr
    machine = cli("01", "--machines", "mars")
    assert machine.returncode == 2 and "invalid choice" in machine.stderr


# ------------------------------------------------------------------------- the notebook runner


def test_a_cell_past_its_time_limit_fails_fast_and_is_named(tmp_path):
    from nbclient.exceptions import CellTimeoutError

    from labkit.course.notebook_runner import execute_notebook

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                               nbformat.v4.new_code_cell("import time\ntime.sleep(60)")])
    with pytest.raises(CellTimeoutError, match="time.sleep"):
        execute_notebook(notebook, tmp_path, cell_timeout=3)


def test_the_output_widget_stand_in_never_writes_to_the_shell_channel():
    """The echo that stalled headless runs on widget cells (notebook_runner's docstring) is gone; the
    captured outputs are still kept for the saved widget state."""
    from jupyter_client.session import Session
    from nbformat import NotebookNode

    from labkit.course.notebook_runner import _client_class

    class NoShell:
        session = Session()

        @property
        def shell_channel(self):
            raise AssertionError("the Output widget stand-in wrote to the shell channel")

    client = _client_class()(nbformat.v4.new_notebook(), kernel_name="python3")
    widget_class = client.widget_registry["@jupyter-widgets/output"]["OutputModel"]
    client.widget_state = {"w": {"outputs": []}}
    widget = widget_class("w", {"outputs": [], "msg_id": ""}, NoShell(), client)
    message = {"msg_type": "stream", "parent_header": {}, "header": {"msg_type": "stream"},
               "content": {"name": "stdout", "text": "drawn\n"}}
    widget.output([], NotebookNode(message), None, 0)
    assert client.widget_state["w"]["outputs"][0]["text"] == "drawn\n"


def test_nbval_and_the_runner_give_a_cell_the_same_time():
    from labkit.course.notebook_runner import CELL_TIMEOUT

    assert f"--nbval-cell-timeout={CELL_TIMEOUT}" in (ROOT / "pyproject.toml").read_text()


# ------------------------------------------------------------------------ widgets in one output


WIDGET_CELL = """
import ipywidgets as widgets
import matplotlib.pyplot as plt
from labkit.widgets import interact

def redraw(factor, label):
    plt.plot([0, factor], [0, 1])
    plt.show()
    print("factor", factor, label)

w = interact(redraw, factor=widgets.IntSlider(value=2, min=1, max=5), label=["a", "b"])
w
"""


def test_interact_leaves_one_output_the_widget_and_draws_inside_it(tmp_path):
    """The same cell output in every front end: nbclient (here) and nbval alike see only the
    widget; the figure and the printed text live in the widget's own state."""
    (cell,) = run_cells([WIDGET_CELL], tmp_path)
    assert [out.output_type for out in cell.outputs] == ["execute_result"]
    data = cell.outputs[0]["data"]
    assert data["text/plain"] == "interact(redraw, factor=2, label='a')"
    assert "image/png" not in data


def test_interact_redraws_when_a_control_moves_and_reports_errors_in_the_widget(tmp_path):
    source = WIDGET_CELL.rstrip().removesuffix("w") + """
first = w.out.outputs
w.controls["factor"].value = 4
second = w.out.outputs
print([o["output_type"] for o in first], "image/png" in first[0]["data"], first[1]["text"].strip())
print(second[1]["text"].strip(), second[0]["data"]["image/png"] != first[0]["data"]["image/png"])
w.function = lambda factor, label: 1 / 0
w.controls["label"].value = "b"
print(w.out.outputs[0]["text"].strip())
"""
    (cell,) = run_cells([source], tmp_path)
    lines = "".join(out.get("text", "") for out in cell.outputs).splitlines()
    assert lines == ["['display_data', 'stream'] True factor 2 a", "factor 4 a True",
                     "ZeroDivisionError: division by zero"]


def test_interact_refuses_no_controls_and_names_a_bad_one():
    from labkit.widgets import interact

    with pytest.raises(ValueError, match="at least one control"):
        interact(print)
    with pytest.raises(ValueError, match="cannot make a control from"):
        interact(lambda x: None, x=object())
    with pytest.raises(TypeError, match="interact: print takes no argument named x"):
        interact(print, x=(1, 3))


def test_no_notebook_uses_ipywidgets_interact_directly():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            assert "widgets.interact(" not in cell.source, f"{path.name}: use labkit.widgets.interact"
