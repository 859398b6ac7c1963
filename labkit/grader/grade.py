"""grade(): climb the ladder with the learner's attention class, stop at the first stage that fails,
say where it differs and which known mistake it matches.

    from labkit import grade
    report = grade(MyAttention)   # prints the report; report.passed, report.stage, report.matches

The learner's class is built as minimind_ref's is, `MyAttention(config, layer_idx)`, holds the same
parameters (`q_proj`, `k_proj`, `v_proj`, `o_proj`; `q_norm`, `k_norm` when `config.qk_norm`), and
its forward takes `(x, position_embeddings, attn_mask=None, past_key_values=None,
output_attentions=False)` and returns `(output, weights or None)`. A class that cannot be used that
way is refused at once with GraderUsageError, which names what to change; a class that is not
written yet (NotImplementedError) gets a "not yet" that says so.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
from torch import nn

import minimind_ref as mm
from labkit.i18n import phrase, tr
from labkit.models import random_minimind

from .compare import Difference, first_difference, same_behaviour
from .contract import CONTRACT, CONTRACT_TEXT, Misread
from .guard import DEFAULT_TIME_LIMIT, Guard, Misuse, imported_since_snapshot, replaced, take_snapshot
from .ladder import (
    LADDER,
    PASSES,
    Records,
    Stage,
    Unfinished,
    construct,
    in_words,
    model_episodes,
    pass_of,
    run_model,
    run_stage,
    stage_inputs,
    stage_number,
)
from .mistakes import CATALOGUE, Mistake

FORWARD_ARGUMENTS = ("x", "position_embeddings", "attn_mask", "past_key_values", "output_attentions")
INCONCLUSIVE_AT = 3  # this many catalogue entries matching equally name none of them


class GraderUsageError(ValueError):
    """The class cannot be graded as it is (wrong signature, wrong parameter names, a constructor
    that fails, code that exits, hangs or changes torch or the grader): the message says why."""


@dataclass
class GradeReport:
    name: str
    passed_stages: list[Stage] = field(default_factory=list)
    stage: Stage | None = None  # the stage that failed, None when all passed
    difference: Difference | None = None
    matches: list[Mistake] = field(default_factory=list)
    unfinished: bool = False
    finding: str | None = None  # "dropout in eval" or "without weights": which part of the second pass failed
    misreads: list[Misread] = field(default_factory=list)  # the contract's inputs the layer ignores (contract.py)
    inherits: list[str] = field(default_factory=list)  # the reference's classes it inherits from
    borrowed: list[str] = field(default_factory=list)  # the reference's functions that ran in it (guard.py)
    planted: bool = False  # the class is one of the grader's own planted mistakes (mistakes.py)

    @property
    def passed(self) -> bool:
        return self.stage is None and not self.unfinished

    @property
    def inconclusive(self) -> bool:
        return len(self.matches) >= INCONCLUSIVE_AT

    def __str__(self) -> str:
        return format_report(self)


def check_learner(cls) -> None:
    """Refuse a class the grader cannot plug into MiniMind, saying what to change."""
    name = getattr(cls, "__name__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise GraderUsageError(tr("{name} must be a class derived from torch.nn.Module, like minimind_ref.Attention.",
                                  name=name))
    try:
        inspect.signature(cls).bind(mm.MiniMindConfig(), 0)
    except TypeError as error:
        raise GraderUsageError(tr("{name}(config, layer_idx) must build the layer, as minimind_ref.Attention(config, "
                                  "layer_idx) does; calling it that way fails: {error}.", name=name,
                                  error=error)) from None
    if cls.forward is nn.Module.forward:
        own = sorted({n for k in cls.__mro__ if k not in nn.Module.__mro__ for n, v in vars(k).items()
                      if callable(v) and not n.startswith("__")})
        guess = difflib.get_close_matches("forward", own, n=1, cutoff=0.6)
        raise GraderUsageError(
            tr("your class {name} has no forward method; did you mean {guess} -> forward?", name=name, guess=guess[0])
            if guess else tr("your class {name} has no forward method; define forward(self, x, position_embeddings, "
                             "attn_mask=None, past_key_values=None, output_attentions=False).", name=name))
    try:
        inspect.signature(cls.forward).bind(None, *FORWARD_ARGUMENTS)
    except TypeError:
        raise GraderUsageError(tr(
            "{name}.forward must take (x, position_embeddings, attn_mask=None, past_key_values=None, "
            "output_attentions=False), in that order, as minimind_ref.Attention.forward does; it is "
            "forward{signature}.", name=name, signature=inspect.signature(cls.forward))) from None


def check_parameters(cls, name: str, guard: Guard | None = None) -> None:
    """The state dict must load strictly: same names, same shapes, nothing missing or extra."""
    config = LADDER[0].make_config()
    reference = mm.Attention(config, 0)
    layer = construct(cls, config, 0, guard)
    ours, theirs = set(reference.state_dict()), set(layer.state_dict())
    if ours != theirs:
        missing, extra = sorted(ours - theirs), sorted(theirs - ours)
        parts = ([tr("it lacks {names}", names=", ".join(missing))] if missing else []) + (
            [tr("it has {names} besides", names=", ".join(extra))] if extra else [])
        raise GraderUsageError(tr(
            "{name}'s parameters must be named as minimind_ref.Attention's ({names}; q_norm.weight and "
            "k_norm.weight only when config.qk_norm), so that the reference weights load with strict=True: "
            "{problem}{buffer}.", name=name, names=", ".join(sorted(ours)),
            problem=parts[0] if len(parts) == 1 else tr("{missing} and {extra}", missing=parts[0], extra=parts[1]),
            buffer=tr(" (a buffer of your own is saved too unless registered with persistent=False)") if extra else ""))


def inherited_reference(cls) -> list[str]:
    """The reference's classes that `cls` is or inherits from (minimind_ref's attention, its
    variants, a planted mistake), most derived first, by the name a learner would import."""
    found = []
    for klass in getattr(cls, "__mro__", ()):
        module = str(getattr(klass, "__module__", ""))
        if module == "minimind_ref.attention":
            found.append(f"minimind_ref.{klass.__qualname__}")
        elif module.startswith("minimind_ref.variants") or (module == "labkit.grader.mistakes"
                                                             and klass.__qualname__ != "Planted"):
            found.append(f"{module}.{klass.__qualname__}")
    return found


class LocalLearner:
    """A class in this process (the notebook's `grade(MyAttention)`): every call into it is guarded."""

    def __init__(self, cls: type, time_limit: float | None = DEFAULT_TIME_LIMIT):
        self.cls, self.guard = cls, Guard(time_limit)
        self.inherits = inherited_reference(cls)

    @property
    def borrowed(self) -> dict:
        return self.guard.borrowed

    def take_output(self) -> str:
        return self.guard.take_output()

    def check(self, name: str) -> None:
        check_parameters(self.cls, name, self.guard)

    def run(self, stage: Stage, seed: int, passes: tuple[str, ...]) -> Records:
        if stage.episodes is None:
            return run_model(self.cls, seed, guard=self.guard, draw=drawn_once)
        return run_stage(self.cls, stage, seed, passes, self.guard, draw=drawn_once)


# The random models whose layers lend the stages their weights, by config and seed. Drawing one was
# a quarter of a grading's time, and a grading draws the same few again and again: for the learner,
# for the reference, and for each planted mistake that a diagnosis compares. They are only read:
# each layer is given copies of their weights, and stage 10 a copy of the model (ladder.py).
_MODELS: dict = {}


def drawn_once(config: mm.MiniMindConfig, seed: int) -> mm.MiniMindForCausalLM:
    """`random_minimind(config, seed)`, drawn once per process; torch's random state is left as
    drawing it leaves it, where each stage's dropout starts."""
    key = (repr(config), seed, torch.get_default_dtype())  # the dtype a notebook may have set
    if key not in _MODELS:
        _MODELS[key] = random_minimind(config, seed), torch.get_rng_state()
    model, state = _MODELS[key]
    torch.set_rng_state(state)
    return model


# The reference's and the planted mistakes' records depend only on the stage, the seed and the
# passes: computed once per process (the planted ones when a diagnosis needs them).
_TRUSTED: dict = {}


def trusted_records(cls: type, stage: Stage, seed: int, passes: tuple[str, ...], misread: Misread | None = None
                    ) -> Records:
    key = (cls, id(stage), seed, passes if stage.episodes is not None else (), misread)
    if key not in _TRUSTED:
        if stage.episodes is None:
            _TRUSTED[key] = run_model(None if cls is mm.Attention else cls, seed, draw=drawn_once)
        else:
            _TRUSTED[key] = run_stage(cls, stage, seed, passes, reads=misread.reads if misread else None,
                                      draw=drawn_once)
        if imported_since_snapshot():  # what the grader's own runs changed is legitimate
            take_snapshot()
    return _TRUSTED[key]


def grade(cls, name: str | None = None, seed: int = 0, quiet: bool = False,
          stages: tuple[Stage, ...] = LADDER, time_limit: float | None = DEFAULT_TIME_LIMIT) -> GradeReport:
    """Run the ladder with `cls`; print a line per stage as it runs and the report, unless `quiet`;
    return the report. GraderUsageError when the class cannot be graded."""
    name = name or getattr(cls, "__name__", "your attention")
    gone = replaced()
    if gone:
        raise GraderUsageError(tr("the grader's own functions were replaced before grading: {gone}. The grader "
                                  "grades your layer, not a patched grader: restart the kernel.",
                                  gone=", ".join(gone[:4])))
    check_learner(cls)
    return climb(LocalLearner(cls, time_limit), name, seed, quiet, stages)


SHOWN_LINES = 12  # of what the learner's code printed during one stage


def climb(learner, name: str, seed: int = 0, quiet: bool = False, stages: tuple[Stage, ...] = LADDER) -> GradeReport:
    """The ladder, with `learner` (LocalLearner, or isolate.IsolatedLearner for a file) running the
    learner's code and this process running the reference and every comparison. A stage's line
    is printed as it starts and completed with its verdict; what the learner's code printed meanwhile
    is shown below it, never inside it."""
    def say(text: str, end: str = "\n") -> None:
        if not quiet:
            print(text, end=end, flush=True)

    def printed() -> None:
        lines = learner.take_output().splitlines()
        if lines:
            say(tr("    your code printed {count} lines:", count=len(lines)) if len(lines) > 1 else
                tr("    your code printed 1 line:"))
            for line in lines[:SHOWN_LINES]:
                say(f"    | {line}")
            if len(lines) > SHOWN_LINES:
                say(tr("    | ... and {count} more", count=len(lines) - SHOWN_LINES))

    report = GradeReport(name)
    line_open = False  # a stage's line is printed, waiting for its verdict
    try:
        learner.check(name)
        printed()
        for stage in stages:
            say(tr("  stage {number} of {total}: {title} ...", number=f"{stage_number(stage):2}", total=len(LADDER),
                   title=tr(stage.title)), end="")
            line_open = True
            actual = learner.run(stage, seed, PASSES)
            episodes, head_dim = _episodes(stage, seed)
            difference = first_difference(actual, trusted_records(mm.Attention, stage, seed, PASSES), episodes,
                                          head_dim)
            line_open = False
            if difference is None:
                say(" ✓")
                printed()
                report.passed_stages.append(stage)
                continue
            say(" ✗")
            printed()
            report.stage, report.difference = stage, difference
            failed = pass_of(difference.call) if stage.episodes is not None else "weights"
            if failed == "plain":  # which of the two: the path without weights, or dropout in eval?
                failed = "plain_no_dropout"
                actual = learner.run(stage, seed, (failed,))
                learner.take_output()  # the same prints again: shown once
                again = first_difference(actual, trusted_records(mm.Attention, stage, seed, (failed,)), episodes,
                                         head_dim)
                report.finding = "dropout in eval" if again is None else "without weights"
                report.difference = again or difference
            if report.finding != "dropout in eval":
                report.misreads = misreads(actual, stage, seed, failed)
                report.matches = diagnose(actual, stage, seed, failed)
            break
    except Unfinished:
        if line_open:
            say(tr(" not written yet"))
        printed()
        report.unfinished = True
    except Misuse as error:
        if line_open:
            say(tr(" stopped"))
        printed()
        raise GraderUsageError(error.message) from None
    report.inherits, report.borrowed = list(learner.inherits), list(learner.borrowed)
    report.planted = bool(report.inherits) and report.inherits[0].startswith("labkit.grader.mistakes.")
    if not quiet:
        print(format_report(report, progress_shown=True))
    return report


def _episodes(stage: Stage, seed: int):
    if stage.episodes is None:
        return model_episodes(seed), None
    config, episodes = stage_inputs(stage, seed)
    return episodes, config.head_dim


def _in_pass(actual: Records, stage: Stage, pass_name: str) -> Records:
    if stage.episodes is None:
        return actual
    return {key: value for key, value in actual.items() if pass_of(key[2]) == pass_name}


def diagnose(actual: Records, stage: Stage, seed: int = 0, pass_name: str = "weights") -> list[Mistake]:
    """The catalogue entries whose planted class gives what the learner's gave on this stage, in
    the pass that failed."""
    episodes, _ = _episodes(stage, seed)
    actual = _in_pass(actual, stage, pass_name)
    return [mistake for mistake in CATALOGUE
            if same_behaviour(actual, trusted_records(mistake.plant, stage, seed, (pass_name,)), episodes)]


def misreads(actual: Records, stage: Stage, seed: int = 0, pass_name: str = "weights") -> list[Misread]:
    """The contract's inputs that the learner's layer ignores: the reference, given the inputs as such
    a layer reads them, gives what the learner's gave (contract.py). Layer stages only."""
    if stage.episodes is None:
        return []
    episodes, _ = _episodes(stage, seed)
    actual = _in_pass(actual, stage, pass_name)
    found = []
    for misread in CONTRACT:  # only where the input it ignores makes a difference on this stage
        as_read = trusted_records(mm.Attention, stage, seed, (pass_name,), misread)
        if not same_behaviour(trusted_records(mm.Attention, stage, seed, (pass_name,)), as_read, episodes) \
                and same_behaviour(actual, as_read, episodes):
            found.append(misread)
    return found


# -- the report -----------------------------------------------------------------------------------

def _number(value, digits: int = 3) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value).replace("nan", "NaN")
    return f"{value:.{digits}g}"


def _numbers(expected, actual) -> tuple[str, str]:
    """Both values with the fewest significant digits (3 at least) that tell them apart."""
    for digits in range(3, 18):
        shown = _number(expected, digits), _number(actual, digits)
        if shown[0] != shown[1]:
            return shown
    return shown


WHERE = MappingProxyType({  # the words for each index of a difference's place
    "batch": phrase("sequence {value}"), "query": phrase("query position {value}"), "head": phrase("head {value}"),
    "key": phrase("key position {value}"), "channel": phrase("channel {value}"),
    "token": phrase("the logit of token id {value}"), "generated": phrase("generated token {value}"),
    "row": phrase("row {value}"), "column": phrase("column {value}"), "dimension": phrase("dimension {value}")})


def _where(difference: Difference) -> str:
    parts = []
    if difference.layer >= 0:
        parts.append(tr("layer {value}", value=difference.layer))
    labels = dict(WHERE)
    if difference.quantity in ("logits", "gradient of x"):
        labels["query"] = phrase("position {value}")
    parts += [tr(labels[k], value=v) for k, v in difference.where.items()]
    return _listed(parts)


def _listed(items: list[str]) -> str:
    """Items in a list, with the language's comma."""
    return functools.reduce(lambda first, second: tr("{first}, {second}", first=first, second=second), items) \
        if items else ""


def _quantity(quantity: str) -> str:
    """A difference's quantity in words: "output", "attention weights", "gradient of NAME", ..."""
    if quantity.startswith("gradient of "):
        return tr("gradient of {name}", name=quantity[len("gradient of "):])
    return tr(quantity)


def format_report(report: GradeReport, progress_shown: bool = False) -> str:
    """The report in words; `progress_shown`: the stage lines were printed as they ran, so the list
    of passed stages is left out."""
    total = len(LADDER)
    if report.unfinished:
        return tr("✗ {name}: not yet — the exercise is not filled in yet (it raises NotImplementedError); "
                  "write it, then grade it again.", name=report.name)
    if report.passed:
        return "\n".join([
            tr("✓ {name}: right. It passes all {count} stages of the ladder, from one head without positions to "
               "whole-model logits and greedy generation equal to transformers' twins, and gradients equal to the "
               "reference's, with and without the weights asked for.", name=report.name,
               count=len(report.passed_stages)), *_not_yours(report)])
    stage, difference = report.stage, report.difference
    number = stage_number(stage)
    lines = [tr("✗ {name}: not yet — stage {number} of {total}, {title}, fails.", name=report.name, number=number,
                total=total, title=tr(stage.title))]
    if report.passed_stages and not progress_shown:
        passed = _listed([f"{stage_number(s)} {tr(s.title)}" for s in report.passed_stages])
        lines.append(tr("  passed: {stages}", stages=passed))
    lines.append(tr("  stage {number} adds {adds} (module {module}).", number=number, adds=tr(stage.adds),
                    module=stage.module[:2]))
    where_run = tr("  in: {episode}; {call}", episode=in_words(difference.episode), call=in_words(difference.call))
    if report.finding == "dropout in eval":
        lines.append(where_run)
        lines.append(tr("  diagnosis: dropout acts in eval mode. Built with config.dropout = 0.5 and put in eval "
                        "mode, your layer's output changes, and with dropout 0 it is right: dropout belongs to "
                        "training only (torch.dropout(x, p, self.training), F.dropout(x, p, "
                        "training=self.training), or nn.Dropout, which .eval() turns off)."))
        return "\n".join(lines + _not_yours(report))
    if report.finding == "without weights":
        lines.append(tr("  your layer is right when asked for its weights and wrong without them "
                        "(output_attentions=False, the path the model takes to generate and to train)."))
    lines.append(where_run)
    if difference.error is not None:
        where = _where(difference)
        lines.append(tr("  {where}: {error}", where=where, error=difference.error) if where else
                     f"  {difference.error}")
    else:
        lines.append(tr("  first difference, in the {quantity}: {where}", quantity=_quantity(difference.quantity),
                        where=_where(difference)))
        expected, actual = _numbers(difference.expected, difference.actual)
        lines.append(tr("  expected {expected}, got {actual}", expected=expected, actual=actual))
        if difference.largest:
            largest = _listed([
                tr("{value} in the {quantity}", quantity=_quantity(k),
                   value=_number(v) if v != v or v == float('inf') else format(v, '.1e'))
                for k, v in difference.largest.items()])
            atol, rtol = difference.tolerance
            lines.append(tr("  largest error: {largest} (tolerance {atol} + {rtol} x |expected|)", largest=largest,
                            atol=f"{atol:.0e}", rtol=f"{rtol:.0e}"))
    for misread in report.misreads:
        lines.append(tr("  diagnosis: {title}. {diagnosis}", title=tr(misread.title), diagnosis=tr(misread.diagnosis)))
        lines.append(tr("    what the layer is given: {where}.", where=tr(CONTRACT_TEXT)))
    if report.inconclusive:
        lines += _inconclusive(report)
    elif report.matches:
        for mistake in report.matches:
            lines.append(tr("  diagnosis: {title}. {diagnosis}", title=tr(mistake.title),
                            diagnosis=tr(mistake.diagnosis)))
            lines.append(tr("    taught in {where}.", where=mistake.teaches))
    elif not report.misreads:
        lines.append(tr("  diagnosis: this matches none of the {count} known mistakes; read the step that stage "
                        "{number} adds, with module {module}.", count=len(CATALOGUE), number=number,
                        module=stage.module[:2]))
    return "\n".join(lines + _not_yours(report))


def _not_yours(report: GradeReport) -> list[str]:
    """A note when the verdict is about the reference's code, inherited or called, not the learner's
    (none for the grader's own planted mistakes, which stand for a learner's layer)."""
    if not (report.inherits or report.borrowed) or report.planted:
        return []
    parts = []
    if report.inherits:
        parents = report.inherits[0] if len(report.inherits) == 1 else \
            tr("{first} and {second}", first=report.inherits[0], second=report.inherits[1])
        parts.append(tr("{name} is {parents}", name=report.name, parents=parents)
                     if report.inherits[0].endswith("." + report.name) else
                     tr("{name} inherits from {parents}", name=report.name, parents=parents))
    if report.borrowed:
        where = report.borrowed[0].split(": ", 1)[0]
        shown = ", ".join(name.split(": ", 1)[1] for name in report.borrowed[:3])
        more = len(report.borrowed) - 3
        parts.append(tr("{count} of the reference's functions ran in it ({where}'s {shown} and {more} more)",
                        count=len(report.borrowed), where=where, shown=shown, more=more) if more > 0 else
                     tr("{count} of the reference's functions ran in it ({where}'s {shown})",
                        count=len(report.borrowed), where=where, shown=shown))
    return [tr("  note: not all of this is your code: {parts}. Write the layer yourself for a verdict on yours.",
               parts=parts[0] if len(parts) == 1 else
               tr("{first}; {second}", first=parts[0], second=parts[1]))]


def _inconclusive(report: GradeReport) -> list[str]:
    """What can be said when several known mistakes give the learner's results equally."""
    number = stage_number(report.stage)
    later = [m for m in report.matches if stage_number(_stage_of(m)) > number]
    modules = ", ".join(sorted({m.module[:2] for m in report.matches}))
    lines = [tr("  diagnosis: inconclusive — {count} of the {total} known mistakes give the same results as yours "
                "on stage {number}, so none of them can be named.", count=len(report.matches), total=len(CATALOGUE),
                number=number)]
    quantity = _quantity(report.difference.quantity)
    what = tr("the error above") if report.difference.error else tr("the {quantity}", quantity=quantity)
    if len(later) == len(report.matches):
        lines.append(tr("  what can be said: every one of them acts only at a later stage, so on stage {number} they "
                        "give the reference's numbers; yours agree with them within the tolerance, and the "
                        "difference is in what the catalogue does not compare ({what}).", number=number, what=what))
    else:
        lines.append(tr("  what can be said: the first difference is in the {quantity}; the steps these mistakes "
                        "break are taught in module {modules}.", quantity=quantity, modules=modules)
                     if "," not in modules else
                     tr("  what can be said: the first difference is in the {quantity}; the steps these mistakes "
                        "break are taught in modules {modules}.", quantity=quantity, modules=modules))
    return lines


def _stage_of(mistake: Mistake) -> Stage:
    return next(s for s in LADDER if s.key == mistake.stage)
