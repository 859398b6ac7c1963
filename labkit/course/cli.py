"""The command line behind the make targets, so each target is one short line in the Makefile.

    python -m labkit.course list             modules, and which parts each has
    python -m labkit.course exp 03           run module 03's experiment scripts
    python -m labkit.course experiments      run every module's experiment scripts
    python -m labkit.course quiz 03 [--route express]  take module 03's quiz in the terminal
    python -m labkit.course notebooks [03]   re-execute notebooks (each in English, then in Chinese)
    python -m labkit.course workspace [03] [--force]  your copies (workspace/): made where missing
    python -m labkit.course slides 03 [--no-solutions]  module 03's notebook as offline slides
    python -m labkit.course portability [03] notebooks run as other machines would: what changes

Exit status: 0 when all went well, 1 when a script or notebook failed, 2 for a mistake the
learner can fix (unknown module, a part not written yet, a malformed quiz file), printed without a
traceback: one line, or one line per problem in a quiz file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

from labkit.course.machines import ENVIRONMENTS
from labkit.experiment import writable_folder
from labkit.i18n import LANGUAGES, edition_folder, language, tr, use_language
from labkit.i18n.catalog import CatalogError
from labkit.quiz import ROUTES, QuizError, load_quiz, run_terminal_quiz
from labkit.syllabus import CourseError, all_modules, check, find_course_root


def _summary(results: list[tuple[str, bool, float]]) -> int:
    """One line per item, PASS or FAIL with its seconds; 1 if any failed."""
    print(tr("Summary:"))
    for name, ok, seconds in results:
        print(f"  {tr('PASS') if ok else tr('FAIL')}  {name}  ({seconds:.1f} s)")
    failed = sum(not ok for _, ok, _ in results)
    print(tr("{passed} passed, {failed} failed.", passed=len(results) - failed, failed=failed))
    return 1 if failed else 0


def _run_scripts(scripts: list[Path], root: Path) -> list[tuple[str, bool, float]]:
    """Run each script with this Python from the course root, its output streamed as it comes.

    The course root goes first on PYTHONPATH, so the scripts use this checkout's minimind_ref
    even if the environment has another one installed.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    results = []
    for script in scripts:
        name = script.relative_to(root).as_posix()
        print(f"=== {name}", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, name], cwd=root, env=env).returncode
        results.append((name, code == 0, time.perf_counter() - start))
        print(flush=True)
    return results


def _width(text: str) -> int:
    """Columns `text` takes in a terminal: a Chinese character takes two, so the table stays aligned."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def cmd_list(args: argparse.Namespace, root: Path) -> int:
    """A table of the modules, planned and on disk, and which of their parts exist."""
    yes = tr("yes")
    rows = [("NN", "slug", tr("title"), tr("guide"), tr("notebook"), tr("experiments"), tr("quiz"))]
    for m in all_modules(root):
        scripts = len(m.experiments)
        rows.append((m.number, m.slug, tr(m.title), yes if m.guide else "-",  # titles: the glossary's catalog
                     yes if m.notebook else "-", str(scripts) if scripts else "-",
                     yes if m.quiz else "-"))
    widths = [max(_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell + " " * (width - _width(cell)) for cell, width in zip(row, widths)).rstrip())
    return 0


def cmd_exp(args: argparse.Namespace, root: Path) -> int:
    """Run one module's experiment scripts in order."""
    module = check("exp", args.module, root)
    return _summary(_run_scripts(module.experiments, root))


def cmd_experiments(args: argparse.Namespace, root: Path) -> int:
    """Run the experiment scripts of every module that has some."""
    scripts = [script for m in all_modules(root) for script in m.experiments]
    if not scripts:
        print(tr("No experiment scripts exist yet."))
        return 0
    return _summary(_run_scripts(scripts, root))


def cmd_quiz(args: argparse.Namespace, root: Path) -> int:
    """Take the module's quiz in the terminal, on the full course or the express route (its core's
    questions only). A malformed quiz file is a mistake its author can fix, so the validator's lines
    (one per problem) are all that is printed, with exit status 2; quitting early (q, Ctrl-D, Ctrl-C)
    still shows the score and is no failure."""
    path = check("quiz", args.module, root).quiz
    try:
        quiz = load_quiz(path)
    except QuizError as error:
        raise CourseError(str(error)) from None
    run_terminal_quiz(quiz, route=args.route)
    return 0


def _execute_notebook(path: Path, lang: str = "en", text: str | None = None) -> None:
    """Run a notebook top to bottom in a fresh kernel, started in its folder (notebooks/, or
    notebooks/zh-CN/, whose kernel speaks Chinese), and store the outputs. `text`: the notebook to
    run when it is not the file yet (a Chinese notebook just built from the English).

    The file is written only when every cell ran, so a failure leaves the stored outputs as they were.
    """
    import nbformat

    from labkit.course.notebook_runner import execute_notebook
    from labkit.i18n import ENV

    notebook = nbformat.read(path, as_version=4) if text is None else nbformat.reads(text, as_version=4)
    for cell in notebook.cells:  # timestamps of earlier runs: noise in every diff
        cell.metadata.pop("execution", None)
    execute_notebook(notebook, path.parent, env={**os.environ, ENV: lang}, name=path.name)
    path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")  # as `translation build` writes


def _timed(name: str, run) -> tuple[str, bool, float]:
    print(f"=== {name}", flush=True)
    start = time.perf_counter()
    try:
        run()
        ok = True
    except Exception as error:  # a failing cell, a dead kernel or a timeout: report, go on
        print(f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
        ok = False
    return name, ok, time.perf_counter() - start


def _chinese_run(root: Path, english: Path) -> tuple[str, bool, float] | None:
    """Build the Chinese notebook of `english` and run it in Chinese, so that it stores what a Chinese
    learner sees (CONTRIBUTING.md, "The Chinese edition"); None, saying why, while its catalog has a
    text left to translate."""
    from labkit.course.translation.edition import LANG, NotTranslated, build_notebook, zh_notebook

    path = zh_notebook(root, english.stem)
    try:
        text = build_notebook(root, english.stem)
    except NotTranslated:
        print(tr("{name}: not run in Chinese while its catalog has a text to translate (make translations M={number} "
                 "names each)", name=path.relative_to(root).as_posix(), number=english.stem[:2]), file=sys.stderr)
        return None
    path.parent.mkdir(exist_ok=True)
    return _timed(path.relative_to(root).as_posix(), lambda: _execute_notebook(path, LANG, text))


def cmd_notebooks(args: argparse.Namespace, root: Path) -> int:
    """Re-execute one module's notebook, or all of them, in place: the English notebook, then its
    Chinese twin (built from it and run in Chinese)."""
    module = check("notebooks", args.module, root)
    if module is not None:
        paths = [module.notebook]
    else:
        paths = [m.notebook for m in all_modules(root) if m.notebook]
    if not paths:
        print(tr("No notebooks exist yet."))
        return 0
    results = []
    for path in paths:
        results.append(_timed(path.relative_to(root).as_posix(), lambda: _execute_notebook(path)))
        chinese = _chinese_run(root, path) if results[-1][1] else None
        if chinese is not None:
            results.append(chinese)
    return _summary(results)


def cmd_portability(args: argparse.Namespace, root: Path) -> int:
    """Execute one notebook, or all, under stand-ins for other machines; list the outputs that change."""
    module = check("portability", args.module, root)  # a wrong module is named before torch loads
    from labkit.course.portability import machines_from, report, run_on

    paths = [module.notebook] if module is not None else [m.notebook for m in all_modules(root) if m.notebook]
    machines = machines_from(args.machines, args.noise_seeds)
    status = 0
    for path in paths:
        runs = []
        for machine in machines:
            print(f"=== {path.relative_to(root).as_posix()} on {machine}", flush=True)
            runs.append(run_on(path, machine, args.cell_timeout))
        status |= report(path, runs, root)
    return status


def _output_folder(root: Path, name: str, what: str) -> Path:
    """outputs/NAME under the course root, checked before anything is written: a file, a link to
    nothing or a folder that cannot be written there is a CourseError naming it (exit 2)."""
    try:
        return writable_folder(root / "outputs" / name)
    except ValueError as error:
        raise CourseError(tr("cannot write {what} into outputs/{name}/: {error}. Move what is in the way, "
                             "then run the command again.", what=what, name=name, error=error)) from None


def _in_edition(notebook: Path) -> Path:
    """The notebook of the edition asked for (--lang): the English one, or its Chinese twin."""
    twin = edition_folder(notebook.parent) / notebook.name
    if not twin.exists():
        raise CourseError(tr("{notebook} has no {lang} edition yet ({twin}): make translations builds it from "
                             "translations/{lang}/.", notebook=notebook.name, lang=language(),
                             twin=f"{twin.parent.name}/{twin.name}"))
    return twin


def cmd_workspace(args: argparse.Namespace, root: Path) -> int:
    """Make the learner's copy, workspace/NN_slug.ipynb, of every notebook (or of module NN's) that
    has none yet; keep every copy that exists. --force replaces them (with a module: that one)."""
    from labkit.course.student import (
        OPEN_ANSWERS,
        OPEN_COPIES,
        REMAKE_ONE,
        WORKSPACE,
        StudentCopyError,
        make_workspace,
    )

    module = check("workspace", args.module, root)
    folder = edition_folder(root / "notebooks")
    notebooks = [_in_edition(module.notebook)] if module is not None else sorted(folder.glob("*.ipynb"))
    if not notebooks:
        print(tr("No notebooks exist yet."))
        return 0
    workspace = edition_folder(root / WORKSPACE).relative_to(root).as_posix()
    try:
        out_dir = writable_folder(root / workspace)
    except ValueError as error:
        raise CourseError(tr("cannot make your copies in {workspace}/: {error}. Move what is in the way, "
                             "then run the command again.", workspace=workspace, error=error)) from None
    try:
        copies = make_workspace(notebooks, out_dir, replace=notebooks if args.force else [], course=root)
    except StudentCopyError as error:
        raise CourseError(str(error)) from None
    switch = "" if language() == "en" else f" LANG={language()}"  # the commands as this edition types them
    print(tr("Your copies of the notebooks, in {workspace}/ (the solved ones, the answer book: {command}):",
             workspace=workspace, command=f"{OPEN_ANSWERS}{switch}"))
    for copy in copies:
        number = copy.path.name[:2]
        if copy.status == "made":
            note = tr("made (new)")
        elif copy.status == "replaced":
            note = tr("REPLACED by a fresh copy (FORCE=1); your old copy is saved as {backup}",
                      backup=copy.backup.relative_to(root).as_posix() if copy.backup else "")
        elif copy.status == "kept":
            note = tr("kept")
        else:  # "kept, differs"
            note = tr("kept: it differs from a fresh copy (your work, or an older answer book); to replace it: "
                      "{command}", command=f"{REMAKE_ONE.format(number=number)}{switch}")
        print(f"  {copy.path.relative_to(root).as_posix()}: {note}")
    counts = {status: sum(c.status == status for c in copies) for status in ("made", "replaced")}
    kept = len(copies) - counts["made"] - counts["replaced"]
    print(tr("Made {made}, replaced {replaced}, kept {kept}. ({command} opens them in JupyterLab.)",
             made=counts["made"], replaced=counts["replaced"], kept=kept, command=f"{OPEN_COPIES}{switch}"))
    return 0


def cmd_slides(args: argparse.Namespace, root: Path) -> int:
    """Write outputs/slides/NN_slug.slides.html, an offline reveal.js deck of the module's notebook."""
    from labkit.course.slides import SlidesError, write_slides

    module = check("slides", args.module, root)
    notebook = _in_edition(module.notebook)
    out_dir = _output_folder(root, edition_folder(Path("slides")).as_posix(), tr("the slides"))
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        deck = write_slides(notebook, out_dir, root, solutions=not args.no_solutions)
    except SlidesError as error:
        print(error, file=sys.stderr)
        return 1
    print(tr("Wrote {deck}: open it in a browser (no network needed).", deck=deck.relative_to(root).as_posix()))
    print(tr("Right arrow: next section; down arrow: next slide; space: everything in order, answers and "
             "solutions included; s: speaker view, with the notes."))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m labkit.course",
        description="Attention Lab: run a module's experiments, quiz and notebooks.",
    )
    parser.add_argument("--lang", choices=LANGUAGES, default=None,
                        help="the edition: en or zh-CN (简体中文); make passes it from LANG=")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="list modules and what each has").set_defaults(run=cmd_list)
    exp = commands.add_parser("exp", help="run one module's experiment scripts")
    exp.add_argument("module", help="module number, e.g. 03 or 3")
    exp.set_defaults(run=cmd_exp)
    commands.add_parser("experiments", help="run every module's experiment scripts").set_defaults(
        run=cmd_experiments)
    quiz = commands.add_parser("quiz", help="take a module's quiz in the terminal")
    quiz.add_argument("module", help="module number, e.g. 03 or 3")
    quiz.add_argument("--route", choices=ROUTES, default="full",
                      help="full (every question, the default) or express (the core's questions only); "
                           "make passes it from ROUTE=")
    quiz.set_defaults(run=cmd_quiz)
    notebooks = commands.add_parser("notebooks", help="re-execute notebooks in place")
    notebooks.add_argument("module", nargs="?", default="", help="module number (default: all)")
    notebooks.set_defaults(run=cmd_notebooks)
    workspace = commands.add_parser("workspace", help="make your copies of the notebooks (workspace/) where missing")
    workspace.add_argument("module", nargs="?", default="", help="module number (default: every notebook)")
    workspace.add_argument("--force", nargs="?", const="1", default=None, type=_force, metavar="1",
                           help="replace the copy (or, without a module, every copy), saving each old copy "
                                "beside it first (make workspace FORCE=1)")
    workspace.set_defaults(run=cmd_workspace)
    slides = commands.add_parser("slides", help="a module's notebook as offline reveal.js slides (outputs/slides/)")
    slides.add_argument("module", help="module number, e.g. 03 or 3")
    slides.add_argument("--no-solutions", action="store_true",
                        help="leave the exercises' worked solutions out of the deck")
    slides.set_defaults(run=cmd_slides)
    portability = commands.add_parser(
        "portability", help="run notebooks as other machines would and list the stored outputs that change")
    portability.add_argument("module", nargs="?", default="", help="module number (default: all)")
    portability.add_argument("--machines", nargs="*", default=[], choices=sorted(ENVIRONMENTS),
                             help="environment stand-ins to run (default: all of them)")
    portability.add_argument("--noise-seeds", type=_count(0, 16), default=1, metavar="N",
                             help="also run N machines with last-bit noise, seeds 1..N (default 1; 0-16)")
    portability.add_argument("--cell-timeout", type=_count(10, 3600), default=300, metavar="S",
                             help="seconds a cell may run before the run stops (default 300)")
    portability.set_defaults(run=cmd_portability)
    return parser


def _force(text: str) -> str:
    """An argparse type: FORCE=1 (--force, --force=1) is the one value that replaces copies."""
    if text.strip() != "1":
        raise argparse.ArgumentTypeError(tr(
            "FORCE={given} is not a choice: only FORCE=1 replaces your copies (each old copy is saved beside "
            "it first); leave FORCE out to keep them", given=repr(text)))
    return "1"


def _count(low: int, high: int):
    """An argparse type: an int within [low, high], else a usage error naming the range."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    """Parse the command, run it from the course root; a CourseError, or a translation catalog that
    cannot be used (the Chinese quiz's), becomes one message and exit 2."""
    early = argparse.ArgumentParser(add_help=False)  # the language first, so argparse's checks speak it too
    early.add_argument("--lang", choices=LANGUAGES, default=None)
    chosen = early.parse_known_args(argv)[0].lang
    if chosen:
        use_language(chosen)
    args = _parser().parse_args(argv)
    try:
        return args.run(args, find_course_root())
    except (CourseError, CatalogError) as error:
        print(error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
