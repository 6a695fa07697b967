"""The provider contract: one typed response per call, errors as values, never exceptions.

A provider may serve several kinds of call: text (`call`), embeddings (`embed`), moderation
(`moderate`) and classification (`classify`). Targets use `call`; graders use whichever kinds an
assertion needs. Each provider owns one HTTP client for its lifetime and bounds its own
concurrency with a `Limiter` (HTTP API providers per attempt, adapting to 429s; others per call).
Text sent out is made well formed first (a lone surrogate, e.g. from an output cut
mid-emoji that a grader prompt quotes, becomes U+FFFD): no API accepts it in a UTF-8 body.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import BaseModel, Field

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import NotSupportedError, ProviderError
from ci_grade.providers.budget import admitted
from ci_grade.providers.limiter import ADAPTIVE_CEILING, ADAPTIVE_START, Limiter
from ci_grade.providers.pricing import price_of
from ci_grade.providers.retry import again_if_empty
from ci_grade.results.usage import TokenUsage
from ci_grade.safe_text import well_formed

if TYPE_CHECKING:
    from ci_grade.providers.budget import Budget
    from ci_grade.providers.cache import ResponseCache

Capability = Literal["text", "embedding", "moderation", "classification"]


class ProviderResponse(BaseModel):
    """The result of one text call: an output or an error, with usage, cost and timing."""

    output: Any = None
    error: str | None = None
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    latency_ms: float = 0.0
    cached: bool = False
    finish_reason: str | None = None
    is_refusal: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    guardrails: dict[str, Any] | None = None
    """The provider's safety checks (`flagged`, `flaggedInput`, `flaggedOutput`, `reason`), as promptfoo's `guardrails`."""
    logprobs: list[float] | None = None
    """The log probability of each output token, when the provider returned them (promptfoo's `logProbs`)."""
    audio: dict[str, Any] | None = None
    """Spoken output, as promptfoo's `audio`: `{data (base64), format, transcript}`."""


class EmbeddingResponse(BaseModel):
    embedding: list[float] | None = None
    error: str | None = None
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None


class ModerationFlag(BaseModel):
    code: str
    description: str
    confidence: float = 1.0


class ModerationResponse(BaseModel):
    flags: list[ModerationFlag] | None = None
    error: str | None = None
    token_usage: TokenUsage | None = None


class SimilarityResponse(BaseModel):
    """A similarity score computed by the provider from two texts (Hugging Face's sentence-similarity task)."""

    similarity: float | None = None
    error: str | None = None


class ClassificationResponse(BaseModel):
    classification: dict[str, float] | None = None
    error: str | None = None


@dataclass
class CallContext:
    """What a provider may know about the call.

    `response_schema` is set by graders that want a JSON reply: providers that support
    structured output (JSON mode, JSON schema, a forced tool) use it; others ignore it and the
    grader parses the text.
    """

    vars: dict[str, Any] = field(default_factory=dict)
    prompt_label: str = ""
    prompt_raw: str = ""
    response_schema: dict[str, Any] | None = None
    response_schema_name: str = "verdict"
    traceparent: str | None = None
    """The row's W3C trace context when tracing is on (Python and exec providers get it in their
    context, the HTTP provider as a `traceparent` header), with the ids promptfoo passes beside it."""
    evaluation_id: str | None = None
    test_case_id: str | None = None

    def trace_fields(self) -> dict[str, str]:
        """`traceparent`, `evaluationId` and `testCaseId` for a script's context (none without tracing)."""
        if not self.traceparent:
            return {}
        fields = {"traceparent": self.traceparent, "evaluationId": self.evaluation_id, "testCaseId": self.test_case_id}
        return {key: value for key, value in fields.items() if value is not None}
    logprobs: bool = False
    """Whether the output's token log probabilities are wanted (a perplexity assertion grades them)."""
    conversation_id: str | None = None
    """The test's `metadata.conversationId`: the turns of one conversation (a stateful session's)."""


class Provider:
    """Base class: subclasses override the kinds of call they support.

    `cacheable` families (remote model APIs) use the run's response cache when one is set;
    local code (echo, exec, Python providers) is always called.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"text"})
    cacheable: ClassVar[bool] = False
    adaptive: ClassVar[bool] = False
    """Whether each attempt takes its own slot and reports overload (`retry.with_retries`); else
    a call holds one slot throughout and the limit stays at its ceiling."""
    key_names: ClassVar[tuple[str, ...]] = ()
    """Environment variables that hold the family's API key, in order of preference."""
    price_family: ClassVar[str | None] = None
    """The family of `prices.json` its models are priced from (None: only the config's cost keys)."""
    # The folder of the config that named this provider (relative file paths resolve here); set by the registry.
    base_dir: Path | None = None

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        self.spec = spec
        self.env = env
        self.cache: ResponseCache | None = None
        self.budget: Budget | None = None
        explicit = int(spec.config.get("maxConcurrency") or max_concurrency or 0)
        start = explicit or (ADAPTIVE_START if self.adaptive else ADAPTIVE_CEILING)
        self.limiter = Limiter(explicit or ADAPTIVE_CEILING, start)
        """This provider's calls in flight: `maxConcurrency`, else the run's `-j`, as a hard cap;
        neither: adaptive (see `limiter`)."""

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def label(self) -> str:
        return self.spec.label or self.spec.id

    @property
    def model(self) -> str | None:
        """The model name, where the id names one."""
        return None

    def describe(self) -> str:
        """How results name this provider: its id (which carries the model)."""
        return self.id

    def price(self) -> tuple[float, float] | None:
        """USD per (input, output) token: the config's `cost`, `inputCost`, `outputCost`, else the
        family's price table for `model`; None when unknown."""
        return price_of(self.model, self.spec.config, self.price_family)

    def max_output_tokens(self) -> int | None:
        """The most tokens one reply may hold, as configured (None: the API's own limit)."""
        config = self.spec.config
        generation = config.get("generationConfig")
        for value in (config.get("max_tokens"), config.get("max_completion_tokens"), config.get("max_output_tokens"), config.get("maxOutputTokens"),
                      generation.get("maxOutputTokens") if isinstance(generation, dict) else None):
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def supports(self, kind: Capability) -> bool:
        return kind in self.capabilities

    def sibling(self, kind: Capability) -> ProviderSpec | None:
        """The same vendor's provider for another kind of call (same credentials), if it has one.

        Lets one configured grader (e.g. `openai:gpt-4.1`) also serve the embedding or
        moderation calls an assertion needs; the sibling is recorded as the grader used.
        """
        return None

    def cache_identity(self) -> dict[str, Any]:
        """What, besides the request, determines a reply (subclasses add their endpoint)."""
        return {"class": type(self).__name__, "id": self.spec.id, "config": self.spec.config}

    def _cache_key(self, request: dict[str, Any]) -> str | None:
        if self.cache is None or not self.cacheable:
            return None
        return self.cache.key(self.cache_identity(), request)

    def reuses_replies(self, context: CallContext) -> bool:
        """Whether this call may be answered from (and stored in) the response cache: not a turn
        of a conversation the provider keeps a session for, whose reply depends on the turns before."""
        return True

    def _slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The slot a whole call holds (none for adaptive providers: their attempts take slots)."""
        return _NO_SLOT if self.adaptive else self.limiter.slot()

    def api_key(self) -> str | None:
        """`config.apiKey`, else the variable `config.apiKeyEnvar` names, else the family's variables."""
        config = self.spec.config
        if config.get("apiKey"):
            return str(config["apiKey"])
        if config.get("apiKeyEnvar"):
            return self.env_value(str(config["apiKeyEnvar"]))
        return self.env_value(*self.key_names)

    def missing_key_error(self) -> str | None:
        """A message saying which variable or option to set, when no API key is available."""
        if self.api_key():
            return None
        names = self.spec.config.get("apiKeyEnvar") or " or ".join(self.key_names)
        return f"API key is not set: set {names} or config.apiKey for provider {self.id}"

    def env_value(self, *names: str) -> str | None:
        for name in names:
            value = self.env.get(name)
            if value:
                return value
        return None

    async def call(self, prompt: str, context: CallContext | None = None) -> ProviderResponse:
        """Send a prompt; subclasses implement `_call`, this adds the concurrency bound and timing."""
        context = context or CallContext()
        prompt = well_formed(prompt)
        key = self._cache_key(_text_request(prompt, context)) if self.reuses_replies(context) else None
        if key is not None and self.cache is not None and (hit := self.cache.get(key, ProviderResponse)) is not None:
            return _from_cache(hit)
        started = time.perf_counter()
        async with admitted(self, prompt) as bill, self._slot():
            try:
                response = await (again_if_empty(lambda: self._call(prompt, context)) if self.cacheable else self._call(prompt, context))
            except NotSupportedError:
                raise
            except ProviderError as exc:  # the call could not be made (a chat prompt that is not valid JSON)
                response = ProviderResponse(error=str(exc))
            except Exception as exc:  # a provider bug must not crash the run
                response = ProviderResponse(error=f"{type(exc).__name__}: {exc}")
            bill(response.cost, response.token_usage, response.error, response.output)
        if not response.latency_ms:
            response.latency_ms = (time.perf_counter() - started) * 1000
        if key is not None and self.cache is not None and not response.error and response.output not in (None, ""):
            self.cache.put(key, response.model_dump(mode="json"))
        return response

    def cached_reply(self, prompt: str, context: CallContext | None = None) -> ProviderResponse | None:
        """The reply the response cache holds for this call, if any (what `call` would return free)."""
        context = context or CallContext()
        key = self._cache_key(_text_request(well_formed(prompt), context)) if self.reuses_replies(context) else None
        return None if key is None or self.cache is None else self.cache.get(key, ProviderResponse)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        raise NotSupportedError(f"{self.id} does not generate text")

    async def embed(self, text: str) -> EmbeddingResponse:
        text = well_formed(text)
        key = self._cache_key({"kind": "embedding", "text": text})
        if key is not None and self.cache is not None and (cached := self.cache.get(key, EmbeddingResponse)) is not None:
            cached.token_usage = TokenUsage(cached=cached.token_usage.total, total=cached.token_usage.total)
            cached.cost = 0.0
            return cached
        async with admitted(self, text) as bill, self._slot():
            try:
                response = await self._embed(text)
            except NotSupportedError:
                raise
            except Exception as exc:
                response = EmbeddingResponse(error=f"{type(exc).__name__}: {exc}")
            bill(response.cost, response.token_usage, response.error, "" if response.embedding else None)
        if key is not None and self.cache is not None and not response.error and response.embedding:
            self.cache.put(key, response.model_dump(mode="json"))
        return response

    async def _embed(self, text: str) -> EmbeddingResponse:
        raise NotSupportedError(f"{self.id} does not provide embeddings")

    compares: ClassVar[bool] = False
    """Whether `similarity` scores two texts itself (served as an embedding grader, for `similar`)."""

    async def similarity(self, expected: str, output: str) -> SimilarityResponse:
        async with admitted(self, expected + output) as bill, self._slot():
            try:
                response = await self._similarity(well_formed(expected), well_formed(output))
            except NotSupportedError:
                raise
            except Exception as exc:
                response = SimilarityResponse(error=f"{type(exc).__name__}: {exc}")
            bill(None, None, response.error, response.similarity)
        return response

    async def _similarity(self, expected: str, output: str) -> SimilarityResponse:
        raise NotSupportedError(f"{self.id} does not compare texts")

    async def moderate(self, prompt: str, output: str) -> ModerationResponse:
        async with admitted(self, prompt + output) as bill, self._slot():
            try:
                response = await self._moderate(well_formed(prompt), well_formed(output))
            except NotSupportedError:
                raise
            except Exception as exc:
                response = ModerationResponse(error=f"{type(exc).__name__}: {exc}")
            bill(None, response.token_usage, response.error, response.flags)
        return response

    async def _moderate(self, prompt: str, output: str) -> ModerationResponse:
        raise NotSupportedError(f"{self.id} does not moderate")

    async def classify(self, text: str) -> ClassificationResponse:
        async with admitted(self, text) as bill, self._slot():
            try:
                response = await self._classify(well_formed(text))
            except NotSupportedError:
                raise
            except Exception as exc:
                response = ClassificationResponse(error=f"{type(exc).__name__}: {exc}")
            bill(None, None, response.error, response.classification)
        return response

    async def _classify(self, text: str) -> ClassificationResponse:
        raise NotSupportedError(f"{self.id} does not classify")

    async def aclose(self) -> None:
        """Release the provider's HTTP client."""


_NO_SLOT: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()


def _text_request(prompt: str, context: CallContext) -> dict[str, Any]:
    """What identifies a text call in the response cache."""
    request = {"kind": "text", "prompt": prompt, "schema": context.response_schema}
    return {**request, "logprobs": True} if context.logprobs else request


def _from_cache(response: ProviderResponse) -> ProviderResponse:
    """A stored reply marked as cached: no new cost, its tokens counted as cached, no latency."""
    response.cached = True
    response.cost = 0.0
    response.latency_ms = 0.0
    response.token_usage = TokenUsage(cached=response.token_usage.total, total=response.token_usage.total)
    return response


def parse_chat_messages(prompt: str, *, strict: bool = True) -> list[dict[str, Any]]:
    """A prompt that is a JSON (or YAML) chat-message array -> messages; anything else -> one user message.

    `strict` (promptfoo's `parseChatPrompt`, used by chat APIs): a prompt that looks like a JSON
    array but does not parse, or starts like YAML messages (`- role:`) but does not parse, raises
    ProviderError rather than going out as one user message."""
    stripped = prompt.strip()
    if stripped.startswith("- role:"):
        import yaml

        from ci_grade.config.yaml12 import loads

        try:
            data = loads(stripped)
        except yaml.YAMLError as exc:
            if strict:
                raise ProviderError(f"Chat Completion prompt is not a valid YAML string: {exc}\n\n{prompt}") from None
            data = None
        if _is_messages(data):
            return cast(list[dict[str, Any]], data)
    elif stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            if strict and _looks_like_json_array(stripped):
                raise ProviderError(f"Chat Completion prompt is not a valid JSON string: {exc}\n\n{prompt}") from None
            data = None
        if _is_messages(data):
            return cast(list[dict[str, Any]], data)
    return [{"role": "user", "content": prompt}]


_JSON_ARRAY_START = re.compile(r'["{\[\d-]|true|false|null')


def _looks_like_json_array(text: str) -> bool:
    """promptfoo's test for an array meant as JSON: `[...]` whose first item starts like a JSON
    value (so `[INST] ... [/INST]` is text)."""
    return text.endswith("]") and _JSON_ARRAY_START.match(text[1:].lstrip()) is not None


def _is_messages(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(isinstance(m, dict) and "role" in m for m in data)


class ModelProvider(Provider):
    """A provider of the one model its id names (`family:<model>`); mixed in before a family's base
    (`class X(ModelProvider, HttpApiProvider)`)."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._model = model

    @property
    def model(self) -> str:
        return self._model
