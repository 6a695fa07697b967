"""`google:<model>` and `google:embedding:<model>`: the Gemini API with an API key
(`google:live:<model>`, the Live API, is in `live`).

The key is `config.apiKey`, else the variable `config.apiKeyEnvar` names, else GOOGLE_API_KEY,
GEMINI_API_KEY, PALM_API_KEY (promptfoo's order), sent as `x-goog-api-key`. The endpoint is
`https://{apiHost}` from `config.apiHost`, GOOGLE_API_HOST or PALM_API_HOST, else
`config.apiBaseUrl` or GOOGLE_API_BASE_URL as given, else Google's; the API version is
`config.apiVersion`, else `v1beta` (`v1alpha` for gemini-2.0-flash-thinking-exp).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.providers.base import CallContext, Capability, EmbeddingResponse, Provider, ProviderResponse
from ci_grade.providers.google.endpoint import base_url
from ci_grade.providers.google.gemini import GeminiProvider

UNSUPPORTED_KINDS = ("video",)  # `google:image:` is `imagen`


class GoogleAIProvider(GeminiProvider):
    """The Gemini API (Google AI Studio)."""

    key_names = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "PALM_API_KEY")

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None, embedding: bool = False):
        super().__init__(spec, env, model, max_concurrency)
        self.embedding_model = embedding

    def supports(self, kind: Capability) -> bool:
        return kind == "embedding" or (kind == "text" and not self.embedding_model)

    def describe(self) -> str:
        return f"google:embedding:{self._model}" if self.embedding_model else f"google:{self._model}"

    def sibling(self, kind: Capability) -> ProviderSpec | None:
        return None

    def base_url(self) -> str:
        return base_url(self.spec.config, self.env_value)

    def api_version(self) -> str:
        if self.spec.config.get("apiVersion"):
            return str(self.spec.config["apiVersion"])
        return "v1alpha" if self._model == "gemini-2.0-flash-thinking-exp" else "v1beta"

    def client_kwargs(self) -> dict[str, Any]:
        return {"api_key": self.api_key()}

    def _missing_key(self) -> str | None:
        if self.api_key():
            return None
        names = self.spec.config.get("apiKeyEnvar") or "GOOGLE_API_KEY or GEMINI_API_KEY"
        return f"Google API key is not set: set {names} or config.apiKey for provider {self.id}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if not self.embedding_model and (missing := self._missing_key()):
            return ProviderResponse(error=missing)
        return await super()._call(prompt, context)

    async def _embed(self, text: str) -> EmbeddingResponse:
        if missing := self._missing_key():
            return EmbeddingResponse(error=missing)
        return await super()._embed(text)


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: Google's video API, or no model."""
    rest = provider_id.split(":", 1)[1] if ":" in provider_id else ""
    kind, _, model = rest.partition(":")
    if model and kind in UNSUPPORTED_KINDS:
        return f"Google's {kind} API is not supported; use google:<model>, google:live:<model> or google:embedding:<model>"
    if not rest or (kind in ("embedding", "embeddings", "live") and not model):
        return "name a model, e.g. google:gemini-2.5-flash or google:embedding:gemini-embedding-001"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> Provider:
    """`google:<model>`, `google:embedding:<model>` (or `embeddings`), `google:live:<model>`; ids
    `check` refuses never get here."""
    rest = spec.id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if kind == "live":
        from ci_grade.providers.google.live import GoogleLiveProvider

        return GoogleLiveProvider(spec, env, model, max_concurrency)
    if kind in ("embedding", "embeddings"):
        return GoogleAIProvider(spec, env, model, max_concurrency, embedding=True)
    return GoogleAIProvider(spec, env, rest, max_concurrency)
