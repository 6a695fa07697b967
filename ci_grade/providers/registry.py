"""Provider ids -> provider classes, and a pool that shares one instance per configuration.

Families are imported on first use so that `ci-grade --version` and echo-only runs stay fast.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import Provider
from ci_grade.providers.cache import ResponseCache

# (prefix, module, attribute): the first matching prefix wins.
_FAMILIES: list[tuple[str, str, str]] = [
    ("echo", "ci_grade.providers.echo", "EchoProvider"),
    ("openai:", "ci_grade.providers.openai", "create"),
    ("azureopenai:", "ci_grade.providers.azure", "create"),
    ("azure:", "ci_grade.providers.azure", "create"),
    ("anthropic:", "ci_grade.providers.anthropic", "create"),
    ("ollama:", "ci_grade.providers.ollama", "create"),
    ("huggingface:", "ci_grade.providers.huggingface", "create"),
    ("hf:", "ci_grade.providers.huggingface", "create"),
    ("http://", "ci_grade.providers.http", "HttpProvider"),
    ("https://", "ci_grade.providers.http", "HttpProvider"),
    ("http", "ci_grade.providers.http", "HttpProvider"),
    ("https", "ci_grade.providers.http", "HttpProvider"),
    ("exec:", "ci_grade.providers.exec", "ExecProvider"),
    ("file://", "ci_grade.providers.python", "create"),
    ("python:", "ci_grade.providers.python", "create"),
]

SUPPORTED_PREFIXES = sorted({prefix.rstrip(":/") for prefix, _, _ in _FAMILIES})


def _family(provider_id: str) -> tuple[str, str] | None:
    for prefix, module, attribute in _FAMILIES:
        if prefix in ("echo", "http", "https"):
            if provider_id == prefix:
                return module, attribute
            continue
        if provider_id.startswith(prefix):
            return module, attribute
    return None


def is_known(provider_id: str) -> bool:
    return _family(provider_id) is not None


def create_provider(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int = 16, base_dir: Path | None = None) -> Provider:
    """Build the provider `spec.id` names (raises UnknownProviderError for unknown ids).

    `base_dir` is the config's folder: relative paths in the id or config (a Python file, a
    script, a transform) resolve against it.
    """
    family = _family(spec.id)
    if family is None:
        raise UnknownProviderError(
            f"unknown provider {spec.id!r}; ci-grade supports: {', '.join(SUPPORTED_PREFIXES)}"
        )
    module_name, attribute = family
    factory: Any = getattr(importlib.import_module(module_name), attribute)
    provider: Provider = factory(spec, env, max_concurrency=max_concurrency) if isinstance(factory, type) else factory(spec, env, max_concurrency)
    provider.base_dir = base_dir
    return provider


def as_spec(value: Any) -> ProviderSpec:
    """A provider reference (a string id or an {id, config} mapping) as a ProviderSpec."""
    if isinstance(value, ProviderSpec):
        return value
    if isinstance(value, str):
        return ProviderSpec(id=value)
    if isinstance(value, dict):
        return ProviderSpec.model_validate(value)
    raise ValueError(f"a provider must be a string id or a mapping with an id, got {type(value).__name__}")


class ProviderPool:
    """One provider instance (and so one HTTP client) per distinct configuration, per run."""

    def __init__(self, env: Mapping[str, str], max_concurrency: int = 16, base_dir: Path | None = None, cache: ResponseCache | None = None):
        self.env = env
        self.max_concurrency = max_concurrency
        self.base_dir = base_dir
        self.cache = cache
        self._providers: dict[str, Provider] = {}

    def get(self, spec: ProviderSpec) -> Provider:
        key = json.dumps(spec.model_dump(exclude={"label", "prompts"}), sort_keys=True, default=str)
        provider = self._providers.get(key)
        if provider is None:
            provider = create_provider(spec, self.env, self.max_concurrency, self.base_dir)
            provider.cache = self.cache
            self._providers[key] = provider
        return provider

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
        self._providers.clear()
