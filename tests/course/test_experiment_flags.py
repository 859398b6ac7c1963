"""Every flag of every experiment script refuses a bad value as a usage error, before anything runs.

Exit status 1 means "a claim did not hold"; a bad flag is a usage error, exit 2, with argparse's
message naming the flag. So every option that takes a value has a bounded type from
labkit.experiment (int_in, float_in, fraction, int_list) or a fixed set of `choices`, and --out
must name a folder that can be created and written. The bounds keep a run within a laptop's
minutes and memory, and where a claim holds: a claim holds at every value a flag allows, and a
value where it cannot is refused. Constraints between flags are the script's `check_arguments(args)`.
`ATTENTION_LAB_EXTREMES=1` runs every script at both ends of every flag (section (e)): an hour or
more, so not in make test; run it after changing a bound or a claim.

The scripts are found through the syllabus, and each one's parser is built without running it
(Experiment.parser). Real command lines go through each script's main(argv), and one runs as its
own process, to show the interpreter's exit status is 2.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from experiment_scripts import load_experiment

from labkit.experiment import Bounded, BoundedList, Experiment, output_folder
from labkit.syllabus import all_modules

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {f"{module.name}/{path.stem}": (module.number, path)
           for module in all_modules(ROOT) for path in module.experiments}


@functools.lru_cache(maxsize=None)
def script(name: str):
    """(parser, check_arguments or None, loaded module) of the script `name`, without running it."""
    number, path = SCRIPTS[name]
    loaded = load_experiment(number, path.stem)
    parser = Experiment.parser(loaded.__doc__, loaded.__file__, loaded.add_arguments)
    return parser, getattr(loaded, "check_arguments", None), loaded


def value_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options that take a value (not --help, not on/off switches such as --show)."""
    return [action for action in parser._actions if action.option_strings and action.nargs != 0]


def flag(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def all_options():
    """(script name, flag) of every value-taking option but --out, which has its own checks."""
    return [(name, flag(action)) for name in SCRIPTS for action in value_options(script(name)[0])
            if flag(action) != "--out"]


def action_of(name: str, option: str) -> argparse.Action:
    return next(a for a in value_options(script(name)[0]) if flag(a) == option)


def just_outside(bounded: Bounded) -> tuple[str, str]:
    """Text for the nearest values below the minimum and above the maximum."""
    if bounded.kind is int:
        return str(bounded.low - 1), str(bounded.high + 1)
    below = bounded.low if bounded.low_open else math.nextafter(bounded.low, -math.inf)
    above = bounded.high if bounded.high_open else math.nextafter(bounded.high, math.inf)
    return repr(below), repr(above)


def just_inside(bounded: Bounded) -> tuple[str, str]:
    """Text for the smallest and the largest value allowed."""
    if bounded.kind is int:
        return str(bounded.low), str(bounded.high)
    low = math.nextafter(bounded.low, math.inf) if bounded.low_open else bounded.low
    high = math.nextafter(bounded.high, -math.inf) if bounded.high_open else bounded.high
    return repr(low), repr(high)


def bad_values(action: argparse.Action) -> list[str]:
    if isinstance(action.type, Bounded):
        values = [*just_outside(action.type), "abc", ""]
        if action.type.kind is float:
            values += ["nan", "inf", "-inf"]
        else:
            values += ["1.5", "1e3", "99999999999999999999"]
        if isinstance(action.type, BoundedList):
            values += [f"{action.type.low},{just_outside(action.type)[1]}", f"{action.type.low},,{action.type.low}"]
        return values
    numeric = all(isinstance(c, (int, float)) for c in action.choices)
    return ["abc"] + ([str(max(action.choices) + 1), str(min(action.choices) - 1)] if numeric else [])


def parse_fails(parser: argparse.ArgumentParser, argv: list[str], capsys) -> str:
    """parse_args(argv) must exit 2; returns what it wrote to stderr."""
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(argv)
    assert exited.value.code == 2, f"{argv} exited {exited.value.code!r}, not 2 (a usage error)"
    return capsys.readouterr().err


def test_the_syllabus_finds_every_script():
    assert len(SCRIPTS) >= 30
    assert all(hasattr(script(name)[2], "add_arguments") for name in SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_names_the_course_flags_after_the_claim(name):
    parser, _, loaded = script(name)
    text = parser.format_help()
    for course_flag in ("--seed", "--out", "--show"):
        assert course_flag in text
    claim = " ".join(loaded.__doc__.strip().split("\n\n")[0].split())
    assert claim and claim in " ".join(text.split()), "--help starts with the script's claim"


# --------------------------------------------------------------------------- (a) bounded types


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_option_has_a_bounded_type_or_choices(name):
    parser, _, _ = script(name)
    unbounded = []
    for action in value_options(parser):
        if flag(action) == "--out":
            assert action.type is output_folder, "--out is checked by labkit.experiment.output_folder"
        elif not (isinstance(action.type, Bounded) or action.choices is not None):
            unbounded.append(f"{flag(action)} (type {getattr(action.type, '__name__', action.type)})")
    assert not unbounded, f"{name}: options without bounds or choices: {', '.join(unbounded)}"


def with_cross_checks() -> list[str]:
    return [name for name in SCRIPTS if script(name)[1] is not None]


@pytest.mark.parametrize("name", with_cross_checks())
def test_a_script_with_cross_flag_checks_passes_them_to_start(name):
    _, _, loaded = script(name)
    source = inspect.getsource(loaded.main)
    assert "add_arguments, check_arguments)" in source, f"{name}: main must give check_arguments to Experiment.start"


# --------------------------------------------------------------------------- (b) bad values exit 2


@pytest.mark.parametrize("name, option", all_options())
def test_bad_values_exit_2_naming_the_option(name, option, capsys):
    parser, _, _ = script(name)
    action = action_of(name, option)
    for value in bad_values(action):
        err = parse_fails(parser, [f"{option}={value}"], capsys)
        assert f"argument {option}" in err, f"{name} {option}={value!r}: the message must name the option:\n{err}"
        if isinstance(action.type, Bounded):
            assert action.type.describe() in err, f"the message says what is allowed:\n{err}"


@pytest.mark.parametrize("name, option", all_options())
def test_values_at_the_bounds_are_accepted(name, option):
    parser, _, _ = script(name)
    action = action_of(name, option)
    if not isinstance(action.type, Bounded):
        for choice in action.choices:
            parser.parse_args([f"{option}={choice}"])
        return
    for value in just_inside(action.type):
        parser.parse_args([f"{option}={value}"])


def test_seed_is_bounded_to_what_torch_and_random_accept(capsys):
    parser, _, _ = script(next(iter(SCRIPTS)))
    seed = action_of(next(iter(SCRIPTS)), "--seed").type
    assert (seed.low, seed.high) == (0, 2 ** 32 - 1)
    assert parser.parse_args([f"--seed={2 ** 32 - 1}"]).seed == 2 ** 32 - 1
    assert "argument --seed" in parse_fails(parser, ["--seed=99999999999999999999"], capsys)
    assert "argument --seed" in parse_fails(parser, ["--seed=-1"], capsys)


# --------------------------------------------------------------------------- (c) the defaults


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_default_passes_its_own_type_and_the_cross_checks(name):
    parser, check, _ = script(name)
    for action in value_options(parser):
        default = action.default
        if flag(action) in ("--out", "--lang"):  # None: a folder named after the script; the environment's language
            assert default is None
            continue
        if action.choices is not None:
            assert default in action.choices, f"{flag(action)}: default {default!r} is not one of its choices"
            continue
        if isinstance(default, str):  # argparse parses a string default with the type
            action.type(default)
            continue
        for value in default if isinstance(default, list) else [default]:
            assert action.type.contains(value), f"{flag(action)}: default {value!r} is not {action.type.describe()}"
            assert action.type(repr(value)) == value
    args = parser.parse_args([])
    assert check is None or check(args) is None, f"{name}: the defaults fail its cross-flag check: {check(args)}"


@pytest.mark.parametrize("name", with_cross_checks())
def test_cross_flag_messages_name_the_flags(name):
    """Each option at its smallest and largest value, the others at their defaults: whatever the
    cross-flag check refuses, its message names at least one flag."""
    parser, check, _ = script(name)
    for action in value_options(parser):
        if not isinstance(action.type, Bounded):
            continue
        for value in just_inside(action.type):
            problem = check(parser.parse_args([f"{flag(action)}={value}"]))
            assert problem is None or "--" in problem, f"{flag(action)}={value}: {problem!r} names no flag"


# --------------------------------------------------------------------------- (d) real command lines


def run_script(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The script run as a learner runs it, in its own process. No clock: a refused run is one that
    exits 2 before it prints anything, however busy the machine."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(SCRIPTS[name][1]), *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


COMMAND_LINES = [  # (script, arguments, the flag the message must name)
    ("01_attention_basics/exp2_scaling", ["--max-dk", "1048576"], "--max-dk"),
    ("01_attention_basics/exp2_scaling", ["--keys", "100000000"], "--keys"),
    ("01_attention_basics/exp2_scaling", ["--min-dk", "512", "--max-dk", "256"], "--min-dk"),
    ("01_attention_basics/exp2_scaling", ["--min-dk", "6"], "--min-dk"),
    ("01_attention_basics/exp2_scaling", ["--queries", "65536", "--keys", "1024"], "--queries"),
    ("08_flash/exp2_memory", ["--lengths", "512", "256"], "--lengths"),
    ("08_flash/exp2_memory", ["--lengths", "256", "512", "1024", "2048", "4096", "8192", "16384", "32768", "65536"],
     "--lengths"),
    ("08_flash/exp1_online_softmax", ["--keys", "0"], "--keys"),
    ("04_gqa/exp1_repeat_kv_memory", ["--kv-heads", "1"], "--kv-heads"),  # MQA: shown by every run, not a GQA claim
    ("08_flash/exp3_recomputation", ["--lengths", "256", "128"], "--lengths"),
    ("07_kv_cache/exp2_cost_per_token", ["--hidden", "100000"], "--hidden"),
    ("07_kv_cache/exp4_cache_growth", ["--initial", "1024", "--steps", "512"], "--initial"),
    ("06_rope/exp2_relative_position", ["--far", "600"], "--far"),
    ("05_masking/exp4_padding_side", ["--new", "22"], "--new"),
    ("04_gqa/exp4_decode_speed", ["--lengths", "256,x"], "--lengths"),
    ("02_qkv/exp2_kv_retrieval", ["--lr", "nan"], "--lr"),
    ("01_attention_basics/exp1_permutation_equivariance", ["--seed", "99999999999999999999"], "--seed"),
]


@pytest.mark.parametrize("name, args, option", COMMAND_LINES, ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_bad_command_lines_exit_2_before_anything_runs(name, args, option, tmp_path, capsys, monkeypatch):
    """Each command line through the script's own main(argv), in this process (a process per line
    would cost a torch import each): exit 2, the flag named, nothing printed or written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        script(name)[2].main([*args, "--out", str(tmp_path / "figures")])
    out, err = capsys.readouterr()
    assert exited.value.code == 2, f"exit {exited.value.code}:\n{out[-2000:]}\n{err[-2000:]}"
    assert option in err and "error:" in err, err
    assert out == "", "nothing runs: not even the claim is printed"
    assert list(tmp_path.iterdir()) == [], "a refused run writes nothing"


def test_a_bad_command_line_exits_2_in_its_own_process(tmp_path):
    """End to end, as a learner types it: the interpreter's exit status is 2, argparse's message
    names the flag, no traceback, nothing printed or written."""
    result = run_script("08_flash/exp1_online_softmax", "--keys", "0", "--out", str(tmp_path / "figures"),
                        cwd=tmp_path)
    assert result.returncode == 2, f"exit {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    assert "--keys" in result.stderr and "error:" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- (e) the extremes run

EXTREMES_ENV = "ATTENTION_LAB_EXTREMES"


def extremes() -> list[tuple[str, str, str]]:
    """(script, flag, value): the smallest and the largest value of every bounded flag, and each choice
    of a flag with choices, the other flags at their defaults."""
    runs = []
    for name, option in all_options():
        if option == "--seed":
            continue  # any seed: the claims are checked with margins the seed cannot cross
        action = action_of(name, option)
        values = just_inside(action.type) if isinstance(action.type, Bounded) else [
            str(choice) for choice in action.choices if choice != action.default]
        runs += [(name, option, value) for value in values]
    return runs


def test_the_reported_extremes_run(tmp_path):
    """08_flash/exp1 at --keys 2 once divided by a tile of 0 keys; now its claims hold at the bound."""
    result = run_script("08_flash/exp1_online_softmax", "--keys", "2", "--out", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.mark.skipif(not os.environ.get(EXTREMES_ENV), reason=(
    f"{EXTREMES_ENV}=1 runs every script at both ends of every flag (about 230 runs: an hour or more on "
    "2 cores, since the upper bounds are by design the largest runs a laptop should take minutes over); "
    "run it after changing a bound or a claim"))
@pytest.mark.parametrize("name, option, value", extremes() if os.environ.get(EXTREMES_ENV) else [])
def test_at_every_bound_the_claims_hold_or_the_value_is_refused_by_name(name, option, value, tmp_path):
    """A claim must hold at every value a flag allows: a value where it cannot is refused by name
    (exit 2, from the flag's bounds or check_arguments), never a failed claim (exit 1) or a traceback."""
    result = run_script(name, f"{option}={value}", "--out", str(tmp_path / "figures"), cwd=tmp_path)
    said = result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode in (0, 2) and "Traceback" not in result.stderr, f"{name} {option}={value}:\n{said}"
    if result.returncode == 2:
        assert "--" in result.stderr.strip().splitlines()[-1], f"the refusal names a flag:\n{said}"
