"""A WebSocket endpoint as a provider: ids `ws://...` and `wss://...`, through `websockets`' asyncio
client (the `ci-grade[websocket]` extra).

As promptfoo: each call opens a connection to `url` (else the id; a template over the test's vars
and `prompt`) with the config's `headers` and `protocols`, sends `messageTemplate` rendered over
the same vars, and reads replies until one settles the call:
- without `streamResponse`, the first message is the reply: its JSON (else its text) as `data`
  goes through `transformResponse` (a JavaScript expression of `data`, a function of it, or
  `file://x.js[:fn]` / `file://x.py:fn`); a result with `output` or `error` keys is taken as the
  response, anything else as the output;
- with `streamResponse`, `(accumulator, event, context) => [accumulator, done]` sees each message
  (`event.data` is its text) until `done`; the last accumulator is the response.

`timeoutMs` (else the call timeout) bounds the whole exchange. A refused connection, a handshake
answered 429 or 5xx (`Retry-After` honoured), a connection closed before the reply and a timeout
are tried again; other failures are an ERROR for the row. Replies are not cached: the message
depends on the test's vars.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Mapping
from typing import Any

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, ScriptError, TemplateError, TransientError
from ci_grade.providers import tls, transforms
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.providers.response_dict import response_from_dict
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    RetryPolicy,
    call_timeout,
    retry_after_seconds,
    with_retries,
)
from ci_grade.templating import nunjucks

MISSING_LIBRARY = "ws:// and wss:// providers need the websockets package: pip install 'ci-grade[websocket]'"
_STREAM_PARAMS = ("accumulator", "data", "context")


def check_spec(spec: ProviderSpec) -> str | None:
    """What in a WebSocket provider's settings ci-grade cannot run (asked before any call)."""
    config = spec.config
    template = config.get("messageTemplate")
    if not isinstance(template, str) or not template:
        return "config.messageTemplate is required (the message sent for each prompt)"
    try:
        nunjucks.check(template)
    except TemplateError as exc:
        return f"config.messageTemplate: {exc}"
    timeout = config.get("timeoutMs")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        return f"config.timeoutMs must be a positive number of milliseconds, got {timeout!r}"
    protocols = config.get("protocols")
    if protocols is not None and not (isinstance(protocols, str) or (isinstance(protocols, list) and all(isinstance(p, str) for p in protocols))):
        return "config.protocols must be a subprotocol name or a list of them"
    for key in ("transformResponse", "responseParser", "streamResponse"):
        if key in config and not isinstance(config[key], str):
            return f"config.{key} must be JavaScript code or a file:// reference"
    if importlib.util.find_spec("websockets") is None:
        return MISSING_LIBRARY
    return None


def _protocols(value: Any) -> list[str]:
    """promptfoo's: one name, a list, or comma-separated names."""
    values = [value] if isinstance(value, str) else list(value or [])
    return [name.strip() for item in values for name in str(item).split(",") if name.strip()]


def _response(value: Any) -> ProviderResponse:
    """promptfoo's `normalizeResponseTransformResult`: a mapping with `output` or `error` is a response."""
    if isinstance(value, dict) and ("output" in value or "error" in value):
        return response_from_dict(value, "the WebSocket reply")
    return ProviderResponse(output=value)


class WebSocketProvider(Provider):
    """Sends one templated message per call over a new connection and reads the reply."""

    adaptive = True

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        config = spec.config
        self._url = str(config.get("url") or spec.id)
        timeout_ms = config.get("timeoutMs")
        self._timeout = float(timeout_ms) / 1000 if timeout_ms else call_timeout(config)
        self._transform = config.get("transformResponse", config.get("responseParser"))
        self._stream = config.get("streamResponse")

    @functools.cached_property
    def _config_problem(self) -> str | None:
        return check_spec(self.spec)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        if problem := self._config_problem:
            return ProviderResponse(error=f"provider {self.id}: {problem}")
        variables = {**context.vars, "prompt": prompt}
        try:
            url = nunjucks.render(self._url, variables)
            message = nunjucks.render(str(self.spec.config["messageTemplate"]), variables)
        except TemplateError as exc:
            return ProviderResponse(error=f"provider {self.id}: {exc}")
        script_context = {"vars": context.vars, "prompt": {"raw": context.prompt_raw, "label": context.prompt_label}}
        policy = RetryPolicy.from_env()
        try:
            return await with_retries(lambda: self._exchange(url, message, script_context), policy, self._timeout, "WebSocket request", limiter=self.limiter)
        except TransientError as exc:
            attempts = "attempt" if policy.attempts == 1 else "attempts"
            return ProviderResponse(error=f"{exc} (gave up after {policy.attempts} {attempts})")
        except ProviderError as exc:
            return ProviderResponse(error=str(exc))

    async def _exchange(self, url: str, message: str, script_context: dict[str, Any]) -> ProviderResponse:
        """One connection: send the message, read until the reply is complete."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

        config = self.spec.config
        options: dict[str, Any] = {"open_timeout": None, "max_size": None}
        if url.startswith("wss://"):
            options["ssl"] = tls.context()
        if protocols := _protocols(config.get("protocols")):
            options["subprotocols"] = protocols
        headers = {str(k): str(v) for k, v in (config.get("headers") or {}).items()}
        try:
            async with connect(url, additional_headers=headers or None, **options) as socket:
                await socket.send(message)
                if not self._stream:
                    return await self._reply(await socket.recv())
                accumulator: Any = {"error": "unknown error occurred"}
                while True:
                    event = {"data": _text(await socket.recv()), "type": "message"}
                    accumulator, done = await self._streamed(accumulator, event, script_context)
                    if done:
                        return _response(accumulator)
        except InvalidStatus as exc:
            status = exc.response.status_code
            text = f"WebSocket connection failed (HTTP {status})"
            if status in RETRYABLE_STATUS:
                raise TransientError(text, retry_after_seconds(exc.response.headers), status=status) from None
            raise ProviderError(text) from None
        except InvalidURI as exc:
            raise ProviderError(f"provider {self.id}: invalid WebSocket URL: {exc}") from None
        except ConnectionClosed as exc:
            raise TransientError(f"the WebSocket server closed the connection before the reply ({exc})") from None
        except (OSError, InvalidHandshake) as exc:
            if refused := tls.trust_failure(exc):
                raise ProviderError(refused) from None
            raise TransientError(f"WebSocket connection failed: {type(exc).__name__}: {exc}") from None

    async def _reply(self, raw: str | bytes) -> ProviderResponse:
        """The first message through `transformResponse`."""
        text = _text(raw)
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = text
        if not self._transform:
            return ProviderResponse(output=data)
        try:
            value = await transforms.run(str(self._transform), ("data",), [data], self.base_dir)
        except (ScriptError, FileNotFoundError) as exc:
            raise ProviderError(f"transformResponse failed: {exc}") from None
        response = _response(value)
        if not response.error and response.output is None:
            response.error = "transformResponse returned nothing (check the expression against the reply)"
        return response

    async def _streamed(self, accumulator: Any, event: dict[str, Any], script_context: dict[str, Any]) -> tuple[Any, bool]:
        try:
            result = await transforms.run(str(self._stream), _STREAM_PARAMS, [accumulator, event, script_context], self.base_dir)
        except (ScriptError, FileNotFoundError) as exc:
            raise ProviderError(f"streamResponse failed: {exc}") from None
        if not isinstance(result, list) or len(result) != 2:
            raise ProviderError(f"streamResponse must return [accumulator, done], got {json.dumps(result, default=str)[:200]}")
        return result[0], bool(result[1])


def _text(raw: str | bytes) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
