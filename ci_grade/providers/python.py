"""Python functions as providers: `file://provider.py[:function]` and `python:provider.py[:function]`;
Ruby methods (`file://provider.rb[:method]`, `ruby:`; in a `ruby` process) and Go functions
(`file://provider.go[:Function]`, `golang:`; built once, `ci_grade.scripting.go`) the same way, as
promptfoo runs them.

The file (relative to the config's folder) runs in a worker process (`ci_grade.workers`), which
imports it once; the function (default `call_api`) is called as `fn(prompt, options, context)`
with `options = {id, label, config}` and `context = {vars, prompt: {raw, label}}`, and a
coroutine it returns is awaited. It returns a dict with `output` and/or `error`, optionally
`tokenUsage`, `cost`, `metadata`, `cached`, `finishReason`, `isRefusal` (snake_case works too).
An exception becomes an error naming the file and line it came from; a call that takes longer
than the provider's `timeout` (else CI_GRADE_CALL_TIMEOUT_SECONDS, else 120 s), or whose worker
exits or crashes, is an error naming why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ScriptError, UnknownProviderError
from ci_grade.providers import file_kinds
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.response_dict import response_from_dict
from ci_grade.providers.retry import call_timeout
from ci_grade.workers import calls

DEFAULT_FUNCTION = "call_api"


class PythonProvider(Provider):
    """Calls a function from a user's Python file for each prompt."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], path: str, function: str, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.path_text = path
        self.function = function

    def path(self) -> Path:
        return files.resolve(self.path_text, self.base_dir or Path.cwd()).resolve()

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        path = self.path()
        if not path.is_file():
            return ProviderResponse(error=f"provider file not found: {path}")
        options = {"id": self.id, "label": self.spec.label, "config": self.spec.config}
        call_context = {"vars": context.vars, "prompt": {"raw": context.prompt_raw, "label": context.prompt_label}, **context.trace_fields()}
        try:
            result = await self.invoke(path, [prompt, options, call_context])
        except ScriptError as exc:
            return ProviderResponse(error=str(exc))
        return self.to_response(result)

    async def invoke(self, path: Path, args: list[Any]) -> Any:
        """The function's result for `args` (ScriptError when it raises or its process fails)."""
        return await calls.call_file(path, self.function, args, base_dir=self.base_dir, timeout=call_timeout(self.spec.config))

    def to_response(self, result: Any) -> ProviderResponse:
        source = f"{self.function}() in {self.path_text}"
        if not isinstance(result, dict):
            return ProviderResponse(error=f"{source} must return a dict with 'output' or 'error', got {type(result).__name__}")
        return response_from_dict(result, source)


class RubyProvider(PythonProvider):
    """Calls a method from a user's Ruby file for each prompt, with a Python provider's arguments
    and reply (a Hash)."""

    async def invoke(self, path: Path, args: list[Any]) -> Any:
        from ci_grade.scripting import ruby

        return await ruby.call(path, self.function, args, timeout=call_timeout(self.spec.config))


class GoProvider(PythonProvider):
    """Calls a function from a user's Go package for each prompt, with a Python provider's
    arguments and reply (a map)."""

    _program: Path | None = None
    """The built program, found once per provider (the preflight built it)."""

    async def invoke(self, path: Path, args: list[Any]) -> Any:
        from ci_grade.scripting import go

        if self._program is None:
            toolchain = go.toolchain(self.spec.config)
            if toolchain is None:
                raise ScriptError(go.NO_TOOLCHAIN)
            self._program = await asyncio.to_thread(go.build, path, self.function, toolchain)
        return await go.call(self._program, args, timeout=call_timeout(self.spec.config))


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> Provider:
    """`file://x.py[:fn]` or `python:x.py[:fn]`; `file://x.rb[:fn]` (or `ruby:`) runs in Ruby,
    `file://x.go[:Fn]` (or `golang:`) in Go; `file://x.js` (or .mjs, .cjs, .ts, or such a path
    without `file://`, as promptfoo reads it) runs in Node.js. Other kinds are refused before any
    call (`preflight`)."""
    path, function = files.split_function(file_kinds.reference(spec.id))
    language = file_kinds.language(spec.id)
    if language == "node":
        from ci_grade.providers.javascript import JavaScriptProvider

        return JavaScriptProvider(spec, env, path, max_concurrency)
    if language == "ruby":
        return RubyProvider(spec, env, path, function or DEFAULT_FUNCTION, max_concurrency)
    if language == "go":
        from ci_grade.scripting.go import DEFAULT_FUNCTION as GO_DEFAULT

        return GoProvider(spec, env, path, function or GO_DEFAULT, max_concurrency)
    if language != "python":
        raise UnknownProviderError(f"provider {spec.id!r}: {file_kinds.UNSUPPORTED}")
    return PythonProvider(spec, env, path, function or DEFAULT_FUNCTION, max_concurrency)
