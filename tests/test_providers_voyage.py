"""Voyage AI embeddings (`voyage:`) over httpx against a loopback stand-in of its API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.provider_helpers import eval_rows, use
from tests.servers import voyage_server
from tests.servers.counting_server import CountingServer

KEY = "pa-voyage-secret-5555"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("VOYAGE_API_KEY", KEY)
        monkeypatch.setenv("VOYAGE_API_BASE_URL", f"{srv.url}/v1")
        voyage_server.install(srv, KEY)
        yield srv


def test_embedding_request_tokens_headers_and_retries(server: CountingServer) -> None:
    server.fail(429, path="/v1/embeddings", retry_after="0", body={"detail": "rate limited"})
    server.fail(502, path="/v1/embeddings")
    response = use({"id": "voyage:voyage-3-large", "config": {"headers": {"x-team": "evals"}, "cost": 1e-7}}, lambda p: p.embed("three little words"))
    assert response.error is None and response.embedding is not None and len(response.embedding) == 64
    assert response.token_usage.prompt == 3 and response.cost == pytest.approx(3e-7)
    requests = server.requests_to("/v1/embeddings")
    assert len(requests) == 3
    assert requests[-1].json == {"input": ["three little words"], "model": "voyage-3-large"}
    assert requests[-1].headers.get("x-team") == "evals"


def test_errors_name_the_status_and_the_missing_key(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    response = use({"id": "voyage:voyage-3", "config": {"apiKey": "wrong-key-123"}}, lambda p: p.embed("x"))
    assert response.error == "API error 401: Provided API key is invalid."
    monkeypatch.delenv("VOYAGE_API_KEY")
    assert "VOYAGE_API_KEY" in str(use("voyage:voyage-3", lambda p: p.embed("x")).error)


def test_eval_similar_graded_by_voyage_embeddings(server: CountingServer, tmp_path: Path) -> None:
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        defaultTest:
          options: {provider: {embedding: voyage:voyage-3-large}}
        tests:
          - vars: {q: the cat sat on the mat}
            assert: [{type: similar, value: the cat sat on the mat, threshold: 0.99}]
          - vars: {q: quantum chromodynamics}
            assert: [{type: similar, value: the cat sat on the mat, threshold: 0.9}]
        """,
    )
    assert code == 1
    assert [r["success"] for r in rows] == [True, False]
    assert rows[1]["gradingResult"]["componentResults"][0]["score"] < 0.9
    assert KEY not in (tmp_path / "out.json").read_text()
