"""Provider ids -> provider classes, and a pool that shares one instance per configuration.

Families are imported on first use so that `ci-grade --version` and echo-only runs stay fast.
A family module may define `check_id(provider_id) -> str | None`: the reason it cannot serve an id
its prefix takes (`google:live:...`, `azure:assistant:...`), asked before any model is called
(`id_problem`) and without building a client; likewise `check_spec(spec) -> str | None`: what in a
provider's settings it cannot run (`spec_problem`; `check_spec(spec, env)` for a family whose
settings may come from the environment), `spec_warnings(spec) -> list[str]`: settings it takes
but ignores (`spec_warnings`), and `node_scripts(config)` for the JavaScript files its config
runs in Node.js (checked with the config's others).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import Provider
from ci_grade.providers.budget import Budget
from ci_grade.providers.cache import ResponseCache
from ci_grade.providers.compatible import PREFIXES as COMPATIBLE_PREFIXES
from ci_grade.providers.file_kinds import LANGUAGE_PREFIXES, reference

# (prefix, module, attribute): the first matching prefix wins; a prefix not ending in `:` or `/`
# is a whole id (`echo`, `http`, `llama`).
_FAMILIES: list[tuple[str, str, str]] = [
    ("echo", "ci_grade.providers.echo", "EchoProvider"),
    ("openai:assistant:", "ci_grade.providers.assistants", "create"),
    ("azure:assistant:", "ci_grade.providers.assistants", "create"),
    ("azureopenai:assistant:", "ci_grade.providers.assistants", "create"),
    ("openai:", "ci_grade.providers.openai_ids", "create"),
    ("azure:foundry-agent:", "ci_grade.providers.azure_foundry", "create"),
    ("azureopenai:foundry-agent:", "ci_grade.providers.azure_foundry", "create"),
    ("azureopenai:", "ci_grade.providers.azure", "create"),
    ("azure:", "ci_grade.providers.azure", "create"),
    ("anthropic:", "ci_grade.providers.anthropic", "create"),
    ("ollama:", "ci_grade.providers.ollama", "create"),
    ("xai:image:", "ci_grade.providers.xai_image", "create"),
    ("hyperbolic:image:", "ci_grade.providers.hyperbolic_media", "create_image"),
    ("hyperbolic:audio:", "ci_grade.providers.hyperbolic_media", "create_audio"),
    *sorted(((f"{p}:", "ci_grade.providers.compatible", "create") for p in COMPATIBLE_PREFIXES), key=lambda row: -len(row[0])),
    ("huggingface:", "ci_grade.providers.huggingface", "create"),
    ("cohere:", "ci_grade.providers.cohere", "create"),
    ("voyage:", "ci_grade.providers.voyage", "create"),
    ("replicate:image:", "ci_grade.providers.replicate_image", "create"),
    ("replicate:", "ci_grade.providers.replicate", "create"),
    ("watsonx:", "ci_grade.providers.watsonx", "create"),
    ("hf:", "ci_grade.providers.huggingface", "create"),
    ("google:image:", "ci_grade.providers.google.imagen", "create"),
    ("google:", "ci_grade.providers.google.ai_studio", "create"),
    ("vertex:", "ci_grade.providers.google.vertex", "create"),
    ("http://", "ci_grade.providers.http", "HttpProvider"),
    ("https://", "ci_grade.providers.http", "HttpProvider"),
    ("http", "ci_grade.providers.http", "HttpProvider"),
    ("https", "ci_grade.providers.http", "HttpProvider"),
    ("exec:", "ci_grade.providers.exec", "ExecProvider"),
    ("webhook:", "ci_grade.providers.webhook", "create"),
    ("file://", "ci_grade.providers.python", "create"),
    *((prefix, "ci_grade.providers.python", "create") for prefix in LANGUAGE_PREFIXES),
    *((f"bedrock:{kind}:", "ci_grade.providers.bedrock_agents", "create") for kind in ("agents", "kb", "knowledge-base")),
    ("bedrock:", "ci_grade.providers.bedrock", "create"),
    ("bedrock-agent:", "ci_grade.providers.bedrock_agents", "create"),
    ("sagemaker:", "ci_grade.providers.sagemaker", "create"),
    ("ws://", "ci_grade.providers.websocket", "WebSocketProvider"),
    ("wss://", "ci_grade.providers.websocket", "WebSocketProvider"),
    ("adaline:", "ci_grade.providers.adaline", "create"),
    ("llama", "ci_grade.providers.llama", "create"),
    ("llama:", "ci_grade.providers.llama", "create"),
    ("fal:", "ci_grade.providers.fal", "create"),
    ("package:", "ci_grade.providers.package", "PackageProvider"),
    ("mcp", "ci_grade.providers.mcp", "McpProvider"),
    ("browser", "ci_grade.providers.browser", "BrowserProvider"),
]

SUPPORTED_PREFIXES = sorted({prefix.rstrip(":/") for prefix, _, _ in _FAMILIES})


_SCRIPT_PATH = re.compile(r"\.(js|cjs|mjs|ts|cts|mts)$", re.I)
"""promptfoo loads an id that is a JavaScript or TypeScript path as a file provider, `file://` or not."""


def _family(provider_id: str) -> tuple[str, str] | None:
    for prefix, module, attribute in _FAMILIES:
        if not prefix.endswith((":", "/")):
            if provider_id == prefix:
                return module, attribute
            continue
        if provider_id.startswith(prefix):
            return module, attribute
    if _SCRIPT_PATH.search(provider_id):
        return _family("file://")
    return None


def file_provider_path(provider_id: str) -> str | None:
    """The file a file provider id names (`file://x.py:fn`, `python:x.py`, `golang:x.go`, or a
    JavaScript path written without `file://`, such as `./provider.js`), None for other ids."""
    if _family(provider_id) != _family("file://"):
        return None
    return files.split_function(reference(provider_id))[0]


def is_known(provider_id: str) -> bool:
    return _family(provider_id) is not None


def id_problem(provider_id: str) -> str | None:
    """Why a family that takes this id's prefix cannot run it (a kind of call it does not offer,
    no model), from the family module's `check_id`; None when it can, or the prefix is unknown."""
    family = _family(provider_id)
    check = getattr(importlib.import_module(family[0]), "check_id", None) if family is not None else None
    return check(provider_id) if check is not None else None


def spec_problem(spec: ProviderSpec, env: Mapping[str, str] | None = None) -> str | None:
    """Why the family cannot run this provider's settings (a config key it does not offer, a
    required one missing), from the family module's `check_spec`; None when it can. A
    `check_spec(spec, env)` gets the provider's environment (the run's `env`, else the process's)."""
    family = _family(spec.id)
    check = getattr(importlib.import_module(family[0]), "check_spec", None) if family is not None else None
    if check is None:
        return None
    if len(inspect.signature(check).parameters) > 1:
        from ci_grade.config.env_templates import provider_env

        return cast("str | None", check(spec, provider_env(spec, os.environ if env is None else env)))
    return cast("str | None", check(spec))


def spec_warnings(spec: ProviderSpec) -> list[str]:
    """Settings the family takes but ignores (a family module's `spec_warnings(spec)`), one line each."""
    family = _family(spec.id)
    warn = getattr(importlib.import_module(family[0]), "spec_warnings", None) if family is not None else None
    return list(warn(spec)) if warn is not None else []


def node_scripts(spec: ProviderSpec) -> list[str]:
    """The JavaScript files a provider's config runs in Node.js (a family module's `node_scripts(config)`)."""
    family = _family(spec.id)
    scripts = getattr(importlib.import_module(family[0]), "node_scripts", None) if family is not None else None
    return list(scripts(spec.config)) if scripts is not None else []


def create_provider(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None, base_dir: Path | None = None) -> Provider:
    """Build the provider `spec.id` names (raises UnknownProviderError for unknown ids).

    `max_concurrency` is the run's explicit cap on calls in flight (None: adaptive, see `limiter`).

    `base_dir` is the config's folder: relative paths in the id or config (a Python file, a
    script, a transform) resolve against it.
    """
    from ci_grade.config.env_templates import provider_env, render_spec

    env = provider_env(spec, env)
    spec = render_spec(spec, env)
    family = _family(spec.id)
    if family is None:
        raise UnknownProviderError(
            f"unknown provider {spec.id!r}; ci-grade supports: {', '.join(SUPPORTED_PREFIXES)}"
        )
    module_name, attribute = family
    if problem := id_problem(spec.id):
        raise UnknownProviderError(f"{spec.id}: {problem}")
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

    def __init__(self, env: Mapping[str, str], max_concurrency: int | None = None, base_dir: Path | None = None, cache: ResponseCache | None = None, budget: Budget | None = None):
        self.env = env
        self.budget = budget
        self.max_concurrency = max_concurrency
        self.base_dir = base_dir
        self.cache = cache
        self._providers: dict[str, Provider] = {}
        self._by_spec: dict[int, tuple[ProviderSpec, Provider]] = {}

    def get(self, spec: ProviderSpec) -> Provider:
        known = self._by_spec.get(id(spec))
        if known is not None and known[0] is spec:  # rows share their spec: skip building the key
            return known[1]
        key = json.dumps(spec.model_dump(exclude={"label", "prompts"}), sort_keys=True, default=str)
        provider = self._providers.get(key)
        if provider is None:
            provider = create_provider(spec, self.env, self.max_concurrency, self.base_dir)
            provider.cache = self.cache
            provider.budget = self.budget
            self._providers[key] = provider
        if len(self._by_spec) >= 256:  # specs made per row (a test's own provider) are not kept
            self._by_spec.clear()
        self._by_spec[id(spec)] = (spec, provider)
        return provider

    def slowed_down(self) -> list[str]:
        """A line per provider whose replies cut its concurrency (429s or `Retry-After`)."""
        return [
            f"{p.id} asked to slow down (HTTP 429 or Retry-After): concurrent calls cut {p.limiter.cuts} time(s), "
            f"to {int(p.limiter.lowest)} at the lowest; {int(p.limiter.limit)} at the end of the run"
            for p in self._providers.values()
            if p.limiter.cuts
        ]

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
        self._providers.clear()
        self._by_spec.clear()
