"""Variables computed by scripts, run per row as promptfoo's `renderPrompt` runs them.

`file://vars.py` calls `get_var(var_name, prompt, other_vars)` (another function with
`file://vars.py:fn`) in a worker process (`ci_grade.workers`); it returns `{"output": text}` or `{"error": ...}`, and the text is
trimmed. `file://vars.js` calls the module's export (or `:fn`) as `(varName, prompt, otherVars)` in
the embedded V8, which has no Node.js modules or I/O. `prompt` is the prompt template before
rendering; `other_vars` are the row's variables so far (loaders run in variable order). A loader
that fails or returns nothing usable is a ScriptError: an ERROR for that row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.errors import ScriptError
from ci_grade.scripting import js
from ci_grade.workers import calls

DEFAULT_FUNCTION = "get_var"
_TYPESCRIPT = (".ts", ".cts", ".mts")


async def load(variables: dict[str, Any], names: tuple[str, ...], prompt: str, base_dir: Path) -> dict[str, Any]:
    """`variables` with each of `names` (a var loader reference) replaced by what its script returns."""
    out = dict(variables)
    for name in (k for k in variables if k in names):
        ref = out[name]
        try:
            out[name] = await _run(name, ref, prompt, out, base_dir)
        except ScriptError as exc:
            raise ScriptError(f"var {name!r} ({ref}): {exc}") from None
    return out


async def _run(name: str, ref: str, prompt: str, variables: dict[str, Any], base_dir: Path) -> Any:
    path_text, function = files.split_function(ref)
    path = files.resolve(path_text, base_dir)
    if path.suffix == ".py":
        result = await calls.call_file(path, function or DEFAULT_FUNCTION, [name, prompt, dict(variables)], base_dir=base_dir)
        output = _output(result)
        if not isinstance(output, str):
            raise ScriptError(f"the output must be text, got {type(output).__name__}")
        return output.strip()
    if path.suffix.lower() in _TYPESCRIPT:
        raise ScriptError("TypeScript var loaders cannot run in ci-grade (it runs JavaScript in an embedded V8 without Node.js)")
    try:
        result = await js.acall_js_file_function(path, function, [name, prompt, variables])
    except ScriptError as exc:
        raise ScriptError(f"{exc} (ci-grade runs JavaScript in an embedded V8 without Node.js modules or I/O)") from None
    return _output(result)


def _output(result: Any) -> Any:
    """promptfoo's reading of a loader's result: an `error` fails, an empty `output` fails."""
    if not isinstance(result, dict):
        raise ScriptError(f"expected {{output: ...}} or {{error: ...}}, got {type(result).__name__}")
    if result.get("error"):
        raise ScriptError(str(result["error"]))
    if not result.get("output"):
        raise ScriptError("returned no output")
    return result["output"]
