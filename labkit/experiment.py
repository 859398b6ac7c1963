"""What every experiment script shares: the course's command-line flags, a seeded start, figures
saved only inside the output folder, and claims that are checked rather than asserted in prose.

An experiment script states one claim in its docstring, shows it in its output and checks it; it
exits 1 with a plain sentence when the claim does not hold. The skeleton:

    '''Permuting the tokens permutes attention's output: attention has no notion of order.'''
    from labkit.experiment import Experiment

    def add_arguments(parser):
        parser.add_argument("--tokens", type=int, default=6, help="sequence length")

    def main(argv=None):
        exp = Experiment.start(__doc__, __file__, argv, add_arguments)
        ...                                   # compute, print what it shows
        exp.claim(error < 1e-6, f"the outputs are a permutation of each other (max error {error:.1e})")
        exp.save(fig, "permutation")          # -> outputs/01_attention_basics/exp1_permutation.png
        return exp.finish()

    if __name__ == "__main__":
        raise SystemExit(main())

Every script gets `--help`, `--seed` (default 0), `--out DIR` (default `outputs/NN_slug/` at the
course root) and `--show` (open the figures in a window as well as saving them). A script writes
nothing but its own PNG files, named after itself, into that folder.
"""

from __future__ import annotations

import argparse
import random
import sys
import textwrap
from pathlib import Path
from typing import Callable, Optional, Sequence

from .course.catalog import find_course_root

CHECK, CROSS = "\u2713", "\u2717"


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

    @classmethod
    def start(cls, doc: Optional[str], script_file: str, argv: Optional[Sequence[str]] = None,
              add_arguments: Optional[Callable[[argparse.ArgumentParser], None]] = None) -> "Experiment":
        """Parse the command line (the course's flags plus the script's own), seed every random
        generator from --seed and print the claim being tested."""
        script = Path(script_file).resolve()
        parser = argparse.ArgumentParser(
            prog=f"python {script.parent.parent.name}/{script.parent.name}/{script.name}"
            if script.parent.parent.name == "experiments" else script.name,
            description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("--seed", type=int, default=0, help="seed for torch and random (default 0)")
        parser.add_argument("--out", metavar="DIR", default=None,
                            help="folder for the figures (default: outputs/<module>/ at the course root)")
        parser.add_argument("--show", action="store_true", help="also open the figures in a window")
        if add_arguments is not None:
            add_arguments(parser)
        args = parser.parse_args(argv)
        _seed(args.seed)
        experiment = cls(script, args)
        if doc:
            print(f"{experiment.module}/{experiment.name}: {_first_sentence(doc)}")
            print()
        return experiment

    def claim(self, holds: bool, sentence: str) -> bool:
        """Record and print whether the claim `sentence` holds; finish() fails if any did not."""
        holds = bool(holds)
        print(f"{CHECK if holds else CROSS} {'claim holds' if holds else 'CLAIM DOES NOT HOLD'}: {sentence}")
        if not holds:
            self.failed.append(sentence)
        return holds

    def save(self, figure, stem: str) -> Path:
        """Save a matplotlib figure as <out>/<script name>_<stem>.png and return the path. Only
        this script's own files are written, and only inside the output folder."""
        if not stem or any(ch in stem for ch in "/\\") or stem.startswith("."):
            raise ValueError(f"Experiment.save: stem must be a plain file name part, got {stem!r}.")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{self.name}_{stem}.png"
        figure.savefig(path, dpi=120, bbox_inches="tight")
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
                print(f"saved {_display_path(path)}")
        if self.args.show and self.saved:
            import matplotlib.pyplot as plt

            plt.show()
        if self.failed:
            print(f"\n{self.name} failed: {len(self.failed)} claim(s) did not hold:", file=sys.stderr)
            for sentence in self.failed:
                print(f"  - {sentence}", file=sys.stderr)
            return 1
        return 0


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], formats: Optional[Sequence[str]] = None) -> None:
    """Print rows as an aligned plain-text table; `formats` (one per column, e.g. ".3f") format
    the numbers, and text columns are left-aligned, number columns right-aligned."""
    formats = list(formats) if formats is not None else [""] * len(headers)
    if len(formats) != len(headers) or any(len(row) != len(headers) for row in rows):
        raise ValueError("print_table: every row and `formats` need one entry per header.")
    cells = [[format(value, fmt) if fmt else str(value) for value, fmt in zip(row, formats)] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print(line(row))


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
