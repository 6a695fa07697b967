"""User code in files, run where promptfoo runs it: a `.py` file in a Python worker, a
JavaScript or TypeScript file in a Node.js worker. Prompt functions, test generators,
`extensions` hooks and assertion files call through here, by the file's extension.

    value = await dispatch.call_file(path, function, args, python_default="get_assert")

A Python file needs a function name (`python_default` when the reference names none); a
JavaScript file without one calls its default export. Errors are ScriptError (the code threw)
and ScriptAborted (it did not finish), whichever language ran it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_grade.errors import ScriptError
from ci_grade.workers import calls, node


def runs(path: str | Path) -> bool:
    """Whether ci-grade runs code from a file like this one (Python, JavaScript, TypeScript)."""
    return str(path).lower().endswith(".py") or node.is_script(path)


async def call_file(path: Path, function: str | None, args: Sequence[Any], *, python_default: str, base_dir: Path | None = None, timeout: float | None = None) -> Any:
    """`function(*args)` from the file at `path`, in the worker for its language."""
    if node.is_script(path):
        return await node.call_file(path, function, args, timeout=timeout)
    if path.suffix.lower() == ".py":
        return await calls.call_file(path, function or python_default, args, base_dir=base_dir, timeout=timeout)
    raise ScriptError(f"{path.name}: ci-grade runs code from .py, .js, .cjs, .mjs and .ts files only")


def call_file_sync(path: Path, function: str | None, args: Sequence[Any], *, python_default: str, base_dir: Path | None = None, timeout: float | None = None, data: bool = False) -> Any:
    """`call_file` for callers outside an event loop (loading a config); `data`: a JavaScript
    export that is not a function is returned as it is."""
    if node.is_script(path):
        return node.call_file_sync(path, function, args, timeout=timeout, data=data)
    if path.suffix.lower() == ".py":
        return calls.call_file_sync(path, function or python_default, args, base_dir=base_dir, timeout=timeout)
    raise ScriptError(f"{path.name}: ci-grade runs code from .py, .js, .cjs, .mjs and .ts files only")
