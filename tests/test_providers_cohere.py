"""Cohere (`cohere:`) through the official SDK against a loopback stand-in of its API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.provider_helpers import call, eval_rows, use
from tests.servers import cohere_server
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import Response

KEY = "co-test-secret-9876"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("COHERE_API_KEY", KEY)
        monkeypatch.setenv("COHERE_API_BASE_URL", f"{srv.url}/v1")
        yield srv


def test_chat_sends_promptfoos_v1_body_and_reads_text_tokens_and_finish_reason(server: CountingServer) -> None:
    cohere_server.install(server, KEY, lambda body: "Paris.")
    config = {"temperature": 0.1, "preamble": "Be brief.", "chatHistory": [{"role": "USER", "message": "hi"}], "showDocuments": True}
    response = call({"id": "cohere:command-r-plus", "config": config}, "Capital of France?")
    assert response.error is None and response.output == "Paris."
    assert (response.token_usage.prompt, response.token_usage.completion) == (63, 1)
    assert response.finish_reason == "stop"
    (request,) = server.requests_to("/v1/chat")
    assert cohere_server.header(request, "authorization") == f"Bearer {KEY}"
    assert cohere_server.header(request, "x-client-name") == "ci-grade"
    body = request.json
    assert body["model"] == "command-r-plus" and body["message"] == "Capital of France?"
    assert body["temperature"] == 0.1 and body["p"] == 0.75 and body["k"] == 0 and body["prompt_truncation"] == "OFF"
    assert body["preamble"] == "Be brief." and body["chat_history"] == [{"role": "USER", "message": "hi"}]
    assert "showDocuments" not in body and "apiKey" not in body


def test_without_config_the_body_is_promptfoos_defaults_and_nothing_else(server: CountingServer) -> None:
    cohere_server.install(server, KEY)
    assert call("cohere:command-r", "hello").output == "echo: hello"
    (request,) = server.requests_to("/v1/chat")
    assert request.json == {
        "model": "command-r", "message": "hello", "stream": False, "connectors": [], "prompt_truncation": "OFF",
        "search_queries_only": False, "documents": [], "temperature": 0.3, "k": 0, "p": 0.75,
        "frequency_penalty": 0, "presence_penalty": 0,
    }


def test_an_embedding_model_asked_for_text_is_an_error_row_without_a_call(server: CountingServer) -> None:
    cohere_server.install(server, KEY)
    response = call("cohere:embedding:embed-english-v3.0", "hello")
    assert response.error == "Provider cohere:embedding:embed-english-v3.0 is an embedding provider; use a non-embedding provider for text"
    assert server.requests_to("/v1/chat") == [] and server.requests_to("/v1/embed") == []


def test_a_json_object_prompt_is_the_request_and_co_api_key_is_read(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY")
    monkeypatch.setenv("CO_API_KEY", KEY)
    cohere_server.install(server, KEY)
    prompt = json.dumps({"message": "from json", "documents": [{"title": "t", "snippet": "s"}]})
    response = call("cohere:chat:command-r", prompt)
    assert response.output == "echo: from json"
    (request,) = server.requests_to("/v1/chat")
    assert request.json["documents"] == [{"title": "t", "snippet": "s"}] and request.json["model"] == "command-r"


def test_429_with_retry_after_and_5xx_are_retried_and_a_400_is_an_error(server: CountingServer) -> None:
    cohere_server.install(server, KEY)
    server.fail(429, path="/v1/chat", retry_after="0", body={"message": "You are using a Trial key, which is limited"})
    server.fail(503, path="/v1/chat", body={"message": "unavailable"})
    assert call("cohere:command-r", "hello").output == "echo: hello"
    assert len(server.requests_to("/v1/chat")) == 3
    server.fail(400, path="/v1/chat", body={"message": "invalid model"})
    response = call("cohere:command-r", "hello")
    assert response.error == "API error 400: invalid model"


def test_missing_key_and_wrong_key_are_errors_that_never_show_the_key(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    cohere_server.install(server, "another-key-1234")
    response = call("cohere:command-r", "hello")
    assert response.error is not None and "401" in response.error and KEY not in response.error
    monkeypatch.delenv("COHERE_API_KEY")
    assert "COHERE_API_KEY or CO_API_KEY" in str(call("cohere:command-r", "hello").error)


def test_embeddings_as_promptfoo_asks_for_them(server: CountingServer) -> None:
    cohere_server.install(server, KEY)
    response = use({"id": "cohere:embedding:embed-english-v3.0", "config": {"truncate": "END"}}, lambda p: p.embed("two words"))
    assert response.error is None and response.embedding and len(response.embedding) == 64
    assert response.token_usage.prompt == 2
    (request,) = server.requests_to("/v1/embed")
    assert request.json == {"texts": ["two words"], "model": "embed-english-v3.0", "input_type": "classification", "truncate": "END"}


def test_eval_cohere_chat_with_similar_graded_by_cohere_embeddings_and_the_cache(server: CountingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cohere_server.install(server, KEY, lambda body: "the cat sat" if "cat" in body["message"] else Response(500, json={"message": "boom"}))
    monkeypatch.delenv("PROMPTFOO_CACHE_ENABLED")
    config = """
        prompts: ['Tell me about {{q}}']
        providers: [cohere:command-r-plus]
        defaultTest:
          options: {provider: {embedding: cohere:embedding:embed-english-v3.0}}
        tests:
          - vars: {q: cat}
            assert: [{type: similar, value: the cat sat, threshold: 0.9}]
          - vars: {q: dog}
            assert: [{type: contains, value: dog}]
        """
    code, rows = eval_rows(tmp_path, config)
    assert code == 1
    assert rows[0]["success"] is True and rows[0]["response"]["output"] == "the cat sat"
    assert rows[1]["success"] is False and "API error 500: boom" in rows[1]["error"]
    assert KEY not in (tmp_path / "out.json").read_text()
    chats = len(server.requests_to("/v1/chat"))
    code, rows = eval_rows(tmp_path, config)
    assert rows[0]["response"]["cached"] is True
    assert len(server.requests_to("/v1/chat")) == chats + 4  # only the failing row is asked again (1 + 3 retries)
