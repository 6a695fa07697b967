"""The HTTP clients providers call through (`providers/http_clients.py`), over loopback.

Two families, each through its real client: OpenAI (the SDK's aiohttp client) and the HTTP API
providers (httpx on aiohttp; the `http` provider stands for them). What is checked: a call that
gets no answer ends at the client's own timeout with no outer deadline, as an ERROR; calls route
through `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY` and skip what `NO_PROXY` names; connections
are kept alive, dropped when idle too long, and a host's second address is tried when the first
never answers. A raw loopback server answering with scripted bytes covers what real servers send
that the JSON test server does not: chunked bodies with trailers, gzip, 1xx replies, replies that
end with the connection, broken replies.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ci_grade.providers import http_api, http_clients
from ci_grade.providers import openai as openai_provider
from ci_grade.providers.http_clients import api_http_client
from tests.provider_helpers import eval_rows, make, use
from tests.servers.forward_proxy import ForwardProxy
from tests.servers.llm_server import LLMServer

KEY = "sk-test-0123456789"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy")


def openai_spec(base: str, **config: Any) -> dict[str, Any]:
    return {"id": "openai:chat:gpt-4.1-mini", "config": {"apiBaseUrl": f"{base}/v1", "apiKey": KEY, **config}}


def http_spec(base: str, **config: Any) -> dict[str, Any]:
    """The `http` provider posting a chat body to the OpenAI-compatible test server."""
    body = {"model": "m", "messages": [{"role": "user", "content": "{{prompt}}"}]}
    return {"id": "http", "config": {"url": f"{base}/v1/chat/completions", "body": body, "transformResponse": "json.choices[0].message.content", **config}}


FAMILIES = {"openai": openai_spec, "http": http_spec}


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose server accepts connections and reads requests but never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []
    listener.settimeout(0.05)
    stop = False

    def accept() -> None:
        while not stop:
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    import threading

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop = True
        thread.join(timeout=2)
        for conn in accepted:
            conn.close()
        listener.close()


def without_outer_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The retry loop's own deadline per attempt switched off: only the client can end a call."""
    for module in (openai_provider, http_api):

        async def no_deadline(operation: Any, policy: Any = None, timeout: Any = None, *args: Any, original: Any = module.with_retries, **kwargs: Any) -> Any:
            return await original(operation, policy, None, *args, **kwargs)

        monkeypatch.setattr(module, "with_retries", no_deadline)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_call_that_gets_no_answer_ends_at_the_clients_timeout_as_an_error(family: str, silent_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """No outer deadline: the server accepts and never answers; the call ends after its 0.5 s
    timeout, by the client itself, as an error saying it timed out (one attempt)."""
    without_outer_deadline(monkeypatch)
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    http_clients.sdk()  # imported before the clock starts

    async def timed(provider: Any) -> tuple[Any, float]:
        started = time.monotonic()
        response = await asyncio.wait_for(provider.call("anyone there?"), 30)  # a guard against a hang, not the deadline under test
        return response, time.monotonic() - started

    response, elapsed = use(FAMILIES[family](f"http://127.0.0.1:{silent_port}", timeout=0.5), timed, env={})
    assert response.output is None and response.error is not None
    assert ("APITimeoutError: Request timed out." in response.error) if family == "openai" else response.error.startswith("request timed out after 0.5s")
    assert 0.45 <= elapsed < 3, elapsed


@pytest.mark.parametrize("family", FAMILIES)
def test_a_refused_connection_is_reported_as_such_not_as_a_timeout(family: str, no_proxy_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The aiohttp clients raise a timeout exception for any failure to connect; a refused
    connection is still reported as what it is (and is not counted as a timed-out attempt)."""
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    response = use(FAMILIES[family](f"http://127.0.0.1:{port}"), lambda p: p.call("hello"), env={})
    assert response.error is not None and "timed out" not in response.error
    assert f"connection failed: ClientConnectorError: Cannot connect to host 127.0.0.1:{port}" in response.error, response.error


def test_an_eval_whose_grader_never_answers_has_error_rows_at_the_timeout(silent_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end, no outer deadline: each `llm-rubric` grader call ends after two 0.5 s timeouts
    (a dead endpoint's allowance), each row an ERROR naming the timeout."""
    without_outer_deadline(monkeypatch)
    for name, value in {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"http://127.0.0.1:{silent_port}/v1", "CI_GRADE_CALL_TIMEOUT_SECONDS": "0.5", "CI_GRADE_RETRY_BASE_SECONDS": "0.01"}.items():
        monkeypatch.setenv(name, value)
    config = """
prompts: ["Answer: {{q}}"]
providers: [echo]
tests:
  - vars: {q: one}
    assert: [{type: llm-rubric, value: is polite}]
  - vars: {q: two}
    assert: [{type: llm-rubric, value: is polite}]
"""
    started = time.monotonic()
    code, rows = eval_rows(tmp_path, config)
    elapsed = time.monotonic() - started
    assert code == 1 and len(rows) == 2
    assert all(row["error"] and "timed out" in row["error"] for row in rows), [row["error"] for row in rows]
    assert elapsed < 8, elapsed  # two rows in parallel, two 0.5 s attempts each, plus the eval itself


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_calls_go_through_the_proxy_the_environment_names(family: str, variable: str, llm_server: LLMServer, no_proxy_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback included: httpx exempts no host unless `NO_PROXY` names it."""
    with ForwardProxy() as proxy:
        monkeypatch.setenv(variable, proxy.url)
        response = use(FAMILIES[family](llm_server.url), lambda p: p.call("via the proxy"), env={})
    assert response.error is None and response.output == "echo: via the proxy"
    assert proxy.forwarded == [f"POST {llm_server.url}/v1/chat/completions"]
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.1:0,127.0.0.1", "*"])
def test_no_proxy_sends_the_hosts_it_names_direct(family: str, no_proxy: str, llm_server: LLMServer, no_proxy_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with ForwardProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        response = use(FAMILIES[family](llm_server.url), lambda p: p.call("direct"), env={})
    assert response.error is None and response.output == "echo: direct"
    assert proxy.forwarded == [] and len(llm_server.requests) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_calls_share_one_keep_alive_connection(family: str, llm_server: LLMServer, no_proxy_variables: None) -> None:
    async def three(provider: Any) -> list[Any]:
        return [await provider.call(f"question {n}") for n in range(3)]

    responses = use(FAMILIES[family](llm_server.url), three, env={})
    assert [r.output for r in responses] == [f"echo: question {n}" for n in range(3)]
    assert llm_server.connections == 1
    agents = {request.headers["user-agent"].split("/")[0] for request in llm_server.requests}
    assert agents == ({"AsyncOpenAI"} if family == "openai" else {"python-httpx"})  # the SDK's own client; httpx


@pytest.mark.parametrize("family", FAMILIES)
def test_a_connection_idle_past_the_expiry_is_not_reused(family: str, llm_server: LLMServer, no_proxy_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between client and server, a relay that forgets a flow idle too long and then swallows its
    packets without closing it (a NAT or load balancer: Azure's drops quiet flows after 4 minutes,
    no reset). A connection idle past `KEEPALIVE_EXPIRY` is never reused, so the call after a pause
    opens a new one and is answered at once instead of waiting out its timeout."""
    monkeypatch.setattr(http_clients, "KEEPALIVE_EXPIRY", 0.2)
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

    async def calls() -> tuple[list[Any], float]:
        server = await asyncio.start_server(relay, "127.0.0.1", 0)
        spec = FAMILIES[family](f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", timeout=3)
        provider: Any = make(spec, {})
        try:
            first = await provider.call("before the pause")
            await asyncio.sleep(forget_after + 0.2)
            started = time.monotonic()
            second = await provider.call("after the pause")
            return [first, second], time.monotonic() - started
        finally:
            await provider.aclose()
            server.close()

    (first, second), waited = asyncio.run(calls())
    assert (first.output, second.output) == ("echo: before the pause", "echo: after the pause"), second.error
    assert waited < 2 and len(flows) == 2


@pytest.mark.parametrize("family", FAMILIES)
def test_a_host_whose_first_address_never_answers_is_reached_on_the_next(family: str, llm_server: LLMServer, no_proxy_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host with two addresses, the first a black hole (a listener whose accept queue is full,
    so its SYNs are dropped, as on a broken IPv6 route): the call is answered from the second
    address after the happy-eyeballs delay, not after the call's timeout. The resolver is the only
    stand-in (a name for two loopback addresses); both connections are real."""
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
    try:
        started = time.monotonic()
        response = use(FAMILIES[family](f"http://api.test:{port}", timeout=5), lambda p: p.call("hello"), env={})
        elapsed = time.monotonic() - started
    finally:
        for client in filling:
            client.close()
        hole.close()
    assert response.error is None and response.output == "echo: hello"
    assert elapsed < 2.5, elapsed  # the black hole alone would hold the call for its 5 s timeout
    assert len(llm_server.requests) == 1


# -- what real servers send: the HTTP API client against scripted bytes ------------------------

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
    async with server:
        client = api_http_client(5.0, 8)
        try:
            result = await check(client, f"http://127.0.0.1:{port}")
        finally:
            await client.aclose()
    return result, requests, connections


def run(replies: list[Reply], check: Callable[[httpx.AsyncClient, str], Awaitable[Any]], **kwargs: Any) -> tuple[Any, list[bytes], int]:
    return asyncio.run(serve(list(replies), check, **kwargs))


def ok(body: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([b"HTTP/1.1 200 OK", b"Content-Length: " + str(len(body)).encode(), *headers]) + b"\r\n\r\n" + body


def test_requests_reuse_one_keep_alive_connection(no_proxy_variables: None) -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        return [(await client.post(f"{url}/v1/x?q=1", json={"n": i})).text for i in range(3)]

    texts, requests, connections = run([ok(b"a"), ok(b"b"), ok(b"c")], check)
    assert texts == ["a", "b", "c"] and connections == 1
    assert requests[0].startswith(b"POST /v1/x?q=1 HTTP/1.1\r\n") and requests[0].endswith(b'{"n":0}')
    assert b"\r\nhost: 127.0.0.1:" in requests[0].lower() and b"\r\ncontent-length: 7\r\n" in requests[0].lower()


def test_chunked_gzip_and_informational_replies_are_read(no_proxy_variables: None) -> None:
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


def test_a_reply_without_length_ends_with_the_connection_and_is_not_reused(no_proxy_variables: None) -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        return [(await client.get(url)).text, (await client.get(url)).text]

    texts, _, connections = run([b"HTTP/1.0 200 OK\r\n\r\nuntil close", ok(b"fresh")], check, close_after=True)
    assert texts == ["until close", "fresh"] and connections == 2


def test_an_idle_connection_the_server_closed_is_not_reused(no_proxy_variables: None) -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[str]:
        first = (await client.get(url)).text
        await asyncio.sleep(0.05)  # the server's close reaches the client while the connection is idle
        return [first, (await client.get(url)).text]

    texts, _, connections = run([ok(b"one"), ok(b"two")], check, close_after=True)
    assert texts == ["one", "two"] and connections == 2


def test_no_body_replies_and_connection_close(no_proxy_variables: None) -> None:
    async def check(client: httpx.AsyncClient, url: str) -> list[Any]:
        head = await client.head(url)
        empty = await client.get(url)
        closing = await client.get(url)
        return [head.status_code, head.content, empty.status_code, empty.content, closing.text]

    replies = [b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n", ok(b"bye", b"Connection: close")]
    result, _, connections = run(replies, check)
    assert result == [200, b"", 204, b"", "bye"] and connections == 1


@pytest.mark.parametrize(
    "reply",
    [
        b"",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["nothing", "short-body", "not-http", "bad-length", "bad-chunk"],
)
def test_broken_replies_are_errors_of_the_row(reply: bytes, llm_server: LLMServer, no_proxy_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply that is not well-formed HTTP is a failed call (retried, then an error saying the
    connection failed), never a crash or a pass."""
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "1")
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")

    async def check(_: httpx.AsyncClient, url: str) -> Any:
        return await asyncio.wait_for(use_async(http_spec(url, timeout=3)), 20)

    response, requests, _ = run([reply, reply], check, close_after=True)
    assert response.output is None and response.error is not None
    assert response.error.startswith("connection failed: ") and response.error.endswith("(gave up after 2 attempts)"), response.error
    assert len(requests) == 2


async def use_async(spec: dict[str, Any]) -> Any:
    provider: Any = make(spec, {})
    try:
        return await provider.call("hello")
    finally:
        await provider.aclose()


def test_closing_a_provider_closes_its_connections_before_it_returns(llm_server: LLMServer, no_proxy_variables: None) -> None:
    """The server sees idle connections end when the provider closes, not when the process does."""
    closed: list[bool] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            writer.write(ok(b'{"choices": [{"message": {"content": "fine"}}]}'))
            await writer.drain()
        closed.append(True)
        writer.close()

    async def main() -> tuple[int, int]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            provider: Any = make(http_spec(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"), {})
            responses = await asyncio.gather(*(provider.call(f"n{n}") for n in range(3)))
            assert [r.output for r in responses] == ["fine"] * 3
            before = len(closed)
            await provider.aclose()
            for _ in range(50):  # the server's side of each socket sees its end (in this same loop)
                if len(closed) == 3:
                    break
                await asyncio.sleep(0.01)
            return before, len(closed)

    before, after = asyncio.run(main())
    assert (before, after) == (0, 3)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_sdk_import_leaves_the_collector_as_it_was(enabled: bool) -> None:
    """No collection runs during the SDK's import (it creates many objects and no garbage; one may
    run as it begins or ends), and the collector is on afterwards only if it was before."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import gc
        from ci_grade.providers.http_clients import sdk
        {'gc.enable()' if enabled else 'gc.disable()'}
        runs = []
        gc.callbacks.append(lambda phase, info: phase == "start" and runs.append(info["generation"]))
        sdk()
        print(len(runs), gc.isenabled())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    collections, left_enabled = done.stdout.split()
    assert int(collections) <= 2 and left_enabled == str(enabled)  # unpaused, the import runs ~150 collections


def test_a_failure_without_a_network_cause_is_reported_as_itself_and_a_cycle_of_causes_ends() -> None:
    from ci_grade.providers.http_clients import failure

    plain = RuntimeError("the SDK gave up")
    assert failure(plain, timeout=False) is plain and failure(plain, timeout=True) is None
    first, second = RuntimeError("first"), RuntimeError("second")
    first.__cause__, second.__cause__ = second, first  # a chain that loops back
    assert failure(first, timeout=False) is first
    refused = ConnectionRefusedError("refused")
    wrapped = RuntimeError("connect timeout")
    wrapped.__cause__ = refused
    assert failure(wrapped, timeout=True) is refused  # what the connection really failed on


def test_by_default_the_first_retry_waits_about_half_a_second_and_no_wait_passes_thirty(monkeypatch: pytest.MonkeyPatch) -> None:
    from ci_grade.providers.retry import RetryPolicy

    for name in ("CI_GRADE_RETRY_BASE_SECONDS", "CI_GRADE_RETRY_MAX_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    policy = RetryPolicy.from_env()
    waits = [policy.delay(1, None) for _ in range(200)]
    assert min(waits) >= 0.25 and max(waits) < 0.75  # 0.5 s, jittered by half either way
    assert policy.delay(1, 120.0) == 30.0 and policy.delay(12, None) == 30.0
