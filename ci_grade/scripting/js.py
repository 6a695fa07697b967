"""JavaScript from configs (`transform`, `contextTransform`, `javascript` asserts, `regex`) on V8.

One V8 isolate per process (`v8.JsRuntime`: its own thread, time and memory limits, calls run
in batches). Data crosses as JSON. `regex` assertions whose pattern is in the subset where
Python's `re` provably agrees with JavaScript (`js_regex`) are decided without V8.
"""

from __future__ import annotations

import atexit
import json
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from ci_grade.errors import ScriptError
from ci_grade.scripting import js_regex
from ci_grade.scripting.v8 import JsRuntime

_runtime: JsRuntime | None = None
_runtime_lock = threading.Lock()


def runtime() -> JsRuntime:
    """The process-wide JavaScript runtime (created on first use)."""
    global _runtime
    if _runtime is not None:
        return _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = JsRuntime()
            atexit.register(_runtime.close)  # daemon threads still run when atexit handlers do
        return _runtime


def transform_body(code: str) -> str:
    """promptfoo's inline transform: code with a newline is the function body, one line is returned."""
    return code if "\n" in code else f"return {code}"


def assertion_body(code: str) -> str:
    """promptfoo's inline `javascript` value: trimmed at the end, code with a newline is the function
    body; one line gets `return` before it, or, after `const`/`let`/`var`, before its last statement."""
    code = code.rstrip()
    if "\n" in code:
        return code
    line = re.sub(r";+\s*$", "", code.strip())
    if not re.match(r"(const|let|var)\s", line):
        return f"return {line}"
    end = _last_statement_semicolon(line)
    expression = line[end + 1 :].strip() if end != -1 else ""
    return f"{line[: end + 1]} return {expression}" if expression else line


def _last_statement_semicolon(code: str) -> int:
    """The index of the last `;` outside quotes and template literals, or -1."""
    quote, last, backslashes = "", -1, 0
    for i, char in enumerate(code):
        if char in "'\"`" and backslashes % 2 == 0 and quote in ("", char):
            quote = "" if quote else char
        elif char == ";" and not quote:
            last = i
        backslashes = backslashes + 1 if char == "\\" else 0
    return last


def run_inline(body: str, params: tuple[str, ...], args: list[Any]) -> tuple[bool, Any]:
    """Run a function body with named parameters."""
    rt = runtime()
    return rt.call(rt.define(params, body), args)


async def arun_inline(body: str, params: tuple[str, ...], args: list[Any]) -> tuple[bool, Any]:
    """`run_inline` without blocking the event loop."""
    rt = runtime()
    return await rt.acall(await rt.adefine(params, body), args)


_REGEX_TEST = """
var re;
try { re = new RegExp(pattern); } catch (e) { return { invalid: String(e && e.message || e) }; }
return { matched: re.test(text) };
"""


async def regex_test(pattern: str, text: str) -> bool | str:
    """`new RegExp(pattern).test(text)`; for a pattern JavaScript rejects, V8's message."""
    matched = js_regex.test(pattern, text)
    if matched is not None:
        return matched
    _, result = await arun_inline(_REGEX_TEST, ("pattern", "text"), [pattern, text])
    return str(result["invalid"]) if "invalid" in result else bool(result["matched"])


@lru_cache(maxsize=1024)
def regex_error(pattern: str) -> str | None:
    """Why JavaScript rejects `pattern` (V8's message), or None when it compiles."""
    if js_regex.translate(pattern) is not None:
        return None  # the subset holds only patterns JavaScript accepts
    _, result = run_inline(_REGEX_TEST, ("pattern", "text"), [pattern, ""])
    return str(result["invalid"]) if "invalid" in result else None


_SCHEMA_PATTERN_TEST = """
var re;
try { re = new RegExp(pattern, "u"); } catch (e) { return { invalid: String(e && e.message || e) }; }
return { matched: re.test(text) };
"""


@lru_cache(maxsize=4096)
def schema_pattern_test(pattern: str, text: str) -> bool | str:
    """`new RegExp(pattern, "u").test(text)`, as ajv applies a JSON schema's `pattern` (its
    `unicodeRegExp` default); for a pattern JavaScript rejects, V8's message."""
    _, result = run_inline(_SCHEMA_PATTERN_TEST, ("pattern", "text"), [pattern, text])
    return str(result["invalid"]) if "invalid" in result else bool(result["matched"])


def call_js_file_function(path: Path, function: str | None, args: list[Any]) -> Any:
    """Call `function` (or the default export) of a JavaScript file with JSON arguments."""
    rt = runtime()
    _, value = rt.call(_file_function(rt, path, function), [args])
    return value


async def acall_js_file_function(path: Path, function: str | None, args: list[Any]) -> Any:
    """`call_js_file_function` without blocking the event loop."""
    rt = runtime()
    _, value = await rt.acall(_file_function(rt, path, function), [args])
    return value


def check_js_file_function(path: Path, function: str | None) -> None:
    """Evaluate a JavaScript file and check that it exports `function` (or a default function)."""
    rt = runtime()
    rt.call(_file_function(rt, path, function, call=False), [])


def file_syntax_error(path: Path, shown: str) -> str | None:
    """Why the JavaScript file at `path` does not compile as a module (`SyntaxError: ... (x.js:3)`),
    or None; it is compiled without running it."""
    from ci_grade.scripting.v8 import commonjs

    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read {path.name}: {exc}"
    if re.search(r"^\s*import[\s{*]", source, re.M):
        return None  # an ES module with imports: only a module loader can tell
    try:
        source = commonjs(source)
        runtime().define(("module", "exports"), source)
    except ScriptError as exc:
        line = re.match(r"<anonymous>:(\d+): ", str(exc))  # the line in the wrapping function
        return f"{str(exc)[line.end():]} ({shown}:{max(1, int(line.group(1)) - 1)})" if line else str(exc)
    return None


def _file_function(rt: JsRuntime, path: Path, function: str | None, *, call: bool = True) -> str:
    module = rt.define_module(path.read_text(encoding="utf-8"), str(path))
    target = f"{module}[{json.dumps(function)}]" if function else f"({module}.default || {module})"
    missing = json.dumps(f"{path.name} has no function {function or 'default'}")
    then = f"return f.apply(null, arguments[0].map(function (a) {{ return {_IS_UNDEFINED} ? undefined : a; }}));" if call else "return true;"
    return rt.define((), f"var f = {target}; if (typeof f !== 'function') throw new Error({missing}); {then}")


def method(value: Any) -> dict[str, Any]:
    """An argument (or a part of one) that arrives as a function returning `value`."""
    return {"__cigrade_method__": value}


UNDEFINED: dict[str, Any] = {"__cigrade_undefined__": True}
"""An argument to `call_js_file_function` that arrives as JavaScript's `undefined`."""
_IS_UNDEFINED = "(a !== null && typeof a === 'object' && a.__cigrade_undefined__ === true)"
