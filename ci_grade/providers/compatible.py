"""OpenAI-compatible families (`compatible_families.FAMILIES`) served by ci-grade's OpenAI provider.

An id such as `xai:grok-3`, `mistral:embedding:mistral-embed` or `openrouter:openai/gpt-4o` is
parsed as promptfoo parses it; the row gives the base URL and the key, and the call goes through
`openai_ids.create` with them (as promptfoo subclasses its OpenAI provider with `apiBaseUrl` and
`apiKeyEnvar`): same SDK client, retries, adaptive concurrency, response cache and sampling
defaults. The key is never another vendor's: unlike promptfoo, `OPENAI_API_KEY` is not sent to
these families unless the row names it (Envoy). `config.apiBaseUrl` / `config.apiHost` replace
the URL for every family. Cost comes from promptfoo's table for the family (`prices.json`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    EmbeddingResponse,
    Provider,
    ProviderResponse,
)
from ci_grade.providers.cache import ResponseCache
from ci_grade.providers.compatible_families import FAMILIES, Family
from ci_grade.providers.pricing import estimate_cost

PREFIXES: tuple[str, ...] = tuple(prefix for family in FAMILIES for prefix in family.prefixes)

# Config keys that configure ci-grade or promptfoo, never request fields (promptfoo's local options).
_SETTINGS = frozenset({
    "apiKey", "apiKeyEnvar", "apiKeyRequired", "apiBaseUrl", "apiHost", "headers", "passthrough", "cost", "inputCost",
    "outputCost", "cacheReadCost", "basePath", "organization", "timeout", "maxConcurrency", "showThinking", "omitDefaults",
    "isReasoningModel", "o1", "accountIdEnvar", "task", "transform", "delay", "responseParser", "functionToolCallbacks",
    "maxRetries", "mcp",
})


@dataclass(frozen=True)
class ParsedId:
    family: Family
    prefix: str
    kind: Literal["chat", "embedding"]
    model: str


def family_of(provider_id: str) -> tuple[Family, str] | None:
    """The row an id belongs to, and the prefix it was written with (longest first: `hf:chat`)."""
    matches = [(family, prefix) for family in FAMILIES for prefix in family.prefixes if provider_id.startswith(f"{prefix}:")]
    return max(matches, key=lambda match: len(match[1]), default=None)


def parse_id(provider_id: str, config: Mapping[str, Any]) -> ParsedId:
    """The family, kind of call and model an id names, as promptfoo reads it; UnknownProviderError
    for a kind ci-grade does not run or a missing model."""
    found = family_of(provider_id)
    if found is None:
        raise UnknownProviderError(f"unknown provider {provider_id!r}")
    family, prefix = found
    if family.retired:
        raise UnknownProviderError(f"{provider_id}: {family.retired}")
    rest = provider_id[len(prefix) + 1 :]
    parts = rest.split(":")
    first = parts[0]
    if first in family.refused:
        offered = "chat and embeddings" if family.embeddings else "chat"
        raise UnknownProviderError(f"{provider_id}: {prefix}:{first} is not supported by ci-grade ({prefix} {offered} are: {prefix}:<model>)")
    kind: Literal["chat", "embedding"] = "chat"
    model = rest
    if family.parse == "second":
        model = first
    elif family.parse in ("typed", "last"):
        if first == "chat" or (first in ("embedding", "embeddings") and family.embeddings):
            kind = "chat" if first == "chat" else "embedding"
            model = ":".join(parts[1:])
        elif family.parse == "last":
            model = ":".join(parts[1:]) or first
    task = config.get("task")
    if family.prefixes[0] == "truefoundry" and (task == "embedding" or (task is None and "embedding" in model.lower())):
        kind = "embedding"
    model = model or (family.embedding_model if kind == "embedding" else family.default_model) or ""
    if not model:
        raise UnknownProviderError(f"{provider_id}: name a model, e.g. {prefix}:<model>")
    return ParsedId(family, prefix, kind, model)


def check_id(provider_id: str) -> str | None:
    """Why this id cannot run (a kind ci-grade does not run, no model), or None."""
    try:
        parse_id(provider_id, {})
    except UnknownProviderError as exc:
        return str(exc)
    return None


def _kebab(name: str) -> str:
    return re.sub(r"([a-z])([A-Z])", r"\1-\2", name).lower()


def resolve_url(family: Family, config: Mapping[str, Any], env: Mapping[str, str], model: str) -> tuple[str | None, str]:
    """(base URL, "") or (None, what to set): config first, then the row's variables, then its template."""
    url: str | None = None
    if family.config_url and config.get("apiBaseUrl"):
        url = str(config["apiBaseUrl"])
    elif family.config_url and config.get("apiHost"):
        url = f"https://{config['apiHost']}/v1"
    url = url or next((env[var].rstrip("/") + family.url_suffix for var in family.url_vars if env.get(var)), None)
    url = url or next((f"https://{env[var]}/v1" for var in family.host_vars if env.get(var)), None)
    if url is None:
        template = next((t for key, t in family.alt_urls if config.get(key)), family.base_url)
        values = {"model": model, **{k: str(v) for k, v in config.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}}
        for param in family.params:
            value = (config.get(param.config_key) if param.config_key else None) or next((env[v] for v in param.env if env.get(v)), None)
            value = value or (param.default.format(model=model) if param.default else None)
            if value:
                values[param.name] = str(value).rstrip("/")
        missing = [p for p in family.params if f"{{{p.name}}}" in template and not values.get(p.name)]
        if missing:
            ways = [f"config.{p.config_key}" for p in missing if p.config_key] + [v for p in missing for v in p.env]
            return None, f"{family.docs} needs its endpoint: set {' or '.join(ways)}"
        url = template.format_map(values)
    url = url.rstrip("/").removesuffix("/chat/completions")
    if family.ensure_suffix and not url.endswith(family.ensure_suffix):
        url += family.ensure_suffix
    return url, ""


class CompatibleProvider(Provider):
    """One family's chat or embedding model, served by the OpenAI provider built for its endpoint."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], parsed: ParsedId, max_concurrency: int | None = None):
        self._cache: ResponseCache | None = None
        super().__init__(spec, env, max_concurrency)
        from ci_grade.providers import openai_ids

        self.parsed = parsed
        family = parsed.family
        url, self._problem = resolve_url(family, spec.config, env, parsed.model)
        config = self._inner_config(url or "http://127.0.0.1:9/v1")
        if not self._problem and not config.get("apiKey") and not self.api_key_value(config):
            names = " or ".join(family.keys) or "config.apiKey"
            self._problem = f"API key is not set: set {names} or config.apiKey for provider {spec.id}"
        kind = "chat" if parsed.kind == "chat" else "embedding"
        self.inner = openai_ids.create(ProviderSpec(id=f"openai:{kind}:{parsed.model}", config=config, label=spec.label), env, max_concurrency)
        self.inner.cache = self._cache
        self.limiter = self.inner.limiter

    @property
    def cache(self) -> ResponseCache | None:
        return self._cache

    @cache.setter
    def cache(self, value: ResponseCache | None) -> None:
        self._cache = value
        inner = self.__dict__.get("inner")
        if inner is not None:
            inner.cache = value

    def api_key_value(self, config: Mapping[str, Any]) -> str | None:
        if config.get("apiKeyEnvar"):
            return self.env.get(str(config["apiKeyEnvar"])) or None
        return None

    def _inner_config(self, url: str) -> dict[str, Any]:
        """The OpenAI provider's config: the user's, with the family's URL, key, body fields and headers."""
        family, user = self.parsed.family, self.spec.config
        header_keys = dict(family.header_keys)
        prefix, header_prefix = family.header_prefix or ("\0", "")
        headers = {str(k): str(v) for k, v in (user.get("headers") or {}).items()}
        for key, value in user.items():
            if value is None:
                continue
            name = header_keys.get(key) or (f"{header_prefix}{_kebab(key[len(prefix):])}" if key.startswith(prefix) and key != "portkeyApiBaseUrl" else None)
            if name:
                headers[name] = value if isinstance(value, str) else json.dumps(value)
        passthrough = dict(user.get("passthrough") or {})
        own = {p.config_key for p in family.params} | {k for k, _ in family.alt_urls} | set(header_keys)
        for key, field in family.body_keys:
            if user.get(key) is not None:
                passthrough.setdefault(field, user[key])
        if family.all_options:
            from ci_grade.providers.openai import CHAT_OPTIONS

            for key, value in user.items():
                if key not in _SETTINGS and key not in CHAT_OPTIONS and key not in own and not key.startswith(prefix):
                    passthrough.setdefault(key, value)
        config = {k: v for k, v in user.items() if k not in ("apiHost", "apiBaseUrl", "passthrough", "headers") and k not in header_keys}
        config["apiBaseUrl"] = url
        if passthrough:
            config["passthrough"] = passthrough
        if headers:
            config["headers"] = headers
        if family.omit_defaults:
            config.setdefault("omitDefaults", True)
        if not user.get("apiKey") and not user.get("apiKeyEnvar"):
            present = next((name for name in family.keys if self.env.get(name)), None)
            if present is not None:
                config["apiKeyEnvar"] = present
            elif family.default_key is not None:
                config["apiKey"] = family.default_key or "no-key"
        return config

    @property
    def model(self) -> str:
        return self.parsed.model

    def supports(self, kind: Capability) -> bool:
        return self.inner.supports(kind)

    def sibling(self, kind: Capability) -> ProviderSpec | None:
        """A chat grader of a family with a default embedding model also serves `similar`."""
        model = self.parsed.family.embedding_model
        if kind != "embedding" or model is None or self.parsed.kind != "chat":
            return None
        shared = {k: v for k, v in self.spec.config.items() if k in ("apiKey", "apiKeyEnvar", "apiBaseUrl", "apiHost", "timeout")}
        return ProviderSpec(id=f"{self.parsed.prefix}:embedding:{model}", config=shared)

    def _cost(self, prompt: int, completion: int, cached: int) -> float | None:
        return estimate_cost(self.parsed.model, self.spec.config, prompt, completion, family=self.parsed.family.prices, cached_tokens=cached)

    async def call(self, prompt: str, context: CallContext | None = None) -> ProviderResponse:
        if self._problem:
            return ProviderResponse(error=self._problem)
        response = await self.inner.call(prompt, context)
        if not response.error and not response.cached and self.parsed.family.prices != "openai":
            usage = response.token_usage
            response.cost = self._cost(usage.prompt, usage.completion, usage.cached)
        return response

    async def embed(self, text: str) -> EmbeddingResponse:
        if self._problem:
            return EmbeddingResponse(error=self._problem)
        response = await self.inner.embed(text)
        if not response.error and response.cost != 0.0 and self.parsed.family.prices != "openai":
            response.cost = self._cost(response.token_usage.prompt, 0, 0)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> Provider:
    """Build the provider an OpenAI-compatible family's id names."""
    return CompatibleProvider(spec, env, parse_id(spec.id, spec.config), max_concurrency)
