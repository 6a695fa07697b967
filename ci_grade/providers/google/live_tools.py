"""Local answers to a Live session's function calls, as promptfoo gives them.

`config.functionToolCallbacks` maps a function name to code that gets the call's arguments as a
JSON string: `file://path.js:fn` or `file://path.py:fn` (run in the worker for its language), or an
inline JavaScript function (`(args) => ...`). Without a callback, `config.functionToolStatefulApi`
(`{url, file?, pythonExecutable?}`) answers: a GET of `<url>/<function>` with the arguments as
query parameters, else a POST of them as JSON; `file` is a Python script started before the
session (and stopped after it) that serves that URL, and `<url>/get_state` is read at the end as
the output's `statefulApiState`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from ci_grade.config import files
from ci_grade.errors import ProviderError, ScriptAborted, ScriptError

STARTUP_SECONDS = 10.0
"""How long a stateful API's script may take to answer its first request."""


def stateful_api(config: Mapping[str, Any]) -> dict[str, Any] | None:
    value = config.get("functionToolStatefulApi")
    return value if isinstance(value, dict) else None


def script_path(reference: str, base_dir: Path | None) -> Path:
    """The stateful API's script (`file://` optional), relative to the config's folder."""
    return files.resolve(reference.removeprefix("file://"), base_dir or Path.cwd())


async def run_callback(callback: Any, arguments: str, base_dir: Path | None) -> Any:
    """A `functionToolCallbacks` entry called with the arguments' JSON text."""
    if not isinstance(callback, str) or not callback.strip():
        raise ProviderError(f"a function callback must be file://path:function or JavaScript code, got {callback!r}")
    if callback.startswith("file://"):
        from ci_grade.workers import dispatch

        path_text, function = files.split_function(callback)
        path = files.resolve(path_text, base_dir or Path.cwd())
        return await dispatch.call_file(path, function, [arguments], python_default=function or "call", base_dir=base_dir)
    from ci_grade.scripting import js

    _, value = await js.arun_inline(f"return ({callback})(args);", ("args",), [arguments])
    return value


async def answer(name: str, args: Any, config: Mapping[str, Any], base_dir: Path | None, http: Any) -> dict[str, Any]:
    """The `response` for one function call: the callback's or stateful API's value ({} without
    either); a failure is `{"error": ...}` for the model to read, as promptfoo sends it."""
    callbacks = config.get("functionToolCallbacks")
    api = stateful_api(config)
    try:
        if isinstance(callbacks, dict) and name in callbacks:
            value = await run_callback(callbacks[name], json.dumps(args or {}), base_dir)
        elif api is not None and http is not None:
            value = await _get_then_post(http, urljoin(str(api.get("url", "")), name), args or {})
        else:
            return {}
    except (ProviderError, ScriptError, ScriptAborted, OSError, ValueError) as exc:
        return {"error": f"Error executing function {name}: {exc}"}
    return value if isinstance(value, dict) else {"result": value}


async def _get_then_post(http: Any, url: str, args: dict[str, Any]) -> Any:
    import httpx

    try:
        reply = await http.get(url, params={k: str(v) for k, v in args.items()})
        reply.raise_for_status()
    except httpx.HTTPError:
        reply = await http.post(url, json=args)
        reply.raise_for_status()
    return reply.json()


async def final_state(http: Any, config: Mapping[str, Any]) -> Any:
    """`<url>/get_state`, or None when the API has none."""
    import httpx

    api = stateful_api(config) or {}
    try:
        reply = await http.get(urljoin(str(api.get("url", "")), "get_state"))
        reply.raise_for_status()
        return reply.json()
    except (httpx.HTTPError, ValueError):
        return None


@contextlib.asynccontextmanager
async def serving(config: Mapping[str, Any], env: Mapping[str, str], base_dir: Path | None) -> AsyncIterator[Any]:
    """An HTTP client for the stateful API, with its script running (when it names one) until the end."""
    import httpx

    api = stateful_api(config)
    async with httpx.AsyncClient(timeout=30) as http:
        if api is None or not api.get("file"):
            yield http
            return
        script = script_path(str(api["file"]), base_dir)
        python = str(api.get("pythonExecutable") or env.get("PROMPTFOO_PYTHON") or sys.executable)
        process = await asyncio.create_subprocess_exec(
            python, str(script), cwd=str(script.parent), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        try:
            await _wait_until_up(http, str(api.get("url", "")), process)
            yield http
        finally:
            if process.returncode is None:
                process.terminate()
                with contextlib.suppress(ProcessLookupError):
                    await asyncio.wait_for(process.wait(), 5)


async def _wait_until_up(http: Any, url: str, process: asyncio.subprocess.Process) -> None:
    import httpx

    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_SECONDS
    while loop.time() < deadline:
        if process.returncode is not None:
            err = (await process.stderr.read()).decode(errors="replace").strip().splitlines() if process.stderr else []
            raise ProviderError(f"the stateful API script exited with code {process.returncode}: {err[-1] if err else 'no output'}")
        try:
            await http.get(url)
            return
        except httpx.TransportError:
            await asyncio.sleep(0.05)
    raise ProviderError(f"the stateful API script did not answer at {url} within {STARTUP_SECONDS:g}s")
