"""The OpenAI SDK, imported once, with its type packages loaded when they are used.

The packages under `openai.types` only re-export names from their modules, but importing one
runs every module it re-exports. So `import openai` loads some 520 modules, most of them pydantic
models for APIs a run never calls, and that is about 60% of the import's time. `sdk()` imports
the SDK with those packages lazy:
- a package's own modules are imported when they are used (`from openai.types import
  embedding_create_params` imports just that module);
- the package's `__init__` runs the first time any other name is read from it
  (`openai.types.ChatCompletion`).
So every name the SDK exports is still there, and it is the same object. A package whose
`__init__` does more than import and document is loaded as usual, and so is any package imported
after `sdk()` returns.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ci_grade.gc_pause import collector_paused

LAZY = "openai.types"
"""The package whose subpackages `sdk()` imports lazily (itself included)."""


@functools.cache
def sdk() -> ModuleType:
    """The `openai` package (see the module's docstring). The import creates some 100,000
    objects and no garbage; the cyclic collector is paused meanwhile."""
    with collector_paused():
        return import_lazily("openai", LAZY)


def import_lazily(name: str, lazy: str) -> ModuleType:
    """Import `name` with the package `lazy` and its subpackages deferred (if not imported yet)."""
    if name in sys.modules:
        return sys.modules[name]
    finder = _LazyPackages(lazy)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module(name)
    finally:
        sys.meta_path.remove(finder)


class _LazyPackages(importlib.abc.MetaPathFinder):
    """Finds the package `lazy` and those under it with a loader that defers their `__init__`."""

    def __init__(self, lazy: str):
        self._lazy = lazy

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._lazy and not fullname.startswith(self._lazy + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.submodule_search_locations or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        if not _only_imports(spec.loader.get_filename(fullname)):
            return spec
        spec.loader = _DeferredInit(spec.loader)
        return spec


def _only_imports(path: str) -> bool:
    """Whether the module at `path` only imports (and has a docstring): deferring it loses nothing."""
    try:
        with open(path, encoding="utf-8") as source:
            body = ast.parse(source.read()).body
    except (OSError, SyntaxError, ValueError):
        return False
    return all(isinstance(node, ast.Import | ast.ImportFrom) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


class _DeferredInit(importlib.abc.Loader):
    """Runs a package's `__init__` on the first read of a name that is not one of its modules."""

    def __init__(self, loader: importlib.machinery.SourceFileLoader):
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        loader, lock = self._loader, threading.RLock()
        folder = next(iter(module.__path__))
        loading = False

        def __getattr__(name: str) -> Any:
            nonlocal loading
            if not name.startswith("__") and name in _modules_in(folder):
                return importlib.import_module(f"{module.__name__}.{name}")
            with lock:
                if loading:  # its own `__init__` asking: not there (yet)
                    raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
                if module.__dict__.get("__getattr__") is __getattr__:
                    loading = True
                    try:
                        loader.exec_module(module)
                    finally:
                        loading = False
                        if module.__dict__.get("__getattr__") is __getattr__:
                            del module.__dict__["__getattr__"]
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


@functools.cache
def _modules_in(folder: str) -> frozenset[str]:
    """The names of the modules and packages in a package's folder."""
    names = set()
    for entry in os.scandir(folder):
        if entry.name.endswith(".py") and entry.name != "__init__.py":
            names.add(entry.name[:-3])
        elif entry.is_dir() and os.path.exists(os.path.join(entry.path, "__init__.py")):
            names.add(entry.name)
    return frozenset(names)
