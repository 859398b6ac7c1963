"""Figures drawn below the cells of a notebook, whatever the environment says.

Jupyter draws matplotlib figures inline by default, unless the environment names another backend.
`MPLBACKEND=Agg` is a common setting on headless servers, in containers and in CI images, and with
it every pyplot figure of a notebook is made and never drawn: the learner sees no plot, and a
stored notebook re-run under strict nbval loses its pictures. Every notebook of the course starts
with `show_figures_inline()`, which undoes exactly that case and nothing else.
"""

from __future__ import annotations

__all__ = ["show_figures_inline"]


def show_figures_inline() -> bool:
    """In a Jupyter kernel whose matplotlib backend cannot show anything (Agg, pdf, svg, ...),
    switch to the inline backend, as `%matplotlib inline` would. Returns True if it switched.

    A backend that can show figures is kept: inline, ipympl's `%matplotlib widget`, a window
    backend. Outside a Jupyter kernel (a script, a terminal IPython) nothing changes, so a cell
    copied into a script still runs and still saves its figures where the script says.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python without IPython: not a notebook
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:  # not a Jupyter kernel
        return False
    import matplotlib
    from matplotlib.backends import BackendFilter, backend_registry

    if matplotlib.get_backend().lower() not in backend_registry.list_builtin(BackendFilter.NON_INTERACTIVE):
        return False
    shell.run_line_magic("matplotlib", "inline")
    return True
