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
global state or replaces the grader's functions. argparse's own usage errors (a file left out,
an option mistyped) come in the report's language too, with how to run it.
"""

from __future__ import annotations

import argparse
import sys

from labkit.experiment import float_in
from labkit.i18n import LANGUAGES, language, phrase, speaking, tr

from .grade import GraderUsageError
from .guard import DEFAULT_TIME_LIMIT
from .isolate import grade_file, load_class

__all__ = ["load_class", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, its usage errors said in the report's language: the usage line, what is wrong (the
    two a learner meets most, a file left out and an option mistyped, translated; argparse's own
    words otherwise, which name the argument) and how to run it."""

    def error(self, message: str):
        for english in (phrase("the following arguments are required: {names}"),
                        phrase("unrecognized arguments: {names}")):
            start = english.split("{")[0]
            if message.startswith(start):
                message = tr(english, names=message[len(start):])
        lines = (tr("usage: {usage}", usage=" ".join(self.format_usage().split()[1:])),  # on one line
                 tr("{prog}: error: {message}", prog=self.prog, message=message),
                 tr("Give the .py file that defines your attention class, as in: python -m labkit.grader "
                    "my_attention.py (or make grade FILE=my_attention.py); --help lists the options."))
        self.exit(2, "\n".join(lines) + "\n")


def _asked_language(argv: list[str]) -> str | None:
    """The --lang the command line asks for, read before argparse, whose errors it speaks in."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--lang" and i + 1 < len(argv) else arg.partition("=")[2]
        if (arg == "--lang" or arg.startswith("--lang=")) and value in LANGUAGES:
            return value
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    with speaking(_asked_language(argv) or language()):
        return _main(argv)


def _main(argv: list[str]) -> int:
    parser = _Parser(prog="python -m labkit.grader",
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
    try:
        report = grade_file(args.file, args.class_name, time_limit=args.time_limit)
    except GraderUsageError as error:
        print(tr("usage error: {error}", error=error), file=sys.stderr)
        return 2
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
