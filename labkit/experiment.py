"""What every experiment script shares: the course's command-line flags, a seeded start, figures
saved only inside the output folder, and claims that are checked rather than asserted in prose.

An experiment script states one claim in its docstring, shows it in its output and checks it; it
exits 1 with a plain sentence when the claim does not hold. The skeleton:

    '''Permuting the tokens permutes attention's output: attention has no notion of order.'''
    from labkit import Experiment, int_in

    def add_arguments(parser):
        parser.add_argument("--tokens", type=int_in(2, 1024), default=6, help="sequence length")
        parser.add_argument("--heads", type=int_in(1, 64), default=2, help="attention heads")

    def check_arguments(args):                # constraints between flags: a message, or None
        if args.tokens % args.heads:
            return f"--tokens must be a multiple of --heads, got {args.tokens} and {args.heads}"
        return None

    def main(argv=None):
        exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
        ...                                   # compute, print what it shows
        exp.claim(error < 1e-6, f"the outputs are a permutation of each other (max error {error:.1e})")
        exp.save(fig, "permutation")          # -> outputs/01_attention_basics/exp1_permutation.png
        return exp.finish()

    if __name__ == "__main__":
        raise SystemExit(main())

Every script gets `--help`, `--seed` (default 0), `--out DIR` (default `outputs/NN_slug/` at the
course root), `--show` (open the figures in a window as well as saving them) and `--lang` (`en` or
`zh-CN`). A script writes nothing but its own PNG files, named after itself, into that folder; each
PNG records the texts its figure shows (labkit.i18n.output.png_texts).

The language: `--lang`, else ATTENTION_LAB_LANG, else a Chinese locale (`LANG=zh-CN python
experiments/...`, `LANG=zh_CN.UTF-8`), else a `zh-CN` folder around the current directory, else
English. In Chinese the script's code is the same: what it prints and draws is translated as it
leaves (labkit/i18n/output.py), from translations/zh-CN/experiments/NN_slug.md.

A bad flag is a usage error, not a failed claim: it exits 2 with argparse's message naming the
flag, before anything runs (exit 1 is kept for "a claim did not hold"). So every numeric flag has
a bounded type, `int_in(low, high)`, `float_in(low, high)`, `fraction()` or `int_list(low, high)`
(comma-separated, at most 16 values), whose bounds keep a run within a laptop's minutes and memory;
a flag with a fixed set of values uses `choices`; `--out` must name a folder that can be created
and written (`~` expanded as a shell would: `--out=~/figs` reaches Python unexpanded).
Constraints between flags (a minimum above a maximum, lengths that must double) go in the
script's `check_arguments(args)`, which returns a message naming the flags, or None.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import textwrap
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

from .arguments import flag, real, whole
from .i18n import ENV, LANGUAGES, language, tr, use_language
from .syllabus import find_course_root

CHECK, CROSS = "\u2713", "\u2717"
DPI = 120  # of the saved figures


class Experiment:
    """One run of an experiment script: its parsed arguments, output folder and claims."""

    def __init__(self, script: Path, args: argparse.Namespace):
        self.script = script
        self.name = script.stem  # e.g. exp1_permutation
        self.module = script.parent.name  # e.g. 01_attention_basics
        self.args = args
        self.out_dir = Path(args.out) if args.out else find_course_root(script.parent) / "outputs" / self.module
        self.saved: list[Path] = []
        self.failed: list[str] = []

    @staticmethod
    def parser(doc: str | None, script_file: str,
               add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.ArgumentParser:
        """The script's argument parser, the course's flags plus its own, built without parsing
        anything or running the experiment (tests read every option's type and bounds from it)."""
        script = Path(script_file).resolve()
        parser = argparse.ArgumentParser(
            prog=f"python {script.parent.parent.name}/{script.parent.name}/{script.name}"
            if script.parent.parent.name == "experiments" else script.name,
            description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0,
                            help=f"seed for torch and random, 0 to {MAX_SEED} (default 0)")
        parser.add_argument("--out", metavar="DIR", type=output_folder, default=None,
                            help="folder for the figures, created if need be "
                                 "(default: outputs/<module>/ at the course root)")
        parser.add_argument("--show", action="store_true", help="also open the figures in a window")
        parser.add_argument("--lang", choices=LANGUAGES, default=None,
                            help="the language it prints and draws in (default: ATTENTION_LAB_LANG, else "
                                 "the locale's LANG: zh-CN or zh_CN.UTF-8 for Chinese)")
        if add_arguments is not None:
            add_arguments(parser)
        return parser

    @classmethod
    def start(cls, doc: str | None, script_file: str, argv: Sequence[str] | None = None,
              add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
              check_arguments: Callable[[argparse.Namespace], str | None] | None = None) -> Experiment:
        """Parse the command line (the course's flags plus the script's own), check the constraints
        between flags, seed every random generator from --seed and print the claim being tested.

        A bad value exits 2 with argparse's message, before anything runs: each flag's type checks
        its own value, and `check_arguments(args)`, when given, returns a message naming the flags
        whose values do not go together (None when they do), which goes to parser.error."""
        script = Path(script_file).resolve()
        parser = cls.parser(doc, script_file, add_arguments)
        args = parser.parse_args(argv)
        if check_arguments is not None:
            problem = check_arguments(args)
            if problem:
                parser.error(problem)
        _seed(args.seed)
        experiment = cls(script, args)
        _speak(args.lang, script)
        if doc:
            claim = _first_sentence(doc)
            _learn(claim)
            print(f"{experiment.module}/{experiment.name}: {_shown(claim)}")
            print()
        return experiment

    def claim(self, holds: bool, sentence: str) -> bool:
        """Record and print whether the claim `sentence` holds; finish() fails if any did not."""
        holds = bool(holds)
        verdict = tr("claim holds") if holds else tr("CLAIM DOES NOT HOLD")
        print(f"{CHECK if holds else CROSS} {verdict}: {_shown(sentence)}")
        if not holds:
            self.failed.append(sentence)
        return holds

    def save(self, figure, stem: str) -> Path:
        """Save a matplotlib figure as <out>/<script name>_<stem>.png and return the path. Only
        this script's own files are written, and only inside the output folder. A figure without
        a layout engine gets matplotlib's constrained layout, and its log axes plain tick labels
        (figures.readable_ticks). In Chinese its texts are translated first; in every language the
        PNG records what the figure says (labkit.i18n.output.figure_texts)."""
        if not stem or any(ch in stem for ch in "/\\") or stem.startswith("."):
            raise ValueError(f"Experiment.save: stem must be a plain file name part, got {stem!r}.")
        from labkit.figures import readable_ticks
        from labkit.i18n.output import figure_texts, record_png, translate_figure

        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{self.name}_{stem}.png"
        # Right by default: panels laid out so that tick labels of one never run into the next,
        # and log axes labelled with plain numbers.
        # A figure the script laid out itself (fig.tight_layout(rect=...), a figure legend placed
        # by hand) keeps its layout: only a figure with none gets the constrained one.
        translate_figure(figure)
        readable_ticks(figure)
        if figure.get_layout_engine() is None:
            figure.set_layout_engine("constrained")
        figure.savefig(path, dpi=DPI, bbox_inches="tight")
        record_png(path, figure_texts(figure, DPI))
        self.saved.append(path)
        if not self.args.show:
            import matplotlib.pyplot as plt

            plt.close(figure)
        return path

    def finish(self) -> int:
        """List the saved figures, show them if --show, and return the exit status: 0 when every
        claim held, 1 (with the claims that failed) otherwise."""
        if self.saved:
            print()
            for path in self.saved:
                print(tr("saved {path}", path=_display_path(path)))
        if self.args.show and self.saved:
            import matplotlib.pyplot as plt

            plt.show()
        if self.failed:
            print("\n" + tr("{name} failed: {count} claim(s) did not hold:", name=self.name, count=len(self.failed)),
                  file=sys.stderr)
            for sentence in self.failed:
                print(f"  - {_shown(sentence)}", file=sys.stderr)
            return 1
        return 0


# --------------------------------------------------------------------------- flag types

MAX_SEED = 2 ** 32 - 1  # random.seed takes any integer and torch.manual_seed up to 2**64 - 1; 32 bits
# also leave room for the seeds the scripts derive from it (10_000 + seed) and suit numpy's seeding


class Bounded:
    """An argparse `type=` for a number in [low, high] (an end left open with low_open/high_open):
    it parses the text, and refuses non-numbers, nan, inf and values out of range with a message
    saying what is allowed. Its bounds are attributes, so that a test can read them."""

    def __init__(self, kind: type, low: float, high: float, low_open: bool = False, high_open: bool = False):
        if kind not in (int, float):
            raise ValueError(f"Bounded: kind must be int or float, got {kind!r}.")
        where, number = ("int_in", whole) if kind is int else ("float_in", real)
        low, high = number(where, "low", low), number(where, "high", high)  # finite; an int's whole
        low_open, high_open = flag(where, "low_open", low_open), flag(where, "high_open", high_open)
        if low > high or (low == high and (low_open or high_open)):
            raise ValueError(f"{where}: need low <= high (and low < high with an open end), got {low!r} and {high!r}.")
        if kind is int and (low_open or high_open):
            raise ValueError(f"{where}: the bounds of an integer are included: pass low + 1 or high - 1 instead.")
        self.kind, self.low, self.high = kind, low, high
        self.low_open, self.high_open = low_open, high_open
        self.__name__ = repr(self)  # argparse names a type by its __name__

    def describe(self) -> str:
        """What is allowed: 'an integer from 2 to 4096', 'a number above 0 and at most 1'."""
        if self.kind is int:
            return f"an integer from {self.low} to {self.high}"
        if not (self.low_open or self.high_open):
            return f"a number from {self.low:g} to {self.high:g}"
        low = f"above {self.low:g}" if self.low_open else f"at least {self.low:g}"
        high = f"below {self.high:g}" if self.high_open else f"at most {self.high:g}"
        return f"a number {low} and {high}"

    def contains(self, value) -> bool:
        return (self.low < value if self.low_open else self.low <= value) and \
            (value < self.high if self.high_open else value <= self.high)

    def parse(self, text: str):
        """The number written `text`; ArgumentTypeError saying what is allowed otherwise."""
        try:
            value = self.kind(str(text).strip())
        except (TypeError, ValueError):  # not a number (or an integer of more than 4300 digits)
            value = None
        if value is None or (self.kind is float and not math.isfinite(value)) or not self.contains(value):
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {_quoted(text)}")
        return value

    def __call__(self, text: str):
        return self.parse(text)

    def __repr__(self) -> str:
        name = "int_in" if self.kind is int else "float_in"
        ends = "".join(f", {end}=True" for end in ("low_open", "high_open") if getattr(self, end))
        return f"{name}({self.low!r}, {self.high!r}{ends})"


class BoundedList(Bounded):
    """An argparse `type=` for comma-separated integers, each in [low, high], e.g. '256,1024,4096'.
    It returns them as a list, in the order given."""

    def __init__(self, low: int, high: int, most: int = 16):
        if isinstance(most, bool) or not isinstance(most, int) or most < 1:
            raise ValueError(f"int_list: most must be a whole number >= 1, got {most!r}.")
        self.most = most  # each value is one more run: a list's length is bounded as its values are
        super().__init__(int, low, high)

    def describe(self) -> str:
        return f"at most {self.most} integers from {self.low} to {self.high}, separated by commas"

    def __call__(self, text: str) -> list:
        parts = str(text).split(",")
        try:
            if len(parts) > self.most:
                raise argparse.ArgumentTypeError("too many")
            return [self.parse(part) for part in parts]
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {_quoted(text)}") from None

    def __repr__(self) -> str:
        return f"int_list({self.low!r}, {self.high!r}, most={self.most!r})"


def int_in(low: int, high: int) -> Bounded:
    """argparse type: an integer from `low` to `high`, both included."""
    return Bounded(int, low, high)


def float_in(low: float, high: float, low_open: bool = False, high_open: bool = False) -> Bounded:
    """argparse type: a finite number from `low` to `high` (an end excluded when low_open/high_open)."""
    return Bounded(float, low, high, low_open, high_open)


def fraction() -> Bounded:
    """argparse type: a fraction, above 0 and at most 1."""
    return Bounded(float, 0.0, 1.0, low_open=True)


def int_list(low: int, high: int, most: int = 16) -> BoundedList:
    """argparse type: up to `most` comma-separated integers, each from `low` to `high`; gives a list."""
    return BoundedList(low, high, most)


def _quoted(text) -> str:
    """A value as a message quotes it: its repr, cut short when long."""
    text = str(text)
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


def output_folder(text: str) -> str:
    """argparse type for --out: a folder that exists or can be created, and can be written.

    `~` and `~user` are expanded as a shell would (the shell leaves `--out=~/figs` alone), so no
    folder named `~` appears in the course. Checked before anything runs; nothing is created."""
    try:
        return str(writable_folder(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def writable_folder(text: str | os.PathLike) -> Path:
    """The folder `text` names, `~` expanded, when it exists or can be created and can be written;
    else ValueError saying why and how to fix it. Nothing is created: the nearest folder on the
    path that exists must be a folder we can write in, which is tried by making and removing an
    empty folder there (permission bits alone do not tell, for root or in /proc)."""
    text = os.fspath(text)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"must name a folder, got {text!r}")
    if "\0" in text:
        raise ValueError(f"must name a folder, but {text[:80]!r} holds a NUL character, which no path can")
    name = text if len(text) <= 80 else text[:60] + "..."  # as messages quote it
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):
        user = expanded.split(os.sep, 1)[0]
        raise ValueError(f"{user!r} names no user's home folder, so {name!r} cannot be expanded as a shell "
                         f"would: write the folder's full path")
    path = Path(os.path.abspath(expanded))
    too_long = [part for part in path.parts if len(os.fsencode(part)) > _NAME_MAX]
    if too_long:  # checked first: the file system refuses to even look such a name up
        raise ValueError(f"cannot create the folder {name!r}: the name {too_long[0][:20]!r}... is longer than "
                         f"the {_NAME_MAX} bytes a folder's name may have")
    try:
        problem = _why_not_writable(path, name)
    except OSError as error:  # a path the system will not even look up (too long, a loop of links)
        problem = f"cannot use the folder {name!r}: {error.strerror.lower()}"
    if problem:
        raise ValueError(problem)
    return Path(expanded)


def _why_not_writable(path: Path, name: str) -> str | None:
    """Why the folder `path` (written `name`) cannot be created or written; None when it can."""
    if path.exists() and not path.is_dir():
        return f"must be a folder, but {name!r} is a file"
    nearest = path  # the nearest entry on the path that is there, a link to nothing included
    while not os.path.lexists(nearest) and nearest.parent != nearest:
        nearest = nearest.parent
    if nearest.is_symlink() and not nearest.exists():
        return (f"cannot create the folder {name!r}: {nearest} is a link to {os.readlink(nearest)!r}, which does "
                f"not exist (remove the link, or name another folder)")
    if not nearest.is_dir():
        return f"cannot create the folder {name!r}: {nearest} is a file"
    if not _can_write_in(nearest):
        where = "it is" if nearest == path else f"{nearest} is"
        return f"cannot create or write the folder {name!r}: {where} not writable"
    return None


_NAME_MAX = 255  # bytes in one file or folder name, on Linux, macOS and Windows file systems alike


def _can_write_in(folder: Path) -> bool:
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        probe = tempfile.mkdtemp(prefix=".write-check-", dir=folder)
    except OSError:
        return False
    try:
        os.rmdir(probe)
    except OSError:  # made but not removable: still, the folder can be written
        pass
    return True


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], formats: Sequence[str] | None = None) -> None:
    """Print rows as an aligned plain-text table; `formats` (one per column, e.g. ".3f") format
    the numbers, and text columns are left-aligned, number columns right-aligned. In Chinese the
    headers and text cells are translated (a table's lines cannot be matched once padded) and
    aligned by their width on a terminal, where a Chinese character takes two columns."""
    for name, value in (("headers", headers), ("rows", rows), ("formats", formats)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and value is not None:
            raise TypeError(f"print_table: {name} must be a list, got {type(value).__name__} {value!r:.60}.")
    if headers is None or rows is None or any(isinstance(row, (str, bytes)) or not isinstance(row, Sequence)
                                              for row in rows):
        raise TypeError("print_table: headers must be a list of column names, and rows a list of rows, each a list.")
    formats = list(formats) if formats is not None else [""] * len(headers)
    if len(formats) != len(headers) or any(len(row) != len(headers) for row in rows):
        raise ValueError("print_table: every row and `formats` need one entry per header.")
    headers = [_shown(str(h)) for h in headers]
    cells = [[_cell(value, fmt, header) for value, fmt, header in zip(row, formats, headers)] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]
    widths = [max([_width(h)] + [_width(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def pad(value: str, width: int, right: bool) -> str:
        room = " " * (width - _width(value))
        return room + value if right else value + room

    def line(values):
        return "  ".join(pad(v, w, num) for v, w, num in zip(values, widths, numeric)).rstrip()

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print(line(row))


def _cell(value: object, fmt: str, header: str) -> str:
    try:
        return format(value, fmt) if fmt else _shown(str(value))
    except (TypeError, ValueError) as error:
        raise ValueError(f"print_table: the format {fmt!r} of column {header!r} cannot format {value!r:.60} "
                         f"({error}).") from None


def _width(text: str) -> int:
    """Columns a text takes on a terminal: two for a wide (Chinese) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _shown(text: str) -> str:
    """A text as the learner reads it: translated where a translator is at work (Chinese)."""
    from labkit.i18n.output import active

    translator = active()
    return translator.text(text) if translator is not None else text


def _learn(text: str) -> None:
    """In Chinese, teach the translator a text of the script's own catalog that is no template of
    its source (the claim, its docstring's first sentence)."""
    from labkit.i18n.output import active

    translator = active()
    if translator is not None:
        translator.add(text)


def _speak(flag: str | None, script: Path) -> None:
    """Choose the language (--lang, ATTENTION_LAB_LANG, a Chinese locale, a zh-CN folder) and, in
    Chinese, translate what the script prints from now on, with the templates of its own source and
    of the scripts beside it that it imports (exp6_time_per_token draws with exp2's plot)."""
    if flag:
        use_language(flag)
    elif not os.environ.get(ENV):
        locale = next((os.environ[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if os.environ.get(name)), "")
        if locale.lower().startswith("zh"):  # POSIX's order: the first of these that is set decides
            use_language("zh-CN")
    if language() != "en":
        from labkit.i18n.output import install

        install(script)
        for module in list(sys.modules.values()):  # a sibling script it imports prints and draws too
            path = getattr(module, "__file__", None)
            if path and Path(path).resolve().parent == script.parent and Path(path).resolve() != script:
                install(Path(path))


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def _first_sentence(doc: str) -> str:
    paragraph = textwrap.dedent(doc).strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def _display_path(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)
