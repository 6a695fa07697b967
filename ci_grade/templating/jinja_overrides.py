"""Every override of jinja2 that makes it render as nunjucks does, in one place.

nunjucks compiles templates to JavaScript, so a promptfoo prompt's conditions and operators follow
JavaScript: `{% if items %}` is true for an empty list, `x or "fallback"` keeps an empty list,
`"5" == 5` and `"10" > 9` hold, `3 > 2 > 1` is `false` (read left to right), `"n=" ~ 2.0` is
`n=2`, and `~`, `not` and the arithmetic operators bind as nunjucks' generated code binds them.
The generated code calls the environment's `js_*` methods (`javascript`) for truth tests,
`and`/`or`/`not`, comparisons and `~`. The environment must not fold constants (`optimized=False`,
and no constant output but literals): folding would compute them with Python's rules.

Each override below carries a comment naming the nunjucks behaviour it gives. Two of them reach
jinja2 names that it does not document (`Environment._parse`, `CodeGenerator._output_child_to_const`);
jinja2 is pinned to one minor version in pyproject.toml so that an upgrade re-runs the template
tests deliberately, and `tests/test_no_private_names.py` allows those names in this module only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
import jinja2.parser
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ci_grade.safe_text import utf16_units
from ci_grade.templating import javascript, methods
from ci_grade.templating.scopes import hoist_loop_sets

_TAGS = re.compile(r"(\{%-?\s*)(elseif|verbatim|endverbatim)\b")
_RENAMED = {"elseif": "elif", "verbatim": "raw", "endverbatim": "endraw"}


class Undefined(jinja2.ChainableUndefined):
    """An undefined value, as nunjucks with throwOnUndefined off has it."""

    def __str__(self) -> str:  # an undefined variable prints nothing, and `a.b.c` on it is undefined too
        return ""


class NunjucksSyntax(Extension):
    """nunjucks' spellings of jinja's tags."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:  # `elseif` is `elif`, `verbatim` is `raw`
        return _TAGS.sub(lambda m: m[1] + _RENAMED[m[2]], source) if "{%" in source else source


class NunjucksParser(jinja2.parser.Parser):
    """Jinja's parser, with nunjucks' precedence."""

    def parse_not(self) -> nodes.Expr:  # `not 1 == 2` is `(!1) == 2`: nunjucks' `!` negates the first term
        """nunjucks compiles `not x` to JavaScript's `!` put before x's code without brackets, so it
        negates x's first term: `not 1 == 2` is `(!1) == 2` (false), `not (1 == 2)` is true."""
        if self.stream.current.test("name:not"):
            lineno = next(self.stream).lineno
            return _negate_first(self.parse_not(), lineno)
        return self.parse_compare()

    def parse_primary(self, with_namespace: bool = False) -> nodes.Expr:  # brackets kept, so `not (a == b)` negates the whole
        grouped = self.stream.current.type == "lparen"
        node = super().parse_primary(with_namespace)
        if grouped:
            node.nunjucks_grouped = True  # type: ignore[attr-defined]  # brackets nunjucks keeps in its code
        return node

    def parse_math1(self) -> nodes.Expr:  # `~`, `+` and `-` chain left to right at one level: `1 ~ 2 + 3` is "123"
        """nunjucks writes `a ~ b` as JavaScript's `a + "" + b` without brackets, so `~`, `+` and `-`
        chain left to right at one level (`3 + 1 ~ 0` is "40"); Jinja binds `~` tighter than `+`."""
        lineno = self.stream.current.lineno
        left = self.parse_math2()
        while self.stream.current.type in ("add", "sub", "tilde"):
            kind = self.stream.current.type
            next(self.stream)
            right = self.parse_math2()
            if kind == "tilde":
                left = nodes.Concat([left, right], lineno=lineno)
            else:
                left = (nodes.Add if kind == "add" else nodes.Sub)(left, right, lineno=lineno)
            lineno = self.stream.current.lineno
        return left


_LEFT_FIRST = (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.Mod)
"""Operators nunjucks writes as JavaScript's own, without brackets: `!` binds to their left side.
(`**` and `//` become `Math.pow(...)` and `Math.floor(...)`: `!` takes the whole call.)"""


def _negate_first(node: nodes.Expr, lineno: int) -> nodes.Expr:
    """`not` applied where nunjucks' `!` lands: the first term of a comparison, `~` or arithmetic chain."""
    if getattr(node, "nunjucks_grouped", False):
        return nodes.Not(node, lineno=lineno)
    if isinstance(node, nodes.Compare) and not any(op.op in ("in", "notin") for op in node.ops):
        return nodes.Compare(_negate_first(node.expr, lineno), node.ops, lineno=node.lineno)
    if isinstance(node, _LEFT_FIRST):
        return type(node)(_negate_first(node.left, lineno), node.right, lineno=node.lineno)
    if isinstance(node, nodes.Concat):
        return nodes.Concat([_negate_first(node.nodes[0], lineno), *node.nodes[1:]], lineno=node.lineno)
    return nodes.Not(node, lineno=lineno)


class JsCodeGenerator(CodeGenerator):
    """jinja2's code generator, emitting nunjucks' JavaScript semantics where jinja's Python ones differ."""

    def _output_child_to_const(self, node: nodes.Expr, frame: Frame, finalize: Any) -> str:  # `{{ "5" + 1 }}` computed at render time, as JavaScript does
        """Only literal text and constants are written at compile time; jinja would also
        compute constant expressions there, with Python's rules."""
        if not isinstance(node, nodes.TemplateData | nodes.Const):
            raise nodes.Impossible()
        return str(super()._output_child_to_const(node, frame, finalize))

    def visit_If(self, node: nodes.If, frame: Frame) -> None:  # `{% if [] %}` is true: JavaScript's truth
        if_frame = frame.soft()
        for keyword, branch in [("if", node), *(("elif", elif_) for elif_ in node.elif_)]:
            self.writeline(f"{keyword} environment.js_truthy(", branch)
            self.visit(branch.test, if_frame)
            self.write("):")
            self.indent()
            self.blockvisit(branch.body, if_frame)
            self.outdent()
        if node.else_:
            self.writeline("else:")
            self.indent()
            self.blockvisit(node.else_, if_frame)
            self.outdent()

    def visit_CondExpr(self, node: nodes.CondExpr, frame: Frame) -> None:  # `a if [] else b` is `a`: JavaScript's truth
        frame = frame.soft()
        self.write("(")
        self.visit(node.expr1, frame)
        self.write(" if environment.js_truthy(")
        self.visit(node.test, frame)
        self.write(") else ")
        if node.expr2 is not None:
            self.visit(node.expr2, frame)
        else:
            self.write(f'cond_expr_undefined("the inline if-expression on {self.position(node)} evaluated to false and no else section was defined.")')
        self.write(")")

    def visit_Not(self, node: nodes.UnaryExpr, frame: Frame) -> None:  # `not []` is false: JavaScript's `!`
        self.write("(not environment.js_truthy(")
        self.visit(node.node, frame)
        self.write("))")

    def visit_And(self, node: nodes.BinExpr, frame: Frame) -> None:  # `a and b` gives the deciding operand, as `&&`
        self._short_circuit("js_and", node, frame)

    def visit_Or(self, node: nodes.BinExpr, frame: Frame) -> None:  # `[] or "x"` keeps `[]`, as `||`
        self._short_circuit("js_or", node, frame)

    def _short_circuit(self, method: str, node: nodes.BinExpr, frame: Frame) -> None:
        """`a || b` / `a && b`: the deciding operand itself, `b` evaluated only when needed."""
        self.write(f"environment.{method}(")
        self.visit(node.left, frame)
        self.write(", lambda: ")
        self.visit(node.right, frame)
        self.write(")")

    def visit_Compare(self, node: nodes.Compare, frame: Frame) -> None:  # `"5" == 5`, `"10" > 9`, `3 > 2 > 1` is false
        """`a < b < c` as JavaScript reads it: `(a < b) < c`."""
        for operand in reversed(node.ops):
            self.write(f"environment.js_compare({operand.op!r}, ")
        self.visit(node.expr, frame)
        for operand in node.ops:
            self.write(", ")
            self.visit(operand.expr, frame)
            self.write(")")

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # `"n=" ~ 2.0` is `n=2`, `~ none` is `null`
        self.write("environment.js_concat((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")


class NunjucksEnvironment(ImmutableSandboxedEnvironment):
    """A sandboxed jinja2 environment with nunjucks' operators, lookups, parsing and code."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})  # arithmetic by JavaScript's rules (`call_binop`)
    intercepted_unops = frozenset({"-", "+"})  # unary `-` and `+` by JavaScript's rules (`call_unop`)

    code_generator_class = JsCodeGenerator  # JavaScript's truth, `&&`/`||`, comparisons and `~` (`JsCodeGenerator`)
    js_truthy = staticmethod(javascript.truthy)
    js_compare = staticmethod(javascript.compare)
    js_concat = staticmethod(javascript.concat)

    @staticmethod
    def js_or(left: Any, right: Callable[[], Any]) -> Any:
        return left if javascript.truthy(left) else right()

    @staticmethod
    def js_and(left: Any, right: Callable[[], Any]) -> Any:
        return right() if javascript.truthy(left) else left

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:  # nunjucks' precedence, `for` and loop scoping
        """Parsed with nunjucks' precedence (`NunjucksParser`); every `{% for %}` walks what
        nunjucks walks (`javascript.loop_items`), and a `{% set %}` in a loop reaches the
        variable set before it (`scopes`)."""
        template = NunjucksParser(self, source, name, filename).parse()
        for loop in template.find_all(nodes.For):
            pairs = isinstance(loop.target, nodes.Tuple) and len(loop.target.items) == 2
            loop.iter = nodes.Filter(loop.iter, "js_loop_items", [nodes.Const(pairs)], [], None, None, lineno=loop.lineno)
        hoist_loop_sets(template)
        return template

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:  # `"5" + 1` is "51", `-7 % 3` is -1, `1 / 0` is Infinity
        return javascript.binop(operator, left, right)

    def call_unop(self, context: Any, operator: str, arg: Any) -> Any:  # `-"2"` is -2
        return javascript.unop(operator, arg)

    def getattr(self, obj: Any, attribute: str) -> Any:  # `a.b` is key `b` first, `.length`, JavaScript's string and array methods
        """Member lookup as nunjucks does it: `a.b` on a mapping is its key `b` first, before any
        method of Python's dict (`order.items` is the `items` key; without one, `.items()` still
        iterates the mapping), and JavaScript's `.length` on strings and lists (a mapping's `length`
        stays its `length` key)."""
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        if attribute == "length" and isinstance(obj, str | list | tuple):
            return len(utf16_units(obj)) if isinstance(obj, str) else len(obj)
        if (method := methods.method(obj, attribute)) is not None:
            return method
        return super().getattr(obj, attribute)
