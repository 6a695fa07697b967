"""The V8 isolate behind JavaScript from configs: one per process, on its own thread, in batches.

The isolate lives on a dedicated thread running its own asyncio loop, which mini-racer uses
to start work on V8 and to hear back (V8 work never runs on the run's event loop, so a slow
expression cannot stall other tests). Function calls are queued from any thread or loop and run
in batches: whatever is queued while one batch runs goes into the next, as one evaluation, so
a busy run pays one round trip per batch instead of one per call.

Every evaluation holds the isolate alone and runs under the time limit, and the isolate under a
memory limit, so a runaway expression fails its own call instead of hanging or exhausting the
run. A batch that a call ends early (it throws, times out or runs out of memory) keeps the
results of the calls before it; a call that throws gets the error it would get alone (V8's own
message); a call that hits a limit after others in its batch ran is run again alone, with the
whole time limit, before its error counts; the calls after it go on in the next batch.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import threading
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from ci_grade import settings
from ci_grade.errors import ScriptAborted, ScriptError

T = TypeVar("T")
Outcome = tuple[tuple[bool, Any], None] | tuple[None, ScriptError]
DEFAULT_TIMEOUT_MS = int(settings.number("CI_GRADE_JS_TIMEOUT_MS", 5000))
DEFAULT_MAX_MEMORY = int(settings.number("CI_GRADE_JS_MAX_MEMORY_MB", 256)) * 1024 * 1024
MAX_BATCH = 64
COLLECT_EVERY = 4096
"""Calls between full collections of the isolate's heap: V8 sizes its heap by its own limit (well
over a gigabyte) and lets garbage (every batch's source, payloads and results) pile up to it; a
collection of a heap that holds little but garbage takes a few milliseconds."""

_BOOTSTRAP = """
var process = { env: %s }, __cigrade_out = [], __cigrade_settled = [];
function __cigrade_call(name, args, i) {
  var result = globalThis[name].apply(null, args);
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    var settled = __cigrade_settled; settled[i] = null;
    result.then(
      function (v) { settled[i] = v === undefined ? '{}' : JSON.stringify({ v: v }); },
      function (e) { settled[i] = JSON.stringify({ rejected: String(e && e.message || e) }); });
    return '{"pending": true}';
  }
  if (result === undefined) return '{}';
  return JSON.stringify({ v: result });
}
function __cigrade_revive(key, value) {
  if (value === null || typeof value !== 'object') return value;
  if ('__cigrade_number__' in value) return Number(value.__cigrade_number__);
  if (!('__cigrade_method__' in value)) return value;
  var result = value.__cigrade_method__;
  return function () { return result; };
}
function __cigrade_batch(callsJson) {
  __cigrade_out = [];
  __cigrade_settled = [];
  var calls = callsJson.indexOf('"__cigrade_') < 0 ? JSON.parse(callsJson) : JSON.parse(callsJson, __cigrade_revive);
  for (var i = 0; i < calls.length; i++) __cigrade_out.push(__cigrade_call(calls[i][0], calls[i][1], i));
  return '[' + __cigrade_out.join(',') + ']';
}
"""
_DONE = "'[' + __cigrade_out.join(',') + ']'"
_SETTLED = "JSON.stringify(__cigrade_settled)"
_PENDING = {"pending": True}


class _Limit(ScriptAborted):
    """A call stopped by the time or memory limit (the batch's: it may not have had all of it)."""


@dataclass
class _Call:
    """One queued function call and where its result goes: an asyncio future on `loop`, or a
    concurrent future for a caller blocked on another thread."""

    name: str
    args_json: str
    future: asyncio.Future[tuple[bool, Any]] | Future[tuple[bool, Any]]
    loop: asyncio.AbstractEventLoop | None = None


class JsRuntime:
    """A V8 isolate that compiles each distinct function once and calls it with JSON arguments.

    The isolate is disposed of on its thread at interpreter exit (left to garbage collection,
    V8's teardown crashes the process)."""

    def __init__(self, timeout_ms: int = DEFAULT_TIMEOUT_MS, max_memory: int = DEFAULT_MAX_MEMORY):
        self._timeout = timeout_ms / 1000
        self._max_memory = max_memory
        self._collected = 0
        """`calls` at the last full collection."""
        self.collections = 0
        """Full collections of the heap so far (one every COLLECT_EVERY calls)."""
        self._functions: dict[tuple[tuple[str, ...], str], str] = {}
        self._pending: deque[_Call] = deque()
        self._lock = threading.Lock()
        self._draining = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ci-grade-js", daemon=True)
        self._thread.start()
        self._isolate: asyncio.Lock | None = None
        self.batches = 0
        """Batch evaluations so far (a call run again alone counts as a batch of one)."""
        self.calls = 0
        """Function calls evaluated so far, in those batches."""
        self._ctx: Any = self._run(self._start())

    # -- the isolate's thread ----------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the isolate's loop and wait for it (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _start(self) -> Any:
        from py_mini_racer import MiniRacer

        self._isolate = asyncio.Lock()
        ctx = MiniRacer()  # created on this loop, so mini-racer reports back to it
        ctx.set_hard_memory_limit(self._max_memory)
        self._ctx = ctx
        await self._eval_here(_BOOTSTRAP % json.dumps(dict(os.environ)))
        return ctx

    async def _eval_here(self, source: str) -> Any:
        """Evaluate `source` with the isolate to itself, under the time limit."""
        from py_mini_racer import JSEvalException, JSOOMException

        assert self._isolate is not None
        async with self._isolate:
            try:
                async with asyncio.timeout(self._timeout):
                    return await self._ctx.eval_cancelable(source)
            except TimeoutError:
                raise _Limit(f"timed out after {self._timeout:g}s") from None
            except JSOOMException:
                self._ctx.set_hard_memory_limit(self._max_memory)  # re-armed: else every later error reads as this one
                raise _Limit("ran out of memory") from None
            except JSEvalException as exc:
                raise ScriptError(first_error_line(str(exc))) from None

    async def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._draining = False
                    return
                batch = [self._pending.popleft() for _ in range(min(len(self._pending), MAX_BATCH))]
            try:
                outcomes = await self._run_batch(batch)
                if len(outcomes) != len(batch):
                    raise RuntimeError(f"{len(outcomes)} outcomes for {len(batch)} calls")
            except Exception as exc:  # never leave a caller waiting
                outcomes = [(None, ScriptError(f"{type(exc).__name__}: {exc}"))] * len(batch)
            _deliver(batch, outcomes)
            if self.calls >= self._collected + COLLECT_EVERY:
                await self._collect()

    async def _collect(self) -> None:
        """A full collection of the isolate's heap, between evaluations."""
        assert self._isolate is not None
        async with self._isolate:
            self._collected = self.calls
            self._ctx.low_memory_notification()
            self.collections += 1

    async def _run_batch(self, batch: list[_Call]) -> list[Outcome]:
        """Each call's (returned, value) or its error, in order (see the module's docstring)."""
        self.batches += 1
        self.calls += len(batch)
        payload = "[" + ",".join(f"[{json.dumps(c.name)},{c.args_json}]" for c in batch) + "]"
        failure: ScriptError | None = None
        try:
            raws: list[Any] = json.loads(await self._eval_here(f"__cigrade_batch({json.dumps(payload)})"))
        except ScriptError as exc:
            failure = exc
            done = await self._read(_DONE)
            if done is None:  # the isolate cannot say which calls ran: each runs again alone
                if len(batch) == 1:
                    return [(None, _fresh(exc))]
                return [outcome for call in batch for outcome in await self._run_batch([call])]
            raws = done
        settled = (await self._read(_SETTLED) or []) if _PENDING in raws else []  # microtasks ran when the batch returned
        outcomes: list[Outcome] = []
        for i, raw in enumerate(raws):
            if raw != _PENDING:
                outcomes.append((_decode(raw), None))
            elif (state := settled[i] if i < len(settled) else None) is None and failure is not None:
                outcomes += await self._run_batch([batch[i]])  # the batch's end may have cut its microtasks short
            else:
                outcomes.append(_settled(state))
        stopped = len(raws)
        if failure is None or stopped >= len(batch):
            return outcomes
        if isinstance(failure, _Limit) and stopped > 0:
            outcomes += await self._run_batch([batch[stopped]])  # it may not have had the whole time limit
        else:
            outcomes.append((None, _fresh(failure)))
        if stopped + 1 < len(batch):
            outcomes += await self._run_batch(batch[stopped + 1 :])
        return outcomes

    async def _read(self, source: str) -> Any:
        """A JSON value read back from the isolate, or None when it cannot answer."""
        try:
            return json.loads(await self._eval_here(source))
        except ScriptError:
            return None

    # -- callers -----------------------------------------------------------------------------------

    def _queue(self, call: _Call) -> None:
        with self._lock:
            self._pending.append(call)
            if self._draining:
                return
            self._draining = True
        self._loop.call_soon_threadsafe(_start_task, self._loop, self._drain())

    def eval(self, source: str) -> Any:
        """Evaluate `source` (a definition) and wait for its value."""
        return self._run(self._eval_here(source))

    def define(self, params: tuple[str, ...], body: str) -> str:
        """Compile `function(params) { body }` once; returns its global name."""
        name = self._functions.get((params, body))
        if name is None:
            name = self._define_as(params, body)
            self.eval(_definition(name, params, body))
            self._functions[(params, body)] = name
        return name

    async def adefine(self, params: tuple[str, ...], body: str) -> str:
        """`define` without blocking the event loop."""
        name = self._functions.get((params, body))
        if name is None:
            name = self._define_as(params, body)
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._eval_here(_definition(name, params, body)), self._loop))
            self._functions[(params, body)] = name
        return name

    def _define_as(self, params: tuple[str, ...], body: str) -> str:
        import hashlib

        key = hashlib.sha1(("\0".join(params) + "\0" + body).encode()).hexdigest()[:16]
        return f"__cigrade_fn_{key}"

    def define_module(self, source: str, filename: str) -> str:
        """Evaluate a CommonJS or simple ES module once; returns the global holding its exports."""
        import hashlib

        name = f"__cigrade_mod_{hashlib.sha1(source.encode()).hexdigest()[:16]}"
        if (("module",), name) not in self._functions:
            wrapped = (
                f"globalThis.{name} = (function() {{ var module = {{ exports: {{}} }}; var exports = module.exports;\n"
                f"{commonjs(source)}\n;return module.exports; }})();"
            )
            try:
                self.eval(wrapped)
            except ScriptError as exc:
                raise ScriptError(f"{filename}: {exc}") from None
            self._functions[(("module",), name)] = name
        return name

    def call(self, name: str, args: list[Any]) -> tuple[bool, Any]:
        """Call a defined function; returns (returned_something, value). Undefined -> (False, None).

        A returned promise is awaited: it settles in V8's microtask queue (there are no timers or I/O)."""
        future: Future[tuple[bool, Any]] = Future()
        self._queue(_Call(name, _args_json(args), future))
        return future.result()

    async def acall(self, name: str, args: list[Any]) -> tuple[bool, Any]:
        """`call` without blocking the event loop; calls queued together run in one batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        self._queue(_Call(name, _args_json(args), future, loop))
        return await future

    def close(self) -> None:
        """Dispose of the isolate on its thread and stop the thread."""

        async def dispose() -> None:
            assert self._isolate is not None
            async with self._isolate:
                self._ctx.close()

        self._run(dispose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


def _fresh(error: ScriptError) -> ScriptError:
    """A new error like `error` (a limit stays one), for a call of its own."""
    return (ScriptAborted if isinstance(error, ScriptAborted) else ScriptError)(str(error))


def _args_json(args: list[Any]) -> str:
    """Arguments as JSON for the isolate; NaN and infinities, which JSON has no words for, travel
    as markers that `__cigrade_revive` turns back into JavaScript's NaN and Infinity."""
    try:
        return json.dumps(args, default=str, allow_nan=False)
    except ValueError:
        return json.dumps(_mark_numbers(args), default=str, allow_nan=False)


def _mark_numbers(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"__cigrade_number__": "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"}
    if isinstance(value, dict):
        return {key: _mark_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_mark_numbers(item) for item in value]
    return value


def _start_task(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, None]) -> None:
    task = loop.create_task(coroutine)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)


_RUNNING: set[asyncio.Task[None]] = set()


def _deliver(batch: list[_Call], outcomes: list[Outcome]) -> None:
    """Hand each call its outcome: one wake-up per waiting event loop, not one per call."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[tuple[bool, Any]], Any, ScriptError | None]]] = {}
    for call, (value, error) in zip(batch, outcomes, strict=True):
        if call.loop is None:
            future = call.future
            assert isinstance(future, Future)
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)  # type: ignore[arg-type]
        else:
            assert isinstance(call.future, asyncio.Future)
            by_loop.setdefault(call.loop, []).append((call.future, value, error))
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle_all, settled)
        except RuntimeError:  # that loop has closed: nobody waits for these calls any more
            pass


def _settle_all(settled: list[tuple[asyncio.Future[tuple[bool, Any]], Any, ScriptError | None]]) -> None:
    for future, value, error in settled:
        if future.done():  # the caller was cancelled
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


def _settled(raw: str | None) -> Outcome:
    if raw is None:
        return (None, ScriptError("returned a promise that never settled (no timers or I/O are available)"))
    decoded: dict[str, Any] = json.loads(raw)
    if "rejected" in decoded:
        return (None, ScriptError(f"promise rejected: {decoded['rejected']}"))
    return (_decode(decoded), None)


def _decode(decoded: dict[str, Any]) -> tuple[bool, Any]:
    return ("v" in decoded, decoded.get("v"))


def _definition(name: str, params: tuple[str, ...], body: str) -> str:
    return f"globalThis.{name} = function({', '.join(params)}) {{\n{body}\n}};"


def commonjs(source: str) -> str:
    """Rewrite top-level ES `export` forms to CommonJS assignments (enough for config helpers)."""
    names: list[str] = []

    def named(match: re.Match[str]) -> str:
        names.append(match.group(2))
        return f"{match.group(1)}{match.group(2)}"

    source = re.sub(r"^export\s+default\s+", "module.exports.default = ", source, flags=re.M)
    source = re.sub(r"^export\s+((?:async\s+)?function\*?\s+|const\s+|let\s+|var\s+|class\s+)(\w+)", named, source, flags=re.M)
    exports = "".join(f"\nmodule.exports.{n} = {n};" for n in names)
    return source + exports


def first_error_line(message: str) -> str:
    """The line of V8's report that names the error (else its first line)."""
    lines = [line for line in message.splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\b\w*Error\b", line):
            return line.strip()
    return lines[0].strip() if lines else "JavaScript error"
