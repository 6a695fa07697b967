"""`vertex:<model>`: Gemini, Claude, embeddings and model-as-a-service models (Llama, ...) on
Vertex AI with Application Default Credentials.

`vertex:<gemini model>` (and `vertex:chat:<model>`) goes through `google-genai` in Vertex mode;
`vertex:live:<model>` is the Live API on Vertex (`live`);
`vertex:embedding:<model>` embeds through it too; `vertex:<claude model>` sends Anthropic's
Messages body (`anthropic_version: vertex-2023-10-16`, no model) to `:rawPredict` with a bearer
token google-auth obtained; other models (Llama and the rest of model-as-a-service) go to Vertex's
OpenAI-compatible endpoint (`vertex_maas`). Project, region, endpoint and credentials: see `auth`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.anthropic import AnthropicMessagesProvider, _is_forced, _missing_content
from ci_grade.providers.base import CallContext, Capability, EmbeddingResponse, Provider, ProviderResponse
from ci_grade.providers.google.auth import VertexAuthed
from ci_grade.providers.google.gemini import GeminiProvider
from ci_grade.providers.google.vertex_maas import VertexMaasProvider, publisher_model
from ci_grade.results.usage import TokenUsage

CLAUDE_VERSION = "vertex-2023-10-16"
CLAUDE_MAX_TOKENS = 512  # promptfoo's default for Claude on Vertex


class VertexGeminiProvider(VertexAuthed, GeminiProvider):
    """Gemini (and embedding models) on Vertex AI through `google-genai`."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None, embedding: bool = False):
        super().__init__(spec, env, model, max_concurrency)
        self.embedding_model = embedding

    def describe(self) -> str:
        return f"vertex:embedding:{self._model}" if self.embedding_model else f"vertex:{self._model}"

    def supports(self, kind: Capability) -> bool:
        return kind == "embedding" or (kind == "text" and not self.embedding_model)

    def base_url(self) -> str:
        return self.auth.base_url()

    def api_version(self) -> str:
        return self.auth.api_version()

    def client_kwargs(self) -> dict[str, Any]:
        return {"vertexai": True, "project": self.auth.project(), "location": self.auth.region(), "credentials": self.auth.credentials()}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        try:
            self.client()
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return await super()._call(prompt, context)

    async def _embed(self, text: str) -> EmbeddingResponse:
        try:
            self.client()
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        return await super()._embed(text)


class VertexClaudeProvider(VertexAuthed, AnthropicMessagesProvider):
    """Claude on Vertex AI: the Messages API at `publishers/anthropic/models/<model>:rawPredict`."""

    def describe(self) -> str:
        return f"vertex:{self._model}"

    def url(self) -> str:
        auth = self.auth
        return f"{auth.base_url()}/v1/projects/{auth.project()}/locations/{auth.region()}/publishers/anthropic/models/{self._model}:rawPredict"

    def headers(self, key: str) -> dict[str, str]:
        headers = {str(k): str(v) for k, v in (self.spec.config.get("headers") or {}).items()}
        return {**headers, "Authorization": f"Bearer {key}"}

    def body(self, prompt: str, context: CallContext) -> dict[str, Any]:
        config = self.spec.config
        body = super().body(prompt, context)
        body.pop("model", None)
        body["max_tokens"] = int(config.get("max_tokens") or config.get("maxOutputTokens") or CLAUDE_MAX_TOKENS)
        return {"anthropic_version": str(config.get("anthropicVersion") or config.get("anthropic_version") or CLAUDE_VERSION), **body}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        try:
            url = self.url()
            token = await self.auth.token()
            body = self.body(prompt, context)
            data = await self.post_json(url, body, self.headers(token), check=_missing_content)
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return self.to_response(data, forced=_is_forced(body.get("tool_choice")))

    def usage_and_cost(self, usage: dict[str, Any], reply_model: str) -> tuple[TokenUsage, float | None]:
        """Priced as Anthropic's model: Vertex's `claude-x@20250929` is `claude-x-20250929`."""
        return super().usage_and_cost(usage, (reply_model or self._model).replace("@", "-"))


def _model_name(provider_id: str) -> tuple[str, str]:
    """(kind, model): `vertex:embedding:<m>` -> ("embedding", m); `vertex:live:<m>` -> ("live", m);
    `vertex:chat:<m>`, `vertex:<m>` -> ("chat", m)."""
    rest = provider_id.split(":", 1)[1] if ":" in provider_id else ""
    kind, _, model = rest.partition(":")
    if kind in ("embedding", "embeddings"):
        return "embedding", model
    if kind == "live":
        return "live", model
    return "chat", model if kind == "chat" and model else rest


def _is_native(name: str) -> bool:
    return any(word in name for word in ("claude", "gemini", "embedding", "gecko"))


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: no model, or one that is neither Gemini, Claude, an
    embedding model nor a model-as-a-service model whose publisher is known."""
    kind, name = _model_name(provider_id)
    if not name:
        return "name a model, e.g. vertex:gemini-2.5-flash or vertex:embedding:text-embedding-004"
    if kind == "chat" and not _is_native(name) and publisher_model(name) is None:
        return (
            f"ci-grade serves Gemini, Claude, embedding and model-as-a-service models on Vertex AI; {name!r} is none it knows: "
            "name a model-as-a-service model with its publisher, e.g. vertex:meta/llama-3.3-70b-instruct-maas"
        )
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> Provider:
    """`vertex:<model>`, `vertex:chat:<model>`, `vertex:embedding:<model>`, `vertex:live:<model>`: Claude models by name;
    ids `check` refuses never get here."""
    kind, name = _model_name(spec.id)
    if kind == "live":
        from ci_grade.providers.google.live import VertexLiveProvider

        return VertexLiveProvider(spec, env, name, max_concurrency)
    if kind == "embedding":
        return VertexGeminiProvider(spec, env, name, max_concurrency, embedding=True)
    if "claude" in name:
        return VertexClaudeProvider(spec, env, name, max_concurrency)
    if not _is_native(name):
        return VertexMaasProvider(spec, env, name, max_concurrency)
    return VertexGeminiProvider(spec, env, name, max_concurrency, embedding="gemini" not in name)
