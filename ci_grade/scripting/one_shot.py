"""One run of a program that writes its answer to a JSON file (`{"data": ...}` or `{"error": ...}`),
within the call's time limit: the runners of Ruby scripts and Go providers."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_grade import settings
from ci_grade.errors import ScriptAborted, ScriptError
from ci_grade.workers.calls import DEFAULT_TIMEOUT_SECONDS


async def run(argv: Sequence[str], result: Path, *, what: str, timeout: float | None, stdin: bytes | None = None, cwd: Path | None = None) -> tuple[Any, list[str], int]:
    """Run `argv` once (killed past `timeout`, else CI_GRADE_CALL_TIMEOUT_SECONDS: ScriptAborted
    naming `what`): the JSON it wrote to `result` (None when it wrote nothing), the non-blank lines
    of its stderr, and its exit status. What it prints on stdout is not read."""
    limit = timeout if timeout is not None else settings.number("CI_GRADE_CALL_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd,
    )  # fmt: skip
    try:
        _, stderr = await asyncio.wait_for(process.communicate(stdin), limit)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise ScriptAborted(f"{what} did not finish within {limit:g} s") from None
    text = result.read_text(encoding="utf-8") if result.is_file() else ""
    problem = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return (json.loads(text) if text else None), problem, int(process.returncode or 0)


def data(reply: dict[str, Any]) -> Any:
    """The answer's data; its error as a ScriptError."""
    if "error" in reply:
        raise ScriptError(str(reply["error"]))
    return reply.get("data")
