"""The English that a program prints and draws, as templates read from its source.

A *template* is one line that a `print(...)` call writes, or one label that a figure shows, with
each value it formats written as a placeholder: `print(f"{n} queries x {k} keys")` and
`print("scores:", tuple(s.shape))` give the templates

    {n} queries x {k} keys
    scores: {tuple(s.shape)}

A placeholder is the expression's source (its format spec and `!r` left out); literal braces are
doubled, as in `str.format`. Templates are found without running anything (`ast`), in:

- `print(...)` to standard output (its arguments joined by `sep`; a line of a multi-line text is a
  template of its own);
- an Experiment's claim, `exp.claim(holds, sentence)`;
- the texts of a figure: matplotlib's title, suptitle, xlabel, ylabel (and their `set_` forms),
  text, figtext, annotate, legend, tick labels, every `label=` keyword; labkit's show_heatmaps
  (titles, suptitle, xlabel, ylabel, row_name, col_name) and print_table's headers;
- `phrase("...")`, which marks an English text kept in data (a row of a table, a value a
  function returns) for translation where it is shown;
- a name passed to one of these (`titles=titles`, `label=labels[name]`): the texts assigned to
  that name in the same function (or at module level, or in a notebook's earlier cell), the items
  of a `for` loop over it, a dict's keys where it is iterated (`.items()`, `.keys()`, `.join`) and
  its values where it is read by key (`d[k]`, `d[f"head {h} off"] = ...`), and what a function of
  the same source returns; a list printed whole, or a `{value!r}`, is data and is not followed.

A placeholder whose expression is a string constant (`f"{'var raw':>8}"`, a table's header) is
folded into the text, its format spec applied.

Each template is a unit of a translation catalog (labkit/i18n/catalog.py), keyed by its hash like
every other English text; at run time (labkit/i18n/output.py) a printed line or a figure's label is
matched against the templates, the placeholders matching whatever values were formatted, and the
Chinese template gets the same values back. Standard library only.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass
from functools import cached_property

from labkit.i18n.prose import english_words

__all__ = ["Context", "Template", "extended_context", "placeholders", "source_templates"]


# Calls that show their text arguments: name -> positions of the text arguments.
SHOWN_POSITIONAL = {
    "title": (0,), "set_title": (0,), "suptitle": (0,), "supxlabel": (0,), "supylabel": (0,),
    "xlabel": (0,), "ylabel": (0,), "set_xlabel": (0,), "set_ylabel": (0,),
    "text": (2,), "figtext": (2,), "annotate": (0,), "legend": (0, 1),
    "set_xticklabels": (0,), "set_yticklabels": (0,), "set_xticks": (1,), "set_yticks": (1,),
    "xticks": (1,), "yticks": (1,), "claim": (1,), "print_table": (0,), "phrase": (0,),
}
SHOWN_KEYWORDS = {"title", "titles", "suptitle", "xlabel", "ylabel", "label", "labels", "s", "text",
                  "row_name", "col_name", "headers", "sentence"}
KEYWORDS_OF = {"show_heatmaps": SHOWN_KEYWORDS, "set": {"title", "xlabel", "ylabel"}}
# Builtins whose result holds their arguments' texts, met in a loop over titles.
PASS_THROUGH = {"zip", "enumerate", "list", "tuple", "sorted", "reversed"}
CODE_NAME = re.compile(r"\w+:\S+")  # a colour or a device, not words: tab:green, cuda:0
CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
ITEMS = "<each of>"  # the marker of a loop's items (a name no code can write)
# Methods whose result holds the texts of the object they are called on (a dict's keys, a list's items).
VIEWS = {"items", "keys", "values", "copy", "join", "get", "pop", "setdefault"}
# In any other call (a plot's `label=`, a helper of the script's own given a title), these name a text.
ANY_CALL_KEYWORDS = {"label", "labels", "title", "titles", "suptitle", "xlabel", "ylabel"}


# ------------------------------------------------------------------------------------------ templates

def placeholders(template: str) -> list[tuple[str, str]]:
    """The template split into (kind, text) pieces: ("literal", text) with braces undoubled, and
    ("field", expression) for each placeholder, in order."""
    pieces: list[tuple[str, str]] = []
    literal, i = [], 0
    while i < len(template):
        ch = template[i]
        if ch in "{}" and template[i:i + 2] == ch * 2:
            literal.append(ch)
            i += 2
        elif ch == "{":
            depth, j = 1, i + 1
            while j < len(template) and depth:
                depth += {"{": 1, "}": -1}.get(template[j], 0)
                j += 1
            if depth:  # an unclosed brace: the rest is literal
                literal.append(template[i:])
                break
            if literal:
                pieces.append(("literal", "".join(literal)))
                literal = []
            pieces.append(("field", template[i + 1:j - 1].strip(" ")))  # `{ {k: v} }`: a dict's own braces
            i = j
        else:
            literal.append(ch)
            i += 1
    if literal:
        pieces.append(("literal", "".join(literal)))
    return pieces


@dataclass(frozen=True)
class Template:
    """One English template, and how to match a line against it."""
    text: str

    @cached_property
    def pieces(self) -> list[tuple[str, str]]:
        return placeholders(self.text)

    @cached_property
    def fields(self) -> list[str]:
        return [text for kind, text in self.pieces if kind == "field"]

    @cached_property
    def literals(self) -> list[str]:
        return [text for kind, text in self.pieces if kind == "literal"]

    @cached_property
    def weight(self) -> int:
        """How much of a line it pins down: its literal characters (the more, the more specific)."""
        return sum(len(text) for text in self.literals)

    @cached_property
    def pattern(self) -> re.Pattern:
        # A value followed by spaces alone is a padded column (f"{name:<16} {n:>11,} bytes"): it takes
        # every word up to the last gap, so "doubling from 4" stays one value.
        pieces = self.pieces
        parts = [re.escape(text) if kind == "literal" else
                 "(.*)" if i + 1 < len(pieces) and not pieces[i + 1][1].strip(" ") else "(.*?)"
                 for i, (kind, text) in enumerate(pieces)]
        return re.compile("".join(parts), re.DOTALL)

    def match(self, line: str) -> dict[str, str] | None:
        """The value of each field when `line` is this template filled in, else None."""
        if any(text not in line for text in self.literals):  # cheap test first
            return None
        found = self.pattern.fullmatch(line)
        if found is None:
            return None
        values: dict[str, str] = {}
        for field, value in zip(self.fields, found.groups()):
            values.setdefault(field, value)
        return values

    def matches(self, line: str, most: int = 16):
        """Every way (up to `most`) that `line` fills this template, `match`'s first: a value may
        hold the text that follows its field ("{name}: {n} of them" on "mask: causal: 3 of them"),
        and the caller picks the split whose values it knows."""
        if self.match(line) is None:
            return
        pieces, found = self.pieces, 0

        def walk(i: int, at: int, values: dict[str, str]):
            nonlocal found
            if found >= most:
                return
            if i == len(pieces):
                if at == len(line):
                    found += 1
                    yield dict(values)
                return
            kind, text = pieces[i]
            if kind == "literal":
                if line.startswith(text, at):
                    yield from walk(i + 1, at + len(text), values)
                return
            if i + 1 == len(pieces):
                ends = [len(line)]
            elif pieces[i + 1][0] == "literal":
                ends = [j for j in range(at, len(line) + 1) if line.startswith(pieces[i + 1][1], j)]
            else:
                ends = range(at, len(line) + 1)
            for end in ends:
                yield from walk(i + 1, end, {text: line[at:end], **values})

        yield from walk(0, 0, {})


def fill(template: str, values: dict[str, str]) -> str:
    """`template` (a translation) with each placeholder replaced by its value."""
    return "".join(values.get(text, "{" + text + "}") if kind == "field" else text
                   for kind, text in placeholders(template))


# ------------------------------------------------------------------------------------------ extraction

def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _template(node: ast.AST) -> str | None:
    """The template of an expression that makes a text: a literal, an f-string, a concatenation
    with `+`; None for anything else (a value, shown as a placeholder by the caller)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _escape(node.value)
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(_escape(str(part.value)))
            else:  # FormattedValue
                folded = _constant(part)
                out.append(_escape(folded) if folded is not None else _field(part.value))
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else _field(node.left)) + (right if right is not None else _field(node.right))
    return None


def _field(node: ast.AST) -> str:
    """A placeholder: the expression's source; one that starts or ends with a brace (a dict, a set,
    a comprehension) is written `{ {k: v for ...} }`, as an f-string writes it, never `{{`."""
    code = ast.unparse(node)
    return "{ " + code + " }" if code.startswith("{") or code.endswith("}") else "{" + code + "}"


def _constant(part: ast.FormattedValue) -> str | None:
    """A formatted string constant as it prints (`f"{'var raw':>8}"` is `   var raw`): a table's
    header written as constants is text, not a value. None for anything else."""
    if not (isinstance(part.value, ast.Constant) and isinstance(part.value.value, str)):
        return None
    spec = part.format_spec
    if spec is not None and not all(isinstance(v, ast.Constant) for v in spec.values):
        return None
    value = part.value.value
    value = {-1: value, ord("s"): str(value), ord("r"): repr(value), ord("a"): ascii(value)}.get(part.conversion)
    if value is None:
        return None
    try:
        return format(value, "".join(str(v.value) for v in spec.values) if spec is not None else "")
    except (ValueError, TypeError):
        return None


def _print_template(call: ast.Call) -> str | None:
    keywords = {k.arg: k.value for k in call.keywords}
    if "file" in keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    sep = keywords.get("sep", ast.Constant(" "))
    if not (isinstance(sep, ast.Constant) and isinstance(sep.value, str)):
        return None
    parts = [_template(arg) for arg in call.args]
    if all(part is None for part in parts):
        return None
    return _escape(sep.value).join(part if part is not None else _field(arg) for part, arg in zip(parts, call.args))


def _lines(template: str) -> list[str]:
    """A template's lines that hold English words (labkit/i18n/prose.py): a line of numbers, code and
    formulas needs no translation."""
    lines = []
    for line in template.split("\n"):
        words = " ".join(text for kind, text in placeholders(line) if kind == "literal")
        if english_words(words) and not CODE_NAME.fullmatch(line.strip(" ")):
            lines.append(line.strip(" ") if line.strip(" ") else line)
    return lines


@dataclass(frozen=True)
class Context:
    """What the code that ran before a source bound (a notebook's earlier cells): its module-level
    names, each with the values assigned to it, and its functions. Made by `extended_context`."""
    names: dict = dataclasses.field(default_factory=dict)
    functions: dict = dataclasses.field(default_factory=dict)


def _assignments(body: list[ast.stmt]) -> dict[str, list[ast.AST]]:
    """name -> every value a scope's statements assign to it (a loop's target: what it loops over)."""
    names: dict[str, list[ast.AST]] = {}

    def bind(target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            names.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element, value)

    for statement in body:
        for node in _walk_scope(statement):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, node.value)
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        # ablation[f"head {h} off"] = ...: a key and a value of the dict `ablation`
                        names.setdefault(target.value.id, []).append(
                            ast.Dict(keys=[target.slice], values=[node.value]))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.comprehension)):
                iterated = _each(node.iter)
                if (isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2
                        and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute)
                        and node.iter.func.attr == "items"):  # for key, value in d.items()
                    mapping = node.iter.func.value
                    bind(node.target.elts[0], _each(_method(mapping, "keys")))
                    bind(node.target.elts[1], _each(_method(mapping, "values")))
                else:
                    bind(node.target, iterated)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("append", "extend", "insert") and isinstance(node.func.value, ast.Name)
                  and node.args):
                names.setdefault(node.func.value.id, []).append(node.args[-1])
    return names


def _each(node: ast.AST) -> ast.AST:
    """What a loop over `node` binds: its items, each shown as a text (`iter(...)`, a marker)."""
    return ast.Call(func=ast.Name(ITEMS), args=[node], keywords=[])


def _method(node: ast.AST, name: str) -> ast.AST:
    return ast.Call(func=ast.Attribute(value=node, attr=name), args=[], keywords=[])


def _functions(body: list[ast.stmt]) -> dict[str, ast.AST]:
    return {node.name: node for statement in body for node in _defined(statement)}


class _Finder(ast.NodeVisitor):
    """Walks a module, keeping each scope's assignments to resolve the names a display call is given."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.own: set[int] = set()  # the source's nodes (a text found in the context is placed at its call)
        self.shown_at = (0, 0)
        self.found: list[tuple[int, int, str, str]] = []
        self.scopes: list[dict[str, list[ast.AST]]] = []
        self.functions: list[dict[str, ast.AST]] = []  # each scope's own functions, by name

    # -- scopes
    def _enter(self, body: list[ast.stmt]) -> None:
        self.scopes.append(_assignments(body))
        self.functions.append(_functions(body))

    def _leave(self) -> None:
        self.scopes.pop()
        self.functions.pop()

    def visit_Module(self, node: ast.Module) -> None:
        self.own = {id(part) for part in ast.walk(node)}
        self.scopes.append(self.context.names)  # the earlier cells' names, under the source's own
        self.functions.append(self.context.functions)
        self._enter(node.body)
        self.generic_visit(node)
        self._leave()
        self._leave()

    def _scopes(self, node: ast.AST) -> tuple[list[dict], list[dict]]:
        """Where a name is looked up: a name written in the context, in the context only."""
        if id(node) in self.own:
            return [*reversed(self.scopes)], [*reversed(self.functions)]
        return [self.context.names], [self.context.functions]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._enter(node.body)
        self.generic_visit(node)
        self._leave()

    visit_AsyncFunctionDef = visit_FunctionDef

    # -- calls
    def add(self, node: ast.AST, what: str, template: str) -> None:
        where = (node.lineno, node.col_offset) if id(node) in self.own else self.shown_at
        for line in _lines(template):
            self.found.append((*where, what, line))

    def visit_Call(self, node: ast.Call) -> None:
        self.shown_at = (node.lineno, node.col_offset)  # where a text found in the context is shown
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "print":
            template = _print_template(node)
            if template is not None:
                self.add(node, "print", template)
            for arg in node.args:
                self.texts_in(arg, "print", top=False, whole=True)
        else:
            positions = SHOWN_POSITIONAL.get(name, ())
            shown = self._printed_parameters(node)  # a function of this source that prints its argument
            for index, arg in enumerate(node.args):
                if index in positions or index in shown:
                    self.texts_in(arg, name)
            known = name in SHOWN_POSITIONAL or name in KEYWORDS_OF
            keywords = KEYWORDS_OF.get(name, SHOWN_KEYWORDS) if known else ANY_CALL_KEYWORDS
            for keyword in node.keywords:
                if keyword.arg in keywords:
                    self.texts_in(keyword.value, f"{name} {keyword.arg}")
        self.generic_visit(node)

    def _printed_parameters(self, call: ast.Call) -> set[int]:
        """The positions of the arguments that `call`, a call of a function defined in this source
        (or an earlier cell), prints: `compare("top-left causal mask", step)` where
        `def compare(name, step)` prints `name`."""
        if not isinstance(call.func, ast.Name):
            return set()
        for scope in self._scopes(call)[1]:
            function = scope.get(call.func.id)
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                printed = {node.id for inner in ast.walk(function) if isinstance(inner, ast.Call)
                           and getattr(inner.func, "id", "") == "print" for node in ast.walk(inner)
                           if isinstance(node, ast.Name)}
                return {index for index, arg in enumerate(function.args.args) if arg.arg in printed}
        return set()

    def texts_in(self, node: ast.AST, what: str, top: bool = True, seen: frozenset[str] = frozenset(),
                 keys: bool = True, values: bool = True, whole: bool = False) -> None:
        """Every text an argument can show: its own template, the texts inside it, and those of the
        names it uses (resolved once in the enclosing scopes). Of a dict it reaches, `keys` (it is
        iterated: `for name in ways`, `ways.items()`) and `values` (read by key: `verdicts[step]`).
        `whole`: the value itself is printed, so a list or a dict shows as its repr, not as texts."""
        template = _template(node)
        if template is not None:
            if top:
                self.add(node, what, template)
            for part in ast.walk(node):  # texts inside its placeholders: `{'a' if x else 'b'}`
                if isinstance(part, ast.FormattedValue) and part.conversion in (-1, ord("s")):
                    # a constant too (a header cell, for a row: output.py); `{word!r}` shows data, quoted
                    self.texts_in(part.value, what, top=True, seen=seen, whole=True)
                elif isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):  # "T = S " + "".join(names)
                    for side in (part.left, part.right):
                        if _template(side) is None:
                            self.texts_in(side, what, seen=seen, whole=True)
            return
        inner = {"what": what, "seen": seen, "keys": keys, "values": values, "whole": whole}
        one = {"what": what, "seen": seen, "keys": False}  # an item of it, as text (a dict in it: a record)
        if whole and isinstance(node, CONTAINERS):
            return  # print(names) shows ['a', 'b']: data, not text
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for element in node.elts:
                self.texts_in(element, **one)
        elif isinstance(node, ast.Dict):
            for key in node.keys if keys else ():
                if key is not None:
                    self.texts_in(key, **one)
            for value in node.values if values else ():
                self.texts_in(value, **one)  # a dict inside a dict is read by key
        elif isinstance(node, ast.IfExp):
            self.texts_in(node.body, **inner)
            self.texts_in(node.orelse, **inner)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self.texts_in(value, **inner)
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            self.texts_in(node.elt, **one)
        elif isinstance(node, ast.DictComp):
            if keys:
                self.texts_in(node.key, **one)
            if values:
                self.texts_in(node.value, **one)
        elif isinstance(node, ast.Subscript):  # one value of it: a dict's keys are not shown
            self.texts_in(node.value, **one)
        elif isinstance(node, ast.Starred):
            self.texts_in(node.value, **inner)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == ITEMS:  # a loop's items
            self.texts_in(node.args[0], **{**one, "keys": keys}, values=values)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in PASS_THROUGH:
            for arg in node.args:  # for ax, (key, title) in zip(axes, [("previous", "previous token"), ...])
                self.texts_in(arg, **inner)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEWS:
            method = node.func.attr
            if method == "join":  # "; ".join(titles): each item, as text
                for arg in node.args:
                    self.texts_in(arg, **one)
                return
            by_key = method in ("get", "pop", "setdefault")
            self.texts_in(node.func.value, what, seen=seen, whole=whole and not by_key,
                          keys=keys and method in ("items", "keys", "copy"),
                          values=values and method != "keys")
        elif isinstance(node, (ast.Call, ast.Name)):
            name = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else \
                getattr(node, "id", None)
            guard = name if id(node) in self.own else f"earlier {name}"  # a cell's `name` is not the context's
            if name is None or guard in seen:
                return
            scopes, functions = self._scopes(node)
            for scope in (functions if isinstance(node, ast.Call) else scopes):
                if name in scope:  # a function of the same source: the texts it returns; a name: its values
                    bound = _returned(scope[name]) if isinstance(node, ast.Call) else scope[name]
                    for value in bound:
                        self.texts_in(value, **{**inner, "seen": seen | {guard}})
                    break


def _returned(function: ast.AST) -> list[ast.AST]:
    """What a function returns (its own `return`s, not those of functions inside it)."""
    return [node.value for statement in function.body if not isinstance(statement, FUNCTIONS)
            for node in _walk_scope(statement) if isinstance(node, ast.Return) and node.value is not None]


def _defined(statement: ast.stmt) -> list[ast.AST]:
    """The functions a statement of a scope defines (in a `with` or an `if` too, not inside another)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [statement]
    return [child for node in _walk_scope(statement) for child in ast.iter_child_nodes(node)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))]


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _walk_scope(node: ast.AST):
    """ast.walk that does not enter nested functions or classes (their names are their own)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, FUNCTIONS):
                stack.append(child)


def _code(text: str) -> list[str]:
    """Python lines of a script or a cell, IPython magics (`%time`, `!ls`) blanked."""
    return [line if not line.lstrip().startswith(("%", "!")) else "" for line in text.splitlines()]


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse("\n".join(_code(source)))
    except SyntaxError:
        return None


def extended_context(context: Context | None, source: str) -> Context:
    """The context for the cell after `source` (the names it binds added to `context`'s)."""
    context = context or Context()
    tree = _parsed(source)
    if tree is None:
        return context
    # a name the cell binds again is the cell's from now on (`name` is a loop variable in many cells)
    return Context({**context.names, **_assignments(tree.body)}, {**context.functions, **_functions(tree.body)})


def source_templates(source: str, context: Context | None = None) -> list[tuple[int, str, str]]:
    """(line number, what, template) for every template of a Python source (a script, or a code
    cell: lines of IPython magics are left out), in source order, each template once. `context`
    holds what the code before it bound (a notebook's earlier cells, `extended_context`): a name
    bound there and shown here is followed to its texts."""
    tree = _parsed(source)
    if tree is None:
        return []
    finder = _Finder(context or Context())
    finder.visit(tree)
    out, seen = [], set()
    for line, _, what, template in sorted(finder.found):
        if template not in seen:
            seen.add(template)
            out.append((line, what, template))
    return out
