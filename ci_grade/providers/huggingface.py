"""Hugging Face Inference API text classification: `huggingface:text-classification:<model>` (or `hf:`).

A call POSTs `{"inputs": text}` to `{base}/models/<model>` (base: `HF_API_BASE_URL`, default the
public serverless endpoint) or to `config.apiEndpoint` when set (a dedicated Inference Endpoint),
with `HF_API_TOKEN` / `HF_TOKEN` / `config.apiKey` as a bearer token. The `[[{label, score}]]`
reply becomes `{label: score}`; used as a target, that mapping as a JSON string is the output.
A 503 "model is loading" reply is retried after its `estimated_time` (bounded by the retry
policy's maximum wait).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.base import CallContext, Capability, ClassificationResponse, ProviderResponse
from ci_grade.providers.http_api import HttpApiProvider, excerpt
from ci_grade.providers.retry import retry_after_seconds
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://router.huggingface.co/hf-inference"
TASKS = ("text-classification",)


class HuggingFaceClassificationProvider(HttpApiProvider):
    """`huggingface:text-classification:<model>`: label scores for a text."""

    key_names = ("HF_API_TOKEN", "HF_TOKEN")

    capabilities: ClassVar[frozenset[Capability]] = frozenset({"classification", "text"})

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], model: str, max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    def describe(self) -> str:
        return f"huggingface:text-classification:{self._model}"

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

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        """As a target, the output is the label scores as a JSON object string (as in promptfoo)."""
        result = await self._classify(prompt)
        if result.error:
            return ProviderResponse(error=result.error)
        return ProviderResponse(output=json.dumps(result.classification), token_usage=TokenUsage(num_requests=1))

    async def _classify(self, text: str) -> ClassificationResponse:
        body: dict[str, Any] = {"inputs": text}
        for key in ("parameters", "options"):
            if isinstance(self.spec.config.get(key), dict):
                body[key] = self.spec.config[key]
        try:
            data = await self.post_json(self.url(), body, self.headers(), check=lambda reply: None if _label_scores(reply) is not None else "API reply is not a list of {label, score}")
        except ProviderError as exc:
            return ClassificationResponse(error=str(exc))
        scores = _label_scores(data)
        if scores is None:
            return ClassificationResponse(error=f"API reply is not a list of {{label, score}}: {excerpt(str(data), 200)}")
        return ClassificationResponse(classification=scores)


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
    """Why ci-grade cannot run this Hugging Face id (a task it does not run, no model), or None.
    (`huggingface:chat:<model>` is the OpenAI-compatible router, served by `compatible`.)"""
    parts = provider_id.split(":", 2)
    task = parts[1] if len(parts) > 1 else ""
    if task not in TASKS:
        return (f"{provider_id}: Hugging Face task {task!r} is not supported by ci-grade; it runs huggingface:chat:<model> (the "
                f"OpenAI-compatible router, for text generation) and {', '.join(f'huggingface:{t}:<model>' for t in TASKS)}")
    if len(parts) < 3 or not parts[2]:
        return f"{provider_id}: name a model, e.g. huggingface:text-classification:ProtectAI/deberta-v3-base-prompt-injection-v2"
    return None


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> HuggingFaceClassificationProvider:
    """`huggingface:<task>:<model>` / `hf:<task>:<model>`; only text classification is offered."""
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    return HuggingFaceClassificationProvider(spec, env, spec.id.split(":", 2)[2], max_concurrency)
