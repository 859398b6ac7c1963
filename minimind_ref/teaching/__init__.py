"""minimind_ref.teaching: the course's helpers, kept apart from the model.

The model code never imports this package; this package may import the model. Its own imports at
import time are the standard library only (the parent package brings torch), so the command line
answers at once and runs where only the pinned environment is installed: anything heavy
(matplotlib, ipywidgets, nbclient) is imported inside the function that needs it.

    catalog.py   which modules the course plans and which of their parts exist on disk
    __main__.py  the command line behind the make targets:
                 python -m minimind_ref.teaching {list, exp NN, experiments, quiz NN, notebooks [NN]}
"""

from .catalog import PLANNED_MODULES, CourseError, Module, all_modules, find_course_root, get_module

__all__ = ["PLANNED_MODULES", "CourseError", "Module", "all_modules", "find_course_root", "get_module"]
