"""`functionToolCallbacks`: the user's code that answers an agent's function calls.

promptfoo's assistant providers take, per function name, a `file://path.js:fn` (or `.py`)
reference or inline JavaScript (`async function(args) {...}`). ci-grade runs a file in the worker
for its language (`workers.dispatch`: JavaScript in Node.js, as promptfoo) and inline code on V8.
The callback gets the arguments (the JSON text, or the parsed object where promptfoo parses it)
and a context (`threadId`, `runId`, `assistantId`, `provider`); an object it returns is sent as
JSON, anything else as text; a callback that throws answers `{"error": "Error in <name>: ..."}`,
so the run goes on, as promptfoo does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.errors import ScriptError


def callbacks_of(config: Mapping[str, Any]) -> dict[str, str]:
    """The configured callbacks by function name (each a `file://` reference or inline code)."""
    raw = config.get("functionToolCallbacks")
    return {str(name): str(code) for name, code in raw.items() if isinstance(code, str)} if isinstance(raw, dict) else {}


async def run_callback(name: str, code: str, args: Any, context: dict[str, Any], base_dir: Path | None) -> str:
    """The text a function call is answered with: what callback `code` returns for `args`."""
    try:
        if code.startswith("file://"):
            from ci_grade.workers import dispatch

            path_text, function = files.split_function(code)
            path = files.resolve(path_text, base_dir or Path.cwd())
            if not path.is_file():
                raise ScriptError(f"{files.display_path(path)} does not exist")
            result = await dispatch.call_file(path, function, [args, context], python_default=name, base_dir=base_dir)
        else:
            from ci_grade.scripting import js

            _, result = await js.arun_inline(f"return ({code.strip().rstrip(';')})(args, context);", ("args", "context"), [args, context])
    except ScriptError as exc:
        message = re.sub(r"^(promise rejected: |<anonymous>:\d+: (Error: )?)", "", str(exc).strip())
        return _stringify({"error": f"Error in {name}: {message}"})
    if result is None:
        return ""
    return _stringify(result) if isinstance(result, dict | list) else str(result)


def _stringify(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
