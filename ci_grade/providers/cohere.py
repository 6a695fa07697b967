"""Cohere through its official `cohere` SDK (the `ci-grade[cohere]` extra): `cohere:<model>`
(or `cohere:chat:<model>`) chats, `cohere:embedding:<model>` (or `embeddings`) embeds.

Requests are promptfoo 0.123.1's: the v1 Chat API (`message`, `chat_history`, `preamble`,
`documents`, `connectors`, ...) with promptfoo's defaults (temperature 0.3, k 0, p 0.75,
`prompt_truncation: OFF`), the provider's config on top and a prompt that is a JSON object on
top of that; embeddings with `input_type: classification` and `truncate` (default `NONE`). The
key is `config.apiKey`, the variable `config.apiKeyEnvar` names, COHERE_API_KEY or CO_API_KEY
(the SDK's own); the endpoint is `config.apiBaseUrl` or COHERE_API_BASE_URL (a trailing `/v1`
is dropped), else Cohere's. The SDK's own retries are off: ci-grade's policy retries 429/5xx
honouring `Retry-After`, so the adaptive limit sees every overloaded reply.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    EmbeddingResponse,
    ModelProvider,
    ProviderResponse,
)
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    RetryPolicy,
    retry_after_seconds,
    with_retries,
)
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    import cohere

T = TypeVar("T")
DEFAULT_BASE_URL = "https://api.cohere.com"
MISSING_SDK = "the cohere package is not installed: pip install 'ci-grade[cohere]'"
# promptfoo's request defaults for the v1 Chat API; the provider's config goes on top.
CHAT_DEFAULTS: dict[str, Any] = {
    "connectors": [],
    "prompt_truncation": "OFF",
    "search_queries_only": False,
    "documents": [],
    "temperature": 0.3,
    "k": 0,
    "p": 0.75,
    "frequency_penalty": 0,
    "presence_penalty": 0,
}
# Provider settings that are not request fields.
NOT_SENT = frozenset({
    "apiKey", "apiKeyEnvar", "apiBaseUrl", "showSearchQueries", "showDocuments", "timeout", "maxConcurrency",
    "delay", "cost", "inputCost", "outputCost", "transform", "headers",
})
FINISH_REASONS = {"COMPLETE": "stop", "MAX_TOKENS": "length", "STOP_SEQUENCE": "stop", "TOOL_CALL": "tool_calls"}


class CohereProvider(ModelProvider, HttpApiProvider):
    """Chat or embeddings on one `cohere.AsyncClient`, on an httpx client ci-grade owns."""

    key_names = ("COHERE_API_KEY", "CO_API_KEY")

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None, embedding: bool = False):
        super().__init__(spec, env, model, max_concurrency)
        self.embedding_model = embedding
        self._client: cohere.AsyncClient | None = None

    def describe(self) -> str:
        return f"cohere:embedding:{self._model}" if self.embedding_model else f"cohere:{self._model}"

    def supports(self, kind: Capability) -> bool:
        return kind == ("embedding" if self.embedding_model else "text")

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.base_url()}

    def base_url(self) -> str:
        base = str(self.spec.config.get("apiBaseUrl") or self.env_value("COHERE_API_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        return base.removesuffix("/v1")

    def client(self) -> cohere.AsyncClient:
        if self._client is None:
            try:
                import cohere
            except ImportError:
                raise ProviderError(MISSING_SDK) from None
            http = self.http()
            http.headers.update({str(k): str(v) for k, v in (self.spec.config.get("headers") or {}).items()})
            self._client = cohere.AsyncClient(
                api_key=self.api_key(),
                base_url=self.base_url(),
                client_name=self.env_value("COHERE_CLIENT_NAME") or "ci-grade",
                timeout=self._timeout,
                max_retries=0,  # ci-grade retries (see the module's docstring)
                httpx_client=http,
                log_warning_experimental_features=False,
            )
        return self._client

    def chat_request(self, prompt: str) -> dict[str, Any]:
        """promptfoo's v1 Chat body: defaults, config, then a JSON-object prompt (else `message`)."""
        config = {k: v for k, v in self.spec.config.items() if k not in NOT_SENT}
        if "chatHistory" in config:
            config["chat_history"] = config.pop("chatHistory")
        body: dict[str, Any] = {**CHAT_DEFAULTS, **config}
        try:
            parsed = json.loads(prompt)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            body.update(parsed)
        else:
            body["message"] = prompt
        return body

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if self.embedding_model:
            return ProviderResponse(error=f"Provider {self.id} is an embedding provider; use a non-embedding provider for text")
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        body = self.chat_request(prompt)
        try:
            client = self.client()
            known = set(_parameters(type(client).chat)) - {"self", "request_options", "accepts"}
            kwargs = {k: v for k, v in body.items() if k in known}
            extra = {k: v for k, v in body.items() if k not in known and k != "model"}
            reply = await self._send(lambda: client.chat(model=self._model, **kwargs, request_options={"additional_body_parameters": extra} if extra else None))
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return self.to_response(reply.model_dump(mode="json", exclude_none=True))

    def to_response(self, data: dict[str, Any]) -> ProviderResponse:
        if not isinstance(data.get("text"), str):
            return ProviderResponse(error=f"Cohere chat reply has no text: {json.dumps(data)[:300]}")
        output = data["text"]
        config = self.spec.config
        if config.get("showSearchQueries") and data.get("search_queries"):
            output += "\n\nSearch Queries:\n" + "\n".join(str(q.get("text", "")) for q in data["search_queries"])
        if config.get("showDocuments") and data.get("documents"):
            output += "\n\nDocuments:\n" + "\n".join(json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in data["documents"])
        meta = data.get("meta") or {}
        tokens = meta.get("tokens") or meta.get("billed_units") or {}
        usage = TokenUsage.of(int(tokens.get("input_tokens") or 0), int(tokens.get("output_tokens") or 0))
        reason = data.get("finish_reason")
        return ProviderResponse(output=output, token_usage=usage, finish_reason=FINISH_REASONS.get(reason or "", (reason or "").lower() or None))

    async def _embed(self, text: str) -> EmbeddingResponse:
        if error := self.missing_key_error():
            return EmbeddingResponse(error=error)
        truncate = str(self.spec.config.get("truncate") or "NONE")
        try:
            client = self.client()
            reply = await self._send(lambda: client.embed(texts=[text], model=self._model, input_type="classification", truncate=truncate))
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        data = reply.model_dump(mode="json")
        vectors = data.get("embeddings")
        if isinstance(vectors, dict):  # embeddings by type
            vectors = vectors.get("float")
        vector = vectors[0] if isinstance(vectors, list) and vectors else None
        if not vector:
            return EmbeddingResponse(error=f"No embedding found in Cohere embeddings API response for {self.id}")
        tokens = int(((data.get("meta") or {}).get("billed_units") or {}).get("input_tokens") or 0)
        return EmbeddingResponse(embedding=[float(x) for x in vector], token_usage=TokenUsage.of(tokens, 0))

    async def _send(self, operation: Callable[[], Awaitable[T]]) -> T:
        """`operation` with ci-grade's retries; SDK and transport failures as ProviderError/TransientError."""
        policy = RetryPolicy.from_env()

        async def attempt() -> T:
            import httpx
            from cohere.core.api_error import ApiError

            try:
                result = await operation()
            except ApiError as exc:
                self.liveness.answered()
                message = f"API error {exc.status_code}: {_detail(exc.body)}"
                if exc.status_code in RETRYABLE_STATUS:
                    raise TransientError(message, retry_after_seconds(dict(exc.headers or {})), status=exc.status_code) from None
                raise ProviderError(message) from None
            except httpx.TimeoutException:
                raise TransientError(f"request timed out after {self._timeout:g}s", timeout=True) from None
            except httpx.TransportError as exc:
                raise TransientError(f"connection failed: {type(exc).__name__}: {exc}") from None
            self.liveness.answered()
            return result

        try:
            return await with_retries(attempt, policy, self._timeout, liveness=self.liveness, limiter=self.limiter)
        except TransientError as exc:
            raise ProviderError(f"{exc} (gave up after {policy.attempts} attempts)") from None

    async def aclose(self) -> None:
        await super().aclose()
        self._client = None


def _parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def _detail(body: Any) -> str:
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(body)[:300]


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: it names no model."""
    _, _, rest = provider_id.partition(":")
    kind, _, model = rest.partition(":")
    if not rest or (kind in ("chat", "embedding", "embeddings") and not model):
        return "name a model, e.g. cohere:command-r-plus or cohere:embedding:embed-english-v3.0"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> CohereProvider:
    """`cohere:<model>`, `cohere:chat:<model>`, `cohere:embedding:<model>` (as promptfoo splits them)."""
    rest = spec.id.split(":", 1)[1]
    kind, _, model = rest.partition(":")
    if kind in ("embedding", "embeddings"):
        return CohereProvider(spec, env, model, max_concurrency, embedding=True)
    return CohereProvider(spec, env, model if kind == "chat" else rest, max_concurrency)
