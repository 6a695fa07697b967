"""The mutants of one Python module, made from its syntax tree (used by `bench/mutation_ast.py`).

Each mutant changes one expression or statement of the source text, so the rest of the module
(its comments, its layout, the lines a traceback names) is untouched. Operators:

- `negate-compare`: a comparison flipped (`<` to `>=`, `==` to `!=`, `in` to `not in`, `is` to `is not`);
- `boundary`: a strict comparison made loose or the reverse (`<` to `<=`, `>=` to `>`);
- `negate-condition`: the test of an `if`, `while`, conditional expression or comprehension negated
  (unless it is a comparison, which `negate-compare` flips, or a `not`, which `drop-not` removes);
- `drop-not`: `not x` becomes `x`; `and-or`: `and` becomes `or` and the reverse;
- `constant`: a number plus one, `True`/`False` swapped, a string replaced by "XX" ("" by "XX");
- `return-none`: `return value` becomes `return None`;
- `drop-call`: a statement that only calls something (`f(x)`, `await f(x)`) becomes `pass`.

Not mutated: docstrings, type annotations (with `cast`'s type, `TypeVar`, `NewType`), decorators,
`if TYPE_CHECKING:` blocks and f-strings.
A mutant's name is `<module>:<function>/<operator>#<n>` (the n-th such mutant of that function, in
source order), so it stays the same when code elsewhere in the module changes.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


@dataclass(frozen=True)
class Mutant:
    """One change of a module's text: bytes `start:end` of the source replaced by `text`."""

    name: str
    path: str
    line: int
    statement: int
    """The first line of the statement the change is in (where a coverage tracer sees it run)."""
    start: int
    end: int
    text: str
    original: str

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.text.encode() + source[self.end :]

    @property
    def diff(self) -> str:
        return f"{self.path}:{self.line}: {self.original.strip()!s}  ->  {self.text}"


def mutants(source: bytes, module: str, path: str) -> list[Mutant]:
    """Every mutant of the module's source, in source order (a few may not compile: `compiles`)."""
    tree = ast.parse(source)
    offsets = [0]
    for text_line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(text_line))
    found: list[Mutant] = []
    numbers: Counter[str] = Counter()
    changes = sorted(_changes(tree), key=lambda change: _position(change[1])[:2])
    for (scope, statement), node, operator, text in changes:
        line, column, end_line, end_column = _position(node)
        start = offsets[line - 1] + column
        end = offsets[end_line - 1] + end_column
        original = source[start:end].decode()
        text = f"(not ({original}))" if text is None else text
        if text == original:
            continue
        key = f"{scope}/{operator}"
        numbers[key] += 1
        found.append(Mutant(f"{module}:{key}#{numbers[key]}", path, line, statement, start, end, text, original))
    return found


def compiles(mutant: Mutant, source: bytes) -> bool:
    """The mutated module is valid Python (e.g. `return None` is not, in an async generator)."""
    try:
        compile(mutant.apply(source), mutant.path, "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def _position(node: ast.AST) -> tuple[int, int, int, int]:
    """Line, column (in bytes), end line and end column of an expression or statement."""
    values = [getattr(node, name) for name in ("lineno", "col_offset", "end_lineno", "end_col_offset")]
    assert all(isinstance(value, int) for value in values)
    return values[0], values[1], values[2], values[3]


def _changes(tree: ast.Module) -> Iterator[tuple[tuple[str, int], ast.AST, str, str | None]]:
    """(function, node, operator, replacement text; None: the node negated) for every mutable node."""
    skip = _skipped(tree)
    scopes: dict[ast.AST, tuple[str, int]] = {}
    _name_scopes(tree, ("<module>", 1), scopes)
    for node in ast.walk(tree):
        if node in skip:
            continue
        scope = scopes.get(node, ("<module>", 1))
        for operator, text in _node_changes(node):
            yield scope, node, operator, text
        for test in _tests(node):
            if not isinstance(test, ast.Compare) and not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
                yield scopes.get(test, scope), test, "negate-condition", None


def _name_scopes(node: ast.AST, scope: tuple[str, int], scopes: dict[ast.AST, tuple[str, int]]) -> None:
    """The qualified name of the function or class each node belongs to, and the first line of
    the innermost statement that holds it."""
    for child in ast.iter_child_nodes(node):
        name, line = scope
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = child.name if name == "<module>" else f"{name}.{child.name}"
        if isinstance(child, ast.stmt):
            line = child.lineno
        scopes[child] = (name, line)
        _name_scopes(child, (name, line), scopes)


def _skipped(tree: ast.Module) -> set[ast.AST]:
    """Nodes that are never mutated, with everything inside them."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                roots.append(first)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            roots += node.decorator_list
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            roots.append(node.returns)
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        if isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            roots.append(node)
        if isinstance(node, ast.JoinedStr):
            roots.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("TypeVar", "cast", "NewType"):
            roots.append(node.args[0] if node.func.id == "cast" else node)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            roots.append(node)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            roots.append(node)  # an attribute's docstring
    return {inner for root in roots for inner in ast.walk(root)}


def _node_changes(node: ast.AST) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            for operator, table in (("negate-compare", _FLIP), ("boundary", _BOUNDARY)):
                if type(op) in table:
                    ops = list(node.ops)
                    ops[index] = table[type(op)]()
                    yield operator, _expression(ast.Compare(node.left, ops, node.comparators))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop-not", _expression(node.operand)
    elif isinstance(node, ast.BoolOp):
        yield "and-or", _expression(ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values))
    elif isinstance(node, ast.Constant):
        yield from _constant(node.value)
    elif isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return-none", "return None"
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call | ast.Await):
        yield "drop-call", "pass"


def _tests(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        return [node.test]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    return []


def _constant(value: object) -> Iterator[tuple[str, str]]:
    if isinstance(value, bool):
        yield "constant", repr(not value)
    elif isinstance(value, int | float):
        yield "constant", repr(value + 1)
    elif isinstance(value, str):
        yield "constant", repr("XX")


def _expression(node: ast.expr) -> str:
    return f"({ast.unparse(ast.fix_missing_locations(node))})"
