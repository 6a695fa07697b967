"""`webhook:<url>`: the prompt POSTed to a URL, as promptfoo 0.123.1 sends it.

The body is `{"prompt": <prompt>}`, with `"config": <the provider's config>` when it has one; the
reply must be JSON with a string `output`, which is the row's output (anything else is the
row's ERROR, `Webhook response error: Unexpected response format: ...`). Failures are retried
as every HTTP API's are (429, 5xx, a dropped connection); the response cache serves repeats.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, UnknownProviderError
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.http_api import HttpApiProvider, excerpt


class WebhookProvider(HttpApiProvider):
    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self.url = spec.id.removeprefix("webhook:")

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "url": self.url}

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        body: dict[str, Any] = {"prompt": prompt, **({"config": self.spec.config} if self.spec.config else {})}
        try:
            data = await self.post_json(self.url, body)
        except ProviderError as exc:
            return ProviderResponse(error=f"Webhook call error: {exc}")
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            return ProviderResponse(output=data["output"])
        return ProviderResponse(error=f"Webhook response error: Unexpected response format: {excerpt(str(data), 300)}")


def check_id(provider_id: str) -> str | None:
    """A webhook id must name an http(s) URL."""
    url = provider_id.removeprefix("webhook:")
    return None if url.startswith(("http://", "https://")) else f"{provider_id}: a webhook provider is written webhook:<http(s) URL>"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> WebhookProvider:
    if problem := check_id(spec.id):
        raise UnknownProviderError(problem)
    return WebhookProvider(spec, env, max_concurrency)
