"""The OpenAI SDK's async client, building plain JSON requests once per kind instead of per call.

The SDK builds every request from scratch: it merges and normalises some 40 headers and parses
the URL three times, over 40% of the CPU of its call path. `LeanRequests` (mixed
into `AsyncOpenAI` by `client_class`) keeps the SDK as the client (its sending, auth, errors and
reply reading are untouched) and changes only how a request is built: the first request of each
kind (method, endpoint, timeout, the SDK's headers for it) is the SDK's own; later ones copy it
with their own body and retry count. The second request of each kind is built both ways and
compared: if they differ in anything (say, a new SDK version adds a per-call header), that kind
is built by the SDK from then on. Requests with files, query parameters, extra headers, an
idempotency header or a body that is not a JSON object always go the SDK's way. In the same way,
a plain JSON `post` (no options, files or streaming) gets its request options as a copy of the
first ones the SDK made for that path (checked once against the SDK's own), instead of the SDK
building them field by field with deep copies of every default (and, when the client sends no
idempotency header, without the random idempotency key the SDK makes for each call). The copies read
a few of the SDK's private names; if an SDK version no longer has them, the client builds every
request the SDK's way from then on.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from typing import Any

from ci_grade.providers.openai_sdk import sdk

UNSENT_KEY = "not-sent"
"""The idempotency key of a copied `post`'s options when the client sends none (it has no
idempotency header): the SDK would otherwise make a random one for every call, to no use."""
MAX_KINDS = 32
"""Kinds of request remembered per client; beyond that, requests are built by the SDK."""
_RETRY_COUNT = "x-stainless-retry-count"


class _Template:
    """A request of one kind as the SDK built it; each copy sets its body, length and retry count."""

    def __init__(self, lib: Any, request: Any):
        self.method = request.method
        self.url = request.url
        self.extensions = request.extensions
        self.headers = lib.Headers(request.headers, encoding=request.headers.encoding)
        self.verified = False


class LeanRequests:
    """Mixin for `AsyncOpenAI` (see the module's docstring); `client_class` applies it."""

    _lean_templates: dict[Hashable, _Template | None]

    async def post(self, path: str, *, cast_to: Any, body: Any = None, options: Any = None, **rest: Any) -> Any:
        """`client.post`: a plain JSON POST (no options, files or streaming) gets its request
        options as a copy of the first ones the SDK made for that path, with its own body."""
        sdk_post = super().post  # type: ignore[misc]
        if options or rest or not isinstance(body, dict) or self.__dict__.get("_lean_off"):
            return await sdk_post(path, cast_to=cast_to, body=body, options=options or {}, **rest)
        try:
            prepared = self._lean_options(path, body)
        except (AttributeError, KeyError, TypeError, ImportError):
            self.__dict__["_lean_off"] = True  # the SDK's private names changed: its own way from now on
            prepared = None
        if prepared is None:
            return await sdk_post(path, cast_to=cast_to, body=body)
        client: Any = self
        return await client.request(cast_to, prepared)

    def _lean_options(self, path: str, body: dict[str, Any]) -> Any:
        """Request options for a JSON POST to `path`: None the first time (the SDK makes them),
        a copy of those later; the second copy is checked against the SDK's own."""
        from openai._models import FinalRequestOptions

        made = self.__dict__.setdefault("_lean_post_options", {})
        first = made.get(path, False)
        if first is False:
            if len(made) < MAX_KINDS:
                made[path] = [FinalRequestOptions.construct(method="post", url=path, json_data=None, content=None, files=None), False]
            return None
        if first is None:
            return None
        prototype, verified = first
        copy = prototype.model_copy()
        fields = copy.__dict__
        for name, value in fields.items():  # fresh dicts (params, security), as the SDK's defaults are
            if isinstance(value, dict):
                fields[name] = dict(value)
        fields["json_data"] = dict(body)  # a top-level copy, as the SDK makes
        if not verified:
            expected = FinalRequestOptions.construct(method="post", url=path, json_data=body, content=None, files=None)
            if repr(copy) != repr(expected) or copy.model_fields_set != expected.model_fields_set:
                made[path] = None
                return None
            first[1] = True
        if self._idempotency_header is None:  # type: ignore[attr-defined]
            fields["idempotency_key"] = UNSENT_KEY  # spares the SDK a random key per call
        return copy

    def _build_request(self, options: Any, *, retries_taken: int = 0) -> Any:
        sdk_build = super()._build_request  # type: ignore[misc]
        if self.__dict__.get("_lean_off"):
            return sdk_build(options, retries_taken=retries_taken)
        try:
            return self._lean_build(sdk_build, options, retries_taken)
        except (AttributeError, KeyError, TypeError):
            # the SDK's private names are not what this module reads: its own way from now on
            self.__dict__["_lean_off"] = True
            return sdk_build(options, retries_taken=retries_taken)

    def _lean_build(self, sdk_build: Any, options: Any, retries_taken: int) -> Any:
        key = self._lean_kind(options)
        if key is None:
            return sdk_build(options, retries_taken=retries_taken)
        templates = self.__dict__.setdefault("_lean_templates", {})
        template = templates.get(key, False)
        if template is False:
            request = sdk_build(options, retries_taken=retries_taken)
            if len(templates) < MAX_KINDS:
                templates[key] = _Template(_httpx2(), request)
            return request
        if template is None:
            return sdk_build(options, retries_taken=retries_taken)
        request = self._lean_copy(template, options, retries_taken)
        if not template.verified:
            expected = sdk_build(options, retries_taken=retries_taken)
            if _signature(request) != _signature(expected):
                templates[key] = None
                return expected
            template.verified = True
        return request

    def _lean_kind(self, options: Any) -> Hashable | None:
        """What fixes a request's method, URL, headers and timeout; None for one the SDK builds."""
        client: Any = self
        if (
            options.method != "post"
            or options.files is not None
            or options.content is not None
            or options.params
            or options.headers
            or options.extra_json is not None
            or not isinstance(options.json_data, dict)
            or client._idempotency_header is not None
            or client._client.cookies
            or client._client.params
        ):
            return None
        headers = {**client._auth_headers(options.security), **client.default_headers}
        fixed = tuple((name, value) for name, value in headers.items() if isinstance(value, str))
        return (options.url, repr(options.timeout), repr(client.timeout), str(client.base_url), fixed, tuple(options.security.items()))

    def _lean_copy(self, template: _Template, options: Any, retries_taken: int) -> Any:
        lib = _httpx2()
        body = _dumps()(options.json_data)
        headers = lib.Headers(template.headers, encoding=template.headers.encoding)
        headers[_RETRY_COUNT] = str(retries_taken)
        headers["Content-Length"] = str(len(body))
        request = lib.Request(template.method, template.url, headers=headers, stream=lib.ByteStream(body), extensions=template.extensions)
        request.read()
        return request


def _signature(request: Any) -> tuple[Any, ...]:
    return (request.method, str(request.url), request.headers.raw, request.content, request.extensions)


@functools.cache
def _httpx2() -> Any:
    import httpx2

    return httpx2


@functools.cache
def _dumps() -> Any:
    """The SDK's own JSON encoder for request bodies."""
    from openai._utils._json import openapi_dumps

    return openapi_dumps


@functools.cache
def client_class() -> type[Any]:
    """`AsyncOpenAI` with `LeanRequests`; the SDK is imported on first use (`openai_sdk`)."""
    return type("AsyncOpenAI", (LeanRequests, sdk().AsyncOpenAI), {"__module__": __name__})
