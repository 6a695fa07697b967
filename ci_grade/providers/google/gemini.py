"""Gemini over the `google-genai` SDK's async client, shared by `google:` and `vertex:`.

One `genai.Client` per provider, on an httpx client ci-grade owns. The SDK's own retries are
off (one attempt): ci-grade's retry policy retries 429/5xx and timeouts, honouring
`Retry-After`, so the adaptive limiter sees every overloaded reply. The reply is read as
promptfoo reads it: the text parts joined, or the list of parts when some are not text (a
`functionCall`, shown as `{"functionCall": {"name", "args"}}`); a blocked prompt or a reply
stopped for safety is an error naming the reason.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import CallContext, EmbeddingResponse, ModelProvider, ProviderResponse
from ci_grade.providers.google import request
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.pricing import estimate_cost
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    RetryPolicy,
    retry_after_seconds,
    with_retries,
)
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    from google import genai

BLOCKED = ("SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII")
FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
MISSING_SDK = "the google-genai package is not installed: pip install 'ci-grade[google]'"


class GeminiProvider(ModelProvider, HttpApiProvider, abc.ABC):
    """`generateContent` and `embedContent` through `client.aio.models`; subclasses say how to connect."""

    price_family: ClassVar[str | None] = "google"

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, model, max_concurrency)
        self.embedding_model = False
        self._client: genai.Client | None = None

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.base_url()}

    @abc.abstractmethod
    def base_url(self) -> str:
        """Where the API is (the Gemini API or Vertex AI)."""

    @abc.abstractmethod
    def client_kwargs(self) -> dict[str, Any]:
        """How `genai.Client` reaches and authenticates to the API (API key or credentials)."""

    def api_version(self) -> str | None:
        return str(self.spec.config["apiVersion"]) if self.spec.config.get("apiVersion") else None

    def client(self) -> genai.Client:
        if self._client is None:
            try:
                from google import genai
                from google.genai import types
            except ImportError:
                raise ProviderError(MISSING_SDK) from None
            headers = {str(k): str(v) for k, v in (self.spec.config.get("headers") or {}).items()}
            options = types.HttpOptions(
                base_url=self.base_url(),
                api_version=self.api_version(),
                headers=headers or None,
                timeout=int(self._timeout * 1000),
                retry_options=types.HttpRetryOptions(attempts=1),  # ci-grade retries (see the module's docstring)
                httpx_async_client=self.http(),
            )
            self._client = genai.Client(http_options=options, **self.client_kwargs())
        return self._client

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if self.embedding_model:
            return ProviderResponse(error=f"Provider {self.id} is an embedding provider; use a non-embedding provider for text")
        try:
            body = request.build(prompt, self.spec.config, context.response_schema)
            data = await self._send(lambda: self._generate(body))
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return self.to_response(data)

    async def _generate(self, body: dict[str, Any]) -> dict[str, Any]:
        from google.genai import types

        known = set(types.GenerateContentConfig.model_fields)
        aliases = {str(f.alias): name for name, f in types.GenerateContentConfig.model_fields.items() if f.alias}
        config: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in (body.get("generationConfig") or {}).items():
            name = key if key in known else aliases.get(key)
            if name is None or name == "http_options":
                extra[key] = value  # a field this SDK version does not model goes to the wire as given
            else:
                config[name] = value
        for key, name in (("systemInstruction", "system_instruction"), ("safetySettings", "safety_settings"), ("tools", "tools"), ("toolConfig", "tool_config")):
            if key in body:
                config[name] = body[key]
        extra_body: dict[str, Any] = {"generationConfig": extra} if extra else {}
        if isinstance(self.spec.config.get("passthrough"), dict):
            extra_body.update(self.spec.config["passthrough"])
        if extra_body:
            config["http_options"] = types.HttpOptions(extra_body=extra_body)
        try:
            settings = types.GenerateContentConfig.model_validate(config)
        except ValueError as exc:
            raise ProviderError(f"invalid Gemini request options for {self.id}: {exc}") from None
        reply = await self.client().aio.models.generate_content(model=self._model, contents=body["contents"], config=settings)
        return reply.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"sdk_http_response", "automatic_function_calling_history"})

    async def _send(self, operation: Any) -> Any:
        """`operation` with ci-grade's retries; SDK and transport failures as ProviderError/TransientError."""
        policy = RetryPolicy.from_env()

        async def attempt() -> Any:
            import httpx
            from google.auth import exceptions as auth_errors
            from google.genai import errors

            try:
                result = await operation()
            except errors.APIError as exc:
                self.liveness.answered()
                message = f"API error {exc.code}: {exc.message or exc.status or exc.details}"
                headers = getattr(exc.response, "headers", None)
                if exc.code in RETRYABLE_STATUS:
                    raise TransientError(message, retry_after_seconds(dict(headers) if headers else None), status=exc.code) from None
                raise ProviderError(message) from None
            except httpx.TimeoutException:
                raise TransientError(f"request timed out after {self._timeout:g}s", timeout=True) from None
            except (httpx.TransportError, auth_errors.TransportError) as exc:
                raise TransientError(f"connection failed: {type(exc).__name__}: {exc}") from None
            except auth_errors.GoogleAuthError as exc:
                raise ProviderError(f"Google authentication failed: {exc}") from None
            self.liveness.answered()
            return result

        try:
            return await with_retries(attempt, policy, self._timeout, liveness=self.liveness, limiter=self.limiter)
        except TransientError as exc:
            raise ProviderError(f"{exc} (gave up after {policy.attempts} attempts)") from None

    def to_response(self, data: dict[str, Any]) -> ProviderResponse:
        feedback = data.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            return ProviderResponse(error=f"Content was blocked due to safety settings: {feedback['blockReason']}", is_refusal=True)
        candidates = data.get("candidates") or []
        if not candidates:
            return ProviderResponse(error=f"API did not return any candidate responses: {data}")
        candidate = candidates[0]
        reason = candidate.get("finishReason")
        if reason in BLOCKED:
            flagged = [f"{r.get('category')}: {r.get('probability')}" for r in candidate.get("safetyRatings") or [] if r.get("probability") != "NEGLIGIBLE" or r.get("blocked")]
            detail = f"\nSafety ratings: {', '.join(flagged)}" if flagged else ""
            return ProviderResponse(error=f"Response was blocked with finish reason: {reason}{detail}", is_refusal=True)
        parts = (candidate.get("content") or {}).get("parts")
        if not parts:
            return ProviderResponse(error=f"No output found in response: {candidate}")
        answer = [p for p in parts if not p.get("thought")] or parts
        output: Any = "".join(str(p["text"]) for p in answer) if all("text" in p for p in answer) else answer
        usage, cost = self.usage_and_cost(data.get("usageMetadata") or {})
        return ProviderResponse(
            output=output,
            token_usage=usage,
            cost=cost,
            finish_reason=FINISH_REASONS.get(reason or "", "tool_calls" if isinstance(output, list) else (reason or "").lower() or None),
            metadata={"model": data["modelVersion"]} if data.get("modelVersion") else {},
        )

    def usage_and_cost(self, usage: dict[str, Any]) -> tuple[TokenUsage, float | None]:
        """promptfoo's reading of `usageMetadata`: tool-use prompt tokens count as prompt, thinking
        tokens are billed as output."""
        prompt = int(usage.get("promptTokenCount") or 0) + int(usage.get("toolUsePromptTokenCount") or 0)
        completion = int(usage.get("candidatesTokenCount") or 0)
        thoughts = int(usage.get("thoughtsTokenCount") or 0)
        cached = int(usage.get("cachedContentTokenCount") or 0)
        tokens = TokenUsage.of(prompt, completion, int(usage.get("totalTokenCount") or prompt + completion + thoughts), cached=cached, reasoning=thoughts)
        billed_prompt = int(usage.get("promptTokenCount") or 0)
        cost = estimate_cost(self._model, self.spec.config, billed_prompt, completion + thoughts, family="google", cached_tokens=cached)
        return tokens, cost

    async def _embed(self, text: str) -> EmbeddingResponse:
        from google.genai import types

        config = self.spec.config
        options = {"task_type": config.get("taskType"), "output_dimensionality": config.get("outputDimensionality"), "title": config.get("title")}
        settings = types.EmbedContentConfig(**{k: v for k, v in options.items() if v is not None})
        try:
            reply = await self._send(lambda: self.client().aio.models.embed_content(model=self._model, contents=text, config=settings))
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        vectors = reply.embeddings or []
        if not vectors or not vectors[0].values:
            return EmbeddingResponse(error=f"No embedding found in the reply for {self.id}")
        statistics = vectors[0].statistics
        tokens = int(statistics.token_count or 0) if statistics is not None else 0
        cost = estimate_cost(self._model, config, tokens, 0, family="google") if tokens else None
        return EmbeddingResponse(embedding=list(vectors[0].values), token_usage=TokenUsage.of(tokens, 0), cost=cost)

    async def aclose(self) -> None:
        await super().aclose()
        self._client = None
