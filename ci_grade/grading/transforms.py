"""Output transforms and script-valued references: inline JavaScript, `file://x.js[:fn]`, `file://x.py[:fn]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.errors import ScriptError, TransformError
from ci_grade.scripting import js
from ci_grade.workers import calls

_JS_SUFFIXES = (".js", ".cjs", ".mjs")


def is_script_ref(value: Any) -> bool:
    if not isinstance(value, str) or not value.startswith("file://"):
        return False
    path, _ = files.split_function(value)
    return path.endswith((*_JS_SUFFIXES, ".py"))


async def run_script(code: str, args: list[Any], base_dir: Path, params: tuple[str, ...], python_default: str) -> tuple[bool, Any]:
    """Run inline JS, or a JS/Python function from a file, with `args`; returns (returned, value)."""
    if code.startswith("file://"):
        path_text, function = files.split_function(code)
        path = files.resolve(path_text, base_dir)
        if not path.is_file():
            raise TransformError(f"file not found: {path}")
        if path.suffix == ".py":
            try:
                value = await calls.call_file(path, function or python_default, args, base_dir=base_dir)
            except ScriptError as exc:
                raise TransformError(str(exc)) from None
            return value is not None, value
        value = await js.acall_js_file_function(path, function, args)
        return value is not None, value
    try:
        return await js.arun_inline(js.transform_body(code), params, args)
    except ScriptError as exc:
        raise TransformError(str(exc)) from None


async def apply_transform(code: str, output: Any, context: dict[str, Any], base_dir: Path) -> Any:
    """promptfoo's `transform`: `(output, context) -> new output`; null or undefined is an error."""
    try:
        returned, value = await run_script(code, [output, context], base_dir, ("output", "context"), "get_transform")
    except TransformError as exc:
        raise TransformError(f"transform {_label(code)} failed: {exc}") from None
    except Exception as exc:
        raise TransformError(f"transform {_label(code)} failed: {type(exc).__name__}: {exc}") from None
    if not returned or value is None:
        raise TransformError(f"transform {_label(code)} returned no value")
    return value


def _label(code: str) -> str:
    text = " ".join(code.split())
    return repr(text if len(text) <= 60 else text[:57] + "...")
