"""A lean HTTP/1.1 transport for API clients: keep-alive connections on asyncio streams.

httpx's default transport (httpcore, with h11 and anyio underneath) costs more CPU per request
than the rest of a grading call: it scans every pooled connection's socket before each request and
parses replies event by event. API calls need far less: one request at a time per connection,
replies with Content-Length or chunked bodies. This transport does that on asyncio's streams and
plugs in under the same clients (`httpx` for HTTP API providers, the OpenAI SDK's `httpx2`), so
everything above it (the SDK's requests and errors, auth, timeouts, proxies from the environment,
content decoding) is unchanged. When a proxy is configured (`HTTP_PROXY`, `HTTPS_PROXY`,
`ALL_PROXY`, either case, or the system's settings), `client_options` keeps the library's own
transport, which routes through the proxy and honours `NO_PROXY`. Connections are opened as needed (each provider's `Limiter`
bounds how many calls are in flight) and kept while idle for up to `KEEPALIVE_EXPIRY`; one the
server closed, or idle longer, is dropped before reuse. Either way, TLS trusts what
`tls.context` trusts (certifi, or SSL_CERT_FILE / SSL_CERT_DIR, as httpx would).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import defaultdict
from types import ModuleType
from typing import Any

from ci_grade.providers import tls

MAX_IDLE = 64
"""Idle connections kept per origin."""
KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept for reuse (httpx's default). A NAT or load balancer on the
way may forget a quiet flow without telling either end (Azure's default: after 4 minutes, no
reset); a request written on such a connection is never answered and waits out its timeout."""
HAPPY_EYEBALLS_DELAY = 0.25
"""Seconds before the next address of a host is tried while one is still connecting (RFC 8305,
as httpx's default transport does): a host whose first address never answers (an IPv6 route
that drops packets) is reached on the next one instead of waiting out the call's timeout."""
_HEAD_LIMIT = 256 * 1024
_NO_BODY = frozenset({204, 304})


_PROXY_SCHEMES = ("http", "https", "all")


def client_options(lib: ModuleType) -> dict[str, Any]:
    """Options for a `lib.AsyncClient` (httpx or httpx2): an `Http1Transport`, or, when a proxy is
    configured, the library's own transport verifying servers with `tls.context` (so a CA path
    that cannot be used is a `tls.TrustStoreError` naming it, here). Proxies are found as httpx
    finds them (`urllib.request.getproxies`): the environment, and on macOS and Windows the
    system's settings too."""
    from urllib.request import getproxies

    proxies = getproxies()
    if any(proxies.get(scheme) for scheme in _PROXY_SCHEMES):
        return {"verify": tls.context()}
    return {"transport": Http1Transport(lib)}


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.idle_since = 0.0

    @property
    def usable(self) -> bool:
        """Not closed by the server, and not idle long enough for the path to have forgotten it."""
        fresh = time.monotonic() - self.idle_since <= KEEPALIVE_EXPIRY
        return fresh and not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class Http1Transport:
    """`handle_async_request` for an `httpx`-style library `lib` (httpx or httpx2): the interface
    of its `AsyncBaseTransport`, without depending on either library here."""

    def __init__(self, lib: ModuleType):
        self._lib = lib
        self._idle: defaultdict[tuple[str, str, int], list[_Connection]] = defaultdict(list)
        self._ssl: ssl.SSLContext | None = None

    async def handle_async_request(self, request: Any) -> Any:
        lib = self._lib
        url = request.url
        if url.scheme not in ("http", "https"):
            raise lib.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.", request=request)
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        body = await request.aread()
        try:
            head = _head(request, body)
        except _IllegalHeader as exc:
            raise lib.LocalProtocolError(str(exc), request=request) from None
        connection = await self._connection(origin, request)
        try:
            connection.writer.write(head + body)
            status, reason, headers, content, reusable = await _read_reply(connection.reader, request.method)
        except asyncio.CancelledError:
            connection.close()
            raise
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as exc:
            connection.close()
            raise lib.ReadError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, request=request) from None
        except _ProtocolError as exc:
            connection.close()
            raise lib.RemoteProtocolError(str(exc), request=request) from None
        if reusable and len(self._idle[origin]) < MAX_IDLE:
            connection.idle_since = time.monotonic()
            self._idle[origin].append(connection)
        else:
            connection.close()
        return lib.Response(status, headers=headers, stream=lib.ByteStream(content), extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason})

    async def _connection(self, origin: tuple[str, str, int], request: Any) -> _Connection:
        idle = self._idle[origin]
        while idle:
            connection = idle.pop()
            if connection.usable:
                return connection
            connection.close()
        scheme, host, port = origin
        try:
            context = self._context() if scheme == "https" else None
            reader, writer = await asyncio.open_connection(host, port, ssl=context, limit=_HEAD_LIMIT, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY)
        except (OSError, ssl.SSLError) as exc:  # chained: `tls.trust_failure` finds TLS trust failures
            raise self._lib.ConnectError(f"{type(exc).__name__}: {exc}", request=request) from exc
        return _Connection(reader, writer)

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = tls.context()
        return self._ssl

    async def aclose(self) -> None:
        """Close the idle connections and wait until their sockets are closed (so the server sees
        them end now, not when the process does)."""
        closing = [connection for connections in self._idle.values() for connection in connections]
        self._idle.clear()
        for connection in closing:
            connection.close()
        await asyncio.gather(*(connection.writer.wait_closed() for connection in closing), return_exceptions=True)

    async def __aenter__(self) -> Http1Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _ProtocolError(Exception):
    """The server's reply is not HTTP/1.1 as this transport reads it."""


class _IllegalHeader(Exception):
    """A request header that would break the request's framing (a line break, say)."""


_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_UNSAFE_VALUE = re.compile(rb"[\r\n\0]|^[ \t]|[ \t]$")
_CHECKED: set[tuple[bytes, bytes]] = set()
"""Header lines already found well formed (an API client sends the same ones call after call)."""
_CHECKED_MAX = 512


def _head(request: Any, body: bytes) -> bytes:
    url = request.url
    target = url.raw_path or b"/"
    lines = [request.method.encode() + b" " + target + b" HTTP/1.1"]
    chunked = False
    for name, value in request.headers.raw:
        if (name, value) not in _CHECKED:
            if not _TOKEN.fullmatch(name):
                raise _IllegalHeader(f"Illegal header name {name!r}")
            if _UNSAFE_VALUE.search(value):
                raise _IllegalHeader(f"Illegal header value {value!r}")
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.clear()
            _CHECKED.add((name, value))
        lowered = name.lower()
        if lowered == b"transfer-encoding":
            chunked = True
            continue
        if lowered == b"content-length" and chunked:
            continue
        lines.append(name + b": " + value)
    if chunked:  # the body was read whole: send it with its length
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def _read_reply(reader: asyncio.StreamReader, method: str) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes, bool]:
    """(status, reason, headers, body, connection reusable), skipping 1xx replies."""
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise _ProtocolError("Server disconnected without sending a response.") from None
            raise
        except asyncio.LimitOverrunError:
            raise _ProtocolError("the reply's headers are too long") from None
        status_line, *header_lines = head[:-4].split(b"\r\n")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise _ProtocolError(f"malformed status line {status_line[:80]!r}")
        status = int(parts[1])
        if 100 <= status < 200 and status != 101:
            continue
        reason = parts[2] if len(parts) > 2 else b""
        headers = []
        length: int | None = None
        chunked = close = False
        for line in header_lines:
            name, sep, value = line.partition(b":")
            if not sep:
                raise _ProtocolError(f"malformed header line {line[:80]!r}")
            value = value.strip()
            headers.append((name, value))
            lowered = name.strip().lower()
            if lowered == b"content-length":
                if not value.isdigit():
                    raise _ProtocolError(f"malformed Content-Length {value[:40]!r}")
                length = int(value)
            elif lowered == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif lowered == b"connection":
                close = b"close" in value.lower()
        keep_alive = not close and parts[0] != b"HTTP/1.0"
        if method == "HEAD" or status in _NO_BODY:
            return status, reason, headers, b"", keep_alive
        if chunked:
            return status, reason, headers, await _read_chunked(reader), keep_alive
        if length is not None:
            return status, reason, headers, await reader.readexactly(length), keep_alive
        return status, reason, headers, await reader.read(), False


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _ProtocolError(f"malformed chunk size {size_line[:40]!r}") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise _ProtocolError("malformed chunk ending")
