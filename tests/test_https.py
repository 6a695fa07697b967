"""HTTPS calls through the providers' clients (`providers/http_clients.py`): the trust store,
keep-alive over TLS, proxies, and a refused certificate reported at once (not retried) with what
to do. A loopback server presents certificates from a throw-away CA (trustme)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError
from ci_grade.providers.http_api import HttpApiProvider
from ci_grade.providers.http_clients import api_http_client
from ci_grade.providers.tls import trust_failure
from tests.provider_helpers import call, eval_rows, make, use
from tests.servers.forward_proxy import ForwardProxy
from tests.servers.llm_server import LLMServer

KEY = "sk-test-0123456789"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def https_server(ca: trustme.CA, *names: str) -> LLMServer:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return LLMServer().start(tls=context)


@pytest.fixture
def trusted(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """An HTTPS server for 127.0.0.1 whose CA this process trusts through SSL_CERT_FILE."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server = https_server(ca, "127.0.0.1")
    try:
        yield server
    finally:
        server.stop()


def count_connections(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The connections the clients open (the event loop's `create_connection`), in order."""
    opened: list[Any] = []
    create = asyncio.base_events.BaseEventLoop.create_connection

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(kwargs.get("ssl") is not None)
        return await create(self, *args, **kwargs)

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "create_connection", counted)
    return opened


def openai_env(server: LLMServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.openai_base_url, "CI_GRADE_RETRY_BASE_SECONDS": "0.01"}


def test_openai_calls_over_https_trust_ssl_cert_file_and_keep_their_connection(trusted: LLMServer) -> None:
    """Three calls to a server whose CA only SSL_CERT_FILE names: all answered, on one connection."""
    assert trusted.openai_base_url.startswith("https://127.0.0.1:")

    async def three(provider: Any) -> list[Any]:
        return [await provider.call(f"question {n}") for n in range(3)]

    responses = use("openai:chat:gpt-4.1-mini", three, openai_env(trusted))
    assert [r.error for r in responses] == [None] * 3
    assert [r.output for r in responses] == [f"echo: question {n}" for n in range(3)]
    assert len(trusted.requests_to("/v1/chat/completions")) == 3
    assert trusted.connections == 1  # one TLS connection, kept alive


@pytest.mark.parametrize("names", [("127.0.0.1",), ("api.example.com",)], ids=["untrusted-ca", "another-host"])
def test_a_trust_failure_is_an_error_at_once_with_what_to_do(ca: trustme.CA, names: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server signed by a CA the machine does not trust, or certified for another host: the
    call is an ERROR saying so and naming SSL_CERT_FILE, after one attempt (no retries: the next
    attempt would be refused the same way); the server never sees a request."""
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    if names == ("api.example.com",):  # trusted CA, wrong name
        bundle = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(bundle))
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    else:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)  # certifi's bundle
    attempts = count_connections(monkeypatch)
    server = https_server(ca, *names)
    try:
        response = call("openai:chat:gpt-4.1-mini", "hello", env=openai_env(server))
        assert response.error is not None and response.output is None
        assert "TLS certificate was refused" in response.error and "SSL_CERT_FILE" in response.error
        assert ("self-signed" in response.error or "unable to get local issuer" in response.error) if names == ("127.0.0.1",) else "mismatch" in response.error.lower()
        assert attempts == [True]  # one TLS attempt: a retry would be refused the same way
        assert server.requests == []
    finally:
        server.stop()


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_ca_certificates_that_cannot_be_read_are_an_error_at_once_naming_the_variable(ca: trustme.CA, variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CA file that holds no certificate, or a CA directory that is not there, stays so on the
    next attempt: one attempt, and the error names the variable and its value."""
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    if variable == "SSL_CERT_FILE":
        value = tmp_path / "not-a-ca.pem"
        value.write_text("this is not a certificate\n")
    else:
        value = tmp_path / "no-such-dir"
    monkeypatch.setenv(variable, str(value))
    attempts = count_connections(monkeypatch)
    server = https_server(ca, "127.0.0.1")
    try:
        response = call("openai:chat:gpt-4.1-mini", "hello", env=openai_env(server))
    finally:
        server.stop()
    assert response.error is not None and f"{variable}={value}" in response.error and "cannot be used" in response.error, response.error
    assert attempts == []  # found when the client is made: no connection, no retry
    assert server.requests == []


def test_http_api_providers_share_the_trust_store_and_the_refusal(ca: trustme.CA, trusted: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP API providers' client: the trusted server answers; with the CA file gone, the
    same request fails with a certificate error `trust_failure` recognises."""

    async def get() -> Any:
        async with api_http_client(30, 4) as client:
            return await client.post(f"{trusted.openai_base_url}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})

    reply = asyncio.run(get())
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "echo: hi"
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(httpx.TransportError) as caught:
        asyncio.run(get())
    assert trust_failure(caught.value) is not None
    assert trust_failure(httpx.ConnectError("Connection refused")) is None

    async def send(provider: HttpApiProvider) -> Any:
        try:
            return await provider.send("POST", f"{trusted.url}/api", read=lambda response: response.text, json={})
        finally:
            await provider.aclose()

    with pytest.raises(ProviderError, match="TLS certificate was refused") as refused:
        asyncio.run(send(HttpApiProvider(ProviderSpec(id=f"{trusted.url}/api"), {})))
    assert "after" not in str(refused.value)  # not retried: no "gave up after N attempts"


def test_an_eval_against_an_untrusted_grader_reports_every_row_as_an_error(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: the grader's certificate is refused; each row is an ERROR with the reason,
    the eval still writes its results, and nothing crashes."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server = https_server(ca, "127.0.0.1")
    try:
        for name, value in openai_env(server).items():
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
        code, rows = eval_rows(tmp_path, config)
        assert code == 1  # every row errored: the gate fails
    finally:
        server.stop()
    assert len(rows) == 2
    assert all(row["error"] and "TLS certificate was refused" in row["error"] for row in rows), [row["error"] for row in rows]
    assert server.requests == []


def test_through_a_proxy_https_calls_trust_the_same_ca_certificates(trusted: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """With HTTPS_PROXY named, each family's client tunnels through the proxy and trusts the CA
    that SSL_CERT_FILE names; CA certificates that cannot be used are named, as without a proxy."""
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    specs = {"openai": "openai:chat:gpt-4.1-mini", "http": {"id": "http", "config": {"url": f"{trusted.openai_base_url}/chat/completions", "body": {"model": "m", "messages": [{"role": "user", "content": "{{prompt}}"}]}, "transformResponse": "json.choices[0].message.content"}}}

    async def go(ca_file: str | None) -> list[Any]:
        if ca_file:
            monkeypatch.setenv("SSL_CERT_FILE", ca_file)
        responses = []
        for spec in specs.values():
            provider: Any = make(spec, openai_env(trusted))
            try:
                responses.append(await provider.call("through the proxy"))
            finally:
                await provider.aclose()
        return responses

    with ForwardProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        through = asyncio.run(go(None))
        tunnels = list(proxy.forwarded)
        unusable = asyncio.run(go("/nonexistent/ca.pem"))
    assert [r.error for r in through] == [None, None] and [r.output for r in through] == ["echo: through the proxy"] * 2
    assert tunnels == [f"CONNECT 127.0.0.1:{trusted.url.rsplit(':', 1)[1]}"] * 2
    for response in unusable:
        assert response.error is not None and "SSL_CERT_FILE=/nonexistent/ca.pem" in response.error and "cannot be used" in response.error
