"""Hugging Face Inference API tasks: `huggingface:<task>:<model>` (or `hf:`), as promptfoo calls them.

A call POSTs JSON to `{base}/models/<model>` (base: `HF_API_BASE_URL`, default the public
serverless endpoint) or to `config.apiEndpoint` when set (a dedicated Inference Endpoint), with
`config.apiKey` / `HF_TOKEN` / `HF_API_TOKEN` as a bearer token. The tasks:

- `text-generation`: `{inputs, parameters}` (`return_full_text` false unless set, and the
  generation keys in `GENERATION_KEYS`); the output is `generated_text`. With
  `config.chatCompletion` (or an `apiEndpoint` containing `/v1/chat`) it is a Chat Completions
  call at that endpoint instead (`max_new_tokens` as `max_tokens`).
- `text-classification`: `{inputs}` (and `parameters` / `options` when set); `[[{label, score}]]`
  becomes `{label: score}`.
- `token-classification`: `{inputs, parameters: {aggregation_strategy}, options}`; the highest
  score of each `entity_group` (PII detection with `classifier` / `not-classifier`).
- `feature-extraction`: `{inputs, options}`; the vector is the embedding (for `similar`).
- `sentence-similarity`: `{inputs: {source_sentence, sentences: [output]}, options}`; the score is
  the similarity itself (for `similar`).

As a target, a classifier's scores as a JSON object string are the output. A 503 "model is
loading" reply is retried after its `estimated_time` (bounded by the retry policy's maximum wait).
(`huggingface:chat:<model>` is the OpenAI-compatible router, served by `compatible`.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.base import (
    CallContext,
    Capability,
    ClassificationResponse,
    EmbeddingResponse,
    ModelProvider,
    Provider,
    ProviderResponse,
    SimilarityResponse,
)
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.retry import retry_after_seconds
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://router.huggingface.co/hf-inference"
GENERATION_KEYS = ("top_k", "top_p", "temperature", "repetition_penalty", "max_new_tokens", "max_time", "return_full_text",
                   "num_return_sequences", "do_sample", "use_cache", "wait_for_model")


class HuggingFaceProvider(ModelProvider, HttpApiProvider):
    """One Inference API task on one model: endpoint, token and the "model is loading" wait."""

    key_names = ("HF_TOKEN", "HF_API_TOKEN")
    task: ClassVar[str] = ""

    def describe(self) -> str:
        return f"huggingface:{self.task}:{self._model}"

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "url": self.url()}

    def url(self) -> str:
        endpoint = self.spec.config.get("apiEndpoint")
        if endpoint:
            return str(endpoint)
        base = self.env_value("HF_API_BASE_URL") or DEFAULT_BASE_URL
        return f"{base.rstrip('/')}/models/{self._model}"

    def headers(self) -> dict[str, str]:
        token = self.api_key()
        return {"Authorization": f"Bearer {token}"} if token else {}

    def retry_after(self, response: httpx.Response) -> float | None:
        waited = retry_after_seconds(response.headers)
        if waited is not None:
            return waited
        try:
            estimate = response.json().get("estimated_time")
        except (ValueError, AttributeError):
            return None
        return float(estimate) if isinstance(estimate, int | float) and math.isfinite(estimate) else None

    def options(self, **defaults: Any) -> dict[str, Any]:
        """`use_cache` / `wait_for_model` as configured, over `defaults`."""
        chosen = {**defaults, **{key: self.spec.config[key] for key in ("use_cache", "wait_for_model") if self.spec.config.get(key) is not None}}
        return {key: value for key, value in chosen.items() if value is not None}

    async def ask(self, body: dict[str, Any], read: Callable[[Any], Any], shape: str) -> Any:
        """POST `body`; the reply read by `read` (None: not the task's shape, an error naming `shape`)."""
        data = await self.post_json(self.url(), body, self.headers(), check=lambda reply: None if read(reply) is not None else f"API reply is not {shape}")
        return read(data)


class HuggingFaceClassificationProvider(HuggingFaceProvider):
    """`huggingface:text-classification:<model>`: label scores for a text."""

    task = "text-classification"
    shape: ClassVar[str] = "{label, score}"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"classification", "text"})

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        """As a target, the output is the label scores as a JSON object string (as in promptfoo)."""
        result = await self._classify(prompt)
        if result.error:
            return ProviderResponse(error=result.error)
        return ProviderResponse(output=json.dumps(result.classification), token_usage=TokenUsage(num_requests=1))

    def body(self, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {"inputs": text}
        for key in ("parameters", "options"):
            if isinstance(self.spec.config.get(key), dict):
                body[key] = self.spec.config[key]
        return body

    def read(self, data: Any) -> dict[str, float] | None:
        return _label_scores(data)

    async def _classify(self, text: str) -> ClassificationResponse:
        try:
            scores = await self.ask(self.body(text), self.read, f"a list of {self.shape}")
        except ProviderError as exc:
            return ClassificationResponse(error=str(exc))
        return ClassificationResponse(classification=scores)


class HuggingFaceTokenClassificationProvider(HuggingFaceClassificationProvider):
    """`huggingface:token-classification:<model>`: the highest score of each entity group (e.g. PII kinds)."""

    task = "token-classification"
    shape = "{entity_group, score}"

    def body(self, text: str) -> dict[str, Any]:
        strategy = self.spec.config.get("aggregation_strategy") or "simple"
        return {"inputs": text, "parameters": {"aggregation_strategy": strategy}, "options": self.options(use_cache=True, wait_for_model=False)}

    def read(self, data: Any) -> dict[str, float] | None:
        return _entity_scores(data)


class HuggingFaceTextGenerationProvider(HuggingFaceProvider):
    """`huggingface:text-generation:<model>`: the generated text."""

    task = "text-generation"

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        config = self.spec.config
        parameters = {"return_full_text": config.get("return_full_text", False), **{k: config[k] for k in GENERATION_KEYS if k in config}}
        try:
            text = await self.ask({"inputs": prompt, "parameters": parameters}, _generated_text, "[{generated_text}]")
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))
        return ProviderResponse(output=text, token_usage=TokenUsage(num_requests=1))


class HuggingFaceFeatureExtractionProvider(HuggingFaceProvider):
    """`huggingface:feature-extraction:<model>`: a text's embedding."""

    task = "feature-extraction"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"embedding"})

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        return ProviderResponse(error=f"{self.describe()} is a feature extraction model: use it as an embedding grader (e.g. for `similar`)")

    async def _embed(self, text: str) -> EmbeddingResponse:
        try:
            vector = await self.ask({"inputs": text, "options": self.options()}, _vector, "a list of numbers")
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        return EmbeddingResponse(embedding=vector, token_usage=TokenUsage(num_requests=1))


class HuggingFaceSentenceSimilarityProvider(HuggingFaceProvider):
    """`huggingface:sentence-similarity:<model>`: the model's similarity of two texts (for `similar`)."""

    task = "sentence-similarity"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"embedding"})
    compares = True

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        return ProviderResponse(error=f"{self.describe()} is a sentence similarity model: use it as the grader of `similar`")

    async def _similarity(self, expected: str, output: str) -> SimilarityResponse:
        body = {"inputs": {"source_sentence": expected, "sentences": [output]}, "options": self.options()}
        try:
            scores = await self.ask(body, _scores, "a list of scores")
        except ProviderError as exc:
            return SimilarityResponse(error=str(exc))
        return SimilarityResponse(similarity=scores[0])


TASKS: dict[str, type[HuggingFaceProvider]] = {
    provider.task: provider
    for provider in (HuggingFaceTextGenerationProvider, HuggingFaceClassificationProvider, HuggingFaceTokenClassificationProvider,
                     HuggingFaceFeatureExtractionProvider, HuggingFaceSentenceSimilarityProvider)
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _generated_text(data: Any) -> str | None:
    item = data[0] if isinstance(data, list) and data else data
    text = item.get("generated_text") if isinstance(item, dict) else None
    return text if isinstance(text, str) else None


def _vector(data: Any) -> list[float] | None:
    """A vector, or the one vector of a batch of one (`[[...]]`)."""
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list):
        data = data[0]
    return [float(v) for v in data] if isinstance(data, list) and data and all(_number(v) for v in data) else None


def _scores(data: Any) -> list[float] | None:
    return [float(v) for v in data] if isinstance(data, list) and data and all(_number(v) for v in data) else None


def _entity_scores(data: Any) -> dict[str, float] | None:
    """`[{entity_group, score, word, start, end}, ...]` -> the highest score per group (`{}` for none found)."""
    if not isinstance(data, list):
        return None
    scores: dict[str, float] = {}
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("entity_group"), str) or not _number(item.get("score")):
            return None
        group = item["entity_group"]
        scores[group] = max(scores.get(group, float("-inf")), float(item["score"]))
    return scores


def _label_scores(data: Any) -> dict[str, float] | None:
    """`[[{label, score}, ...]]` (or the flat list some endpoints return) -> {label: score}."""
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list):
        data = data[0]
    if not isinstance(data, list) or not data:
        return None
    scores: dict[str, float] = {}
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("label"), str) or not isinstance(item.get("score"), int | float):
            return None
        if isinstance(item["score"], bool) or not math.isfinite(item["score"]):
            return None
        scores[item["label"]] = float(item["score"])
    return scores


def check_id(provider_id: str) -> str | None:
    """Why ci-grade cannot run this Hugging Face id (a task it does not run, no model), or None."""
    parts = provider_id.split(":", 2)
    task = parts[1] if len(parts) > 1 else ""
    if task not in TASKS:
        return (f"{provider_id}: Hugging Face task {task!r} is not supported by ci-grade; it runs huggingface:chat:<model> (the "
                f"OpenAI-compatible router) and {', '.join(f'huggingface:{t}:<model>' for t in TASKS)}")
    if len(parts) < 3 or not parts[2]:
        return f"{provider_id}: name a model, e.g. huggingface:text-classification:ProtectAI/deberta-v3-base-prompt-injection-v2"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> Provider:
    """`huggingface:<task>:<model>` / `hf:<task>:<model>` for the tasks in `TASKS`; text generation
    in the chat format (`config.chatCompletion`, or an `apiEndpoint` with `/v1/chat` in it) goes
    to the OpenAI-compatible chat family at that endpoint, as promptfoo sends it."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    _, task, model = spec.id.split(":", 2)
    config = spec.config
    chat = config.get("chatCompletion") if config.get("chatCompletion") is not None else "/v1/chat" in str(config.get("apiEndpoint") or "")
    if task == "text-generation" and chat:
        from ci_grade.providers.compatible import CompatibleProvider, parse_id

        tokens = {"max_tokens": config["max_new_tokens"]} if config.get("max_new_tokens") is not None and config.get("max_tokens") is None else {}
        chat_config = {**config, **tokens}
        return CompatibleProvider(spec.model_copy(update={"config": chat_config}), env, parse_id(f"huggingface:chat:{model}", chat_config), max_concurrency)
    return TASKS[task](spec, env, model, max_concurrency)
