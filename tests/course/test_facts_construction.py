"""A fact cannot be a quotation of itself: every fact function reads the project, returns no literal,
and says why wherever it compares loosely (CONTRIBUTING.md, "Bound facts").

Read from the facts files' syntax (ast), following every name a fact uses to where it is defined:
a helper of the same file, a module-level constant, a loop that registers facts, a helper module of
tests/facts/ (measure.py). The fact *reads the project* when that walk reaches a name imported from
one of PROJECT: minimind_ref, labkit, the experiment scripts, tests/facts/sources.py (a notebook's
cell by its id, the course's files) or tests/facts/upstream.py (upstream's model-file history, every
commit of which tests/course/test_upstream_citations.py holds the guides to).

A fact *returns a literal* when every `return` (or a lambda's body) is the same expression of
literals, operators and names bound only to literals: `return 1e-5, 1e-4`, `return SPAN` with
`SPAN = 24`, `return 2 * SPAN + 1`. (A claim that returns True on one path and False on another
depends on what it tested.) A literal inside a returned tuple (`return 9, even_previous(9)`) is a
typed number too: allowed only where the sentence itself writes it, a formula's constant (the 1 of
`1/16`) or the input the sentence chooses ("twice the input"), listed in WRITTEN_BY_THE_SENTENCE.

Exceptions, each with its reason: NOT_THE_PROJECT, facts about torch itself (a dtype's range, what
torch's SDPA does), which the course states about torch and checks on torch; CITED, ratios of a
paper's figures, which the sentence quotes beside them and tests/course/test_paper_citations.py
holds to the paper.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
from facts import FACTS

FACTS_DIR = Path(__file__).resolve().parents[1] / "facts"

# A name imported from one of these is the project: the fact reads it.
PROJECT = ("minimind_ref", "labkit", "experiment_scripts", "facts.sources", "facts.upstream")

# Facts that read no project code, and why they are facts all the same.
NOT_THE_PROJECT = {
    # torch's own behaviour, as the sentence states it and a learner checks it (module 01's and 05's
    # lessons on float16, module 05's on torch's top-left is_causal, module 08's on torch's SDPA)
    "overflow_logit_float16": "ln of float16's largest number, from torch.finfo: a property of the dtype",
    "overflow_logit_bfloat16_and_float32": "ln of bfloat16's and float32's largest numbers, from torch.finfo",
    "overflow_logit_float64": "ln of float64's largest number, from torch.finfo",
    "float32_max_and_its_log": "float32's largest number and its ln, from torch.finfo",
    "float16_largest": "float16's largest number, from torch.finfo",
    "float16_largest_magnitude": "float16's largest number, from torch.finfo (module 10's float16 stage)",
    "minus_1e9_is_minus_inf_in_float16": "what torch makes of -1e9 in float16",
    "view_needs_compatible_strides": "what torch's view does with a transposed tensor's strides",
    "float16_finfo_min_overflow_score": "float16 arithmetic, over every float16 number",
    "masked_fill_float16_overflow_message": "torch's own error message",
    "is_causal_single_new_token_sees_key": "what torch's SDPA does with is_causal=True and fewer queries than keys",
    "is_causal_newest_of_two_after_four_sees": "what torch's SDPA does with is_causal=True after a cache",
    "sdpa_efficient_backend_raises_on_cpu": "what torch's SDPA does when held to a backend with no CPU kernel",
    "bfloat16_first_unrepresented_position": "bfloat16's rounding of integers",
    "tied_scores_put_only_the_global_maximum_on_the_diagonal":
        "a property of every Gram matrix (Cauchy-Schwarz), shown on random ones: no code of the course is involved",
}

# Ratios of a paper's figures: the sentence quotes the figures beside the ratio, and
# tests/course/test_paper_citations.py holds the paragraph to the paper.
CITED = {
    "gqa_paper_speedup": "arXiv 2305.13245, Table 1: 1.51 s over 0.28 s per sample, both quoted in the sentence",
    "paper_fig2_bytes_ratio": "arXiv 2205.14135, Fig. 2: 40.3 GB over 4.4 GB, both quoted in the sentence",
    "paper_fig2_runtime_ratio": "arXiv 2205.14135, Fig. 2: 41.7 ms over 7.3 ms, both quoted in the sentence",
    "paper_fig2_extra_flops_percent": "arXiv 2205.14135, Fig. 2: 75.2 over 66.6 GFLOPs, both quoted in the sentence",
}

# Literals a fact may return because its sentence writes them: (the literals, as written in the
# return, in order; why).
WRITTEN_BY_THE_SENTENCE = {
    "exp2_chance": (("1",), "`1/16 = 0.0625`: chance's numerator"),
    "exp3_tied_ceiling": (("1", "2", "1"), "`1/2 + 1/32`: the formula's numerators and halves"),
    "exp3_tied_ceiling_fraction": (("1", "2", "1"), "`1/2 + 1/32`: the formula's numerators and halves"),
    "notebook_tied_ceiling": (("1", "2", "1"), "`1/2 + 1/32`: the formula's numerators and halves"),
    "scores_are_quadratic_in_the_input": (("2",), "'twice the input': the factor the sentence tries"),
    "minimind2_score_scale": (("1",), "`1/8`: the numerator"),
    "minimind2_score_scale_of_sqrt": (("1",), "`1/sqrt(64)`: the numerator"),
    "head_count_does_not_change_the_weights": (("*heads",), "'1, 8 or 64 heads': the head counts the sentence tries"),
    "mha_attention_weights_and_saving": (("4", "2"), "`4 C^2`: the formula's factor and exponent"),
    "mla_more_than_gqa2_and_mqa": (("2",), "'GQA-2': the group count the sentence compares with"),
    "tiny_uptraining_chance": (("1",), "'1 in 32': chance's numerator"),
    "rope_pair0_wavelength": (("2",), "`2π`: a turn"),
    "minimind2_rope_pairs": (("1",), "'turning once': one turn"),
    "yarn_changes_short_prompt_at": (("position",), "'a 100-token prompt': the prompt the sentence tries; the fact "
                                                    "checks that YaRN rotates it differently from plain RoPE"),
    "toy_projections": (("1", "2"), "`T (T + 1)` and `2 T`: the formulas' constants"),
    "bench_flash_targets": (("1",), "'at most 1/20': the numerator"),
    "tiny_uniform_guess": (("1",), "`1/257`: the numerator"),
    "grader_tolerance_float32": (("10", "10"), "`10^{-4} + 10^{-4}|expected|`: the base of the powers"),
    "grader_tolerance_float16": (("10", "10"), "`10^{-3} + 10^{-3}|expected|`: the base of the powers"),
}

SAFE_CALLS = {"int", "float", "round", "abs", "min", "max", "tuple", "str", "bool", "len", "sum", "pow"}


# ---------------------------------------------------------------------------- the files' syntax

@dataclass
class FactsModule:
    """One file of tests/facts/, as its syntax defines its names."""

    path: Path
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # name -> the module it comes from
    definitions: dict[str, list[ast.AST]] = field(default_factory=dict)  # name -> defs, values, loop iterables
    values: dict[str, list[ast.AST | None]] = field(default_factory=dict)  # name -> assigned values (None: not one)

    def node_at(self, line: int, name: str) -> ast.AST:
        """The function (or lambda) whose code starts at `line`."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef) and name == node.name and line in (
                    node.lineno, *(d.lineno for d in node.decorator_list)):
                return node
            if isinstance(node, ast.Lambda) and name == "<lambda>" and node.lineno == line:
                return node
        raise LookupError(f"{self.path.name}: no function {name} at line {line}")


def index(path: Path, source: str) -> FactsModule:
    """What each module-level name of a facts file is bound to."""
    module = FactsModule(path, ast.parse(source))
    for node in _module_level(module.tree.body):
        if isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                module.imports[name] = f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
                module.values.setdefault(name, []).append(None)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            module.definitions.setdefault(node.name, []).append(node)
            module.values.setdefault(node.name, []).append(None)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                    module.definitions.setdefault(name.id, []).append(node.value)
                    module.values.setdefault(name.id, []).append(_element(target, name, node.value))
        elif isinstance(node, ast.For):
            for name in (n for n in ast.walk(node.target) if isinstance(n, ast.Name)):
                module.definitions.setdefault(name.id, []).append(node.iter)
                module.values.setdefault(name.id, []).append(None)
    return module


def _module_level(statements: list[ast.stmt]):
    """The statements run at import: those of the file, and those inside its loops and ifs."""
    for node in statements:
        yield node
        if isinstance(node, ast.For | ast.If | ast.With | ast.Try):
            yield from _module_level([*node.body, *getattr(node, "orelse", [])])


@cache
def facts_module(path: Path) -> FactsModule:
    return index(path, path.read_text(encoding="utf-8"))


def _element(target: ast.AST, name: ast.Name, value: ast.AST) -> ast.AST | None:
    """The value `name` gets in `target = value`: the whole value, or its element when both sides
    are tuples of the same length; None when the syntax does not say."""
    if target is name:
        return value
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            if t is name:
                return v
    return None


def module_path(dotted: str) -> Path | None:
    """tests/facts/X.py for a name imported from facts.X (a helper module), else None."""
    parts = dotted.split(".")
    if parts[0] == "facts" and len(parts) >= 3:
        path = FACTS_DIR / f"{parts[1]}.py"
        return path if path.is_file() else None
    return None


def bound_locally(node: ast.AST) -> set[str]:
    """Names a function binds itself: its arguments and those of the functions inside it, and every
    name it assigns."""
    names = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.arguments):
            names |= {a.arg for a in (*inner.posonlyargs, *inner.args, *inner.kwonlyargs)}
            names |= {a.arg for a in (inner.vararg, inner.kwarg) if a}
        elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            names.add(inner.id)
        elif isinstance(inner, ast.FunctionDef):
            names.add(inner.name)
    return names


def _imported(node: ast.ImportFrom | ast.Import) -> list[str]:
    return [alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}" for alias in node.names]


def reads_of(node: ast.AST, module: FactsModule, seen: set | None = None) -> set[str]:
    """The names from PROJECT that `node` reaches, directly or through the file's helpers."""
    seen = set() if seen is None else seen
    found = set()
    local = bound_locally(node)
    for inner in ast.walk(node):
        if isinstance(inner, ast.ImportFrom | ast.Import):  # an import inside the function
            found |= {name for name in _imported(inner) if name.startswith(PROJECT)}
            continue
        if not (isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load)) or inner.id in local:
            continue
        key = (module.path, inner.id)
        if key in seen:
            continue
        seen.add(key)
        if inner.id in module.imports:
            origin = module.imports[inner.id]
            if origin.startswith(PROJECT):
                found.add(origin)
            elif (helper := module_path(origin)) is not None:
                other = facts_module(helper)
                for definition in other.definitions.get(origin.rsplit(".", 1)[1], []):
                    found |= reads_of(definition, other, seen)
        for definition in module.definitions.get(inner.id, []):
            found |= reads_of(definition, module, seen)
    return found


# ---------------------------------------------------------------------------- literals

def literal_names(node: ast.AST, module: FactsModule) -> set[str]:
    """The names that hold nothing but a literal: the file's constants (`SPAN = 24`), and the
    function's own names whose every assignment is a literal."""
    local: dict[str, list[ast.AST | None]] = {}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assign):
            for target in inner.targets:
                for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                    local.setdefault(name.id, []).append(_element(target, name, inner.value))
        elif isinstance(inner, ast.AugAssign | ast.AnnAssign) and isinstance(inner.target, ast.Name):
            local.setdefault(inner.target.id, []).append(inner.value)
        elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            local.setdefault(inner.id, []).append(None)  # bound by a loop, a with or a comprehension
        elif isinstance(inner, ast.arguments):
            for a in (*inner.posonlyargs, *inner.args, *inner.kwonlyargs):
                local.setdefault(a.arg, []).append(None)
    # an assignment's target was counted twice above (as an Assign and as a stored Name): drop the None
    local = {name: [v for v in values if v is not None] or [None] if any(v is not None for v in values)
             and not _rebound(node, name) else values for name, values in local.items()}
    scopes = {**module.values, **local}  # a function's own name hides the file's
    literal: set[str] = set()
    for _ in range(5):  # names bound to names bound to literals
        literal |= {name for name, values in scopes.items()
                    if values and all(v is not None and is_literal(v, literal) for v in values)}
    return literal


def _rebound(node: ast.AST, name: str) -> bool:
    """Whether `name` is bound in `node` other than by a plain assignment (a loop, a with, an argument)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.For | ast.comprehension) and any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(inner.target)):
            return True
        if isinstance(inner, ast.withitem) and inner.optional_vars is not None and any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(inner.optional_vars)):
            return True
        if isinstance(inner, ast.arguments) and name in {a.arg for a in (*inner.posonlyargs, *inner.args,
                                                                          *inner.kwonlyargs)}:
            return True
    return False


def is_literal(expr: ast.AST, literal: set[str]) -> bool:
    """Whether `expr` is made of literals only (numbers, strings, names bound to them, arithmetic)."""
    match expr:
        case ast.Constant():
            return True
        case ast.Tuple(elts=elts) | ast.List(elts=elts) | ast.Set(elts=elts):
            return all(is_literal(e, literal) for e in elts)
        case ast.Starred(value=value) | ast.UnaryOp(operand=value):
            return is_literal(value, literal)
        case ast.BinOp(left=left, right=right):
            return is_literal(left, literal) and is_literal(right, literal)
        case ast.BoolOp(values=values):
            return all(is_literal(v, literal) for v in values)
        case ast.Compare(left=left, comparators=comparators):
            return all(is_literal(v, literal) for v in (left, *comparators))
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return all(is_literal(v, literal) for v in (test, body, orelse))
        case ast.Name(id=name):
            return name in literal
        case ast.JoinedStr(values=values):
            return all(is_literal(v.value if isinstance(v, ast.FormattedValue) else v, literal) for v in values)
        case ast.Subscript(value=value, slice=index):
            return is_literal(value, literal) and is_literal(index, literal)
        case ast.Call(func=func, args=args, keywords=keywords):
            safe = (isinstance(func, ast.Name) and func.id in SAFE_CALLS and hasattr(builtins, func.id)) or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math"
                and hasattr(math, func.attr))
            return safe and all(is_literal(a, literal) for a in (*args, *(k.value for k in keywords)))
    return False


def returned(node: ast.AST) -> list[ast.AST]:
    """What a fact returns: its `return` values (not those of functions inside it), a lambda's body."""
    if isinstance(node, ast.Lambda):
        return [node.body]
    values, stack = [], list(node.body)
    while stack:
        inner = stack.pop()
        if isinstance(inner, ast.FunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(inner, ast.Return) and inner.value is not None:
            values.append(inner.value)
        stack.extend(ast.iter_child_nodes(inner))
    return values


# ---------------------------------------------------------------------------- the facts

@dataclass(frozen=True)
class Found:
    node: ast.AST
    module: FactsModule


def syntax_of(name: str) -> Found:
    function = FACTS[name].compute
    path = Path(inspect.getsourcefile(function)).resolve()
    module = facts_module(path)
    return Found(module.node_at(function.__code__.co_firstlineno, function.__code__.co_name), module)


@pytest.mark.parametrize("name", sorted(FACTS))
def test_fact_reads_the_project(name: str):
    if name in CITED:
        return
    found = syntax_of(name)
    reads = reads_of(found.node, found.module)
    if name in NOT_THE_PROJECT:
        assert not reads, (f"fact {name} reads {sorted(reads)}: take it off NOT_THE_PROJECT in "
                           f"tests/course/test_facts_construction.py")
        return
    assert reads, (f"fact {name} (tests/facts/{FACTS[name].module}.py) reads nothing from minimind_ref, labkit, "
                   f"an experiment script, a notebook or a course file: compute it from what its sentence is "
                   f"about (a paper's figure is cited, not marked)")


def typed_numbers(node: ast.AST, module: FactsModule) -> tuple[list[str], list[str]]:
    """What a fact returns that is typed in: (its returns, when every one is the same literal; the
    literals inside the tuples it returns)."""
    literal = literal_names(node, module)
    values = returned(node)
    constant = [ast.unparse(v) for v in values if is_literal(v, literal)]
    constant = constant if values and len(constant) == len(values) and len(set(constant)) == 1 else []
    inside = [ast.unparse(e) for v in values if isinstance(v, ast.Tuple) and not is_literal(v, literal)
              for e in v.elts if is_literal(e, literal)]
    return constant[:1], inside


@pytest.mark.parametrize("name", sorted(FACTS))
def test_fact_returns_no_literal(name: str):
    if name in CITED:
        return
    found = syntax_of(name)
    constant, inside = typed_numbers(found.node, found.module)
    typed = tuple(constant or inside)
    allowed = WRITTEN_BY_THE_SENTENCE.get(name, ((), ""))[0]
    assert typed == tuple(allowed), (
        f"fact {name} (tests/facts/{FACTS[name].module}.py) " +
        (f"always returns {constant[0]!r}, a literal" if constant else
         f"returns the typed number(s) {', '.join(inside)}" if inside else
         f"no longer returns the literals {allowed} that WRITTEN_BY_THE_SENTENCE lists: take it off the list") +
        ": compute each number from the code the sentence is about; a constant that the sentence itself writes "
        "(a formula's, or the input it tries) goes in WRITTEN_BY_THE_SENTENCE with the reason")


def test_every_exception_is_a_fact():
    stale = sorted((set(NOT_THE_PROJECT) | set(CITED) | set(WRITTEN_BY_THE_SENTENCE)) - set(FACTS))
    assert not stale, f"exceptions for facts that no longer exist: {stale}"


@pytest.mark.parametrize("name", sorted(n for n, f in FACTS.items() if f.tolerance is not None or f.rel is not None
                                        or f.spread or f.below or f.magnitude))
def test_loose_comparisons_say_why(name: str):
    assert (FACTS[name].why or "").strip(), f"fact {name}: say why it compares loosely (why=...)"


def test_the_criterion_catches_what_it_should():
    """The walk and the literal test on examples: a typed constant, a formula over literals, a helper
    that reads the project, a constant of the file that does not."""
    source = '''
import minimind_ref as mm
from facts import fact
SPAN = 24
CONFIG = mm.MiniMindConfig()
def helper():
    return CONFIG.head_dim
def typed():
    return 1e-5, 1e-4
def formula():
    n = 9
    return (n + 1) / 2
def through_helper():
    return helper() * 2
def constant():
    return SPAN
def mixed():
    return 9, helper()
def claim():
    for n in range(3):
        if helper() == n:
            return False
    return True
'''
    module = index(FACTS_DIR / "_example.py", source)
    tree = module.tree

    def check(name):
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        constant, inside = typed_numbers(node, module)
        return bool(reads_of(node, module)), bool(constant), inside

    assert check("typed") == (False, True, [])
    assert check("formula") == (False, True, [])
    assert check("through_helper") == (True, False, [])
    assert check("constant") == (False, True, [])
    assert check("mixed") == (True, False, ["9"])
    assert check("claim") == (True, False, [])  # True or False: it depends on what it tested


def test_measurements_are_forgettable():
    """A facts file caches with `facts.once`, which the sabotage suite can clear, never with functools."""
    cached = [f"{path.name}:{node.lineno}" for path in sorted(FACTS_DIR.glob("*.py")) if path.name != "__init__.py"
              for node in ast.walk(facts_module(path).tree)
              if (isinstance(node, ast.ImportFrom) and node.module == "functools")
              or (isinstance(node, ast.Import) and any(alias.name == "functools" for alias in node.names))]
    assert not cached, f"use @once (from facts import once), not functools' caches: {cached}"
