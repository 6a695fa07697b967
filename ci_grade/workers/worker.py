"""The program a worker process runs: read a call, run the user's function, answer; until EOF.

The requests come on the stdin it was started with and the answers go to its original stdout;
both are moved to other descriptors first, so the user's `print` goes to stderr and `input()`
reads nothing. A request names a function of a file (`file`, `function`), a whole file run as a script
(`file`, `script`: its `args` are the command line, its printed text the value) or inline code
(`code`, `params`), its `args`, and, when they changed since the last call, the process environment
(`env`), working folder (`cwd`) and folders to import from (`path`). The answer is `{"value": ...}`,
`{"error": text}` (the code raised, or returned what is not JSON data) or `{"abort": text}` (it
called sys.exit or ran out of memory: the row is an ERROR, not a graded failure). A coroutine
is awaited on the worker's own event loop.
"""

from __future__ import annotations

import functools
import inspect
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ci_grade.errors import ScriptError
from ci_grade.scripting import python
from ci_grade.workers import protocol

_inline: dict[tuple[str, tuple[str, ...]], Callable[..., Any]] = {}
_event_loop: Any = None


def main() -> None:
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # `-c` put the working folder first; the parent's imports do not have it
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ci-grade decides when its workers stop
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(2, 1)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    _limit_memory(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    serve(requests, replies)


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    while (request := protocol.read(requests)) is not None:
        reply = answer(request)
        try:
            frame = protocol.encode(reply)
        except (TypeError, ValueError, OverflowError) as exc:
            who = f"{request['function']}() in {Path(request['file']).name}" if "file" in request else "the code"
            frame = protocol.encode({"error": f"{who} returned a value that is not JSON data: {exc}"})
        replies.write(frame)
        replies.flush()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request (after an `abort`, ci-grade replaces this worker)."""
    if "env" in request:
        os.environ.clear()
        os.environ.update(request["env"])
    if "cwd" in request:
        os.chdir(request["cwd"])
    for folder in request.get("path", ()):
        if folder not in sys.path:
            sys.path.append(folder)
    file = Path(request["file"]) if "file" in request else None
    stage = f"importing {file.name}" if file else "compiling the code"
    try:
        if file and request.get("script"):
            function: Callable[..., Any] = functools.partial(_script, file)
        else:
            function = python.load_function(file, request["function"]) if file else _compiled(request["code"], tuple(request["params"]))
        stage = ("running the script" if request.get("script") else f"in {request['function']}()") if file else "running the code"
        value = function(*request["args"])
        if inspect.isawaitable(value):
            value = _loop().run_until_complete(_awaited(value))
        return {"value": value}
    except SystemExit as exc:
        return {"abort": f"called sys.exit({exc.code!r}) {stage}"}
    except MemoryError:
        return {"abort": f"ran out of memory {stage}"}
    except ScriptError as exc:
        return {"error": str(exc)}
    except BaseException as exc:  # KeyboardInterrupt and the like, raised by the user's code
        return {"error": python.describe(exc, file)}


def _script(file: Path, *argv: Any) -> str:
    return python.run_script(file, [str(arg) for arg in argv])


def _compiled(code: str, params: tuple[str, ...]) -> Callable[..., Any]:
    function = _inline.get((code, params))
    if function is None:
        function = _inline[(code, params)] = python.compile_inline(code, params)
    return function


def _loop() -> Any:
    """The worker's event loop, made on the first coroutine (asyncio is slow to import)."""
    global _event_loop
    if _event_loop is None:
        import asyncio

        _event_loop = asyncio.new_event_loop()
    return _event_loop


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


if __name__ == "__main__":
    main()
