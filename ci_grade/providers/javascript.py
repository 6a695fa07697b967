"""JavaScript and TypeScript file providers (`file://provider.js`, `.mjs`, `.cjs`, `.ts`), run in Node.js.

As promptfoo loads them: the file's default export (or `module.exports`) is a class, made once per
worker as `new Provider({id, label, config: {...config, basePath}, env})`; each row calls
`callApi(prompt, {vars, prompt: {raw, label}}, {})` and awaits it (the context also has a
`logger`). It returns `{output, error, tokenUsage, cost, cached, metadata, ...}` as a Python
provider does. A throw is the row's error naming the file and line; a worker that exits, crashes
or takes longer than the provider's `timeout` (else CI_GRADE_CALL_TIMEOUT_SECONDS, else 120 s)
is that row's error naming why.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ScriptError
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.response_dict import response_from_dict
from ci_grade.providers.retry import call_timeout
from ci_grade.workers import node


class JavaScriptProvider(Provider):
    """Calls `callApi` of the provider class a user's JavaScript or TypeScript file exports."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], path: str, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.path_text = path

    def path(self) -> Path:
        return files.resolve(self.path_text, self.base_dir or Path.cwd()).resolve()

    def options(self) -> dict[str, Any]:
        """promptfoo's constructor options (`basePath` is the config's folder)."""
        options: dict[str, Any] = {"id": self.id, "config": {**self.spec.config, "basePath": str(self.base_dir or Path.cwd())}}
        if self.spec.label:
            options["label"] = self.spec.label
        if self.spec.env:
            options["env"] = self.spec.env
        return options

    export: str | None = None
    """The dotted path of the provider class among the file's exports (None: the default export)."""

    async def entry(self) -> Path:
        """The file to load (ScriptError when it cannot be found)."""
        return self.path()

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        call_context = {"vars": context.vars, "prompt": {"raw": context.prompt_raw, "label": context.prompt_label}}
        try:
            path = await self.entry()
            if not path.is_file():
                return ProviderResponse(error=f"provider file not found: {path}")
            result = await node.call_provider(path, self.options(), "callApi", [prompt, call_context, {}], timeout=call_timeout(self.spec.config), export=self.export)
        except ScriptError as exc:
            return ProviderResponse(error=str(exc))
        if not isinstance(result, dict):
            return ProviderResponse(error=f"callApi() in {self.path_text} must return an object with 'output' or 'error', got {type(result).__name__}")
        return response_from_dict(result, f"callApi() in {self.path_text}")
