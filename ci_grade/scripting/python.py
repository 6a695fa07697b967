"""Python functions from configs: `file://x.py:fn` references and inline `python` asserts.

User modules are imported in-process once per file (their folder goes on sys.path so sibling
imports work). Synchronous functions run on a daemon thread so they cannot stall the event loop
nor hold up the process's exit; coroutine functions are awaited.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import json
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from ci_grade.errors import ScriptError
from ci_grade.scripting.threads import run_in_thread

_modules: dict[Path, ModuleType] = {}
_lock = threading.Lock()


def load_module(path: Path) -> ModuleType:
    path = path.resolve()
    with _lock:
        module = _modules.get(path)
        if module is not None:
            return module
        name = "ci_grade_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ScriptError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.append(folder)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise ScriptError(f"importing {path.name} failed: {type(exc).__name__}: {exc}") from exc
        _modules[path] = module
        return module


def load_function(path: Path, name: str) -> Callable[..., Any]:
    module = load_module(path)
    function = getattr(module, name, None)
    if not callable(function):
        raise ScriptError(f"{path.name} has no function {name!r}")
    return cast(Callable[..., Any], function)


def call_function_sync(path: Path, name: str, *args: Any) -> Any:
    """Call a function from a user file right now (used while loading config values)."""
    result = load_function(path, name)(*args)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def call(function: Callable[..., Any], *args: Any) -> Any:
    """Await a coroutine function, or run a plain one in a worker thread."""
    if inspect.iscoroutinefunction(function):
        return await function(*args)
    result = await run_in_thread(function, *args)
    if inspect.isawaitable(result):
        return await result
    return result


def compile_inline(code: str, params: tuple[str, ...] = ("output", "context")) -> Callable[..., Any]:
    """promptfoo's wrapper: code with a newline is the function body (every line indented as its
    first indented line is), one line is returned as written; `json` is imported."""
    if "\n" in code:
        indent = re.search(r"^(?!\s*$)\s+", code, re.M)
        body = "\n".join((indent.group(0) if indent else "    ") + line for line in code.split("\n"))
    else:
        body = f"    return {code}"
    source = f"def __inline__({', '.join(params)}):\n{body}\n"
    namespace: dict[str, Any] = {"__name__": "ci_grade_inline", "json": json}
    exec(compile(source, "<inline python>", "exec"), namespace)
    return cast(Callable[..., Any], namespace["__inline__"])
