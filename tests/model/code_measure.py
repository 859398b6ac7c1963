"""Measures of how minimind_ref reads, as numbers a test can hold (issue 26).

Run it to print the table: `python tests/model/code_measure.py`.

- code lines: lines that hold code, not blank, not comments, not docstrings;
- argument-check lines: the lines of every `if ...: raise ...` (the condition, the raise and its
  message), of every function whose name starts with `check`/`_check`/`_validate`, and of every
  statement that calls one;
- the longest functions, by lines from `def` to the last line;
- the call depth from `model(ids)` to attention's core: the minimind_ref frames on the stack when
  torch's fused kernel runs (the default path) or, with `output_attentions=True`, when
  `torch.softmax` runs (counted with `inspect.stack`);
- Python-level calls per generated token: functions entered and C functions called, under
  `sys.setprofile`, as benchmarks/harness.py counts them; a count, never a timing.
"""

from __future__ import annotations

import ast
import inspect
import io
import sys
import tokenize
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minimind_ref"
CHECKS = str(PACKAGE / "_checks.py")
# The files a notebook sends the learner to, whose checks issue 26 bounds together and one by one.
TEACHING_FILES = ("attention.py", "model.py", "masks.py", "rope.py", "kv_cache.py", "gqa.py", "config.py")


def _is_check_name(name: str) -> bool:
    return name.lstrip("_").startswith(("check", "validate"))


def _called_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def _lines(node: ast.AST) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def code_lines(source: str) -> set[int]:
    """Line numbers that hold code (docstrings, comments and blank lines excluded)."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER):
            lines.update(range(token.start[0], token.end[0] + 1))
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            lines -= _lines(body[0])
    return lines


def check_lines(source: str) -> set[int]:
    """Line numbers of argument checks (see the module docstring)."""
    checks: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_check_name(node.name):
            checks |= _lines(node)
        elif isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            checks |= _lines(node.test) | set().union(*(_lines(s) for s in node.body))
        elif isinstance(node, (ast.Expr, ast.Assign)) and (name := _called_name(node.value)) and _is_check_name(name):
            checks |= _lines(node)
    return checks & code_lines(source)


def longest_functions(source: str, top: int = 2) -> list[tuple[str, int]]:
    """The `top` longest functions: (qualified name, lines from def to end)."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child.end_lineno - child.lineno + 1))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(ast.parse(source), "")
    return sorted(found, key=lambda item: -item[1])[:top]


def file_measures(path: Path) -> dict:
    source = path.read_text()
    code, checks = code_lines(source), check_lines(source)
    return {"file": str(path.relative_to(PACKAGE)), "code": len(code), "checks": len(checks),
            "share": len(checks) / max(len(code), 1), "longest": longest_functions(source)}


def package_measures() -> list[dict]:
    return [file_measures(path) for path in sorted(PACKAGE.glob("*.py")) + sorted(PACKAGE.glob("variants/*.py"))]


def package_lines() -> int:
    """Lines of minimind_ref without variants/, checks and oracles included, as `wc -l` counts them."""
    return sum(len(path.read_text().splitlines()) for path in PACKAGE.glob("*.py"))


def teaching_share() -> tuple[int, int]:
    """(check lines, code lines) of the teaching files taken together."""
    measures = [file_measures(PACKAGE / name) for name in TEACHING_FILES]
    return sum(m["checks"] for m in measures), sum(m["code"] for m in measures)


# -- runtime measures -------------------------------------------------------------------------


def small_model():
    import minimind_ref as mm
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                               vocab_size=64, max_position_embeddings=128)
    return mm.MiniMindForCausalLM(config).eval()


def depth_to(model, ids: torch.Tensor, owner, name: str, **kwargs) -> int | None:
    """Calls from `model(ids, **kwargs)` to the one that calls `owner.name` (torch.softmax, or
    torch's fused kernel F.scaled_dot_product_attention): the number of minimind_ref frames on the
    stack when it runs, the top-level model call counted as the first (nn.Module's own dispatch
    frames are torch's, not ours, and not counted); None when it never runs."""
    depths = []
    original = getattr(owner, name)

    def spy(*args, **kw):
        depths.append(len([f for f in inspect.stack()[1:] if str(PACKAGE) in f.filename]))
        return original(*args, **kw)

    setattr(owner, name, spy)
    try:
        with torch.no_grad():
            model(ids, **kwargs)
    finally:
        setattr(owner, name, original)
    return max(depths) if depths else None


def calls_of(fn, code) -> int:
    """How many times `fn()` enters the function whose code object is `code`."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        count += frame.f_code is code

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def calls_made_by_checks(fn) -> int:
    """Calls (Python functions entered, C functions called) made from inside minimind_ref/_checks.py
    while `fn()` runs: 0 when every check it meets answers in its own one call."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        caller = frame if event == "c_call" else frame.f_back
        count += event in ("call", "c_call") and caller is not None and caller.f_code.co_filename == CHECKS

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def profiled_calls(fn, counted: str | None = None) -> int:
    """Python-level calls `fn` makes (functions entered and C functions called, as
    benchmarks/harness.py counts them), or, with `counted`, only the Python functions entered
    whose file path contains `counted` (traced, which skips C calls and is much cheaper)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    def trace(frame, event, arg):
        nonlocal count
        count += counted in frame.f_code.co_filename  # event is "call": returning None traces no lines

    sys.settrace(trace) if counted else sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.settrace(None) if counted else sys.setprofile(None)
    return count


def calls_per_token(model, new_tokens: int = 8, batch: int = 1, padded: bool = False) -> float:
    """Python-level calls per generated token with the cache, the prompt's call removed (the
    difference of two runs of different lengths)."""
    ids = torch.randint(0, model.config.vocab_size, (batch, 4), generator=torch.Generator().manual_seed(0))
    mask = None
    if padded:
        mask = torch.ones_like(ids)
        mask[0, 0] = 0

    def run(n):
        return lambda: model.generate(ids, n, attention_mask=mask)

    run(2)()  # warm up
    short, long = profiled_calls(run(new_tokens)), profiled_calls(run(2 * new_tokens))
    return (long - short) / new_tokens


def main() -> None:
    print(f"{'file':28s} {'code':>5s} {'checks':>6s} {'share':>6s}  longest functions")
    for m in package_measures():
        longest = ", ".join(f"{name} {n}" for name, n in m["longest"])
        print(f"{m['file']:28s} {m['code']:5d} {m['checks']:6d} {m['share']:6.0%}  {longest}")
    checks, code = teaching_share()
    print(f"teaching files together: {checks} of {code} code lines are checks ({checks / code:.0%})")
    model = small_model()
    ids = torch.randint(0, 64, (2, 6))
    print("call depth, model(ids) to torch's fused kernel:",
          depth_to(model, ids, torch.nn.functional, "scaled_dot_product_attention"))
    print("call depth, model(ids, output_attentions=True) to the softmax:",
          depth_to(model, ids, torch, "softmax", output_attentions=True))
    print("lines of minimind_ref without variants/, checks included:", package_lines())
    print(f"Python-level calls per generated token (cache, batch 1): {calls_per_token(model):.0f}")
    print(f"Python-level calls per generated token (cache, padded batch 2): "
          f"{calls_per_token(model, batch=2, padded=True):.0f}")


if __name__ == "__main__":
    main()
