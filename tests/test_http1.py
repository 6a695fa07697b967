"""The lean HTTP/1.1 transport under httpx and the OpenAI SDK's httpx2: framing, reuse, errors.

A raw loopback server answers each request with scripted bytes, so the tests cover what real
servers send that the project's JSON test server does not: chunked bodies with trailers, gzip,
1xx replies, `Connection: close` without a length, idle connections the server has closed.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
import pytest

from ci_grade.providers import http1
from ci_grade.providers.http1 import Http1Transport

Reply = bytes | Callable[[bytes], bytes]


async def serve(replies: list[Reply], check: Callable[[httpx.AsyncClient, str], Awaitable[Any]], *, close_after: bool = False) -> tuple[Any, list[bytes], int]:
    """Answer requests in turn with `replies` (closing each connection after its reply with
    `close_after`); returns what `check` returned, the raw requests and connections opened."""
    requests: list[bytes] = []
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                requests.append(request)
                reply = replies.pop(0)
                writer.write(reply(request) if callable(reply) else reply)
                await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport: Any = Http1Transport(httpx)
    async with server, httpx.AsyncClient(transport=transport) as client:
        result = await check(client, f"http://127.0.0.1:{port}")
    return result, requests, connections


def run(replies: list[Reply], check: Callable[[httpx.AsyncClient, str], Awaitable[Any]], **kwargs: Any) -> tuple[Any, list[bytes], int]:
    return asyncio.run(serve(list(replies), check, **kwargs))


def ok(body: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([b"HTTP/1.1 200 OK", b"Content-Length: " + str(len(body)).encode(), *headers]) + b"\r\n\r\n" + body


def test_requests_reuse_one_keep_alive_connection() -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        return [(await client.post(f"{url}/v1/x?q=1", json={"n": i})).text for i in range(3)]

    texts, requests, connections = run([ok(b"a"), ok(b"b"), ok(b"c")], check)
    assert texts == ["a", "b", "c"] and connections == 1
    assert requests[0].startswith(b"POST /v1/x?q=1 HTTP/1.1\r\n") and requests[0].endswith(b'{"n":0}')
    assert b"\r\nHost: 127.0.0.1:" in requests[0] and b"\r\nContent-Length: 7\r\n" in requests[0]


def test_chunked_gzip_and_informational_replies_are_read() -> None:
    packed = gzip.compress(b'{"ok": true}')
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
    chunked += b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in (packed[:5], packed[5:])) + b"0\r\nX-Trailer: t\r\n\r\n"
    informational = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after continue")

    async def check(client: httpx.AsyncClient, url: str) -> list[Any]:
        first = await client.get(url)
        second = await client.get(url)
        return [first.json(), second.text, second.status_code]

    result, _, connections = run([chunked, informational], check)
    assert result == [{"ok": True}, "after continue", 200] and connections == 1


def test_a_reply_without_length_ends_with_the_connection_and_is_not_reused() -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        return [(await client.get(url)).text, (await client.get(url)).text]

    texts, _, connections = run([b"HTTP/1.0 200 OK\r\n\r\nuntil close", ok(b"fresh")], check, close_after=True)
    assert texts == ["until close", "fresh"] and connections == 2


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        first = (await client.get(url)).text
        await asyncio.sleep(0.05)  # the server's close reaches the client while the connection is idle
        return [first, (await client.get(url)).text]

    texts, _, connections = run([ok(b"one"), ok(b"two")], check, close_after=True)
    assert texts == ["one", "two"] and connections == 2


def test_a_connection_idle_past_the_expiry_is_not_reused(llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between client and server, a relay that forgets a flow idle too long and then swallows its
    packets without closing it (a NAT or load balancer: Azure's drops quiet flows after 4 minutes,
    no reset). A connection idle past `KEEPALIVE_EXPIRY` is never reused, so the call after a pause
    opens a new one and is answered at once instead of waiting out its timeout."""
    import time

    from tests.provider_helpers import use

    monkeypatch.setattr(http1, "KEEPALIVE_EXPIRY", 0.2)
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "3")
    forget_after = 0.4
    flows: list[int] = []

    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        flows.append(1)
        host, port = llm_server.url.removeprefix("http://").split(":")
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        last, forgotten = [time.monotonic()], [False]

        async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(65536):
                forgotten[0] = forgotten[0] or time.monotonic() - last[0] > forget_after
                if not forgotten[0]:
                    last[0] = time.monotonic()
                    writer.write(data)

        await asyncio.gather(pump(client_reader, server_writer), pump(server_reader, client_writer), return_exceptions=True)

    async def calls(provider: Any) -> tuple[list[Any], float]:
        server = await asyncio.start_server(relay, "127.0.0.1", 0)
        provider.spec.config["apiBaseUrl"] = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        first = await provider.call("before the pause")
        await asyncio.sleep(forget_after + 0.2)
        started = time.monotonic()
        second = await provider.call("after the pause")
        server.close()
        return [first, second], time.monotonic() - started

    (first, second), waited = use("openai:chat:gpt-4.1-mini", calls, env={"OPENAI_API_KEY": "sk-test"})
    assert (first.output, second.output) == ("echo: before the pause", "echo: after the pause"), second.error
    assert waited < 2 and len(flows) == 2


def test_no_body_replies_and_connection_close() -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[Any]:
        head = await client.head(url)
        empty = await client.get(url)
        closing = await client.get(url)
        return [head.status_code, head.content, empty.status_code, empty.content, closing.text]

    replies = [b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n", ok(b"bye", b"Connection: close")]
    result, _, connections = run(replies, check)
    assert result == [200, b"", 204, b"", "bye"] and connections == 1


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        (b"", httpx.RemoteProtocolError, "Server disconnected without sending a response."),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", httpx.ReadError, "IncompleteReadError"),
        (b"SMTP ready\r\n\r\n", httpx.RemoteProtocolError, "malformed status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", httpx.RemoteProtocolError, "malformed Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", httpx.RemoteProtocolError, "malformed chunk size"),
    ],
)
def test_broken_replies_are_transport_errors(reply: bytes, error: type[Exception], message: str) -> None:
    async def check(client: httpx.AsyncClient, url: str) -> str:
        with pytest.raises(error) as caught:
            await client.get(url)
        return str(caught.value)

    text, _, _ = run([reply], check, close_after=True)
    assert message in text


def test_headers_that_would_break_framing_are_refused_before_sending() -> None:
    async def check(client: httpx.AsyncClient, url: str) -> str:
        with pytest.raises(httpx.LocalProtocolError) as caught:
            await client.get(url, headers={"X-Bad": "line\r\nInjected: yes"})
        return str(caught.value)

    text, requests, connections = run([ok(b"never")], check)
    assert text.startswith("Illegal header value") and requests == [] and connections == 0


def test_refused_connections_and_other_schemes() -> None:
    async def main() -> list[str]:
        transport: Any = Http1Transport(httpx)
        async with httpx.AsyncClient(transport=transport) as client:
            with pytest.raises(httpx.ConnectError) as refused:
                await client.get("http://127.0.0.1:1/")
            with pytest.raises(httpx.UnsupportedProtocol) as other:
                await transport.handle_async_request(httpx.Request("GET", "ftp://127.0.0.1/"))
        return [str(refused.value), str(other.value)]

    refused, other = asyncio.run(main())
    assert "ConnectionRefusedError" in refused and other == "Request URL has an unsupported protocol 'ftp://'."


def test_the_sdks_httpx2_client_runs_on_it() -> None:
    async def main(url: str) -> str:
        transport: Any = Http1Transport(httpx2)
        async with httpx2.AsyncClient(transport=transport) as client:
            return (await client.post(url, json={"a": 1})).text

    async def check(_: httpx.AsyncClient, url: str) -> str:
        return await main(url)

    text, requests, _ = run([ok(b"via httpx2")], check)
    assert text == "via httpx2" and requests[0].endswith(b'{"a":1}')


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_in_the_environment_keeps_the_clients_own_transport(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """With a proxy named, calls go through it (here a loopback proxy that answers itself; the
    target port would refuse a direct connection)."""
    from ci_grade.config.models import ProviderSpec
    from ci_grade.providers.http_api import HttpApiProvider
    from ci_grade.providers.openai import sdk_http_client

    async def main() -> tuple[list[str], list[bool]]:
        targets: list[str] = []

        async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            targets.append(head.split(b" ")[1].decode())
            writer.write(ok(b"via the proxy", b"Connection: close"))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(proxy, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv(variable, f"http://127.0.0.1:{port}")
        texts = []
        async with server:
            sdk = sdk_http_client({})
            texts.append((await sdk.post("http://127.0.0.1:1/v1/chat/completions", json={})).text)
            await sdk.aclose()
            provider = HttpApiProvider(ProviderSpec(id="http://127.0.0.1:1/api"), {})
            texts.append((await provider.http().post("http://127.0.0.1:1/api", json={})).text)
            await provider.http().aclose()
        return targets, [t == "via the proxy" for t in texts]

    targets, answered = asyncio.run(main())
    assert targets == ["http://127.0.0.1:1/v1/chat/completions", "http://127.0.0.1:1/api"] and answered == [True, True]


def test_header_lines_found_well_formed_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Header lines are checked once (API clients repeat them); the memory of them stays bounded
    and a malformed line is refused however often it is sent."""
    checked: set[tuple[bytes, bytes]] = set()
    monkeypatch.setattr(http1, "_CHECKED", checked)
    monkeypatch.setattr(http1, "_CHECKED_MAX", 6)

    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        statuses = [(await client.get(url, headers={"X-N": str(n % 3)})).text for n in range(5)]
        for _ in range(2):
            with pytest.raises(httpx.LocalProtocolError, match="Illegal header name"):
                await client.get(url, headers={"Bad Name": "x"})
        return statuses

    statuses, requests, _ = run([ok(b"fine")] * 5, check)
    assert statuses == ["fine"] * 5 and len(requests) == 5
    assert b"X-N: 1\r\n" in requests[4]
    assert 0 < len(checked) <= 6
    assert not any(name == b"Bad Name" for name, _ in checked)


def test_closing_the_client_closes_its_sockets_before_it_returns() -> None:
    """The server sees idle connections end when the client closes, not when the process does."""

    async def main() -> tuple[int, list[int]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                try:
                    await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                writer.write(ok(b"fine"))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        transport = Http1Transport(httpx)
        async with server:
            client = httpx.AsyncClient(transport=transport)  # type: ignore[arg-type]
            await asyncio.gather(*(client.get(url) for _ in range(3)))
            sockets = [c.writer.get_extra_info("socket") for idle in transport._idle.values() for c in idle]
            await client.aclose()
            return len(sockets), [s.fileno() for s in sockets]

    opened, filenos = asyncio.run(main())
    assert opened == 3 and filenos == [-1, -1, -1]


def test_a_host_whose_first_address_never_answers_is_reached_on_the_next(llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host with two addresses, the first a black hole (a listener whose accept queue is full,
    so its SYNs are dropped, as on a broken IPv6 route): the call is answered from the second
    address after the happy-eyeballs delay, not after the call's timeout. The resolver is the only
    stand-in (a name for two loopback addresses); both connections are real."""
    import socket
    import time

    from tests.provider_helpers import call

    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(0)
    filling = []
    for _ in range(4):  # fill the accept queue: later connections hang
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(hole.getsockname())
        filling.append(client)
    port = int(llm_server.url.rsplit(":", 1)[1])
    addresses = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", hole.getsockname()), (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
    resolve = asyncio.base_events.BaseEventLoop.getaddrinfo

    async def getaddrinfo(self: Any, host: Any, *args: Any, **kwargs: Any) -> Any:
        return addresses if host == "api.test" else await resolve(self, host, *args, **kwargs)

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "getaddrinfo", getaddrinfo)
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "5")
    try:
        started = time.monotonic()
        response = call("openai:chat:gpt-4.1-mini", "hello", env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": f"http://api.test:{port}/v1"})
        elapsed = time.monotonic() - started
    finally:
        for client in filling:
            client.close()
        hole.close()
    assert response.error is None and response.output == "echo: hello"
    assert elapsed < 2.5, elapsed  # the black hole alone would hold the call for its 5 s timeout
    assert len(llm_server.requests) == 1


def test_proxies_are_found_as_httpx_finds_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """`NO_PROXY` alone names no proxy: the lean transport stays. A proxy in the system's settings
    (macOS, Windows; `urllib.request.getproxies` reads them, here stood in for, as there is no
    such setting on Linux) keeps the library's own transport, as one in the environment does."""
    import ssl
    import urllib.request

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "localhost")
    assert isinstance(http1.client_options(httpx)["transport"], Http1Transport)
    monkeypatch.setattr(urllib.request, "getproxies", lambda: {"https": "http://proxy.corp:8080", "no": "localhost"})
    options = http1.client_options(httpx)
    assert "transport" not in options and isinstance(options["verify"], ssl.SSLContext)
