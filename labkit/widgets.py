"""interact(): ipywidgets' interact, with a cell output that is the same in every front end.

    import ipywidgets as widgets
    from labkit.widgets import interact

    def redraw(factor):
        show_heatmaps(weights_at(factor), titles=[f"scores x {factor:g}"])
        plt.show()

    interact(redraw, factor=widgets.FloatLogSlider(value=0.5, base=2, min=-4, max=4))

Why not `ipywidgets.interact` itself: it runs the function once as the cell runs, and the figures
and text the function makes are sent as the cell's own output, for the front end to move into the
widget. JupyterLab and nbclient move them; nbval, which re-runs the stored notebooks in the tests,
does not, and finds them among the cell's outputs. So a widget cell's stored output depended on
the front end, and could only be left out of the comparison. (In a headless run, nbclient also
echoed each moved output back to the kernel on the socket where it awaited the cell's reply, which
could stall the run: notebook_runner.py.) Here the function's output is captured in the kernel and
written straight into the widget's state: every front end sees one output, the widget, and the
widget shows the function's output from the start.

A control's label (its `description`, else its keyword's name) is shown through `tr`, so a Chinese
notebook's catalog can translate it; what the function prints and draws is translated as a cell's
output is (labkit/i18n/output.py): the templates come from the cell that defined the function.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from IPython.display import display
from IPython.utils.capture import capture_output

from .figures import show_figures_inline
from .i18n import tr
from .i18n.output import active

__all__ = ["Interactive", "interact", "show_in"]


def _captured_outputs(function: Callable[[], Any]) -> list[dict]:
    """Run `function`, capturing what it displays and prints, as notebook outputs (nbformat dicts):
    first what it displayed (figures), then its printed text.

    Figures are drawn even where the environment names a backend that draws nothing (MPLBACKEND=Agg)
    and the notebook did not start with show_figures_inline(): a widget without its figure would
    show only the figure's name."""
    show_figures_inline()
    with capture_output() as captured:
        function()
    outputs = [{"output_type": "display_data", "data": item.data, "metadata": item.metadata or {}}
               for item in captured.outputs]
    translator = active()  # in Chinese: printed lines leave translated, as a cell's do (labkit/i18n/output.py)
    for name, text in (("stdout", captured.stdout), ("stderr", captured.stderr)):
        if name == "stdout" and translator is not None:
            text = translator.text(text)
        if text:
            outputs.append({"output_type": "stream", "name": name, "text": text})
    return outputs


def show_in(output: widgets.Output, *objects: Any) -> None:
    """Replace what the Output widget `output` shows by `objects` (figures, text, anything IPython
    can display), written into the widget's state rather than captured from the cell, so the
    cell's own output does not change."""
    if not isinstance(output, widgets.Output):
        raise TypeError(f"show_in: the first argument must be an ipywidgets Output to show them in, got "
                        f"{type(output).__name__}.")
    output.outputs = tuple(_captured_outputs(lambda: display(*objects)))


def _control(abbreviation: Any) -> widgets.ValueWidget:
    """A control from a widget or from interact's shorthand (a list: a menu; (min, max): a slider)."""
    if isinstance(abbreviation, widgets.ValueWidget):
        return abbreviation
    control = widgets.interactive.widget_from_abbrev(abbreviation)
    if control is None:
        raise ValueError(f"interact cannot make a control from {abbreviation!r}: pass an ipywidgets control.")
    return control


class Interactive(widgets.VBox):
    """The controls, then the function's output; its text form names the function and the values."""

    def __init__(self, function: Callable[..., Any], controls: dict[str, Any]):
        self.function = function
        self.controls = {name: _control(control) for name, control in controls.items()}
        for name, control in self.controls.items():
            control.description = tr(control.description or name)
        self.out = widgets.Output()
        self._running = self._stale = False
        self.shown_values: dict[str, Any] | None = None  # the values the output on show was drawn from
        super().__init__([*self.controls.values(), self.out])
        self.add_class("widget-interact")
        self.update(raise_errors=True)
        for control in self.controls.values():
            control.observe(lambda change: self.update(), names="value")

    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def update(self, raise_errors: bool = False) -> None:
        """Call the function with the controls' values and show what it displays and prints. A
        mistake in the function fails the cell the first time; later, moving a control shows the
        error in the widget instead of losing it in a log.

        Always the latest values: a control that changes while the function runs (events can
        arrive in any order, and faster than a figure draws) makes it run again, until what is
        shown was drawn from the values the controls hold."""
        if self._running:
            self._stale = True  # the call in progress will see it and run again
            return
        self._running = True
        try:
            while True:
                self._stale = False
                values = self.values()
                try:
                    outputs = tuple(_captured_outputs(lambda: self.function(**values)))
                except Exception as error:
                    if raise_errors:
                        raise
                    outputs = ({"output_type": "stream", "name": "stderr",
                                "text": f"{type(error).__name__}: {error}\n"},)
                if not self._stale and self.values() == values:
                    break
        finally:
            self._running = False
        self.shown_values = values
        self.out.outputs = outputs

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in self.values().items())
        return f"interact({getattr(self.function, '__name__', 'function')}, {values})"


def interact(function: Callable[..., Any], **controls: Any) -> Interactive:
    """Controls for each keyword argument of `function` (ipywidgets controls, or interact's
    shorthand) and, below them, whatever `function(**values)` draws and prints, redrawn whenever a
    control moves. As the last line of a cell, it shows the widget."""
    if not callable(function):
        raise TypeError(f"interact: the first argument must be the function that draws, got {type(function).__name__}.")
    if not controls:
        raise ValueError("interact needs at least one control, as in interact(redraw, factor=slider).")
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature: its call will say
        parameters = None
    if parameters is not None and not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        unknown = [name for name in controls if name not in parameters or parameters[name].kind is
                   inspect.Parameter.POSITIONAL_ONLY]
        if unknown:
            raise TypeError(f"interact: {getattr(function, '__name__', 'the function')} takes no argument named "
                            f"{', '.join(unknown)} (by keyword): name each control after one of its parameters.")
    return Interactive(function, controls)
