"""The response cache with each remote provider family: a repeated call is answered from disk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.providers.base import ProviderResponse
from ci_grade.providers.cache import ResponseCache
from tests.provider_helpers import make
from tests.servers import anthropic_server, hf_server, ollama_server
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import Recorded, Response


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("OLLAMA_BASE_URL", srv.url)
        monkeypatch.setenv("HF_API_BASE_URL", srv.url)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
        monkeypatch.setenv("AZURE_OPENAI_API_HOST", srv.url)
        anthropic_server.install(srv)
        ollama_server.install(srv)
        hf_server.install(srv, "m/cls")
        srv.route("POST", "/generate", lambda rec: Response(200, json={"out": f"http {rec.json}"}))
        yield srv


def _twice(spec: Any, cache: ResponseCache) -> list[ProviderResponse]:
    async def go() -> list[ProviderResponse]:
        provider = make(spec)
        provider.cache = cache
        try:
            return [await provider.call("same prompt"), await provider.call("same prompt")]
        finally:
            await provider.aclose()

    return asyncio.run(go())


def _is(path: str) -> Callable[[Recorded], bool]:
    return lambda r: r.path.split("?")[0] == path


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("anthropic:messages:claude-sonnet-4-5", "/v1/messages"),
        ("ollama:chat:llama3.1", "/api/chat"),
        ("ollama:completion:llama3.1", "/api/generate"),
        ("huggingface:text-classification:m/cls", "/models/m/cls"),
        ("azureopenai:chat:dep", "/openai/deployments/dep/chat/completions"),
    ],
)
def test_remote_families_are_cached(server: CountingServer, tmp_path: Path, spec: str, path: str) -> None:
    first, second = _twice(spec, ResponseCache(tmp_path))
    assert first.error is None and not first.cached
    assert second.cached and second.output == first.output and second.cost == 0.0
    assert len([r for r in server.requests if _is(path)(r)]) == 1


def test_the_http_provider_is_not_cached(server: CountingServer, tmp_path: Path) -> None:
    spec = {"id": "http", "config": {"url": server.url + "/generate", "body": {"q": "{{prompt}}"}}}
    first, second = _twice(spec, ResponseCache(tmp_path))
    assert not first.cached and not second.cached
    assert len(server.requests_to("/generate")) == 2
