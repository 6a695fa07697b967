"""nunjucks' scoping of `{% set %}` in loops, on a parsed jinja2 template.

In nunjucks a `{% set %}` inside a `{% for %}` changes a variable the template set before the
loop: `{% set total = 0 %}{% for x in xs %}{% set total = total + x %}{% endfor %}{{ total }}`
prints the sum. In jinja2 the loop has its own scope and the outer `total` stays 0. `hoist_loop_sets`
rewrites such variables into one namespace object (jinja2's own way to share a variable with a
loop). Variables a loop names as its target, and anything inside macros, call blocks and blocks,
are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterator

from jinja2 import nodes

NAMESPACE = "__nunjucks_vars"
_OWN_SCOPES = (nodes.Macro, nodes.CallBlock, nodes.Block, nodes.FilterBlock)


def hoist_loop_sets(template: nodes.Template) -> None:
    """Rewrite, in place, the variables set both outside and inside a loop (see the module)."""
    outer = {n.target.name for n in _walk(template.body, loops=False) if isinstance(n, nodes.Assign) and isinstance(n.target, nodes.Name)}
    inner = {
        n.target.name
        for loop in _walk(template.body, loops=True) if isinstance(loop, nodes.For)
        for n in _walk(loop.body, loops=True) if isinstance(n, nodes.Assign) and isinstance(n.target, nodes.Name)
    }
    targets = {name.name for loop in _walk(template.body, loops=True) if isinstance(loop, nodes.For) for name in _names(loop.target)}
    shared = (outer & inner) - targets
    if not shared:
        return
    for node in list(_walk(template.body, loops=True)):
        if isinstance(node, _OWN_SCOPES):
            continue
        for field in node.fields:
            value = getattr(node, field)
            if isinstance(value, list):
                setattr(node, field, [_rewritten(item, shared) for item in value])
            elif isinstance(value, nodes.Node):
                setattr(node, field, _rewritten(value, shared))
    template.body = [
        nodes.Assign(nodes.Name(NAMESPACE, "store"), nodes.Call(nodes.Name("namespace", "load"), [], [], None, None)),
        *[_rewritten(item, shared) for item in template.body],
    ]


def _names(target: nodes.Node) -> list[nodes.Name]:
    return [target] if isinstance(target, nodes.Name) else list(target.find_all(nodes.Name))


def _rewritten(node: nodes.Node, shared: set[str]) -> nodes.Node:
    if isinstance(node, nodes.Name) and node.name in shared:
        if node.ctx == "store":
            return nodes.NSRef(NAMESPACE, node.name, lineno=node.lineno)
        return nodes.Getattr(nodes.Name(NAMESPACE, "load", lineno=node.lineno), node.name, "load", lineno=node.lineno)
    return node


def _walk(body: list[nodes.Node], *, loops: bool) -> Iterator[nodes.Node]:
    """Every node of `body` outside macros, call blocks and blocks; inside loops too if `loops`."""
    for node in body:
        yield from _nodes(node, loops)


def _nodes(node: nodes.Node, loops: bool) -> Iterator[nodes.Node]:
    yield node
    if isinstance(node, _OWN_SCOPES) or (isinstance(node, nodes.For) and not loops):
        return
    for child in node.iter_child_nodes():
        yield from _nodes(child, loops)
