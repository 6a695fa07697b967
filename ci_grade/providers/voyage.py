"""Voyage AI embeddings, `voyage:<model>` (for `similar` and other embedding graders), over httpx.

One POST to `{base}/embeddings` with `{input: [text], model}` as promptfoo 0.123.1 sends it; the
base is `config.apiBaseUrl` or VOYAGE_API_BASE_URL, else `https://api.voyageai.com/v1`; the key
is `config.apiKey`, the variable `config.apiKeyEnvar` names, else VOYAGE_API_KEY; `headers` are
added. Tokens are the reply's `usage.total_tokens`; promptfoo 0.123.1 has no Voyage prices, so
the cost is known only from `config.cost`/`inputCost`.
The `voyageai` SDK is not used: it adds aiohttp, numpy, Pillow and langchain-text-splitters for
this one request, and retries inside its own client, out of sight of ci-grade's retry policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import Capability, EmbeddingResponse, ModelProvider
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.pricing import estimate_cost
from ci_grade.results.usage import TokenUsage

DEFAULT_BASE_URL = "https://api.voyageai.com/v1"


class VoyageEmbeddingProvider(ModelProvider, HttpApiProvider):
    """`voyage:<model>`: embeddings only."""

    capabilities = frozenset({"embedding"})
    key_names = ("VOYAGE_API_KEY",)

    def supports(self, kind: Capability) -> bool:
        return kind == "embedding"

    def url(self) -> str:
        return str(self.spec.config.get("apiBaseUrl") or self.env_value("VOYAGE_API_BASE_URL") or DEFAULT_BASE_URL).rstrip("/") + "/embeddings"

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "url": self.url()}

    async def _embed(self, text: str) -> EmbeddingResponse:
        if error := self.missing_key_error():
            return EmbeddingResponse(error=error)
        headers = {"Authorization": f"Bearer {self.api_key()}", **{str(k): str(v) for k, v in (self.spec.config.get("headers") or {}).items()}}
        try:
            data = await self.post_json(self.url(), {"input": [text], "model": self._model}, headers, check=_missing_embedding)
        except ProviderError as exc:
            return EmbeddingResponse(error=str(exc))
        tokens = int((data.get("usage") or {}).get("total_tokens") or 0)
        cost = estimate_cost(self._model, self.spec.config, tokens, 0, family="voyage")
        return EmbeddingResponse(embedding=[float(x) for x in data["data"][0]["embedding"]], token_usage=TokenUsage.of(tokens, 0), cost=cost)


def _missing_embedding(data: Any) -> str | None:
    """What a 200 reply lacks (retried): `data[0].embedding`."""
    rows = data.get("data") if isinstance(data, dict) else None
    if isinstance(rows, list) and rows and isinstance(rows[0], dict) and isinstance(rows[0].get("embedding"), list) and rows[0]["embedding"]:
        return None
    return "No embedding found in Voyage embeddings API response"


def check_id(provider_id: str) -> str | None:
    """Why `provider_id` cannot be served: it names no model."""
    model = provider_id.split(":")[1] if ":" in provider_id else ""
    return None if model else "name a model, e.g. voyage:voyage-3-large"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> VoyageEmbeddingProvider:
    """`voyage:<model>` (promptfoo takes the second `:`-separated part as the model)."""
    return VoyageEmbeddingProvider(spec, env, spec.id.split(":")[1], max_concurrency)
