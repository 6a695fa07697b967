"""`derivedMetrics`: metrics computed from the named metrics, as promptfoo computes them.

Per prompt column, each expression is evaluated over the column's named scores (promptfoo's
`namedScores`: the weighted sums) and `__count` (the column's rows), in the order written; a later
metric sees the earlier ones. promptfoo evaluates them with mathjs; this is a small evaluator of
the arithmetic mathjs expressions use (numbers, names, `+ - * / % ^`, parentheses, comparisons,
`a ? b : c`, and `abs sqrt min max round floor ceil log log10 exp pow`), never `eval`. Division by
zero gives Infinity or NaN, as in mathjs; a metric that cannot be evaluated (an unknown name, a
syntax error) keeps 0, as promptfoo keeps its starting value.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs, "sqrt": math.sqrt, "min": min, "max": max, "round": round, "floor": math.floor, "ceil": math.ceil,
    "log": math.log, "log10": math.log10, "exp": math.exp, "pow": math.pow,
}
_BINARY: dict[type, Callable[[float, float], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: math.fmod, ast.Pow: math.pow,
}
_COMPARE: dict[type, Callable[[float, float], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_TERNARY = re.compile(r"^(?P<cond>[^?]+)\?(?P<yes>[^:]+):(?P<no>.+)$")


class ExpressionError(Exception):
    """An expression this evaluator does not read, or a name it does not know."""


def evaluate(expression: str, scope: Mapping[str, float]) -> float:
    """The value of a mathjs arithmetic expression over `scope`."""
    text = expression.strip()
    ternary = _TERNARY.match(text)
    if ternary:
        return evaluate(ternary["yes"] if evaluate(ternary["cond"], scope) else ternary["no"], scope)
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot read {expression!r}: {exc.msg}") from None
    return float(_value(tree.body, scope))


def _value(node: ast.AST, scope: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in scope:
            raise ExpressionError(f"unknown name {node.id!r}")
        return float(scope[node.id])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _value(node.operand, scope)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _divide(_value(node.left, scope), _value(node.right, scope))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        try:
            return float(_BINARY[type(node.op)](_value(node.left, scope), _value(node.right, scope)))
        except (ValueError, OverflowError):
            return math.nan
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return float(_COMPARE[type(node.ops[0])](_value(node.left, scope), _value(node.comparators[0], scope)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords:
        try:
            return float(FUNCTIONS[node.func.id](*(_value(arg, scope) for arg in node.args)))
        except (ValueError, OverflowError, TypeError):
            return math.nan
    raise ExpressionError(f"unsupported expression {ast.unparse(node)!r}")


def _divide(left: float, right: float) -> float:
    if right != 0:
        return left / right
    if left == 0 or math.isnan(left):
        return math.nan
    return math.copysign(math.inf, left) * math.copysign(1.0, right)


def derive(named_scores: Mapping[str, float], count: int, metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The derived metrics of one column, in order, each seeing the ones before it."""
    scope: dict[str, float] = {**named_scores, "__count": float(count)}
    out: dict[str, float] = {}
    for metric in metrics:
        name = str(metric.get("name"))
        try:
            value = evaluate(str(metric.get("value")), scope)
        except ExpressionError:
            value = out.get(name, 0.0)
        out[name] = scope[name] = value
    return out


def check(metrics: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a derivedMetrics entry cannot be evaluated (syntax this evaluator does not read), or None."""
    for metric in metrics:
        value = metric.get("value")
        if not isinstance(value, str):
            return f"{metric.get('name')!r}: value must be an expression (text), got {type(value).__name__}"
        names = set(re.findall(r"[A-Za-z_]\w*", value)) - set(FUNCTIONS)
        try:
            evaluate(value, dict.fromkeys(names, 1.0))
        except ExpressionError as exc:
            return f"{metric.get('name')!r}: {exc}"
    return None
