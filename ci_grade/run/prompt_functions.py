"""Python prompt functions, called per row as promptfoo calls them.

`file://prompts.py:fn` calls `fn(context)` and a whole `file://prompt.py` runs as a program with
the context as JSON in `sys.argv[1]` (its printed text is the prompt); the context is
`{vars, provider: {id, label}}`. A function returns the prompt text, chat messages (sent as
JSON), or `{prompt, config}` whose `config` is laid over the provider's config for that call.
The template it returns is then rendered with the row's variables, as any other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ScriptError
from ci_grade.js_values import js_json
from ci_grade.workers import calls


async def template(function: str, variables: dict[str, Any], provider: ProviderSpec, base_dir: Path) -> tuple[str, dict[str, Any] | None]:
    """The prompt template `function` makes for a row, and the provider config it asks for."""
    context = {"vars": variables, "provider": {"id": provider.id, "label": provider.label}}
    path_text, name = files.split_function(function)
    path = Path(path_text)
    if name is None:
        return await calls.call_script(path, [json.dumps(context, ensure_ascii=False)], base_dir=base_dir), None
    value = await calls.call_file(path, name, [context], base_dir=base_dir)
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and "prompt" in value:
        prompt, config = value["prompt"], value.get("config")
        if config is not None and not isinstance(config, dict):
            raise ScriptError(f"{name}() returned a config that is not a mapping: {type(config).__name__}")
        return (prompt if isinstance(prompt, str) else js_json(prompt)), config or None
    if isinstance(value, dict | list):
        return js_json(value), None
    raise ScriptError(f"{name}() must return text, chat messages or {{prompt, config}}, got {type(value).__name__}")
