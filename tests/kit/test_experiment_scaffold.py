"""The scaffolding shared by experiment scripts: flags, seeding, claims, figures, tables."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from labkit.experiment import Experiment, float_in, fraction, int_in, int_list, output_folder, print_table

DOC = """Two plus two is four.

More words about the claim.
"""


@pytest.fixture
def script(tmp_path):
    """A fake script inside a fake course: <root>/experiments/01_attention_basics/exp1_demo.py."""
    (tmp_path / "Makefile").write_text("")
    (tmp_path / "minimind_ref").mkdir()
    (tmp_path / "minimind_ref" / "__init__.py").write_text("")
    folder = tmp_path / "experiments" / "01_attention_basics"
    folder.mkdir(parents=True)
    path = folder / "exp1_demo.py"
    path.write_text("")
    return path


def test_start_prints_the_claim_and_uses_the_module_output_folder(script, capsys):
    exp = Experiment.start(DOC, str(script), [])
    assert capsys.readouterr().out.startswith("01_attention_basics/exp1_demo: Two plus two is four.")
    assert exp.out_dir == script.parents[2] / "outputs" / "01_attention_basics"
    assert (exp.args.seed, exp.args.show) == (0, False)


def test_seed_makes_runs_repeatable(script):
    Experiment.start(DOC, str(script), ["--seed", "3"])
    first = torch.rand(3)
    Experiment.start(DOC, str(script), ["--seed", "3"])
    assert torch.equal(first, torch.rand(3))


def test_script_arguments_are_added(script):
    exp = Experiment.start(DOC, str(script), ["--tokens", "9"],
                           lambda parser: parser.add_argument("--tokens", type=int, default=6))
    assert exp.args.tokens == 9


def test_parser_is_built_without_running_anything(script, capsys):
    parser = Experiment.parser(DOC, str(script), lambda p: p.add_argument("--tokens", type=int_in(2, 64), default=6))
    assert capsys.readouterr().out == "", "building the parser prints nothing and seeds nothing"
    assert {a.dest for a in parser._actions} >= {"seed", "out", "show", "tokens"}
    assert parser.prog == "python experiments/01_attention_basics/exp1_demo.py"


def test_bad_values_are_usage_errors_that_name_the_flag(script, capsys):
    def add(parser):
        parser.add_argument("--tokens", type=int_in(2, 4096), default=6)
        parser.add_argument("--lr", type=float_in(0.0, 10.0, low_open=True), default=0.1)
    for argv, message in [(["--tokens", "0"], "argument --tokens: must be an integer from 2 to 4096, got '0'"),
                          (["--tokens", "abc"], "argument --tokens: must be an integer from 2 to 4096, got 'abc'"),
                          (["--lr", "nan"], "argument --lr: must be a number above 0 and at most 10, got 'nan'"),
                          (["--lr=-inf"], "argument --lr: must be a number above 0 and at most 10, got '-inf'"),
                          (["--seed", str(2 ** 32)], "argument --seed: must be an integer from 0 to 4294967295")]:
        with pytest.raises(SystemExit) as exited:
            Experiment.start(DOC, str(script), argv, add)
        assert exited.value.code == 2
        assert message in capsys.readouterr().err


def test_cross_flag_checks_exit_2_with_their_message(script, capsys):
    def add(parser):
        parser.add_argument("--low", type=int_in(1, 100), default=1)
        parser.add_argument("--high", type=int_in(1, 100), default=10)

    def check(args):
        return f"--low must be at most --high, got {args.low} and {args.high}" if args.low > args.high else None
    assert Experiment.start(DOC, str(script), ["--low", "5"], add, check).args.low == 5
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        Experiment.start(DOC, str(script), ["--low", "50"], add, check)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert "error: --low must be at most --high, got 50 and 10" in captured.err
    assert captured.out == "", "nothing runs, not even the claim is printed"


def test_bounded_types_keep_their_bounds_and_refuse_what_is_outside():
    tokens = int_in(2, 4096)
    assert (tokens.kind, tokens.low, tokens.high) == (int, 2, 4096)
    assert tokens("2") == 2 and tokens(" 4096 ") == 4096
    for bad in ("1", "4097", "abc", "2.0", "", "99999999999999999999"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be an integer from 2 to 4096"):
            tokens(bad)
    share = fraction()
    assert share("1") == 1.0 and share("1e-9") == 1e-9
    for bad in ("0", "1.0000001", "nan", "inf", "-inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be a number above 0 and at most 1"):
            share(bad)
    assert float_in(-5, -1)("-5") == -5.0
    with pytest.raises(argparse.ArgumentTypeError, match="from -5 to -1"):
        float_in(-5, -1)("-0.5")
    lengths = int_list(1, 16384)
    assert (lengths.low, lengths.high) == (1, 16384)
    assert lengths("256,1024,4096") == [256, 1024, 4096]
    for bad in ("256,0", "256,,1024", "256;1024", "16385"):
        with pytest.raises(argparse.ArgumentTypeError, match="integers from 1 to 16384, separated by commas"):
            lengths(bad)
    for wrong in (lambda: int_in(5, 1), lambda: float_in(0, math.inf), lambda: float_in(0, 10**400),
                  lambda: float_in(1, 1, low_open=True)):
        with pytest.raises(ValueError, match=r"^(int|float)_in: "):
            wrong()
    for wrong in (lambda: int_in(1.5, 3), lambda: int_in(True, 3), lambda: int_in("1", 3),
                  lambda: float_in(0, 1, low_open="yes")):
        with pytest.raises(TypeError, match=r"^(int|float)_in: (low|low_open) must be"):
            wrong()


def test_out_must_be_a_folder_that_can_be_created_and_nothing_is_made_when_it_cannot(tmp_path):
    assert output_folder(str(tmp_path / "new" / "deeper")) == str(tmp_path / "new" / "deeper")
    assert sorted(tmp_path.iterdir()) == [], "checking creates nothing"
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match="is a file"):
        output_folder(str(blocker))
    with pytest.raises(argparse.ArgumentTypeError, match="is a file"):
        output_folder(str(blocker / "figures"))
    with pytest.raises(argparse.ArgumentTypeError, match="must name a folder"):
        output_folder("")
    if Path("/proc").is_dir():
        with pytest.raises(argparse.ArgumentTypeError, match="not writable"):
            output_folder("/proc/nope")
    assert sorted(tmp_path.iterdir()) == [blocker]


def test_claims_decide_the_exit_status(script, capsys):
    exp = Experiment.start(DOC, str(script), [])
    assert exp.claim(True, "it holds")
    assert exp.finish() == 0
    assert not exp.claim(False, "it does not hold")
    assert exp.finish() == 1
    captured = capsys.readouterr()
    assert "\u2713 claim holds: it holds" in captured.out
    assert "\u2717 CLAIM DOES NOT HOLD: it does not hold" in captured.out
    assert "1 claim(s) did not hold" in captured.err and "- it does not hold" in captured.err


def test_figures_are_saved_only_inside_the_output_folder(script, tmp_path):
    out = tmp_path / "my_figures"
    exp = Experiment.start(DOC, str(script), ["--out", str(out)])
    fig, _ = plt.subplots()
    path = exp.save(fig, "curve")
    assert path == out / "exp1_demo_curve.png" and path.is_file()
    assert not plt.fignum_exists(fig.number), "saved figures are closed unless --show"
    for bad in ("../escape", "a/b", ".hidden", ""):
        with pytest.raises(ValueError, match="plain file name"):
            exp.save(fig, bad)


def test_saved_figures_get_a_layout_and_plain_tick_labels(script, tmp_path):
    exp = Experiment.start(DOC, str(script), ["--out", str(tmp_path)])
    fig, (narrow, wide, large, by_hand, base2) = plt.subplots(1, 5)
    base2.loglog([256, 512, 1024, 2048], [1, 2, 3, 4], base=2)
    narrow.semilogy([1, 2, 3], [2.0, 4.0, 6.0])          # under a decade: matplotlib writes 2x10^0 ...
    wide.semilogy([1, 2, 3], [1e-6, 1e-2, 10.0])         # seven decades: one label per power of ten
    large.bar([0, 1], [3e5, 1.05e6])                    # matplotlib: 0.2 ... 1.0 and a "1e6" in the corner
    by_hand.plot([1, 2], [1, 2])
    by_hand.set_yscale("log")
    by_hand.set_yticks([1, 2], ["one", "two"])          # ticks set by hand are kept
    exp.args.show = True                                # keep the figure open to look at it
    exp.save(fig, "ticks")
    assert type(fig.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"
    fig.canvas.draw()

    def shown(ax):
        low, high = ax.get_ylim()
        return [t.get_text() for t in ax.get_yticklabels() if t.get_text() and low <= t.get_position()[1] <= high]
    assert shown(narrow) and set(shown(narrow)) <= {"1", "2", "5", "10"}, shown(narrow)
    assert set(shown(wide)) >= {"1e-5", "1e-3", "0.1", "10"} and "2e-5" not in shown(wide), shown(wide)
    assert "1M" in shown(large) and large.yaxis.get_offset_text().get_text() == ""
    assert [t.get_text() for t in by_hand.get_yticklabels()] == ["one", "two"]
    low, high = base2.get_xlim()
    shown_base2 = {t.get_text() for t in base2.get_xticklabels() if low <= t.get_position()[0] <= high}
    assert shown_base2 and shown_base2 <= {"256", "512", "1,024", "2,048"}, shown_base2
    plt.close(fig)


@pytest.mark.parametrize("value, text", [(0, "0"), (2.0, "2"), (0.5, "0.5"), (50, "50"), (12000, "12k"),
                                         (3e6, "3M"), (1e9, "1G"), (2e8, "200M"), (5e-5, "5e-5"), (0.002, "2e-3")])
def test_plain_number(value, text):
    from labkit.figures import plain_number

    assert plain_number(value) == text


def test_print_table_aligns_numbers_right_and_text_left(capsys):
    print_table(["name", "value"], [["a", 1.5], ["longer", 10.25]], ["", ".2f"])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["name    value", "------  -----", "a        1.50", "longer  10.25"]
    with pytest.raises(ValueError, match="one entry per header"):
        print_table(["a", "b"], [[1]])
