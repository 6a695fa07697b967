"""Base class for providers that speak JSON over HTTP through one shared `httpx.AsyncClient`.

The client (httpx on aiohttp, `http_clients.api_http_client`) is created on first use and closed
by `aclose()`. Requests go through ci-grade's retry policy: 408/409/425/429/5xx/529 responses,
timeouts, dropped connections and 200 replies whose JSON is malformed, empty or lacks what the
caller needs are retried (honouring `Retry-After`);
anything else becomes a `ProviderError` whose message names the status and the server's own
explanation, never the request's credentials. JSON bodies are decoded leniently: invalid UTF-8
inside a string becomes U+FFFD instead of failing the call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import Provider
from ci_grade.providers.http_clients import api_http_client, failure
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    Liveness,
    RetryPolicy,
    call_timeout,
    retry_after_seconds,
    with_retries,
)
from ci_grade.providers.tls import trust_failure

if TYPE_CHECKING:
    import httpx  # imported on first use: an eval that calls no HTTP API never loads it

EXCERPT_CHARS = 300
T = TypeVar("T")


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def json_body(response: httpx.Response) -> Any:
    """The reply's JSON (invalid UTF-8 read as U+FFFD); a malformed or empty body is a TransientError."""
    text = response.text
    if not text.strip():
        raise TransientError(f"API returned an empty body (status {response.status_code})")
    try:
        return json.loads(text)
    except ValueError:
        raise TransientError(f"API returned a body that is not JSON (status {response.status_code}): {excerpt(text, 120)!r}") from None


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
    adaptive = True

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._http: httpx.AsyncClient | None = None
        self._timeout = call_timeout(spec.config)
        self.liveness = Liveness()

    def http(self) -> httpx.AsyncClient:
        """The provider's one client (keep-alive connections are shared by all its calls)."""
        if self._http is None:
            self._http = api_http_client(self._timeout, self.limiter.ceiling)
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

    async def send(self, method: str, url: str, *, read: Callable[[httpx.Response], T], ok_status: range = range(200, 300), **kwargs: Any) -> T:
        """One request with retries, its reply turned into a value by `read` (which may raise
        TransientError for a reply worth asking again); failing for good is a ProviderError."""
        import aiohttp
        import httpx

        policy = self.retry_policy()

        async def attempt() -> T:
            try:
                response = await self.http().request(method, url, **kwargs)
            except (httpx.LocalProtocolError, httpx.UnsupportedProtocol, ValueError) as exc:  # aiohttp: ValueError for a header it will not send
                raise ProviderError(f"invalid request: {type(exc).__name__}: {exc}") from None
            except (httpx.TransportError, aiohttp.ClientError) as exc:  # aiohttp's own: a reply it could not read
                if refused := trust_failure(exc):
                    raise ProviderError(refused) from None
                failed = failure(exc, timeout=isinstance(exc, httpx.TimeoutException))
                if failed is None:
                    raise TransientError(f"request timed out after {self._timeout:g}s", timeout=True) from None
                raise TransientError(f"connection failed: {type(failed).__name__}: {failed}") from None
            self.liveness.answered()
            if response.status_code in ok_status:
                return read(response)
            if response.status_code in RETRYABLE_STATUS:
                raise TransientError(self.error_message(response), self.retry_after(response), status=response.status_code)
            raise ProviderError(self.error_message(response))

        try:
            return await with_retries(attempt, policy, self._timeout, liveness=self.liveness, limiter=self.limiter)
        except TransientError as exc:
            attempts = "attempt" if policy.attempts == 1 else "attempts"
            raise ProviderError(f"{exc} (gave up after {policy.attempts} {attempts})") from None

    async def post_json(self, url: str, body: Any, headers: Mapping[str, str] | None = None, check: Callable[[Any], str | None] | None = None) -> Any:
        """POST `body` as JSON and return the parsed JSON reply. A reply that is not JSON, or
        that `check` finds wanting (it returns what is missing), is retried, then a ProviderError."""

        def read(response: httpx.Response) -> Any:
            data = json_body(response)
            problem = check(data) if check is not None else None
            if problem:
                raise TransientError(f"{problem}: {excerpt(str(data), 200)}")
            return data

        return await self.send("POST", url, read=read, json=body, headers=dict(headers or {}))

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
