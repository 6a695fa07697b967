"""OpenAI through the official SDK: chat, Responses API, embeddings and moderation.

The SDK's `AsyncOpenAI` runs on its documented aiohttp client (`http_clients.sdk_http_client`).

Ids: `openai:<model>`, `openai:chat:<model>`, `openai:responses:<model>`,
`openai:embedding:<model>` (or `embeddings`), `openai:moderation[:<model>]`, and
`openai:assistant:<assistant id>` (`assistants`).
The SDK's own retries are off; ci-grade's retry policy (which honours Retry-After) applies, also
to 200 replies whose body is malformed or empty, or lacks choices, an embedding or moderation
results (`openai_replies`). Chat replies are read leniently: invalid UTF-8 in the body becomes U+FFFD.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    EmbeddingResponse,
    ModerationFlag,
    ModerationResponse,
    Provider,
    ProviderResponse,
    parse_chat_messages,
)
from ci_grade.providers.http_clients import failure, sdk, sdk_http_client
from ci_grade.providers.openai_defaults import chat_defaults, responses_defaults
from ci_grade.providers.openai_replies import (
    completion_body,
    error_message,
    quota_exhausted,
    rate_limit_wait,
    responses_reply,
    usage_of,
    with_embedding,
    with_moderation_results,
    with_output,
)
from ci_grade.providers.pricing import estimate_cost
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    Liveness,
    RetryPolicy,
    call_timeout,
    retry_after_seconds,
    with_retries,
)
from ci_grade.providers.tls import trust_failure
from ci_grade.results.usage import TokenUsage

T = TypeVar("T")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CHAT_OPTIONS = (
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "stop",
    "seed",
    "response_format",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "reasoning_effort",
    "logprobs",
    "top_logprobs",
    "n",
    "user",
    "parallel_tool_calls",
    "metadata",
    "store",
    "verbosity",
)


def _logprobs(choice: dict[str, Any]) -> list[float] | None:
    """The log probability of each output token (`choices[0].logprobs.content[].logprob`), if returned."""
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list):
        return None
    values = [item.get("logprob") if isinstance(item, dict) else None for item in content]
    return [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)] or None


def _finish_reason(value: str | None) -> str | None:
    return {"function_call": "tool_calls", "max_tokens": "length", "end_turn": "stop"}.get(value or "", value)


class OpenAIProvider(Provider):
    """Shared client handling for every OpenAI-compatible endpoint (also used by Azure)."""

    default_model: ClassVar[str | None] = None
    key_names: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    price_family: ClassVar[str | None] = "openai"
    cacheable = True
    adaptive = True

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str | None, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._model = model or self.default_model
        self._client: Any = None
        self.liveness = Liveness()
        self._timeout = call_timeout(spec.config)
        self._retries = RetryPolicy.from_env()

    @property
    def model(self) -> str | None:
        return self._model

    def base_url(self) -> str:
        """promptfoo's order: `apiHost`, `apiBaseUrl`, then `OPENAI_API_HOST`, `OPENAI_API_BASE_URL`,
        `OPENAI_BASE_URL`, then OpenAI's own."""
        config = self.spec.config
        if config.get("apiHost"):
            return f"https://{config['apiHost']}/v1"
        if config.get("apiBaseUrl"):
            return str(config["apiBaseUrl"])
        host = self.env_value("OPENAI_API_HOST")
        if host:
            return f"https://{host}/v1"
        return self.env_value("OPENAI_API_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "base_url": self.base_url()}

    def sibling(self, kind: Capability) -> ProviderSpec | None:
        """openai:* chat/responses graders also serve embeddings and moderation (same credentials)."""
        ids = {"embedding": f"openai:embedding:{OpenAIEmbeddingProvider.default_model}", "moderation": f"openai:moderation:{OpenAIModerationProvider.default_model}"}
        if kind not in ids or not self.spec.id.startswith("openai:"):
            return None
        shared = {k: v for k, v in self.spec.config.items() if k in ("apiKey", "apiKeyEnvar", "apiBaseUrl", "apiHost", "organization", "timeout")}
        return ProviderSpec(id=ids[kind], config=shared)

    def client(self) -> Any:
        if self._client is None:
            self._client = sdk().AsyncOpenAI(
                api_key=self.api_key(),
                base_url=self.base_url(),
                organization=self.spec.config.get("organization") or self.env_value("OPENAI_ORGANIZATION", "OPENAI_ORG_ID"),
                max_retries=0,
                timeout=self._timeout,
                http_client=sdk_http_client(self._timeout),
                default_headers=self.extra_headers(),
            )
        return self._client

    def extra_headers(self) -> dict[str, str] | None:
        """`config.headers`, sent with every request as promptfoo sends them."""
        headers = self.spec.config.get("headers")
        return {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) and headers else None

    async def request(self, method: Any, read: Callable[[Any], T], **body: Any) -> T:
        """Call an SDK method with ci-grade's retry policy and read its reply with `read` (which
        raises TransientError for a reply worth asking again); API errors become ProviderError."""
        openai = sdk()

        async def attempt() -> T:
            try:
                result = await method(**body)
            except openai.APIStatusError as exc:
                self.liveness.answered()
                message = error_message(exc)
                headers = dict(exc.response.headers)
                if exc.status_code == 429 and quota_exhausted(exc):
                    raise ProviderError(f"{message} (quota or billing: not retried)") from None
                if exc.status_code in RETRYABLE_STATUS:
                    wait = rate_limit_wait(headers, message) if exc.status_code == 429 else retry_after_seconds(headers)
                    raise TransientError(message, wait, status=exc.status_code) from None
                raise ProviderError(message) from None
            except openai.APIConnectionError as exc:  # APITimeoutError included
                if refused := trust_failure(exc):
                    raise ProviderError(refused) from None
                failed = failure(exc, timeout=isinstance(exc, openai.APITimeoutError))
                if failed is None:
                    raise TransientError(f"{type(exc).__name__}: {exc}", timeout=True) from None
                raise TransientError(f"{type(exc).__name__}: {exc}" if failed is exc else f"connection failed: {type(failed).__name__}: {failed}") from None
            except (ValueError, TypeError, AttributeError) as exc:  # the SDK could not decode or read the body
                self.liveness.answered()
                raise TransientError(f"API returned a malformed body: {type(exc).__name__}: {exc}") from None
            self.liveness.answered()
            return read(result)

        try:
            return await with_retries(attempt, self._retries, timeout=self._timeout, liveness=self.liveness, limiter=self.limiter)
        except TransientError as exc:
            raise ProviderError(f"{exc} (after retries)") from None

    def cost(self, usage: TokenUsage) -> float | None:
        return estimate_cost(self._model, self.spec.config, usage.prompt, usage.completion, cached_tokens=usage.cached)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class OpenAIChatProvider(OpenAIProvider):
    """`openai:chat:<model>` and `openai:<model>`: the Chat Completions API."""

    default_model = "gpt-4.1-mini"
    _defaults: tuple[dict[str, Any], tuple[str, ...]] | None = None
    """promptfoo's sampling defaults for this provider (`openai_defaults.chat_defaults`), once worked out."""

    def describe(self) -> str:
        return f"openai:chat:{self._model}"

    def chat_body(self, prompt: str, context: CallContext | None = None) -> dict[str, Any]:
        config = self.spec.config
        if self._defaults is None:  # the config and the environment do not change during a run
            self._defaults = chat_defaults(self._model or "", config, self.env)
        added, dropped = self._defaults
        body: dict[str, Any] = {"model": self._model, "messages": parse_chat_messages(prompt), **added}
        body.update({k: config[k] for k in CHAT_OPTIONS if config.get(k) is not None and k not in dropped})
        if context is not None and context.response_schema is not None and "response_format" not in body:
            body["response_format"] = {"type": "json_object"}
        if context is not None and context.logprobs and "logprobs" not in body:
            body["logprobs"] = True
        passthrough = config.get("passthrough")
        if isinstance(passthrough, dict):
            body.update(passthrough)
        return body

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        try:
            # The SDK's raw request API (its documented route for custom bodies): same client,
            # auth and errors, without per-call parameter transformation and model building,
            # which cost more CPU than the rest of a grading call.
            completion = await self.request(self.client().post, completion_body, path="/chat/completions", cast_to=bytes, body=self.chat_body(prompt, context))
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        show_thinking = context.response_schema is None and bool(self.spec.config.get("showThinking", True))  # never into a grader's verdict
        return self.to_response(completion, show_thinking=show_thinking)

    def to_response(self, completion: dict[str, Any], *, show_thinking: bool = False) -> ProviderResponse:
        """A Chat Completions JSON body (with choices, see `completion_body`) -> ProviderResponse;
        `show_thinking`: reasoning text leads the output (`Thinking: ...`), as promptfoo shows it."""
        choice = completion["choices"][0]
        message = choice.get("message") or {}
        usage = usage_of(completion.get("usage"))
        finish = choice.get("finish_reason")
        common = {"token_usage": usage, "cost": self.cost(usage), "finish_reason": _finish_reason(finish), "cached": False, "logprobs": _logprobs(choice)}
        if message.get("refusal"):
            return ProviderResponse(output=message["refusal"], is_refusal=True, **common)
        content = message.get("content")
        calls = message.get("tool_calls") or None
        function_call = message.get("function_call")
        output: Any
        if content and (calls or function_call):
            output = {k: v for k, v in message.items() if v is not None}
        elif content is None:
            output = calls or function_call
        else:
            output = content
        if isinstance(output, str) and (self.spec.config.get("response_format") or {}).get("type") == "json_schema":
            try:
                output = json.loads(output)
            except ValueError:
                pass
        for key in ("reasoning", "reasoning_content"):
            thought = message.get(key)
            if show_thinking and isinstance(thought, str) and thought and isinstance(output, str):
                output = f"Thinking: {thought}\n\n{output}"
        if finish == "content_filter":
            return ProviderResponse(output=output, is_refusal=True, **{**common, "finish_reason": "content_filter"})
        return ProviderResponse(output=output, **common)


class OpenAIResponsesProvider(OpenAIProvider):
    """`openai:responses:<model>`: the Responses API."""

    default_model = "gpt-4.1-mini"

    def describe(self) -> str:
        return f"openai:responses:{self._model}"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if error := self.missing_key_error():
            return ProviderResponse(error=error)
        body = self.request_body(prompt, context)
        try:
            result = await self.request(self.client().responses.create, with_output, **body)
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return self.to_response(result, self.spec.config.get("response_format"))

    def request_body(self, prompt: str, context: CallContext) -> dict[str, Any]:
        """The `responses.create` arguments for `prompt` (extra fields under `extra_body`)."""
        config = self.spec.config
        messages = parse_chat_messages(prompt, strict=False)  # promptfoo sends text that is not a JSON array as it is
        body: dict[str, Any] = {"model": self._model, "input": messages}
        for key in ("temperature", "top_p", "tools", "tool_choice", "instructions", "reasoning", "metadata", "store"):  # no `seed`: the Responses API takes none (promptfoo sends none)
            if config.get(key) is not None:
                body[key] = config[key]
        max_tokens = config.get("max_output_tokens", config.get("max_tokens"))
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        added, dropped = responses_defaults(self._model or "", config, self.env)
        body = {**added, **{k: v for k, v in body.items() if k not in dropped}}
        response_format = config.get("response_format")
        if isinstance(response_format, dict):
            fmt = dict(response_format)
            if fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
                fmt = {"type": "json_schema", **fmt["json_schema"]}
            body["text"] = {"format": fmt}
        elif context.response_schema is not None:
            body["text"] = {"format": {"type": "json_object"}}
        passthrough = config.get("passthrough")
        if isinstance(passthrough, dict):  # as promptfoo: sent as given, over everything else
            body.setdefault("extra_body", {}).update(passthrough)
        return body

    def to_response(self, result: Any, response_format: Any) -> ProviderResponse:
        """A Responses API reply as promptfoo reads it (`openai_replies.responses_reply`), priced."""
        response = responses_reply(result, response_format)
        response.cost = self.cost(response.token_usage)
        return response


class OpenAIEmbeddingProvider(OpenAIProvider):
    """`openai:embedding:<model>`: embeddings (also usable as a similarity grader)."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"embedding"})
    default_model = "text-embedding-3-large"

    def describe(self) -> str:
        return f"openai:embedding:{self._model}"

    async def _embed(self, text: str) -> EmbeddingResponse:
        if error := self.missing_key_error():
            return EmbeddingResponse(error=error)
        try:
            result = await self.request(self.client().embeddings.create, with_embedding, model=self._model, input=text)
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        usage = TokenUsage.of(result.usage.prompt_tokens if result.usage else 0, 0, result.usage.total_tokens if result.usage else None)
        return EmbeddingResponse(embedding=list(result.data[0].embedding), token_usage=usage, cost=self.cost(usage))


class OpenAIModerationProvider(OpenAIProvider):
    """`openai:moderation[:<model>]`: the moderation endpoint."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"moderation"})
    default_model = "omni-moderation-latest"

    def price(self) -> tuple[float, float] | None:
        """OpenAI's moderation endpoint is free."""
        return 0.0, 0.0

    def describe(self) -> str:
        return f"openai:moderation:{self._model}"

    async def _moderate(self, prompt: str, output: str) -> ModerationResponse:
        if error := self.missing_key_error():
            return ModerationResponse(error=error)
        try:
            result = await self.request(self.client().moderations.create, with_moderation_results, model=self._model, input=output)
        except ProviderError as exc:
            return ModerationResponse(error=str(exc))
        flags: list[ModerationFlag] = []
        for item in result.results:
            categories = item.categories.model_dump(by_alias=True)
            scores = item.category_scores.model_dump(by_alias=True)
            for name, flagged in categories.items():
                if flagged:
                    flags.append(ModerationFlag(code=name, description=name, confidence=float(scores.get(name) or 0.0)))
        return ModerationResponse(flags=flags)
