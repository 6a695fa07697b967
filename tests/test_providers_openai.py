"""OpenAI providers through the real `openai` SDK against the loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade.providers.retry import RetryPolicy, retry_after_seconds
from tests.provider_helpers import call, eval_rows, make, use
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import LLMServer

KEY = "sk-test-0123456789"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        yield srv


def only_chat(server: LLMServer) -> dict:
    (request,) = server.requests_to("/v1/chat/completions")
    return request.json


def test_plain_prompt_options_on_the_wire_usage_and_cost(server: CountingServer) -> None:
    server.on_chat("Paris", "It is Paris.", usage={"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
    config = {"temperature": 0.2, "max_tokens": 64, "seed": 11, "response_format": {"type": "json_object"}, "tools": tools, "top_p": 0.9, "unknown_key": 1}
    response = call({"id": "openai:chat:gpt-4o-mini", "config": config}, "Capital of France? Paris?")
    assert response.error is None
    assert response.output == "It is Paris."
    assert response.finish_reason == "stop"
    assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.total) == (1000, 500, 1500)
    assert response.token_usage.num_requests == 1
    assert response.cost == pytest.approx(1000 * 0.15e-6 + 500 * 0.6e-6)
    body = only_chat(server)
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [{"role": "user", "content": "Capital of France? Paris?"}]
    assert (body["temperature"], body["max_tokens"], body["seed"], body["top_p"]) == (0.2, 64, 11, 0.9)
    assert body["response_format"] == {"type": "json_object"}
    assert body["tools"] == tools
    assert "unknown_key" not in body


@pytest.mark.parametrize(
    ("model", "config", "env", "expected"),
    [
        # promptfoo 0.123.1's defaults (getOpenAiBody): temperature 0 and 1024 tokens unless set
        ("gpt-4.1-mini", {}, {}, {"temperature": 0, "max_tokens": 1024}),
        ("gpt-4.1-mini", {}, {"OPENAI_TEMPERATURE": "0.7", "OPENAI_MAX_TOKENS": "200", "OPENAI_TOP_P": "0.5"}, {"temperature": 0.7, "max_tokens": 200, "top_p": 0.5}),
        ("gpt-4.1-mini", {"temperature": 0.3, "max_tokens": 50}, {"OPENAI_TEMPERATURE": "0.7"}, {"temperature": 0.3, "max_tokens": 50}),
        ("gpt-4.1-mini", {"omitDefaults": True}, {}, {}),
        ("gpt-4.1-mini", {"omitDefaults": True}, {"OPENAI_TEMPERATURE": "1"}, {"temperature": 1.0}),
        # reasoning models take neither, even when configured; max_completion_tokens when given
        ("o3-mini", {"temperature": 0.5, "max_tokens": 10}, {}, {}),
        ("gpt-5", {}, {"OPENAI_MAX_COMPLETION_TOKENS": "4000"}, {"max_completion_tokens": 4000}),
        ("my-deployment", {"isReasoningModel": True, "max_completion_tokens": 99}, {}, {"max_completion_tokens": 99}),
    ],
)
def test_sampling_defaults_follow_promptfoo(server: CountingServer, model: str, config: dict, env: dict, expected: dict) -> None:
    call({"id": f"openai:chat:{model}", "config": config}, "hi", env={**os.environ, **env})
    body = only_chat(server)
    sampling = ("temperature", "max_tokens", "max_completion_tokens", "top_p", "presence_penalty", "frequency_penalty")
    assert {k: body[k] for k in sampling if k in body} == expected


@pytest.mark.parametrize(("model", "expected"), [("gpt-4.1", {"temperature": 0, "max_output_tokens": 1024}), ("o4-mini", {})])
def test_responses_api_sampling_defaults(server: CountingServer, model: str, expected: dict) -> None:
    call({"id": f"openai:responses:{model}", "config": {}}, "hi")
    (request,) = server.requests_to("/v1/responses")
    assert {k: request.json[k] for k in ("temperature", "max_output_tokens") if k in request.json} == expected


def test_config_headers_are_sent(server: CountingServer) -> None:
    call({"id": "openai:chat:gpt-4.1-mini", "config": {"headers": {"x-custom": "c1", "X-Gateway-Team": "evals"}}}, "hi")
    call({"id": "openai:responses:gpt-4.1", "config": {"headers": {"x-custom": "r"}}}, "hi")
    (chat,) = server.requests_to("/v1/chat/completions")
    (responses,) = server.requests_to("/v1/responses")
    headers = {k.lower(): v for k, v in chat.headers.items()}
    assert (headers["x-custom"], headers["x-gateway-team"]) == ("c1", "evals")
    assert {k.lower(): v for k, v in responses.headers.items()}["x-custom"] == "r"


@pytest.mark.parametrize(("config", "expected"), [({}, "Thinking: I think\n\nhi"), ({"showThinking": False}, "hi")])
def test_reasoning_content_leads_the_output_as_promptfoo_shows_it(server: CountingServer, config: dict, expected: str) -> None:
    server.on_chat(None, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "reasoning_content": "I think"}, "finish_reason": "stop"}]})
    assert call({"id": "openai:chat:deepseek-reasoner", "config": config}, "q").output == expected


def test_the_endpoint_is_chosen_in_promptfoos_order() -> None:
    from ci_grade.providers.openai import OpenAIChatProvider
    from ci_grade.providers.registry import as_spec

    def url(config: dict, env: dict) -> str:
        return OpenAIChatProvider(as_spec({"id": "openai:chat:m", "config": config}), env, "m").base_url()

    env = {"OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_BASE_URL": "http://b/v1"}
    assert url({}, env) == "http://b/v1"
    assert url({}, {**env, "OPENAI_API_HOST": "c.example"}) == "https://c.example/v1"
    assert url({"apiBaseUrl": "http://d/v1"}, {**env, "OPENAI_API_HOST": "c.example"}) == "http://d/v1"
    assert url({"apiBaseUrl": "http://d/v1", "apiHost": "e.example"}, env) == "https://e.example/v1"
    assert url({}, {}) == "https://api.openai.com/v1"


def test_chat_message_prompt_and_shorthand_id(server: CountingServer) -> None:
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}]
    response = call("openai:gpt-4.1-mini", json.dumps(messages))
    assert response.output == "echo: Hi"
    body = only_chat(server)
    assert body["model"] == "gpt-4.1-mini" and body["messages"] == messages


@pytest.mark.parametrize(
    ("prompt", "sent"),
    [
        ("- role: system\n  content: Be brief.\n- role: user\n  content: Hi\n", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]),
        ("- role: user\n  content: [never closed\n", None),  # not YAML: the prompt as it is
        ("- role: user\n  content: " + "[" * 200 + "\n", None),  # nested past the limit: the same
    ],
    ids=["yaml-messages", "not-yaml", "too-deep"],
)
def test_a_yaml_message_list_is_sent_as_messages_and_anything_else_as_text(prompt: str, sent: list[dict[str, str]] | None, server: CountingServer) -> None:
    response = call("openai:gpt-4.1-mini", prompt)
    assert response.error is None
    assert only_chat(server)["messages"] == (sent or [{"role": "user", "content": prompt}])


def test_tool_calls_are_the_output(server: CountingServer) -> None:
    calls = [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    server.on_chat(None, "", tool_calls=calls, finish_reason="tool_calls")
    response = call("openai:chat:gpt-4o", "use the tool")
    assert response.output == calls
    assert response.finish_reason == "tool_calls"


def test_responses_api(server: CountingServer) -> None:
    server.on_chat(None, "from responses")
    spec = {"id": "openai:responses:gpt-4.1", "config": {"max_tokens": 30, "temperature": 0.5, "instructions": "be kind", "seed": 7, "passthrough": {"user": "u1"}}}
    response = call(spec, "hello")
    assert response.output == "from responses"
    assert response.token_usage.total > 0 and response.cost is not None and response.cost > 0
    (request,) = server.requests_to("/v1/responses")
    assert request.json["model"] == "gpt-4.1"
    assert request.json["max_output_tokens"] == 30 and request.json["temperature"] == 0.5 and request.json["instructions"] == "be kind"
    assert request.json["input"] == [{"role": "user", "content": "hello"}]
    assert "seed" not in request.json and request.json["user"] == "u1"  # as promptfoo: no seed in the Responses API, passthrough as given


def test_responses_api_json_schema_output_is_data(server: CountingServer) -> None:
    server.on_chat(None, '{"a": "hi"}')
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    assert call({"id": "openai:responses:gpt-4.1", "config": {"response_format": schema}}, "q").output == {"a": "hi"}


def test_embeddings(server: CountingServer) -> None:
    server.set_embedding("hello world", [0.0, 0.6, 0.8])

    async def embed(provider):  # type: ignore[no-untyped-def]
        return await provider.embed("hello world")

    result = use("openai:embedding:text-embedding-3-small", embed)
    assert result.error is None
    assert result.embedding == pytest.approx([0.0, 0.6, 0.8])
    assert result.token_usage.prompt > 0
    assert result.cost == pytest.approx(result.token_usage.prompt * 0.02e-6)
    (request,) = server.requests_to("/v1/embeddings")
    assert request.json["model"] == "text-embedding-3-small" and request.json["input"] == "hello world"
    assert make("openai:embeddings:text-embedding-3-large").supports("embedding")


def test_moderation_flags_become_categories(server: CountingServer) -> None:
    server.flag("punch", "violence", 0.91)
    server.flag("punch", "harassment/threatening", 0.4)

    async def moderate(provider):  # type: ignore[no-untyped-def]
        return await provider.moderate("prompt", "I will punch you"), await provider.moderate("prompt", "have a nice day")

    flagged, clean = use("openai:moderation", moderate)
    assert {f.code: f.confidence for f in flagged.flags or []} == {"violence": pytest.approx(0.91), "harassment/threatening": pytest.approx(0.4)}
    assert clean.flags == []
    requests = server.requests_to("/v1/moderations")
    assert [r.json["input"] for r in requests] == ["I will punch you", "have a nice day"]
    assert requests[0].json["model"] == "omni-moderation-latest"


def test_rate_limit_is_retried_honouring_retry_after(server: CountingServer) -> None:
    server.fail(429, times=2, path="/v1/chat/completions", retry_after="0.2")
    started = time.perf_counter()
    response = call("openai:chat:gpt-4o-mini", "q")
    elapsed = time.perf_counter() - started
    assert response.output == "echo: q"
    assert len(server.requests_to("/v1/chat/completions")) == 3
    assert elapsed >= 0.38  # the backoff without Retry-After is ~0.03 s here (tests/conftest.py)
    # The wait is exactly what the server asked, within the cap (0.5 s in tests), never the clock's guess.
    policy = RetryPolicy.from_env()
    assert policy.delay(1, retry_after_seconds({"Retry-After": "0.2"})) == 0.2
    assert policy.delay(3, retry_after_seconds({"retry-after-ms": "150"})) == pytest.approx(0.15)
    assert policy.delay(1, retry_after_seconds({"Retry-After": "3600"})) == 0.5


@pytest.mark.parametrize("retry_after", ["nan", "abc", "-nan", "Mon, 99 Foo 2026"])
def test_an_unreadable_retry_after_falls_back_to_the_usual_backoff(server: CountingServer, retry_after: str) -> None:
    # `nan` once made asyncio.sleep(nan) wait forever (the row hung to its deadline); `abc` raised
    server.fail(503, times=2, path="/v1/chat/completions", retry_after=retry_after)
    response = call("openai:chat:gpt-4o-mini", "q")
    assert response.output == "echo: q" and len(server.requests_to("/v1/chat/completions")) == 3
    assert retry_after_seconds({"Retry-After": retry_after}) is None
    assert retry_after_seconds({"retry-after-ms": "nan", "Retry-After": "1.5"}) == 1.5


def test_retries_give_up_with_the_reason(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "2")
    server.fail(503, times=10, path="/v1/chat/completions")
    response = call("openai:chat:gpt-4o-mini", "q")
    assert response.error is not None and response.error.startswith("API error 503: injected fault 503")
    assert len(server.requests_to("/v1/chat/completions")) == 3


def test_dropped_connections_are_retried(server: CountingServer) -> None:
    server.fail(drop=True, times=1, path="/v1/chat/completions")
    assert call("openai:chat:gpt-4o-mini", "q").output == "echo: q"
    assert len(server.requests_to("/v1/chat/completions")) == 2


def test_bad_request_is_not_retried_and_keeps_the_api_message(server: CountingServer) -> None:
    server.fail(400, path="/v1/chat/completions", body={"error": {"message": "Invalid value for 'temperature': must be <= 2", "type": "invalid_request_error"}})
    response = call({"id": "openai:chat:gpt-4o-mini", "config": {"temperature": 5}}, "q")
    assert response.error == "API error 400: Invalid value for 'temperature': must be <= 2"
    assert response.output is None
    assert len(server.requests_to("/v1/chat/completions")) == 1


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    response = call("openai:chat:gpt-4o-mini", "q")
    assert response.error == "API key is not set: set OPENAI_API_KEY or config.apiKey for provider openai:chat:gpt-4o-mini"

    async def embed(provider):  # type: ignore[no-untyped-def]
        return await provider.embed("x")

    assert (use("openai:embedding:text-embedding-3-small", embed).error or "").startswith("API key is not set: set OPENAI_API_KEY")


def test_api_key_envar_api_base_url_and_organization(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # unused: config wins
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-team-key")
    spec = {"id": "openai:chat:gpt-4o", "config": {"apiKeyEnvar": "TEAM_OPENAI_KEY", "apiBaseUrl": server.openai_base_url, "organization": "org-evals"}}
    assert call(spec, "q").output == "echo: q"
    (request,) = server.requests_to("/v1/chat/completions")
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["authorization"] == "Bearer sk-team-key"
    assert headers["openai-organization"] == "org-evals"
    monkeypatch.delenv("TEAM_OPENAI_KEY")
    assert call(spec, "q").error == "API key is not set: set TEAM_OPENAI_KEY or config.apiKey for provider openai:chat:gpt-4o"


def test_secrets_are_not_in_errors(server: CountingServer) -> None:
    server.fail(401, path="/v1/chat/completions", body={"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
    response = call("openai:chat:gpt-4o-mini", "q")
    assert response.error == "API error 401: Incorrect API key provided"
    assert KEY not in response.error


def test_one_client_for_concurrent_calls(server: CountingServer) -> None:
    server.on_chat(None, "ok", latency=0.01)

    async def burst(provider):  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(provider.call(f"q{i}") for i in range(30)))

    responses = use({"id": "openai:chat:gpt-4o-mini", "config": {"maxConcurrency": 3}}, burst)
    assert [r.output for r in responses] == ["ok"] * 30
    assert 1 <= server.connections <= 3


def test_eval_provider_error_is_an_error_row_and_other_tests_run(server: CountingServer, tmp_path: Path) -> None:
    server.on_chat("forbidden", {"error": {"message": "This request was rejected"}}, status=400)
    server.on_chat(None, "a fine answer")
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [openai:chat:gpt-4o-mini]
        tests:
          - vars: {q: hello}
            assert: [{type: contains, value: fine}]
          - vars: {q: forbidden}
            assert: [{type: contains, value: fine}]
        """,
    )
    assert code == 1
    assert rows[0]["success"] is True
    assert rows[0]["response"]["tokenUsage"]["total"] > 0 and rows[0]["response"]["cost"] > 0
    assert rows[1]["failureReason"] == 2 and rows[1]["error"] == "API error 400: This request was rejected"
    assert KEY not in (tmp_path / "out.json").read_text()
