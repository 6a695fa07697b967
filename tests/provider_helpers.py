"""Helpers for provider tests: build a provider from an id or spec and call it on a fresh event loop."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.registry import as_spec, create_provider
from tests.conftest import run_cli, write

T = TypeVar("T")


def make(spec: Any, env: Mapping[str, str] | None = None, base_dir: Path | None = None, max_concurrency: int = 16) -> Provider:
    return create_provider(as_spec(spec), dict(os.environ) if env is None else env, max_concurrency, base_dir)


def use(spec: Any, action: Callable[[Provider], Awaitable[T]], env: Mapping[str, str] | None = None, base_dir: Path | None = None) -> T:
    """Run `action(provider)` on a new event loop, closing the provider's client afterwards."""

    async def go() -> T:
        provider = make(spec, env, base_dir)
        try:
            return await action(provider)
        finally:
            await provider.aclose()

    return asyncio.run(go())


def call(spec: Any, prompt: str = "hello", context: CallContext | None = None, env: Mapping[str, str] | None = None, base_dir: Path | None = None) -> ProviderResponse:
    return use(spec, lambda p: p.call(prompt, context), env, base_dir)


def eval_rows(tmp_path: Path, config: str) -> tuple[int, list[dict[str, Any]]]:
    """Run `ci-grade eval` on `config` in `tmp_path`; returns the exit code and the result rows."""
    write(tmp_path / "promptfooconfig.yaml", config)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code in (0, 1), result.err
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    return result.code, sorted(rows, key=lambda r: (r["testIdx"], r["promptIdx"], r["metadata"]["ciGrade"]["providerIndex"]))
