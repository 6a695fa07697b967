"""Ollama chat, completion and embedding providers over httpx against a loopback Ollama stand-in."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import CallContext
from tests.provider_helpers import call, eval_rows, make, use
from tests.servers import ollama_server
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import Response, bag_of_words_embedding
from tests.servers.ollama_server import ollama_error


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        ollama_server.install(srv)
        monkeypatch.setenv("OLLAMA_BASE_URL", srv.url)
        yield srv


def test_chat_sends_messages_options_and_reads_usage(server: CountingServer) -> None:
    ollama_server.install(server, lambda req: {"message": {"role": "assistant", "content": "Bonjour"}, "prompt_eval_count": 12, "eval_count": 3})
    prompt = json.dumps([{"role": "system", "content": "Translate."}, {"role": "user", "content": "Hello"}])
    spec = {"id": "ollama:chat:llama3.1:8b", "config": {"temperature": 0.2, "num_predict": 64, "seed": 7, "keep_alive": "5m", "unknown": 1}}
    response = call(spec, prompt)
    assert response.error is None
    assert response.output == "Bonjour"
    assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.total) == (12, 3, 15)
    assert response.cost == 0.0
    assert response.finish_reason == "stop"
    (request,) = server.requests_to("/api/chat")
    assert request.json == {
        "model": "llama3.1:8b",
        "messages": [{"role": "system", "content": "Translate."}, {"role": "user", "content": "Hello"}],
        "stream": False,
        "keep_alive": "5m",
        "options": {"temperature": 0.2, "num_predict": 64, "seed": 7},
    }


def test_completion_and_bare_ids_use_generate(server: CountingServer) -> None:
    for provider_id in ("ollama:completion:mistral", "ollama:mistral"):
        response = call({"id": provider_id, "config": {"max_tokens": 20}}, "Why is the sky blue?")
        assert response.output == "echo: Why is the sky blue?"
    requests = server.requests_to("/api/generate")
    assert [r.json for r in requests] == [{"model": "mistral", "prompt": "Why is the sky blue?", "stream": False, "options": {"num_predict": 20}}] * 2


def test_length_stop_and_tool_calls(server: CountingServer) -> None:
    calls = [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]
    ollama_server.install(server, lambda req: {"message": {"role": "assistant", "content": "", "tool_calls": calls}} if req.get("tools") else {"response": "cut", "done_reason": "length"})
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    response = call({"id": "ollama:chat:qwen3", "config": {"tools": tools}}, "weather?")
    # as promptfoo reads them: arguments as JSON text, and Ollama's own finish reason ("stop")
    assert response.output == [{"function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}] and response.finish_reason == "stop"
    assert server.requests_to("/api/chat")[0].json["tools"] == tools
    response = call("ollama:completion:qwen3", "go")
    assert response.output == "cut" and response.finish_reason == "length"


def test_response_schema_becomes_the_format(server: CountingServer) -> None:
    schema = {"type": "object", "properties": {"pass": {"type": "boolean"}}}
    call("ollama:chat:llama3.1", "grade", CallContext(response_schema=schema))
    assert server.requests_to("/api/chat")[0].json["format"] == schema


def test_embeddings(server: CountingServer) -> None:
    async def embed(provider):  # type: ignore[no-untyped-def]
        return await provider.embed("the cat sat")

    for provider_id in ("ollama:embedding:nomic-embed-text", "ollama:embeddings:nomic-embed-text"):
        result = use(provider_id, embed)
        assert result.error is None
        assert result.embedding == pytest.approx(bag_of_words_embedding("the cat sat"))
        assert result.token_usage.prompt == 7 and result.cost == 0.0
    assert server.requests_to("/api/embed")[0].json == {"model": "nomic-embed-text", "input": "the cat sat"}
    assert make("ollama:embedding:nomic-embed-text").supports("embedding")
    assert not make("ollama:chat:llama3.1").supports("embedding")


def test_embedding_errors(server: CountingServer) -> None:
    async def embed(provider):  # type: ignore[no-untyped-def]
        return await provider.embed("x")

    server.route("POST", "/api/embed", lambda rec: Response(200, json={"embeddings": []}))
    # a 200 that lacks the embedding is retried like a 5xx, then an error naming what is missing
    assert use("ollama:embedding:nomic-embed-text", embed).error == "API reply has no embeddings: {'embeddings': []} (gave up after 4 attempts)"
    assert len(server.requests_to("/api/embed")) == 4
    server.route("POST", "/api/embed", lambda rec: ollama_error(404, 'model "nomic-embed-text" not found, try pulling it first'))
    assert use("ollama:embedding:nomic-embed-text", embed).error == 'API error 404: model "nomic-embed-text" not found, try pulling it first'


def test_missing_model_is_a_clear_error_without_retry(server: CountingServer) -> None:
    ollama_server.install(server, lambda req: ollama_error(404, "model 'llama9' not found"))
    response = call("ollama:chat:llama9", "q")
    assert response.error == "API error 404: model 'llama9' not found"
    assert len(server.requests_to("/api/chat")) == 1


def test_server_errors_are_retried(server: CountingServer) -> None:
    server.fail(503, times=2, path="/api/generate", retry_after="0")
    response = call("ollama:completion:mistral", "q")
    assert response.output == "echo: q"
    assert len(server.requests_to("/api/generate")) == 3


def test_malformed_replies(server: CountingServer) -> None:
    ollama_server.install(server, lambda req: Response(200, body=b"{truncated", headers={"Content-Type": "application/json"}))
    assert "not JSON" in (call("ollama:chat:llama3.1", "q").error or "")
    ollama_server.install(server, lambda req: Response(200, json={"done": True}))
    assert (call("ollama:chat:llama3.1", "q").error or "").startswith("API reply has no output")
    ollama_server.install(server, lambda req: Response(200, json=["not", "an", "object"]))
    assert (call("ollama:completion:llama3.1", "q").error or "").startswith("API reply is not an object")


def test_unreachable_server_and_timeout(monkeypatch: pytest.MonkeyPatch, server: CountingServer) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    ollama_server.install(server, lambda req: (time.sleep(1.0), "late")[1])
    response = call({"id": "ollama:chat:llama3.1", "config": {"timeout": 0.2}}, "q")
    assert response.error == "request timed out after 0.2s (gave up after 1 attempt)"
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9")
    response = call("ollama:chat:llama3.1", "q")
    assert response.error is not None and response.error.startswith("connection failed: ClientConnectorError: Cannot connect to host 127.0.0.1:9"), response.error


def test_config_base_url_and_api_key(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("OLLAMA_API_KEY", "ollama-secret")
    assert call({"id": "ollama:chat:llama3.1", "config": {"apiBaseUrl": server.url + "/"}}, "q").output == "echo: q"
    assert server.requests_to("/api/chat")[0].headers["Authorization"] == "Bearer ollama-secret"


def test_ids_without_a_model_are_rejected() -> None:
    with pytest.raises(UnknownProviderError, match="name a model"):
        make("ollama:chat:")


def test_one_client_for_concurrent_calls(server: CountingServer) -> None:
    async def burst(provider):  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(provider.call(f"q{i}") for i in range(30)))

    responses = use({"id": "ollama:chat:llama3.1", "config": {"maxConcurrency": 3}}, burst)
    assert sorted(r.output for r in responses) == sorted(f"echo: q{i}" for i in range(30))
    assert 1 <= server.connections <= 3


def test_eval_provider_error_is_an_error_row_and_other_tests_run(server: CountingServer, tmp_path: Path) -> None:
    ollama_server.install(server, lambda req: ollama_error(500, "CUDA out of memory") if "boom" in str(req) else "fine answer")
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [ollama:chat:llama3.1]
        tests:
          - vars: {q: boom}
            assert: [{type: contains, value: fine}]
          - vars: {q: calm}
            assert: [{type: contains, value: fine}]
        """,
    )
    assert code == 1
    assert rows[0]["failureReason"] == 2 and rows[0]["success"] is False
    assert rows[0]["error"] == "API error 500: CUDA out of memory (gave up after 4 attempts)"
    assert rows[1]["success"] is True and rows[1]["response"]["output"] == "fine answer"


@pytest.mark.parametrize(("config", "expected"), [({}, "Thinking: let me think\n\nhi"), ({"showThinking": False}, "hi")])
def test_thinking_leads_the_output_as_promptfoo_shows_it(server: CountingServer, config: dict, expected: str) -> None:
    ollama_server.install(server, lambda req: {"message": {"role": "assistant", "content": "hi", "thinking": "let me think"}})
    assert call({"id": "ollama:chat:qwen3", "config": config}, "q").output == expected


def test_text_beside_tool_calls_is_kept_with_them(server: CountingServer) -> None:
    calls = [{"function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    ollama_server.install(server, lambda req: {"message": {"role": "assistant", "content": "Let me look.", "tool_calls": calls}})
    assert call("ollama:chat:qwen3", "q").output == {"content": "Let me look.", "tool_calls": calls}
