"""JavaScript from configs (`transform`, `contextTransform`, `javascript` asserts) on mini-racer.

One V8 isolate per process, created on first use and driven from one dedicated thread (V8
work never runs on the event loop's thread, so a slow expression cannot stall other tests).
Every call runs under a time limit and the isolate under a memory limit, so a runaway expression
fails its own assertion instead of hanging or exhausting the run. Data crosses as JSON.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import queue
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ci_grade.errors import ScriptError

DEFAULT_TIMEOUT_MS = int(os.environ.get("CI_GRADE_JS_TIMEOUT_MS", "5000"))
DEFAULT_MAX_MEMORY = int(os.environ.get("CI_GRADE_JS_MAX_MEMORY_MB", "256")) * 1024 * 1024


_BOOTSTRAP = """
var process = { env: %s };
function __cigrade_call(name, argsJson) {
  var result = globalThis[name].apply(null, JSON.parse(argsJson));
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    globalThis.__cigrade_pending = null;
    result.then(
      function (v) { globalThis.__cigrade_pending = v === undefined ? '{}' : JSON.stringify({ v: v }); },
      function (e) { globalThis.__cigrade_pending = JSON.stringify({ rejected: String(e && e.message || e) }); });
    return '{"pending": true}';
  }
  if (result === undefined) return '{}';
  return JSON.stringify({ v: result === undefined ? null : result });
}
"""
_SETTLED = "globalThis.__cigrade_pending"


class JsRuntime:
    """A V8 isolate that compiles each distinct function once and calls it with JSON arguments.

    All V8 work runs on one daemon thread fed by a queue; the isolate is disposed of on that
    thread at interpreter exit (left to garbage collection, V8's teardown crashes the process).
    """

    def __init__(self, timeout_ms: int = DEFAULT_TIMEOUT_MS, max_memory: int = DEFAULT_MAX_MEMORY):
        self._timeout = timeout_ms / 1000
        self._functions: dict[str, str] = {}
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="ci-grade-js", daemon=True)
        self._thread.start()
        self._ctx = self._submit(lambda: self._start(max_memory)).result()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            function, future = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function())
                except BaseException as exc:
                    future.set_exception(exc)

    def _submit(self, function: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((function, future))
        return future

    def _start(self, max_memory: int) -> object:
        from py_mini_racer import MiniRacer

        ctx = MiniRacer()
        ctx.set_hard_memory_limit(max_memory)
        ctx.eval(_BOOTSTRAP % json.dumps(dict(os.environ)), timeout_sec=self._timeout)
        return ctx

    def define(self, params: tuple[str, ...], body: str) -> str:
        """Compile `function(params) { body }` once; returns its global name."""
        key = hashlib.sha1(("\0".join(params) + "\0" + body).encode()).hexdigest()[:16]
        name = f"__cigrade_fn_{key}"
        if key not in self._functions:
            source = f"globalThis.{name} = function({', '.join(params)}) {{\n{body}\n}};"
            self._eval(source)
            self._functions[key] = name
        return name

    def define_module(self, source: str, filename: str) -> str:
        """Evaluate a CommonJS or simple ES module once; returns the global holding its exports."""
        key = hashlib.sha1(source.encode()).hexdigest()[:16]
        name = f"__cigrade_mod_{key}"
        if key not in self._functions:
            wrapped = (
                f"globalThis.{name} = (function() {{ var module = {{ exports: {{}} }}; var exports = module.exports;\n"
                f"{_commonjs(source)}\n;return module.exports; }})();"
            )
            try:
                self._eval(wrapped)
            except ScriptError as exc:
                raise ScriptError(f"{filename}: {exc}") from None
            self._functions[key] = name
        return name

    def call(self, name: str, args: list[Any]) -> tuple[bool, Any]:
        """Call a defined function; returns (returned_something, value). Undefined -> (False, None).

        A returned promise is awaited: it settles in V8's microtask queue (there are no timers or I/O)."""
        source = _call_source(name, args)
        return _decode(self._submit(lambda: self._call_here(source)).result())

    async def acall(self, name: str, args: list[Any]) -> tuple[bool, Any]:
        """`call` without blocking the event loop."""
        source = _call_source(name, args)
        return _decode(await asyncio.wrap_future(self._submit(lambda: self._call_here(source))))

    def _call_here(self, source: str) -> Any:
        raw = self._eval_here(source)
        if raw != '{"pending": true}':
            return raw
        settled = self._eval_here(_SETTLED)  # microtasks ran when the first evaluation returned
        if settled is None:
            raise ScriptError("returned a promise that never settled (no timers or I/O are available)")
        if isinstance(settled, str) and settled.startswith('{"rejected":'):
            raise ScriptError(f"promise rejected: {json.loads(settled)['rejected']}")
        return settled

    def _eval(self, source: str) -> Any:
        return self._submit(lambda: self._eval_here(source)).result()

    def close(self) -> None:
        """Dispose of the isolate on its thread and stop the thread."""
        self._submit(self._ctx.close).result()
        self._jobs.put(None)
        self._thread.join(timeout=5)

    def _eval_here(self, source: str) -> Any:
        from py_mini_racer import JSEvalException, JSOOMException, JSTimeoutException

        try:
            return self._ctx.eval(source, timeout_sec=self._timeout)
        except JSTimeoutException:
            raise ScriptError(f"timed out after {self._timeout:g}s") from None
        except JSOOMException:
            raise ScriptError("ran out of memory") from None
        except JSEvalException as exc:
            raise ScriptError(_first_error_line(str(exc))) from None


def _call_source(name: str, args: list[Any]) -> str:
    payload = json.dumps(args, default=str)
    return f"__cigrade_call({json.dumps(name)}, {json.dumps(payload)})"


def _decode(raw: Any) -> tuple[bool, Any]:
    decoded = json.loads(raw) if isinstance(raw, str) else {}
    return ("v" in decoded, decoded.get("v"))


_runtime: JsRuntime | None = None
_runtime_lock = threading.Lock()


def runtime() -> JsRuntime:
    """The process-wide JavaScript runtime (created on first use)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = JsRuntime()
            atexit.register(_runtime.close)  # daemon threads still run when atexit handlers do
        return _runtime


def inline_body(code: str) -> str:
    """promptfoo's inline rule: one line is an expression; several lines are a function body."""
    stripped = code.strip()
    if "\n" not in stripped:
        return stripped if stripped.startswith("return ") else f"return {stripped};"
    if re.search(r"\breturn\b", stripped):
        return stripped
    return f"return (\n{stripped}\n);"


def run_inline(code: str, params: tuple[str, ...], args: list[Any]) -> tuple[bool, Any]:
    """Run an inline snippet (expression or body) with named parameters."""
    rt = runtime()
    return rt.call(rt.define(params, inline_body(code)), args)


async def arun_inline(code: str, params: tuple[str, ...], args: list[Any]) -> tuple[bool, Any]:
    """`run_inline` without blocking the event loop."""
    rt = runtime()
    return await rt.acall(rt.define(params, inline_body(code)), args)


_REGEX_TEST = """
var re;
try { re = new RegExp(pattern); } catch (e) { return { invalid: String(e && e.message || e) }; }
return { matched: re.test(text) };
"""


async def regex_test(pattern: str, text: str) -> bool | str:
    """`new RegExp(pattern).test(text)`; for a pattern JavaScript rejects, V8's message."""
    _, result = await arun_inline(_REGEX_TEST, ("pattern", "text"), [pattern, text])
    return str(result["invalid"]) if "invalid" in result else bool(result["matched"])


def regex_error(pattern: str) -> str | None:
    """Why JavaScript rejects `pattern` (V8's message), or None when it compiles."""
    _, result = run_inline(_REGEX_TEST, ("pattern", "text"), [pattern, ""])
    return str(result["invalid"]) if "invalid" in result else None


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


def _file_function(rt: JsRuntime, path: Path, function: str | None, *, call: bool = True) -> str:
    module = rt.define_module(path.read_text(encoding="utf-8"), str(path))
    target = f"{module}[{json.dumps(function)}]" if function else f"({module}.default || {module})"
    missing = json.dumps(f"{path.name} has no function {function or 'default'}")
    then = f"return f.apply(null, arguments[0].map(function (a) {{ return {_IS_UNDEFINED} ? undefined : a; }}));" if call else "return true;"
    return rt.define((), f"var f = {target}; if (typeof f !== 'function') throw new Error({missing}); {then}")


UNDEFINED: dict[str, Any] = {"__cigrade_undefined__": True}
"""An argument to `call_js_file_function` that arrives as JavaScript's `undefined`."""
_IS_UNDEFINED = "(a !== null && typeof a === 'object' && a.__cigrade_undefined__ === true)"


def _commonjs(source: str) -> str:
    """Rewrite top-level ES `export` forms to CommonJS assignments (enough for config helpers)."""
    names: list[str] = []

    def named(match: re.Match[str]) -> str:
        names.append(match.group(2))
        return f"{match.group(1)}{match.group(2)}"

    source = re.sub(r"^export\s+default\s+", "module.exports.default = ", source, flags=re.M)
    source = re.sub(r"^export\s+((?:async\s+)?function\*?\s+|const\s+|let\s+|var\s+|class\s+)(\w+)", named, source, flags=re.M)
    exports = "".join(f"\nmodule.exports.{n} = {n};" for n in names)
    return source + exports


def _first_error_line(message: str) -> str:
    lines = [line for line in message.splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\b\w*Error\b", line):
            return line.strip()
    return lines[0].strip() if lines else "JavaScript error"
