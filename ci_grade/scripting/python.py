"""Python from configs, as promptfoo wraps it: `file://x.py:fn` functions and inline `python` code.

What runs the code lives in `ci_grade.workers` (a pool of worker processes); this module holds
what a worker does with it and what preflight checks beforehand: importing a user's file (its
folder on sys.path, so sibling imports work; imported again when the file changes), promptfoo's
wrapper around inline code, where in the user's code an exception came from, and syntax checks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from ci_grade.errors import ScriptError

INLINE_FILENAME = "<inline python>"
_modules: dict[Path, tuple[int, ModuleType]] = {}


def load_module(path: Path) -> ModuleType:
    """The user's module at `path`, imported once (again when the file has changed since)."""
    path = path.resolve()
    stamp = path.stat().st_mtime_ns
    known = _modules.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
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
        raise ScriptError(f"importing {path.name} failed: {describe(exc, path)}") from exc
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _modules[path] = (stamp, module)
    return module


def load_function(path: Path, name: str) -> Callable[..., Any]:
    """The function `name` of the file at `path`; a dotted name reaches into a class (`Prompt.render`)."""
    function: Any = load_module(path)
    for part in name.split("."):
        function = getattr(function, part, None)
    if not callable(function):
        raise ScriptError(f"{path.name} has no function {name!r}")
    return cast(Callable[..., Any], function)


def run_script(path: Path, argv: list[str]) -> str:
    """Run the file at `path` as a program (`__main__`, `sys.argv` = [path, *argv]) and return
    what it printed, without the last newline (as promptfoo reads a script's lines); exiting
    with status 0 is finishing, another status is an error."""
    import contextlib
    import io
    import runpy

    path = path.resolve()
    printed = io.StringIO()
    saved = sys.argv
    sys.argv = [str(path), *argv]
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise ScriptError(f"{path.name} exited with status {exc.code!r}") from None
    except Exception as exc:
        raise ScriptError(describe(exc, path)) from None
    finally:
        sys.argv = saved
    text = printed.getvalue()
    return text[:-1] if text.endswith("\n") else text


def inline_source(code: str, params: tuple[str, ...] = ("output", "context")) -> str:
    """promptfoo's wrapper: code with a newline is the function body (every line indented as its
    first indented line is), one line is returned as written."""
    if "\n" in code:
        indent = re.search(r"^(?!\s*$)\s+", code, re.M)
        body = "\n".join((indent.group(0) if indent else "    ") + line for line in code.split("\n"))
    else:
        body = f"    return {code}"
    return f"def __inline__({', '.join(params)}):\n{body}\n"


def compile_inline(code: str, params: tuple[str, ...] = ("output", "context")) -> Callable[..., Any]:
    """The inline code as a function of `params`, with `json` imported (as promptfoo's wrapper)."""
    namespace: dict[str, Any] = {"__name__": "ci_grade_inline", "json": json}
    exec(compile(inline_source(code, params), INLINE_FILENAME, "exec"), namespace)
    return cast(Callable[..., Any], namespace["__inline__"])


def describe(exc: BaseException, path: Path | None = None) -> str:
    """`ValueError: bad input (grader.py:12 in check)`: the exception and the deepest frame of the
    user's file (`path`), or of inline code (`line 2 of the code`)."""
    if isinstance(exc, SyntaxError):  # in a module the user's file imports, or in rendered inline code
        return _syntax_text(exc, None if exc.filename == INLINE_FILENAME else Path(exc.filename or "?").name)
    text = f"{type(exc).__name__}: {exc}"
    wanted = str(path.resolve()) if path is not None else INLINE_FILENAME
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == wanted]
    if not frames:
        return text
    frame = frames[-1]
    if path is None:
        return f"{text} (line {(frame.lineno or 1) - 1} of the code)"
    return f"{text} ({path.name}:{frame.lineno} in {frame.name})"


def file_syntax_error(path: Path, shown: str | None = None) -> str | None:
    """Why the Python file at `path` does not compile (`SyntaxError: ... (x.py:3)`, the file
    named as `shown`), or None."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        return f"cannot read {path.name}: {exc.strerror}"
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return _syntax_text(exc, shown or path.name)
    return None


def inline_syntax_error(code: str, params: tuple[str, ...] = ("output", "context")) -> str | None:
    """Why inline code does not compile once wrapped (`SyntaxError: ... (line 2 of the code)`), or None."""
    try:
        compile(inline_source(code, params), INLINE_FILENAME, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return _syntax_text(exc, None)
    return None


def _syntax_text(exc: SyntaxError | ValueError, name: str | None) -> str:
    if not isinstance(exc, SyntaxError):
        return f"{type(exc).__name__}: {exc}"  # source with a NUL byte
    place = f"{name}:{exc.lineno}" if name else f"line {max(1, (exc.lineno or 1) - 1)} of the code"
    return f"{type(exc).__name__}: {exc.msg} ({place})"
