"""Azure OpenAI providers through the real `AsyncAzureOpenAI` client against the loopback server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.errors import UnknownProviderError
from tests.provider_helpers import call, eval_rows, make, use
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import LLMServer

KEY = "azure-key-7f3e9"


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """The scripted OpenAI-compatible server (the counting variant stops faster)."""
    with CountingServer() as server:
        yield server


@pytest.fixture
def azure_env(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_API_HOST", llm_server.url)
    return llm_server


def chat_requests(server: LLMServer, deployment: str) -> list[Any]:
    return server.requests_to(f"/openai/deployments/{deployment}/chat/completions")


def test_chat_sends_options_to_the_deployment_with_key_and_version(azure_env: LLMServer) -> None:
    azure_env.on_chat(None, "hello from azure", usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    config = {"temperature": 0.1, "max_tokens": 77, "seed": 42, "response_format": {"type": "json_object"}, "tools": tools, "apiVersion": "2025-01-01-preview"}
    response = call({"id": "azureopenai:chat:gpt-4o-mini", "config": config}, '[{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]')
    assert response.error is None
    assert response.output == "hello from azure"
    assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.total) == (100, 20, 120)
    assert response.cost == pytest.approx(100 * 0.15e-6 + 20 * 0.6e-6)
    (request,) = chat_requests(azure_env, "gpt-4o-mini")
    assert request.path.endswith("?api-version=2025-01-01-preview")
    assert request.headers["api-key"] == KEY
    assert "authorization" not in {k.lower() for k in request.headers}
    body = request.json
    assert body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    assert (body["model"], body["temperature"], body["max_tokens"], body["seed"]) == ("gpt-4o-mini", 0.1, 77, 42)
    assert body["response_format"] == {"type": "json_object"} and body["tools"] == tools


def test_azure_alias_endpoint_variable_alternate_key_and_default_version(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_API_KEY", "second-key")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", llm_server.url + "/")
    response = call("azure:chat:prod-chat", "ping")
    assert response.output == "echo: ping"
    (request,) = chat_requests(llm_server, "prod-chat")
    assert request.path.endswith("?api-version=2024-10-21")
    assert request.headers["api-key"] == "second-key"
    assert make("azure:chat:prod-chat").describe() == "azure:chat:prod-chat"


def test_config_api_host_key_envar_and_version_variable(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_AZURE_KEY", "team-key")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-06-01")
    spec = {"id": "azureopenai:chat:dep1", "config": {"apiHost": llm_server.url, "apiKeyEnvar": "TEAM_AZURE_KEY"}}
    assert call(spec, "x").output == "echo: x"
    (request,) = chat_requests(llm_server, "dep1")
    assert request.headers["api-key"] == "team-key" and request.path.endswith("api-version=2024-06-01")


def test_endpoint_forms() -> None:
    assert make({"id": "azureopenai:chat:d", "config": {"apiHost": "myres.openai.azure.com"}}).endpoint() == "https://myres.openai.azure.com"  # type: ignore[attr-defined]
    assert make({"id": "azureopenai:chat:d", "config": {"apiBaseUrl": "https://x.example/openai/"}}).endpoint() == "https://x.example"  # type: ignore[attr-defined]


def test_cost_from_the_reply_model_when_the_deployment_name_is_not_a_model(azure_env: LLMServer) -> None:
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    }
    azure_env.on_chat(None, reply)
    response = call("azureopenai:chat:my-team-deployment", "q")
    assert response.cost == pytest.approx(1000 * 2.5e-6 + 100 * 10e-6)
    assert call({"id": "azureopenai:chat:my-team-deployment", "config": {"cost": 1e-6}}, "q").cost == pytest.approx(1100e-6)


def test_embeddings(azure_env: LLMServer) -> None:
    azure_env.set_embedding("some text", [0.6, 0.8])

    async def embed(provider):  # type: ignore[no-untyped-def]
        return await provider.embed("some text")

    for provider_id in ("azureopenai:embedding:emb-large", "azure:embeddings:emb-large"):
        result = use(provider_id, embed)
        assert result.error is None and result.embedding == pytest.approx([0.6, 0.8])
    requests = azure_env.requests_to("/openai/deployments/emb-large/embeddings")
    assert len(requests) == 2 and requests[0].json["model"] == "emb-large"
    assert make("azure:embedding:emb-large").supports("embedding")


def test_missing_key_and_endpoint_are_clear_errors(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_HOST", llm_server.url)
    assert call("azureopenai:chat:d", "q").error == "API key is not set: set AZURE_OPENAI_API_KEY or AZURE_API_KEY or config.apiKey for provider azureopenai:chat:d"
    monkeypatch.delenv("AZURE_OPENAI_API_HOST")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    error = call("azureopenai:chat:d", "q").error
    assert error == "Azure OpenAI endpoint is not set: set AZURE_OPENAI_API_HOST (or AZURE_OPENAI_ENDPOINT) or config.apiHost for provider azureopenai:chat:d"
    assert llm_server.requests == []


def test_throttling_is_retried_honouring_retry_after(azure_env: LLMServer) -> None:
    azure_env.fail(429, times=2, retry_after="0.2")
    started = time.perf_counter()
    response = call("azureopenai:chat:d", "q")
    assert response.output == "echo: q"
    assert len(chat_requests(azure_env, "d")) == 3
    assert time.perf_counter() - started >= 0.38


def test_content_filter_400_keeps_the_api_message_and_hides_the_key(azure_env: LLMServer) -> None:
    body = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", "code": "content_filter"}}
    azure_env.fail(400, body=body)
    response = call("azureopenai:chat:d", "q")
    assert response.error == f"API error 400: {body['error']['message']}"
    assert KEY not in response.error
    assert len(chat_requests(azure_env, "d")) == 1


@pytest.mark.parametrize(("provider_id", "message"), [("azureopenai:video:a", "azureopenai:responses:<deployment>"), ("azure:foundry-agent:", "name the agent, e.g. azure:foundry-agent:my-agent"), ("azureopenai:video:a", "azureopenai:foundry-agent:<agent>"), ("azure:chat:", "name the deployment")])
def test_unsupported_ids(provider_id: str, message: str) -> None:
    with pytest.raises(UnknownProviderError, match=message):
        make(provider_id)


def test_responses_on_the_v1_route_with_promptfoos_azure_body(azure_env: LLMServer) -> None:
    azure_env.on_chat(None, "hello from responses")
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    config = {"tools": tools, "tool_choice": {"type": "function", "function": {"name": "lookup"}}, "instructions": "Be brief."}
    response = call({"id": "azure:responses:gpt-4.1-mini", "config": config}, "hi")
    assert response.error is None and response.output == "hello from responses"
    assert response.token_usage.total > 0 and response.cost is not None and response.cost > 0
    (request,) = azure_env.requests_to("/openai/v1/responses")
    assert request.path.endswith("?api-version=preview") and request.headers["api-key"] == KEY
    body = request.json
    assert (body["model"], body["input"], body["instructions"], body["temperature"], body["max_output_tokens"]) == ("gpt-4.1-mini", "hi", "Be brief.", 0, 1024)
    assert body["tools"] == [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    assert body["tool_choice"] == {"type": "function", "name": "lookup"} and body["text"] == {"format": {"type": "text"}}


def test_responses_takes_the_configured_api_version_and_a_default_deployment(azure_env: LLMServer) -> None:
    azure_env.on_chat(None, "ok")
    assert call({"id": "azureopenai:responses", "config": {"apiVersion": "2025-04-01-preview"}}, "hi").output == "ok"
    (request,) = azure_env.requests_to("/openai/v1/responses")
    assert request.path.endswith("?api-version=2025-04-01-preview") and request.json["model"] == "gpt-4.1-2025-04-14"


def test_eval_provider_error_is_an_error_row_and_other_tests_run(azure_env: LLMServer, tmp_path: Path) -> None:
    azure_env.on_chat("forbidden", {"error": {"message": "content filtered"}}, status=400)
    azure_env.on_chat(None, "permitted answer")
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [azureopenai:chat:prod]
        tests:
          - vars: {q: forbidden topic}
            assert: [{type: contains, value: answer}]
          - vars: {q: normal topic}
            assert: [{type: contains, value: answer}]
        """,
    )
    assert code == 1
    assert rows[0]["failureReason"] == 2 and rows[0]["error"] == "API error 400: content filtered"
    assert rows[1]["success"] is True and rows[1]["response"]["output"] == "permitted answer"
