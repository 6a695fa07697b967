"""fal.ai image generation, `fal:image:<model>`, over fal's queue API with httpx.

Read from promptfoo 0.123.1 (`src/providers/fal.ts`, which calls `@fal-ai/client`'s `subscribe`):
the input is `prompt` plus the config (less `apiKey`, `client` and ci-grade's own settings),
submitted with `POST {queue}/<model>` and `Authorization: Key <key>`; the request's status is read
at the `status_url` the reply names (every FAL_POLL_INTERVAL seconds, default 0.5) until it is
`COMPLETED` (one with an `error` is an ERROR), then the result at its `response_url`. The output
is the first image, `![<prompt>](<url>)`, from `images[0].url` or `image.url`. promptfoo gives no
cost for it; neither does ci-grade.

The key is `config.apiKey`, else FAL_KEY. The queue is `https://queue.fal.run`, or the host in
FAL_QUEUE_RUN_HOST (as the Python `fal-client` reads it; a value with a scheme is used as given).

The `fal-client` SDK is not used: it reads its host once at import, retries inside its own
transport and builds its own HTTP client, so ci-grade's retry policy (honouring `Retry-After`),
adaptive limit and trust store could not apply.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.base import CallContext, ModelProvider, ProviderResponse
from ci_grade.providers.http_api import HttpApiProvider, json_body
from ci_grade.providers.media import markdown_image

DEFAULT_QUEUE = "https://queue.fal.run"
NOT_INPUT = frozenset({"apiKey", "client", "timeout", "maxConcurrency", "delay", "cost", "transform", "headers"})


class FalImageProvider(ModelProvider, HttpApiProvider):
    key_names = ("FAL_KEY",)

    def describe(self) -> str:
        return f"fal:image:{self._model}"

    def queue_url(self) -> str:
        host = self.env_value("FAL_QUEUE_RUN_HOST")
        if not host:
            return DEFAULT_QUEUE
        return host.rstrip("/") if host.startswith(("http://", "https://")) else f"https://{host.rstrip('/')}"

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model": self._model, "url": self.queue_url()}

    def api_key(self) -> str | None:
        return str(self.spec.config["apiKey"]) if self.spec.config.get("apiKey") else self.env_value(*self.key_names)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if not self.api_key():
            return ProviderResponse(error="fal.ai API key is not set. Set the FAL_KEY environment variable or add `apiKey` to the provider config.")
        arguments = {"prompt": prompt, **{k: v for k, v in self.spec.config.items() if k not in NOT_INPUT}}
        try:
            result = await self._subscribe(arguments)
        except ProviderError as exc:
            return ProviderResponse(error=f"API call error: {exc}")
        images = result.get("images") if isinstance(result, dict) else None
        image = result.get("image") if isinstance(result, dict) else None
        url = images[0].get("url") if isinstance(images, list) and images and isinstance(images[0], dict) else None
        url = url or (image.get("url") if isinstance(image, dict) else None)
        if not isinstance(url, str) or not url:
            return ProviderResponse(error="Failed to resolve image URL.")
        return ProviderResponse(output=markdown_image(prompt, url), metadata={"requestId": result.get("request_id")} if result.get("request_id") else {})

    async def _subscribe(self, arguments: dict[str, Any]) -> Any:
        """Submit to the queue, wait until the request completes, and read its result."""
        headers = {"Authorization": f"Key {self.api_key()}"}
        handle = await self.post_json(f"{self.queue_url()}/{self._model}", arguments, headers, check=_not_a_handle)
        try:
            interval = max(0.0, float(self.env_value("FAL_POLL_INTERVAL") or 0.5))
        except ValueError:
            interval = 0.5
        deadline = time.monotonic() + self._timeout
        while True:
            status = await self.send("GET", handle["status_url"], read=json_body, headers=headers)
            state = status.get("status") if isinstance(status, dict) else None
            if state == "COMPLETED":
                if status.get("error"):
                    raise ProviderError(f"{status.get('error_type') or 'request failed'}: {status['error']}")
                break
            if state not in ("IN_QUEUE", "IN_PROGRESS"):
                raise ProviderError(f"unknown request status: {str(status)[:200]}")
            if time.monotonic() >= deadline:
                raise ProviderError(f"request {handle['request_id']} timed out: still {state} after {self._timeout:g}s")
            await asyncio.sleep(interval)
        return await self.send("GET", handle["response_url"], read=json_body, headers=headers)


def _not_a_handle(data: Any) -> str | None:
    """What a 2xx submit reply lacks (retried): the request's id and its status and result URLs."""
    if isinstance(data, dict) and all(isinstance(data.get(k), str) for k in ("request_id", "status_url", "response_url")):
        return None
    return "fal.ai reply is not a queued request"


def check_id(provider_id: str) -> str | None:
    """promptfoo's fal ids are `fal:image:<model>` only."""
    parts = provider_id.split(":")
    if len(parts) < 3 or parts[1] != "image":
        return f"invalid fal provider path {provider_id!r}: use fal:image:<model name>"
    return None if parts[2] else "name a model, e.g. fal:image:fal-ai/flux/schnell"


def create(spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None) -> FalImageProvider:
    """`fal:image:<model>` (the model is the part up to the next colon, as promptfoo splits it)."""
    return FalImageProvider(spec, env, spec.id.split(":")[2], max_concurrency)
