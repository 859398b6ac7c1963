"""Every experiment script of every module runs with its defaults, checks its claim and exits 0.

The scripts are found through the syllabus, so a module's scripts are tested the moment they exist.
Each runs in its own process, as a learner runs it (forked from a warm interpreter:
tests/warm_python.py), with figures sent to a temporary folder.

Each runs once, in Chinese (`LANG=zh-CN`, as the Chinese README says) when it has a catalog: the
claims do not depend on the language (the same code computes them; only what leaves the program is
translated), so one run checks the claims and that a Chinese learner reads no English prose and no
English figure label. A script without a catalog runs in English, and so does the English README's
taste route (English output is the code's own prints, untranslated).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from experiment_scripts import times_itself
from warm_python import WarmPython

from labkit.i18n import speaking, tr
from labkit.i18n.output import png_texts
from labkit.i18n.prose import english_prose, english_words
from labkit.syllabus import all_modules

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [script for module in all_modules(ROOT) for script in module.experiments]
CATALOGS = ROOT / "translations" / "zh-CN" / "experiments"


def speaks_chinese(script: Path) -> bool:
    return (CATALOGS / script.parent.name / f"{script.stem}.md").exists()


def taste_route() -> list[Path]:
    """The scripts the English README's routes start with (its first bash block after "## Routes")."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Routes", 1)[1]
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return [ROOT / word for word in block.split() if word.startswith("experiments/") and word.endswith(".py")]


# A script may show an error the model or torch raises, as the lesson: those messages stay English, as
# torch's own do (issue 36); the script's explanation around them is translated.
RAISED = re.compile(r"\s*(\w+\.)*\w*(Error|Exception)\b")

RUNS = [(script, "zh-CN" if speaks_chinese(script) else "en") for script in SCRIPTS]
RUNS += [(script, "en") for script in taste_route() if speaks_chinese(script)]
# A script whose claim is about time runs after the parallel pass, alone (the "serial" marker, see
# the Makefile's test target): a busy neighbour on the other core is not what it measures.
def timed(script: Path, lang: str):
    return pytest.param(script, lang, marks=pytest.mark.serial) if times_itself(script) else (script, lang)


# A hang is a script that never ends, not a slow one: on a loaded machine a script's wall-clock time
# stretches, the CPU time it uses does not. So a script may use CPU_LIMIT seconds of CPU, 30 times an
# experiment's budget (20 s on 2 cores), and no wall-clock limit stands in its way.
CPU_LIMIT = 600


@pytest.fixture(scope="module")
def python():
    """Every script of this file runs in a process of its own, forked from one warm interpreter
    (tests/warm_python.py): the scripts' own work, without 41 start-ups of torch."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    with WarmPython(env, CPU_LIMIT) as warm:
        yield warm


def run_script(python: WarmPython, script: Path, *args: str, cwd: Path = ROOT,
               **env: str) -> subprocess.CompletedProcess:
    result = python.run(script, *args, cwd=cwd, env=env)
    assert result.returncode != -getattr(signal, "SIGXCPU", 0), \
        f"{script.name} used more than {CPU_LIMIT} s of CPU: a loop that never ends?"
    return result


def test_every_module_on_disk_has_experiments_found():
    assert SCRIPTS, "no experiment scripts were found under experiments/"


def test_the_taste_route_is_found_and_runs_in_both_languages():
    taste = taste_route()
    assert taste and all(script in SCRIPTS for script in taste), taste
    assert all(speaks_chinese(script) for script in taste), "the Chinese README's taste route speaks Chinese"


@pytest.mark.parametrize("script, lang", [timed(*run) for run in RUNS],
                         ids=lambda x: f"{x.parent.name}/{x.name}" if isinstance(x, Path) else x)
def test_script_runs_with_defaults_and_its_claims_hold(script, lang, tmp_path, python):
    out = tmp_path / "figures"
    result = run_script(python, script, "--out", str(out), cwd=tmp_path, LANG=lang, ATTENTION_LAB_LANG="")
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    with speaking(lang):
        holds, fails = tr("claim holds"), tr("CLAIM DOES NOT HOLD")
    assert holds in result.stdout, "an experiment checks at least one claim"
    assert fails not in result.stdout
    figures = sorted(out.glob("*.png"))
    assert figures, "an experiment saves its figures"
    assert all(f.name.startswith(script.stem + "_") for f in figures), "figures are named after their script"
    assert sorted(tmp_path.iterdir()) == [out], "nothing is written outside the output folder"
    if lang == "zh-CN":
        english = [line for line in result.stdout.splitlines() if english_prose(line) and not RAISED.match(line)]
        assert not english, "English prose in a Chinese run:\n" + "\n".join(english)
        for figure in figures:
            labels = [entry["text"] for entry in png_texts(figure) if not entry.get("tick")]
            assert not [text for text in labels if english_words(text)], (figure.name, labels)
