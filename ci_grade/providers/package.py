"""npm package providers (`package:NAME:Export`), run in Node.js as promptfoo loads them.

promptfoo resolves the package `NAME` from the config's folder (its `node_modules`, or a
parent's), imports its entry module, takes the export at the dotted path `Export` and makes it
as a file provider's class, `new Provider(options)`; every row then calls `callApi` as for
`file://provider.js` (`javascript.JavaScriptProvider`). A package that is not installed is found
before any call (`preflight_node`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from ci_grade.config.models import ProviderSpec
from ci_grade.providers.javascript import JavaScriptProvider
from ci_grade.workers import node

PREFIX = "package:"


def parse(provider_id: str) -> tuple[str, str] | None:
    """(package name, export path) of a `package:NAME:Export` id, or None for other ids."""
    if not provider_id.startswith(PREFIX):
        return None
    name, _, export = provider_id.removeprefix(PREFIX).partition(":")
    return name, export.partition(":")[0]


def check_id(provider_id: str) -> str | None:
    parsed = parse(provider_id)
    if parsed is None or not all(parsed):
        return "a package provider is written package:PACKAGE_NAME:ExportedProviderClass"
    return None


class PackageProvider(JavaScriptProvider):
    """Calls `callApi` of the provider class an installed npm package exports."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        name, export = parse(spec.id) or ("", "")
        super().__init__(spec, env, name, max_concurrency)
        self.export = export
        self._entry: Path | None = None

    async def entry(self) -> Path:
        if self._entry is None:
            self._entry = await asyncio.to_thread(node.resolve_package, self.path_text, self.base_dir or Path.cwd())
        return self._entry
