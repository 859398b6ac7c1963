"""labkit.widgets.interact, driven headless: what it shows is always drawn from the controls'
latest values, whatever order their changes arrive in."""

from __future__ import annotations

import ipywidgets as widgets
import pytest

from labkit.widgets import interact


def test_it_calls_the_function_with_the_values_and_names_them_in_its_text_form():
    calls = []
    shown = interact(lambda factor, name: calls.append((factor, name)) or print(factor, name),
                     factor=widgets.FloatSlider(value=0.5), name=["a", "b"])
    assert calls == [(0.5, "a")] and shown.shown_values == {"factor": 0.5, "name": "a"}
    assert shown.out.outputs[-1]["text"] == "0.5 a\n"
    shown.controls["name"].value = "b"
    assert calls[-1] == (0.5, "b") and shown.out.outputs[-1]["text"] == "0.5 b\n"
    assert repr(shown) == "interact(<lambda>, factor=0.5, name='b')"


def test_a_mistake_fails_the_cell_first_and_shows_in_the_widget_later():
    def redraw(x):
        if x > 1:
            raise ValueError("x too large")
    with pytest.raises(ValueError):
        interact(redraw, x=widgets.IntSlider(value=5, max=9))
    shown = interact(redraw, x=widgets.IntSlider(value=0, max=9))
    shown.controls["x"].value = 3
    assert shown.out.outputs == ({"output_type": "stream", "name": "stderr", "text": "ValueError: x too large\n"},)


@pytest.mark.parametrize("order", [["a", "b"], ["b", "a"]])
def test_a_change_that_arrives_while_the_function_runs_is_drawn(order):
    """The learner moves a second control while the figure of the first is being drawn: the
    function runs again, and what is shown is drawn from the values the controls end with."""
    controls = {"a": widgets.IntSlider(value=0, max=9), "b": widgets.IntSlider(value=0, max=9)}
    pending = []
    drawn = []

    def redraw(a, b):
        if pending:  # an event arrives mid-draw
            name, value = pending.pop(0)
            controls[name].value = value
        drawn.append((a, b))
        print(f"a={a} b={b}")

    shown = interact(redraw, **controls)
    pending += [(name, 7) for name in order[1:]]  # from now on
    controls[order[0]].value = 7
    assert not pending
    assert shown.shown_values == shown.values() == {"a": 7, "b": 7}
    assert shown.out.outputs[-1]["text"] == "a=7 b=7\n"
    assert drawn[-1] == (7, 7)
