"""Base class for providers that speak JSON over HTTP through one shared `httpx.AsyncClient`.

The client is created on first use and closed by `aclose()`. Requests go through ci-grade's retry
policy: 408/409/425/429/5xx/529 responses, timeouts and dropped connections are retried (honouring
`Retry-After`); anything else becomes an `ProviderError` whose message names the status and the
server's own explanation, never the request's credentials.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import Provider
from ci_grade.providers.retry import RETRYABLE_STATUS, RetryPolicy, retry_after_seconds, with_retries

DEFAULT_TIMEOUT_SECONDS = 300.0
EXCERPT_CHARS = 300


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_detail(body: Any) -> str | None:
    """The human message inside a JSON error body, in the shapes vendors use."""
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            return str(error.get("message") or error.get("type") or json.dumps(error))
        if error is not None:
            return str(error)
    return None


class HttpApiProvider(Provider):
    """A provider with one lazily created `httpx.AsyncClient` and retrying request helpers."""

    cacheable = True
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int = 16):
        super().__init__(spec, env, max_concurrency)
        self._http: httpx.AsyncClient | None = None
        configured = spec.config.get("timeout")
        self._timeout = float(configured) if configured is not None else self.timeout_seconds

    def http(self) -> httpx.AsyncClient:
        """The provider's one client (keep-alive connections are shared by all its calls)."""
        if self._http is None:
            limits = httpx.Limits(max_connections=self._max_concurrency, max_keepalive_connections=self._max_concurrency)
            self._http = httpx.AsyncClient(timeout=self._timeout, limits=limits)
        return self._http

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy.from_env()

    def retry_after(self, response: httpx.Response) -> float | None:
        """How long the server asked us to wait before retrying `response`."""
        return retry_after_seconds(response.headers)

    def error_message(self, response: httpx.Response) -> str:
        try:
            detail = error_detail(response.json())
        except ValueError:
            detail = None
        text = detail or excerpt(response.text) or response.reason_phrase
        return f"API error {response.status_code}: {text}"

    async def send(self, method: str, url: str, *, ok_status: range = range(200, 300), **kwargs: Any) -> httpx.Response:
        """One request with retries; a response outside `ok_status` after retries is an ProviderError."""
        policy = self.retry_policy()

        async def attempt() -> httpx.Response:
            try:
                response = await self.http().request(method, url, **kwargs)
            except httpx.TimeoutException:
                raise TransientError(f"request timed out after {self._timeout:g}s") from None
            except (httpx.LocalProtocolError, httpx.UnsupportedProtocol) as exc:
                raise ProviderError(f"invalid request: {exc}") from None
            except httpx.TransportError as exc:
                raise TransientError(f"connection failed: {type(exc).__name__}: {exc}") from None
            if response.status_code in ok_status:
                return response
            if response.status_code in RETRYABLE_STATUS:
                raise TransientError(self.error_message(response), self.retry_after(response))
            raise ProviderError(self.error_message(response))

        try:
            return await with_retries(attempt, policy)
        except TransientError as exc:
            attempts = "attempt" if policy.attempts == 1 else "attempts"
            raise ProviderError(f"{exc} (gave up after {policy.attempts} {attempts})") from None

    async def post_json(self, url: str, body: Any, headers: Mapping[str, str] | None = None) -> Any:
        """POST `body` as JSON and return the parsed JSON reply (an ProviderError if it is not JSON)."""
        response = await self.send("POST", url, json=body, headers=dict(headers or {}))
        try:
            return response.json()
        except ValueError:
            raise ProviderError(f"API returned a body that is not JSON (status {response.status_code}): {excerpt(response.text, 120)!r}") from None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
