"""The HTTP clients providers call through: maintained libraries on aiohttp, used by their public APIs.

- OpenAI and Azure: the SDK's documented aiohttp client, `openai.DefaultAioHttpClient`
  (`openai[aiohttp]`), under `AsyncOpenAI` / `AsyncAzureOpenAI`.
- HTTP API providers (Anthropic, Ollama, Hugging Face, `http`, ...): httpx on aiohttp,
  `httpx_aiohttp.HttpxAiohttpClient`.
Both were chosen over the libraries' default transports by measurement (`bench/client_choice.py`,
figures in `bench/README.md`): at 32 calls in flight they take half the CPU per call and keep up
with the server's latency. Both end a call that gets no answer at the timeout they are given,
route through `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY` as httpx reads them (honouring
`NO_PROXY`; loopback is proxied too unless `NO_PROXY` names it) and trust what `tls.context`
trusts (certifi, or `SSL_CERT_FILE` / `SSL_CERT_DIR`). CA certificates that cannot be used are
a `ProviderError` naming them when the client is made: retrying cannot fix them. Cookies an API
sets are sent back to it, as by any aiohttp or httpx client (promptfoo's `fetch` keeps none).
"""

from __future__ import annotations

import functools
import ssl
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ci_grade.errors import ProviderError
from ci_grade.gc_pause import collector_paused
from ci_grade.providers import tls

if TYPE_CHECKING:
    import httpx

KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept for reuse (httpx's default). A NAT or load balancer on the
way may forget a quiet flow without telling either end (Azure's default: after 4 minutes, no
reset); a request written on such a connection is never answered and waits out its timeout."""
SDK_MAX_CONNECTIONS = 1000
SDK_MAX_IDLE = 100
"""The OpenAI SDK's own connection limits (each provider's `Limiter` bounds the calls in flight)."""


@functools.cache
def sdk() -> ModuleType:
    """The `openai` package, imported on first use. The import creates some 200,000 objects and
    no garbage: the cyclic collector is paused meanwhile."""
    with collector_paused():
        import openai
    return openai


def _trust() -> ssl.SSLContext:
    try:
        return tls.context()
    except tls.TrustStoreError as exc:
        raise ProviderError(str(exc)) from None


def sdk_http_client(timeout: float) -> Any:
    """An `http_client` for `AsyncOpenAI` / `AsyncAzureOpenAI`: the SDK's aiohttp client with
    its defaults, `timeout` seconds for each connect, read and pool wait, and ci-grade's trust store."""
    import httpx2  # the SDK's HTTP library (its `http_client` is an `httpx2.AsyncClient`)

    limits = httpx2.Limits(max_connections=SDK_MAX_CONNECTIONS, max_keepalive_connections=SDK_MAX_IDLE, keepalive_expiry=KEEPALIVE_EXPIRY)
    return sdk().DefaultAioHttpClient(timeout=timeout, limits=limits, verify=_trust())


def api_http_client(timeout: float, max_connections: int) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` on aiohttp for an HTTP API provider with at most `max_connections`
    calls in flight, `timeout` seconds for each connect, read and pool wait."""
    import httpx
    from httpx_aiohttp import HttpxAiohttpClient

    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections, keepalive_expiry=KEEPALIVE_EXPIRY)
    return HttpxAiohttpClient(timeout=timeout, limits=limits, verify=_trust())



def failure(exc: BaseException, *, timeout: bool) -> BaseException | None:
    """What a call through these clients failed on, to report; None when it timed out. `timeout`:
    whether the client reported `exc` as a timeout. httpx-aiohttp (and the SDK's aiohttp client,
    built on it) reports every aiohttp connection error as `ConnectTimeout`, a refused or dropped
    connection too, raised from aiohttp's own error: the first of aiohttp's (or the system's)
    errors that `exc` was raised from decides, and is what is reported."""
    import aiohttp

    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, aiohttp.ClientError | OSError):
            return None if isinstance(cause, TimeoutError) else cause
        cause = cause.__cause__
    return None if timeout else exc
