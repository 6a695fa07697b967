"""Calling user Python: a function of a file, or inline code, with JSON arguments, in a worker.

    value = await calls.call_file(path, "get_assert", [output, context], base_dir=config_folder)
    value = await calls.call_inline("len(output) > 3", ("output", "context"), [output, context])
    value = calls.call_file_sync(path, "generate_tests", [config])    # while loading a config

Arguments and return values are plain JSON data. The user's code raising, a missing function
or file, or a value that is not JSON data is a ScriptError whose message names the exception and
where it came from (`ValueError: bad (grader.py:12 in check)`); code that did not finish (it
exited, crashed, was killed, ran out of time or memory) is a ScriptAborted naming the cause. The
config's folder (`base_dir`) and the file's own folder are on the worker's sys.path. A call may
take `timeout` seconds (default CI_GRADE_CALL_TIMEOUT_SECONDS, else 120).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_grade import settings
from ci_grade.workers.pool import pool

DEFAULT_TIMEOUT_SECONDS = 120.0


async def call_file(path: Path, function: str, args: Sequence[Any], *, base_dir: Path | None = None, timeout: float | None = None) -> Any:
    """`function(*args)` from the Python file at `path`."""
    return await pool().acall(_file_request(path, function, args, base_dir), _timeout(timeout))


async def call_inline(code: str, params: tuple[str, ...], args: Sequence[Any], *, base_dir: Path | None = None, timeout: float | None = None) -> Any:
    """Inline code wrapped as promptfoo wraps it (`scripting.python.inline_source`), called with `args`."""
    request = {"code": code, "params": list(params), "args": list(args), "path": _folders(base_dir)}
    return await pool().acall(request, _timeout(timeout))


async def call_script(path: Path, argv: Sequence[str], *, base_dir: Path | None = None, timeout: float | None = None) -> str:
    """Run the Python file at `path` as a program with `argv`; what it printed."""
    request = {**_file_request(path, "", argv, base_dir), "script": True}
    return str(await pool().acall(request, _timeout(timeout)))


def call_file_sync(path: Path, function: str, args: Sequence[Any], *, base_dir: Path | None = None, timeout: float | None = None) -> Any:
    """`call_file` for callers outside an event loop (loading a config)."""
    return pool().call(_file_request(path, function, args, base_dir), _timeout(timeout))


def _file_request(path: Path, function: str, args: Sequence[Any], base_dir: Path | None) -> dict[str, Any]:
    return {"file": str(path if path.is_absolute() else Path.cwd() / path), "function": function, "args": list(args), "path": _folders(base_dir)}


def _folders(base_dir: Path | None) -> list[str]:
    return [str(base_dir)] if base_dir is not None else []


def _timeout(timeout: float | None) -> float:
    return timeout if timeout is not None else settings.number("CI_GRADE_CALL_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
