"""jinja2's code generator, emitting nunjucks' JavaScript semantics where jinja's Python ones differ.

nunjucks compiles templates to JavaScript, so a promptfoo prompt's conditions and operators follow
JavaScript: `{% if items %}` is true for an empty list, `x or "fallback"` keeps an empty list,
`"5" == 5` and `"10" > 9` hold, `3 > 2 > 1` is `false` (read left to right), and `"n=" ~ 2.0`
is `n=2`. The generated code calls the environment's `js_*` methods (`nunjucks._Environment`,
`nunjucks_js`) for truth tests, `and`/`or`/`not`, comparisons and `~`. The environment must not
fold constants (`optimized=False`, and no constant output but literals): folding would compute
them with Python's rules.
"""

from __future__ import annotations

from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame


class JsCodeGenerator(CodeGenerator):
    def _output_child_to_const(self, node: nodes.Expr, frame: Frame, finalize: Any) -> str:
        """Only literal text and constants are written at compile time; jinja would also
        compute constant expressions there, with Python's rules."""
        if not isinstance(node, nodes.TemplateData | nodes.Const):
            raise nodes.Impossible()
        return str(super()._output_child_to_const(node, frame, finalize))

    def visit_If(self, node: nodes.If, frame: Frame) -> None:
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

    def visit_CondExpr(self, node: nodes.CondExpr, frame: Frame) -> None:
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

    def visit_Not(self, node: nodes.UnaryExpr, frame: Frame) -> None:
        self.write("(not environment.js_truthy(")
        self.visit(node.node, frame)
        self.write("))")

    def visit_And(self, node: nodes.BinExpr, frame: Frame) -> None:
        self._short_circuit("js_and", node, frame)

    def visit_Or(self, node: nodes.BinExpr, frame: Frame) -> None:
        self._short_circuit("js_or", node, frame)

    def _short_circuit(self, method: str, node: nodes.BinExpr, frame: Frame) -> None:
        """`a || b` / `a && b`: the deciding operand itself, `b` evaluated only when needed."""
        self.write(f"environment.{method}(")
        self.visit(node.left, frame)
        self.write(", lambda: ")
        self.visit(node.right, frame)
        self.write(")")

    def visit_Compare(self, node: nodes.Compare, frame: Frame) -> None:
        """`a < b < c` as JavaScript reads it: `(a < b) < c`."""
        for operand in reversed(node.ops):
            self.write(f"environment.js_compare({operand.op!r}, ")
        self.visit(node.expr, frame)
        for operand in node.ops:
            self.write(", ")
            self.visit(operand.expr, frame)
            self.write(")")

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.js_concat((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")
