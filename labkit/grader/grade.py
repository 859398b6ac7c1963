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

import inspect
from dataclasses import dataclass, field

from torch import nn

import minimind_ref as mm

from .compare import Difference, first_difference, same_behaviour
from .ladder import (
    LADDER,
    Stage,
    Unfinished,
    model_episodes,
    run_model,
    run_stage,
    stage_inputs,
    stage_number,
)
from .mistakes import CATALOGUE, Mistake

FORWARD_ARGUMENTS = ("x", "position_embeddings", "attn_mask", "past_key_values", "output_attentions")


class GraderUsageError(ValueError):
    """The class cannot be graded as it is (wrong signature, wrong parameter names): the message says why."""


@dataclass
class GradeReport:
    name: str
    passed_stages: list[Stage] = field(default_factory=list)
    stage: Stage | None = None  # the stage that failed, None when all passed
    difference: Difference | None = None
    matches: list[Mistake] = field(default_factory=list)
    unfinished: bool = False

    @property
    def passed(self) -> bool:
        return self.stage is None and not self.unfinished

    def __str__(self) -> str:
        return format_report(self)


def check_learner(cls) -> None:
    """Refuse a class the grader cannot plug into MiniMind, saying what to change."""
    name = getattr(cls, "__name__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise GraderUsageError(f"{name} must be a class derived from torch.nn.Module, like minimind_ref.Attention.")
    try:
        inspect.signature(cls).bind(mm.MiniMindConfig(), 0)
    except TypeError as error:
        raise GraderUsageError(f"{name}(config, layer_idx) must build the layer, as minimind_ref.Attention(config, "
                               f"layer_idx) does; calling it that way fails: {error}.") from None
    try:
        inspect.signature(cls.forward).bind(None, *FORWARD_ARGUMENTS)
    except TypeError:
        raise GraderUsageError(
            f"{name}.forward must take (x, position_embeddings, attn_mask=None, past_key_values=None, "
            f"output_attentions=False), in that order, as minimind_ref.Attention.forward does; it is "
            f"forward{inspect.signature(cls.forward)}.") from None


def _check_parameters(cls, name: str) -> None:
    """The state dict must load strictly: same names, same shapes, nothing missing or extra."""
    config = LADDER[0].make_config()
    reference = mm.Attention(config, 0)
    try:
        layer = cls(config, 0)
    except NotImplementedError as error:
        raise Unfinished(str(error)) from None
    ours, theirs = set(reference.state_dict()), set(layer.state_dict())
    if ours != theirs:
        missing, extra = sorted(ours - theirs), sorted(theirs - ours)
        parts = ([f"it lacks {', '.join(missing)}"] if missing else []) + (
            [f"it has {', '.join(extra)} besides"] if extra else [])
        raise GraderUsageError(
            f"{name}'s parameters must be named as minimind_ref.Attention's ({', '.join(sorted(ours))}; "
            f"q_norm.weight and k_norm.weight only when config.qk_norm), so that the reference weights "
            f"load with strict=True: {' and '.join(parts)}"
            f"{' (a buffer of your own is saved too unless registered with persistent=False)' if extra else ''}.")


def grade(cls, name: str | None = None, seed: int = 0, quiet: bool = False,
          stages: tuple[Stage, ...] = LADDER) -> GradeReport:
    """Run the ladder with `cls`; print the report unless `quiet`; return it."""
    name = name or getattr(cls, "__name__", "your attention")
    check_learner(cls)
    report = GradeReport(name)
    try:
        _check_parameters(cls, name)
        for stage in stages:
            actual, expected, episodes, head_dim = _run(cls, stage, seed)
            difference = first_difference(actual, expected, episodes, head_dim)
            if difference is not None:
                report.stage, report.difference = stage, difference
                report.matches = diagnose(actual, stage, seed)
                break
            report.passed_stages.append(stage)
    except Unfinished:
        report.unfinished = True
    if not quiet:
        print(format_report(report))
    return report


def _run(cls, stage: Stage, seed: int):
    """(learner's records, reference's records, episodes, head_dim) of one stage."""
    if stage.episodes is None:
        return run_model(cls, seed), run_model(None, seed), model_episodes(seed), None
    config, episodes = stage_inputs(stage, seed)
    return run_stage(cls, stage, seed), run_stage(mm.Attention, stage, seed), episodes, config.head_dim


def diagnose(actual, stage: Stage, seed: int = 0) -> list[Mistake]:
    """The catalogue entries whose planted class gives what the learner's gave on this stage."""
    episodes = model_episodes(seed) if stage.episodes is None else stage_inputs(stage, seed)[1]
    found = []
    for mistake in CATALOGUE:
        planted = run_model(mistake.plant, seed) if stage.episodes is None else run_stage(mistake.plant, stage, seed)
        if same_behaviour(actual, planted, episodes):
            found.append(mistake)
    return found


# -- the report -----------------------------------------------------------------------------------

def _number(value) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value).replace("nan", "NaN")
    return f"{value:.3g}"


def _where(difference: Difference) -> str:
    parts = []
    if difference.layer >= 0:
        parts.append(f"layer {difference.layer}")
    labels = {"batch": "sequence", "query": "query position", "head": "head", "key": "key position",
              "channel": "channel", "token": "the logit of token id", "generated": "generated token",
              "row": "row", "column": "column", "dimension": "dimension"}
    if difference.quantity in ("logits", "gradient of x"):
        labels["query"] = "position"
    parts += [f"{labels[k]} {v}" for k, v in difference.where.items()]
    return ", ".join(parts)


def format_report(report: GradeReport) -> str:
    total = len(LADDER)
    if report.unfinished:
        return (f"✗ {report.name}: not yet — the exercise is not filled in yet (it raises NotImplementedError); "
                f"write it, then grade it again.")
    if report.passed:
        return (f"✓ {report.name}: right. It passes all {len(report.passed_stages)} stages of the ladder, from "
                f"one head without positions to whole-model logits and greedy generation equal to transformers' twins, "
                f"and gradients equal to the reference's.")
    stage, difference = report.stage, report.difference
    number = stage_number(stage)
    lines = [f"✗ {report.name}: not yet — stage {number} of {total}, {stage.title}, fails."]
    if report.passed_stages:
        passed = ", ".join(f"{stage_number(s)} {s.title}" for s in report.passed_stages)
        lines.append(f"  passed: {passed}")
    lines.append(f"  stage {number} adds {stage.adds} (module {stage.module[:2]}).")
    lines.append(f"  in: {difference.episode}; {difference.call}")
    if difference.error is not None:
        where = _where(difference)
        lines.append(f"  {where + ': ' if where else ''}{difference.error}")
    else:
        lines.append(f"  first difference, in the {difference.quantity}: {_where(difference)}")
        lines.append(f"  expected {_number(difference.expected)}, got {_number(difference.actual)}")
        if difference.largest:
            largest = ", ".join(f"{_number(v) if v != v or v == float('inf') else format(v, '.1e')} in the {k}"
                                for k, v in difference.largest.items())
            atol, rtol = difference.tolerance
            lines.append(f"  largest error: {largest} (tolerance {atol:.0e} + {rtol:.0e} x |expected|)")
    if report.matches:
        for mistake in report.matches:
            lines.append(f"  diagnosis: {mistake.title}. {mistake.diagnosis}")
            lines.append(f"    taught in {mistake.teaches}.")
    else:
        lines.append(f"  diagnosis: this matches none of the {len(CATALOGUE)} known mistakes; read the step "
                     f"that stage {number} adds, with module {stage.module[:2]}.")
    return "\n".join(lines)

