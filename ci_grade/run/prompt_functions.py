"""Prompt functions: a file's function makes each row's prompt, as promptfoo's `renderPrompt` calls it.

`prompts: [file://prompts.js:fn]` calls `fn({vars, provider: {id, label}, config})` (the prompt's
`config`, else `{}`) for every row, in a worker for the file's language (`workers.dispatch`). It
returns the prompt: text, or an object or array (chat messages), sent as JSON, or
`{prompt, config}` whose `prompt` is either. The prompt is then rendered as a template with the
row's variables, as promptfoo renders it. A function that throws or returns anything else is
that row's ERROR.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ci_grade.errors import ScriptError
from ci_grade.plan.build import PlannedRow
from ci_grade.workers import dispatch

PYTHON_DEFAULT = "get_prompt"


async def template(row: PlannedRow, base_dir: Path) -> str:
    """The template the row's prompt function returns (its test's prefix and suffix around it)."""
    assert row.prompt.function is not None
    file, _, function = row.prompt.function.rpartition(":")
    context = {"vars": row.vars, "provider": {"id": row.provider.id, "label": row.provider.label}, "config": row.prompt.config or {}}
    result = await dispatch.call_file(Path(file), function or None, [context], python_default=PYTHON_DEFAULT, base_dir=base_dir)
    options = row.test.options
    return (options.prefix or "") + _text(result) + (options.suffix or "")


def _text(result: Any) -> str:
    if isinstance(result, dict) and "prompt" in result:
        result = result["prompt"]
        if isinstance(result, str):
            return result
    if isinstance(result, str):
        return result
    if isinstance(result, dict | list):
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    raise ScriptError(f"a prompt function must return text or an object, got {'null' if result is None else type(result).__name__}")
