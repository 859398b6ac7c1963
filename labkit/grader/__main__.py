"""Grade an attention layer written in a file of your own (what `make grade FILE=...` runs):

    python -m labkit.grader my_attention.py                 # the one nn.Module class in the file
    python -m labkit.grader my_attention.py --class MyAttention
    python -m labkit.grader my_attention.py --lang zh-CN    # the report in Chinese (make grade ... LANG=zh-CN)

The file runs in a process of its own; the reference and every comparison run in this one
(isolate.py), with a line per stage as it runs, and the notebook's report. Exit status: 0 when
every stage passes, 1 when a stage fails (or the class is not written yet), 2 for a usage
mistake, named in one line: no such file, a file that does not import, no class or several
classes to choose from, a class with the wrong signature or parameter names, no `forward`, a
constructor that fails, code that exits, runs past the time limit per call, changes torch's
global state or replaces the grader's functions.
"""

from __future__ import annotations

import argparse
import sys

from labkit.experiment import float_in
from labkit.i18n import LANGUAGES, language, speaking, tr

from .grade import GraderUsageError
from .guard import DEFAULT_TIME_LIMIT
from .isolate import grade_file, load_class

__all__ = ["load_class", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.grader",
                                     description="Grade your MiniMind attention layer, stage by stage (module 10).")
    parser.add_argument("file", help="the .py file that defines your attention class")
    parser.add_argument("--class", dest="class_name", default=None,
                        help="the class to grade (default: the one nn.Module class the file defines)")
    parser.add_argument("--time-limit", type=float_in(0.5, 600), default=DEFAULT_TIME_LIMIT,
                        help=f"seconds one call of your layer may take, 0.5 to 600 (default {DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--lang", choices=LANGUAGES, default=None,
                        help="the report's language: en or zh-CN (简体中文); default: the course's "
                             "(ATTENTION_LAB_LANG, a zh-CN folder); make grade passes it from LANG=")
    args = parser.parse_args(argv)
    with speaking(args.lang or language()):
        try:
            report = grade_file(args.file, args.class_name, time_limit=args.time_limit)
        except GraderUsageError as error:
            print(tr("usage error: {error}", error=error), file=sys.stderr)
            return 2
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
