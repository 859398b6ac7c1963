"""Grade an attention layer written in a file of your own (what `make grade FILE=...` runs):

    python -m labkit.grader my_attention.py                 # the one nn.Module class in the file
    python -m labkit.grader my_attention.py --class MyAttention

The report is the notebook's. Exit status: 0 when every stage passes, 1 when a stage fails (or the
class is not written yet), 2 for a usage mistake, named in one line: no such file, a file that
does not import, no class or several classes to choose from, a class with the wrong signature or
parameter names.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
from pathlib import Path

from torch import nn

from .grade import GraderUsageError, grade


def load_class(path: str, class_name: str | None):
    """The attention class defined in the file at `path`: `class_name`, or the only nn.Module
    class the file defines. GraderUsageError says what is wrong otherwise."""
    file = Path(path)
    if not file.is_file():
        raise GraderUsageError(f"{path}: no such file; give the path of the .py file that defines your "
                               f"attention class.")
    if file.suffix != ".py":
        raise GraderUsageError(f"{path} is not a Python file (.py).")
    spec = importlib.util.spec_from_file_location(f"learner_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))  # the file may import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise GraderUsageError(f"{path} does not import: {type(error).__name__}: {error}") from None
    finally:
        sys.path.remove(str(file.resolve().parent))
    defined = {name: value for name, value in vars(module).items()
               if inspect.isclass(value) and issubclass(value, nn.Module) and value.__module__ == module.__name__}
    if class_name is not None:
        if class_name not in defined:
            raise GraderUsageError(f"--class {class_name}: {path} defines no nn.Module class of that name; "
                                   f"it defines {', '.join(sorted(defined)) or 'none'}.")
        return defined[class_name]
    if len(defined) != 1:
        found = ", ".join(sorted(defined)) if defined else "none"
        raise GraderUsageError(f"{path} must define exactly one nn.Module class, or name one with --class; "
                               f"it defines {found}.")
    return next(iter(defined.values()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.grader",
                                     description="Grade your MiniMind attention layer, stage by stage (module 10).")
    parser.add_argument("file", help="the .py file that defines your attention class")
    parser.add_argument("--class", dest="class_name", default=None,
                        help="the class to grade (default: the one nn.Module class the file defines)")
    args = parser.parse_args(argv)
    try:
        report = grade(load_class(args.file, args.class_name))
    except GraderUsageError as error:
        print(f"usage error: {error}", file=sys.stderr)
        return 2
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
