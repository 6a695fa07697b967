"""promptfoo's provider transforms (`transformResponse`, `streamResponse`, `validateStatus`):
inline JavaScript (an expression, a function body, or a function expression called with the
transform's arguments) or a file's function (`file://x.js[:fn]`, `file://x.py:fn`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.errors import ScriptError
from ci_grade.scripting import js
from ci_grade.workers import calls

FUNCTION_EXPRESSION = re.compile(r"^\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)")


async def run(code: str, params: tuple[str, ...], args: list[Any], base_dir: Path | None) -> Any:
    """`code` called with `args` (named `params` inside inline code)."""
    if code.startswith("file://"):
        path_text, function = files.split_function(code)
        path = files.resolve(path_text, base_dir or Path.cwd())
        if not path.is_file():
            raise FileNotFoundError(f"file not found: {path}")
        if path.suffix == ".py":
            if not function:
                raise ScriptError(f"name the function to call: file://{path_text}:<function>")
            return await calls.call_file(path, function, args, base_dir=base_dir)
        return js.call_js_file_function(path, function, args)
    if FUNCTION_EXPRESSION.match(code):
        code = f"return ({code.strip().rstrip(';')})({', '.join(params)});"
    _, value = await js.arun_inline(expression_body(code), params, args)
    return value


def expression_body(code: str) -> str:
    """One line is an expression; several lines are a body, or one expression when without `return`."""
    stripped = code.strip()
    if "\n" not in stripped:
        return stripped if stripped.startswith("return ") else f"return {stripped};"
    if re.search(r"\breturn\b", stripped):
        return stripped
    return f"return (\n{stripped}\n);"
