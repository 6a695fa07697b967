"""No module of ci_grade reads, writes, imports or overrides a private (`_name`) name of another
package (the standard library included) unless that package documents it.

A private name can change in any release of its package without notice. The scan reads every
module under `ci_grade/` with `ast` and finds:

- imports of a private name or module (`from openai._types import X`, `from jinja2 import _x`);
- attribute access on an imported module or its members (`jinja2.runtime._x`);
- in a class that derives from another package's class: a method or class attribute that overrides
  a private one of the base (`def _parse`), `super()._x`, and `self._x` the base defines and the
  class does not (the base classes are imported here to see what they define);
- `obj._x` (and `getattr(obj, "_x")`) on any other object where ci_grade itself defines no `_x`:
  the name can only be someone else's. (An object of another package whose private name happens
  to match one of ci_grade's own is not caught: the scan has no types.)

`__dunder__` names are public protocol, and ci_grade's own `_names` are its own business. What a
package documents, or the one undocumented hook that has no public alternative, is listed in
`ALLOWED` with the reason, and in the module where it may be used.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ci_grade"
_TEMPLATING = "ci_grade/templating/jinja_overrides.py"

ALLOWED: dict[str, tuple[str | None, str]] = {
    # name found: (the only module allowed to use it, or None for any; why it is allowed)
    #
    # jinja2 has no documented way to replace its parser: `Environment._parse` is where
    # `Environment.parse`, `compile` and `from_string` call it. The override gives nunjucks'
    # precedence of `~` and `not`, its `for` over objects and its `{% set %}` in loops.
    "jinja2.environment.Environment._parse": (_TEMPLATING, "no public parser hook; jinja2 pinned to 3.1.x"),
    # `Environment.code_generator_class` is documented for "modifying the Python code a template
    # compiles to"; the generator's constant folding of output has no public switch, and folding
    # would compute `{{ "5" + 1 }}` with Python's rules before the sandbox's `call_binop` sees it.
    "jinja2.compiler.CodeGenerator._output_child_to_const": (_TEMPLATING, "no public switch for constant output; jinja2 pinned to 3.1.x"),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name != "_"


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _own_module(module: str | None, level: int) -> bool:
    return level > 0 or module is None or module == "ci_grade" or module.startswith("ci_grade.")


@functools.cache
def _load(qualified: str) -> Any:
    """The object `qualified` names (`package.module.Class`), or None if it cannot be imported here."""
    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                found = getattr(found, part)
        except AttributeError:
            return None
        return found
    return None


def _owner(classes: list[type], name: str) -> str | None:
    """`module.Class.name` for the first of `classes`' (MRO) classes that defines `name`."""
    for base in classes:
        for klass in base.__mro__:
            if name in vars(klass):
                return f"{klass.__module__}.{klass.__qualname__}.{name}"
    return None


@dataclass
class _Class:
    module: _Module
    node: ast.ClassDef
    defined: set[str] = field(default_factory=set)
    """Names the class body defines (methods, class attributes)."""
    stored: set[str] = field(default_factory=set)
    """Names its methods store on `self`."""


@dataclass
class _Module:
    path: Path
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    """Local name -> the other package's object it is bound to."""
    own_imports: dict[str, str] = field(default_factory=dict)
    """Local name -> the ci_grade object it is bound to."""
    classes: dict[str, _Class] = field(default_factory=dict)


class _Project:
    def __init__(self, paths: list[Path], root: Path):
        self.root = root
        self.modules = {_module_name(p, root): _Module(p, ast.parse(p.read_text(encoding="utf-8"), str(p))) for p in paths}
        self.defined: set[str] = set()
        """Every private name ci_grade defines anywhere (functions, classes, variables, attributes)."""
        for name, module in self.modules.items():
            self._index(name, module)

    def _index(self, name: str, module: _Module) -> None:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = module.own_imports if _own_module(alias.name, 0) else module.imports
                    if alias.asname:
                        target[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        target[top] = top
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.split(".")[: len(name.split(".")) - node.level + (1 if module.path.name == "__init__.py" else 0)]
                    base = ".".join([*package, *([node.module] if node.module else [])])
                target = module.own_imports if _own_module(node.module, node.level) else module.imports
                for alias in node.names:
                    target[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.ClassDef):
                info = module.classes.setdefault(node.name, _Class(module, node))
                for item in node.body:
                    info.defined.update(_defined_by(item))
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls"):
                        info.stored.add(sub.attr)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.defined.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                self.defined.add(node.attr)
            elif isinstance(node, ast.alias):
                self.defined.add(node.asname or node.name.split(".")[0])

    def own_class(self, module: _Module, name: str) -> _Class | None:
        if name in module.classes:
            return module.classes[name]
        qualified = module.own_imports.get(name)
        if qualified and "." in qualified:
            owner, _, attr = qualified.rpartition(".")
            if owner in self.modules:
                return self.modules[owner].classes.get(attr)
        return None

    def lineage(self, klass: _Class) -> tuple[list[_Class], list[str]]:
        """The ci_grade classes `klass` derives from (itself first) and the other packages' bases they name."""
        own, foreign, todo = [], [], [klass]
        while todo:
            current = todo.pop()
            if current in own:
                continue
            own.append(current)
            for base in current.node.bases:
                qualified = resolve(base, current.module.imports)
                if qualified:
                    foreign.append(qualified)
                elif isinstance(base, ast.Name) and (parent := self.own_class(current.module, base.id)):
                    todo.append(parent)
                elif isinstance(base, ast.Name) and isinstance(getattr(builtins, base.id, None), type):
                    foreign.append(f"builtins.{base.id}")  # `class X(dict)`: Python's own
        return own, foreign


def _defined_by(statement: ast.stmt) -> list[str]:
    """The names a statement of a class body defines: a method, a nested class, a class attribute."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def resolve(node: ast.expr, imports: dict[str, str]) -> str | None:
    """The other package's dotted name `node` reads (`jinja2.nodes.Const`), if it reads one."""
    if isinstance(node, ast.Name):
        return imports.get(node.id)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, imports)
        return f"{base}.{node.attr}" if base else None
    return None


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    name: str
    how: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} ({self.how})"


def scan(paths: list[Path], root: Path = ROOT) -> list[Finding]:
    """Every private name of another package that `paths` (modules of ci_grade under `root`) use."""
    project = _Project(paths, root)
    findings: list[Finding] = []
    for module in project.modules.values():
        findings += _scan_module(project, module)
    return sorted(findings, key=lambda f: (f.path, f.line, f.name))


def _scan_module(project: _Project, module: _Module) -> list[Finding]:
    where = module.path.relative_to(project.root).as_posix()
    found: list[Finding] = []

    def report(node: ast.AST, name: str, how: str) -> None:
        found.append(Finding(where, getattr(node, "lineno", 0), name, how))

    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _own_module(alias.name, 0) and any(_private(part) for part in alias.name.split(".")):
                    report(node, alias.name, "import")
        elif isinstance(node, ast.ImportFrom) and not _own_module(node.module, node.level):
            for alias in node.names:
                if any(_private(part) for part in f"{node.module}.{alias.name}".split(".")):
                    report(node, f"{node.module}.{alias.name}", "import")

    def visit(node: ast.AST, klass: _Class | None) -> None:
        if isinstance(node, ast.ClassDef):
            klass = module.classes.get(node.name)
            if klass is not None and klass.node is node:
                _check_overrides(project, klass, report)
        for name, target in _accesses(node):
            _check_access(project, module, klass, node, name, target, report)
        for child in ast.iter_child_nodes(node):
            visit(child, klass)

    visit(module.tree, None)
    return found


def _accesses(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """The private attribute `node` reads or writes, and on what: `x._a`, `getattr(x, "_a")`."""
    if isinstance(node, ast.Attribute) and _private(node.attr):
        return [(node.attr, node.value)]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
        and _private(node.args[1].value)
    ):
        return [(node.args[1].value, node.args[0])]
    return []


def _foreign_classes(names: list[str]) -> tuple[list[type], bool]:
    """The classes `names` name, and whether every one could be imported here."""
    classes = [_load(name) for name in names]
    return [c for c in classes if isinstance(c, type)], all(isinstance(c, type) for c in classes)


def _check_overrides(project: _Project, klass: _Class, report: Any) -> None:
    bases, _ = _foreign_classes(project.lineage(klass)[1])
    if not bases:
        return
    for item in klass.node.body:
        for name in _defined_by(item):
            if _private(name) and (owner := _owner(bases, name)):
                report(item, owner, "override")


def _check_access(project: _Project, module: _Module, klass: _Class | None, node: ast.AST, name: str, target: ast.expr, report: Any) -> None:
    qualified = resolve(target, module.imports)
    if qualified is not None:
        report(node, f"{qualified}.{name}", "attribute of an imported name")
        return
    if resolve(target, module.own_imports) is not None:
        return  # a ci_grade module or class: its own
    is_super = isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super"
    if klass is not None and (is_super or (isinstance(target, ast.Name) and target.id in ("self", "cls"))):
        own, foreign = project.lineage(klass)
        bases, complete = _foreign_classes(foreign)
        owner = _owner(bases, name)
        if is_super:
            if owner:
                report(node, owner, "super()")
            elif not any(name in c.defined for c in own if c is not klass):
                report(node, f"*.{name}", "super() past every ci_grade base: another package's")
            return
        if owner and isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            report(node, owner, "overwritten on self")
        elif owner and not any(name in c.defined or name in c.stored for c in own):
            report(node, owner, "read from a base class")
        elif not owner and not any(name in c.defined or name in c.stored for c in own):
            if foreign and not complete:
                report(node, f"{'/'.join(foreign)}.{name}", "read from a base class that cannot be imported here")
            elif name not in project.defined:
                report(node, f"*.{name}", "read from self, defined nowhere in ci_grade: another package's")
        return
    if name not in project.defined:
        report(node, f"*.{name}", "defined nowhere in ci_grade: another package's")


def _allowed(finding: Finding) -> bool:
    rule = ALLOWED.get(finding.name)
    return rule is not None and rule[0] in (None, finding.path)


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@functools.cache
def _package_findings() -> tuple[Finding, ...]:
    return tuple(scan(_sources()))


def test_no_private_names_of_other_packages() -> None:
    found = [str(f) for f in _package_findings() if not _allowed(f)]
    assert not found, "private names of other packages (see ALLOWED in this test for the rule):\n" + "\n".join(found)


def test_every_allowance_is_still_needed() -> None:
    used = {f.name for f in _package_findings() if _allowed(f)}
    assert set(ALLOWED) <= used, f"allowed but no longer used, remove: {sorted(set(ALLOWED) - used)}"


def test_the_scan_finds_each_kind(tmp_path: Path) -> None:
    """The scan itself, on a made-up module: every way of reaching a private name is found,
    and dunders, ci_grade's own names and documented public names are not."""
    source = tmp_path / "ci_grade" / "probe.py"
    source.parent.mkdir()
    source.write_text(
        "import jinja2\n"
        "import jinja2.compiler\n"
        "import httpx._transports\n"
        "from openai._types import NOT_GIVEN\n"
        "from jinja2 import _identifier\n"
        "from jinja2.compiler import CodeGenerator\n"
        "from jinja2.sandbox import SandboxedEnvironment\n"
        "from ci_grade.errors import _private_helper\n"
        "_own = 1\n"
        "class Gen(CodeGenerator):\n"
        "    __slots__ = ()\n"
        "    def _output_child_to_const(self, node, frame, finalize):\n"
        "        return super()._output_child_to_const(node, frame, finalize)\n"
        "    def _mine(self):\n"
        "        self._own_attr = 1\n"
        "        return self._own_attr, self._mine(), self._default_finalize, self.__class__\n"
        "class Mixin:\n"
        "    def _build_request(self):\n"
        "        return super()._build_request(), self._idempotency_header, self._own_attr\n"
        "class Env(SandboxedEnvironment):\n"
        "    def _parse(self, source, name, filename):\n"
        "        return jinja2.compiler._make_binop('+')\n"
        "def f(client):\n"
        "    return client._transport, getattr(client, '_pool'), client._own, client.__dict__, _own\n",
        encoding="utf-8",
    )
    found = {(f.line, f.name) for f in scan([source], tmp_path)}
    assert found == {
        (3, "httpx._transports"),
        (4, "openai._types.NOT_GIVEN"),
        (5, "jinja2._identifier"),
        (12, "jinja2.compiler.CodeGenerator._output_child_to_const"),
        (13, "jinja2.compiler.CodeGenerator._output_child_to_const"),
        (16, "jinja2.compiler.CodeGenerator._default_finalize"),
        (19, "*._build_request"),
        (19, "*._idempotency_header"),
        (21, "jinja2.environment.Environment._parse"),
        (22, "jinja2.compiler._make_binop"),
        (24, "*._transport"),
        (24, "*._pool"),
    }, sorted(found)


if __name__ == "__main__":  # `python tests/test_no_private_names.py [files...]`: list what the scan finds
    for finding in scan([Path(p).resolve() for p in sys.argv[1:]] or _sources()):
        print(finding, "(allowed)" if _allowed(finding) else "")
