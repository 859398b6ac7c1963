"""The scaffolding shared by experiment scripts: flags, seeding, claims, figures, tables."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from labkit.experiment import Experiment, print_table

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


def test_print_table_aligns_numbers_right_and_text_left(capsys):
    print_table(["name", "value"], [["a", 1.5], ["longer", 10.25]], ["", ".2f"])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["name    value", "------  -----", "a        1.50", "longer  10.25"]
    with pytest.raises(ValueError, match="one entry per header"):
        print_table(["a", "b"], [[1]])
