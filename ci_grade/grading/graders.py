"""Which provider grades an assertion.

Order: the assertion's `provider` > the test's `options.provider` > `--grader` (which replaces
`defaultTest.options.provider`, as in promptfoo) > `defaultTest.options.provider` > a default
chosen from the environment. A provider is a string id, an `{id, config}` mapping, a `{config}`
mapping (the default grader with those settings), or a map by kind (`{text, embedding,
classification, moderation}`); one provider given alone serves every
kind an assertion needs. With nothing available the assertion is an ERROR that says what to set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import GraderError, UnknownProviderError
from ci_grade.providers.base import Capability, Provider
from ci_grade.providers.registry import ProviderPool, as_spec

KINDS: tuple[Capability, ...] = ("text", "embedding", "classification", "moderation")

# promptfoo 0.123.1's default graders (src/providers/defaults.ts and each family's defaults).
DEFAULT_OPENAI_TEXT = "openai:chat:gpt-5.6-sol"
DEFAULT_OPENAI_EMBEDDING = "openai:embedding:text-embedding-3-large"
DEFAULT_OPENAI_MODERATION = "openai:moderation:omni-moderation-latest"
DEFAULT_ANTHROPIC_TEXT = "anthropic:messages:claude-sonnet-4-6"
DEFAULT_GEMINI_TEXT = "google:gemini-3.8-flash"
DEFAULT_GEMINI_EMBEDDING = "google:embedding:gemini-embedding-001"
DEFAULT_VERTEX_TEXT = "vertex:gemini-3.8-flash"
DEFAULT_VERTEX_EMBEDDING = "vertex:embedding:gemini-embedding-001"
DEFAULT_MISTRAL_TEXT = "mistral:mistral-large-latest"
DEFAULT_MISTRAL_EMBEDDING = "mistral:embedding:mistral-embed"
DEFAULT_VOYAGE_EMBEDDING = "voyage:voyage-3.5"
DEFAULT_XAI_TEXT = "xai:grok-4.3"
DEFAULT_OLLAMA_TEXT = "ollama:chat:llama3.1"
DEFAULT_OLLAMA_EMBEDDING = "ollama:embedding:nomic-embed-text"
DEFAULT_OPENAI_SEARCH = ProviderSpec(id="openai:responses:gpt-5.6-terra", config={"tools": [{"type": "web_search_preview"}]})
DEFAULT_ANTHROPIC_SEARCH = ProviderSpec(
    id=DEFAULT_ANTHROPIC_TEXT, config={"tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]}
)
GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PALM_API_KEY")

_HOW_TO = (
    "set OPENAI_API_KEY (or ANTHROPIC_API_KEY, the Azure OpenAI variables, GEMINI_API_KEY, Google Application Default "
    "Credentials, MISTRAL_API_KEY, XAI_API_KEY or OLLAMA_BASE_URL), pass --grader, or set defaultTest.options.provider"
)
_HOW_TO_KIND = {  # what can serve the kinds only some vendors serve
    "embedding": (
        "set OPENAI_API_KEY (or, for Azure OpenAI, AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME with its variables; GEMINI_API_KEY; "
        "MISTRAL_API_KEY; VOYAGE_API_KEY; or OLLAMA_BASE_URL), or give an embedding provider: options.provider: {text: ..., embedding: ...}"
    ),
    "moderation": "set OPENAI_API_KEY, or give a moderation provider: options.provider: {text: ..., moderation: ...}",
}


def no_default(kind: Capability, check: str) -> str:
    """What to say when no grader serves `kind` for the assertion type `check`: what would."""
    if kind == "classification":
        return f"{check} needs a classification provider (e.g. huggingface:text-classification:<model>) in provider or options.provider"
    return f"no {kind} grader available for {check}: {_HOW_TO_KIND.get(kind, _HOW_TO)}"


def is_kind_map(ref: Any) -> bool:
    return isinstance(ref, dict) and "id" not in ref and bool(set(ref) & set(KINDS))


def is_settings_only(ref: Any) -> bool:
    """`{config: {...}}` with no id: the default grader for the kind, with those settings
    (promptfoo 0.123.1 fails every graded row on it: "Invalid provider definition")."""
    return isinstance(ref, dict) and "id" not in ref and "config" in ref and not is_kind_map(ref)


def has_web_search(spec: ProviderSpec) -> bool:
    """Whether a provider as configured can search the web (a search model or a search tool)."""
    provider_id = spec.id.lower()
    config = spec.config or {}
    if "perplexity" in provider_id or "search-preview" in provider_id or "search-api" in provider_id:
        return True
    tools = config.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and (str(tool.get("type", "")).startswith("web_search") or "googleSearch" in tool or "google_search" in tool):
            return True
    search = config.get("search_parameters")
    return isinstance(search, dict) and search.get("mode") == "on"


class GraderResolver:
    """Resolves and caches grader providers for a run (shared clients come from the pool)."""

    def __init__(self, pool: ProviderPool, env: Mapping[str, str]):
        self.pool = pool
        self.env = env
        self.used: set[str] = set()
        self._resolved: dict[tuple[str, str], Provider] = {}

    def resolve(self, kind: Capability, ref: Any, check: str) -> Provider:
        """The provider that serves `kind` for the assertion type `check`, given the grader reference
        that applies to it (the assertion's `provider`, else the test's `options.provider`, or None);
        raises GraderError if there is none."""
        key = (kind, ref if isinstance(ref, str) else json.dumps(ref, sort_keys=True, default=str))
        provider = self._resolved.get(key)
        if provider is None:
            provider = self._from_ref(ref, kind, check) if ref is not None else None
            if provider is None:
                provider = self.default(kind, check)
            self._resolved[key] = provider
            self.used.add(provider.describe())
        return provider

    def resolve_search(self, ref: Any, check: str) -> tuple[Provider, bool]:
        """The grader for search-rubric and whether it can search the web.

        A configured grader is used as it is, even without web search (the caller says so in
        its result); only when none is configured is a web-search default chosen.
        """
        provider = self._from_ref(ref, "text", check) if ref is not None and not is_settings_only(ref) else None
        if provider is not None:
            searching = has_web_search(provider.spec)
        else:
            spec = self.default_search_spec(check)
            if is_settings_only(ref):
                spec = spec.model_copy(update={"config": {**spec.config, **(ref.get("config") or {})}})
            provider, searching = self._create(spec, check), True
        self.used.add(provider.describe())
        return provider, searching

    def default_search_spec(self, check: str) -> ProviderSpec:
        """The built-in web-search grader: OpenAI's Responses API or Claude, each with its search tool."""
        if self.env.get("OPENAI_API_KEY"):
            return DEFAULT_OPENAI_SEARCH
        if self.env.get("ANTHROPIC_API_KEY"):
            return DEFAULT_ANTHROPIC_SEARCH
        raise GraderError(
            f"no web-search grader available for {check}: set OPENAI_API_KEY (grades with {DEFAULT_OPENAI_SEARCH.id} and its "
            "web_search_preview tool) or ANTHROPIC_API_KEY, or set provider to a grader with a web search tool, e.g. "
            "{id: openai:responses:gpt-4.1, config: {tools: [{type: web_search_preview}]}}"
        )

    def _from_ref(self, ref: Any, kind: Capability, check: str) -> Provider | None:
        if is_kind_map(ref):
            if ref.get(kind) is None:
                return None
            return self._from_ref(ref[kind], kind, check)
        if is_settings_only(ref):
            provider_id = self.default_id(kind)
            if provider_id is None:
                raise GraderError(no_default(kind, check))
            ref = {**ref, "id": provider_id}
        try:
            spec = as_spec(ref)
        except (ValueError, TypeError) as exc:
            raise GraderError(f"invalid grader provider for {check}: {exc}") from None
        provider = self._create(spec, check)
        if provider.supports(kind):
            return provider
        sibling = provider.sibling(kind)
        if sibling is not None:
            return self._create(sibling, check)
        raise GraderError(
            f"grader {spec.id} cannot serve {kind} calls needed by {check}; "
            f"give {'an' if kind[0] in 'aeiou' else 'a'} {kind} provider, e.g. options.provider: {{text: ..., {kind}: ...}}"
        )

    def _create(self, spec: ProviderSpec, check: str) -> Provider:
        try:
            return self.pool.get(spec)
        except UnknownProviderError as exc:
            raise GraderError(f"grader for {check}: {exc}") from None

    def default(self, kind: Capability, check: str) -> Provider:
        provider_id = self.default_id(kind)
        if provider_id is None:
            raise GraderError(no_default(kind, check))
        return self._create(ProviderSpec(id=provider_id), check)

    def default_id(self, kind: Capability) -> str | None:
        """The built-in grader for `kind`, chosen from which credentials are present, in promptfoo
        0.123.1's order: OpenAI, Azure OpenAI, Anthropic, Gemini (AI Studio), Vertex, Mistral, xAI;
        then (ci-grade's own) Ollama. A family without embeddings or moderation gets OpenAI's, as
        in promptfoo, which needs OPENAI_API_KEY (so none here: the assertion says what to set)."""
        env = self.env
        if kind == "classification":
            return None
        if env.get("OPENAI_API_KEY"):
            return {"text": DEFAULT_OPENAI_TEXT, "embedding": DEFAULT_OPENAI_EMBEDDING, "moderation": DEFAULT_OPENAI_MODERATION}[kind]
        if kind == "moderation":
            return None
        gemini = any(env.get(name) for name in GEMINI_KEYS)
        mistral = bool(env.get("MISTRAL_API_KEY"))
        vertex = bool(env.get("GOOGLE_APPLICATION_CREDENTIALS"))
        azure_key = env.get("AZURE_OPENAI_API_KEY") or env.get("AZURE_API_KEY")
        azure_deployment = env.get("AZURE_OPENAI_DEPLOYMENT_NAME") or env.get("AZURE_DEPLOYMENT_NAME")
        if azure_key and azure_deployment:
            if kind == "text":
                return f"azureopenai:chat:{azure_deployment}"
            embedding = env.get("AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME")
            if embedding:
                return f"azureopenai:embedding:{embedding}"
            if gemini:
                return DEFAULT_GEMINI_EMBEDDING
            if mistral:
                return DEFAULT_MISTRAL_EMBEDDING
            if env.get("VOYAGE_API_KEY"):
                return DEFAULT_VOYAGE_EMBEDDING
            return DEFAULT_VERTEX_EMBEDDING if vertex else None
        families = (
            (bool(env.get("ANTHROPIC_API_KEY")), DEFAULT_ANTHROPIC_TEXT, None),
            (gemini, DEFAULT_GEMINI_TEXT, DEFAULT_VERTEX_EMBEDDING),  # promptfoo embeds with Vertex here
            (vertex, DEFAULT_VERTEX_TEXT, DEFAULT_VERTEX_EMBEDDING),
            (mistral, DEFAULT_MISTRAL_TEXT, DEFAULT_MISTRAL_EMBEDDING),
            (bool(env.get("XAI_API_KEY")), DEFAULT_XAI_TEXT, None),
        )
        for present, text, embedding in families:
            if present:
                return text if kind == "text" else embedding
        if env.get("OLLAMA_BASE_URL"):
            if kind == "text":
                return f"ollama:chat:{env.get('CI_GRADE_OLLAMA_GRADER_MODEL') or DEFAULT_OLLAMA_TEXT.split(':', 2)[2]}"
            if kind == "embedding":
                return f"ollama:embedding:{env.get('CI_GRADE_OLLAMA_EMBEDDING_MODEL') or DEFAULT_OLLAMA_EMBEDDING.split(':', 2)[2]}"
        return None
