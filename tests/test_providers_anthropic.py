"""Anthropic Messages provider over httpx against a loopback stand-in of the Messages API."""

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
from tests.servers import anthropic_server
from tests.servers.anthropic_server import anthropic_error
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import Response

KEY = "sk-ant-test-secret-4242"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        yield srv


def test_chat_prompt_system_field_headers_options_usage_and_cost(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: {"content": "Paris.", "usage": {"input_tokens": 1000, "output_tokens": 200}})
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}])
    spec = {"id": "anthropic:messages:claude-sonnet-4-5-20250929", "config": {"temperature": 0.3, "top_k": 5, "stop_sequences": ["END"]}}
    response = call(spec, prompt)
    assert response.error is None
    assert response.output == "Paris."
    assert response.finish_reason == "stop"
    assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.total) == (1000, 200, 1200)
    assert response.cost == pytest.approx(1000 * 3e-6 + 200 * 15e-6)
    (request,) = server.requests_to("/v1/messages")
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.json == {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 1024,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "temperature": 0.3,
        "top_k": 5,
        "stop_sequences": ["END"],
    }


def test_shorthand_id_plain_prompt_and_max_tokens(server: CountingServer) -> None:
    anthropic_server.install(server)
    response = call({"id": "anthropic:claude-3-5-haiku-latest", "config": {"max_tokens": 50}}, "hi there")
    assert response.output == "echo: hi there"
    (request,) = server.requests_to("/v1/messages")
    assert request.json["model"] == "claude-3-5-haiku-latest"
    assert request.json["max_tokens"] == 50
    assert request.json["temperature"] == 0 and "system" not in request.json  # promptfoo's default temperature
    assert response.cost is None  # promptfoo prices no `-latest` alias, and this server replies with the alias


@pytest.mark.parametrize(
    ("model", "config", "temperature"),
    [
        ("claude-sonnet-4-5-20250929", {}, 0.0),
        ("claude-sonnet-4-5-20250929", {"top_p": 0.9}, None),
        ("claude-sonnet-4-5-20250929", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, None),
        ("claude-opus-5", {"temperature": 0.4}, None),  # Claude 5 and later refuse sampling parameters
    ],
)
def test_temperature_defaults_as_promptfoo_sends_them(server: CountingServer, model: str, config: dict, temperature: float | None) -> None:
    anthropic_server.install(server)
    call({"id": f"anthropic:messages:{model}", "config": config}, "hi")
    (request,) = server.requests_to("/v1/messages")
    assert request.json.get("temperature") == temperature


def test_forced_tool_returns_the_tool_input_object(server: CountingServer) -> None:
    verdict = {"pass": True, "score": 0.9, "reason": "fine"}
    anthropic_server.install(server, lambda req: [{"type": "tool_use", "id": "tu_1", "name": "grade_output", "input": verdict}])
    tool = {"name": "grade_output", "description": "grade", "input_schema": {"type": "object", "properties": {"pass": {"type": "boolean"}}}}
    spec = {"id": "anthropic:messages:claude-sonnet-4-5", "config": {"tools": [tool], "tool_choice": {"type": "tool", "name": "grade_output"}}}
    response = call(spec, "grade this")
    assert response.error is None
    assert response.output == verdict
    assert response.finish_reason == "tool_calls"
    (request,) = server.requests_to("/v1/messages")
    assert request.json["tools"] == [tool]
    assert request.json["tool_choice"] == {"type": "tool", "name": "grade_output"}


def test_response_schema_from_a_grader_becomes_a_forced_tool(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: [{"type": "tool_use", "id": "tu_1", "name": "verdict", "input": {"pass": False}}])
    schema = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}
    response = call("anthropic:messages:claude-sonnet-4-5", "grade", CallContext(response_schema=schema))
    assert response.output == {"pass": False}
    (request,) = server.requests_to("/v1/messages")
    assert request.json["tools"][0]["name"] == "verdict" and request.json["tools"][0]["input_schema"] == schema
    assert request.json["tool_choice"] == {"type": "tool", "name": "verdict"}


def test_openai_style_tools_are_converted_and_unforced_calls_are_json_text(server: CountingServer) -> None:
    block = {"type": "tool_use", "id": "tu_9", "name": "get_weather", "input": {"city": "Oslo"}}
    anthropic_server.install(server, lambda req: [block])
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "weather", "parameters": {"type": "object"}}}]
    response = call({"id": "anthropic:messages:claude-sonnet-4-5", "config": {"tools": tools, "tool_choice": "auto"}}, "weather?")
    assert response.output == '{"type":"tool_use","id":"tu_9","name":"get_weather","input":{"city":"Oslo"}}'  # promptfoo's JSON.stringify
    (request,) = server.requests_to("/v1/messages")
    assert request.json["tools"] == [{"name": "get_weather", "description": "weather", "input_schema": {"type": "object"}}]
    assert request.json["tool_choice"] == {"type": "auto"}


def test_text_and_tool_calls_together_are_joined(server: CountingServer) -> None:
    block = {"type": "tool_use", "id": "tu_2", "name": "lookup", "input": {"q": "x"}}
    anthropic_server.install(server, lambda req: [{"type": "text", "text": "Let me look."}, block])
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.output == "Let me look.\n\n" + json.dumps(block, separators=(",", ":"))


@pytest.mark.parametrize(("config", "expected"), [({}, "Thinking: hmm\nSignature: sig\n\nRedacted Thinking: xyz\n\nhi"), ({"showThinking": False}, "hi")])
def test_thinking_is_shown_as_promptfoo_shows_it(server: CountingServer, config: dict, expected: str) -> None:
    blocks = [{"type": "thinking", "thinking": "hmm", "signature": "sig"}, {"type": "redacted_thinking", "data": "xyz"}, {"type": "text", "text": "hi"}]
    anthropic_server.install(server, lambda req: blocks)
    assert call({"id": "anthropic:messages:claude-sonnet-4-5", "config": config}, "q").output == expected


def test_cache_tokens_count_as_prompt_and_are_priced_as_cache(server: CountingServer) -> None:
    usage = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}
    anthropic_server.install(server, lambda req: {"content": "ok", "usage": usage})
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.token_usage.prompt == 1300
    assert response.token_usage.cached == 1000
    assert response.token_usage.total == 1310
    assert response.cost == pytest.approx((100 + 0.1 * 1000 + 1.25 * 200) * 3e-6 + 10 * 15e-6)


def test_config_cost_overrides_and_unknown_model_has_no_cost(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: {"content": "ok", "model": "mystery", "usage": {"input_tokens": 10, "output_tokens": 5}})
    assert call("anthropic:messages:my-fine-tune", "q").cost is None
    assert call({"id": "anthropic:messages:my-fine-tune", "config": {"cost": 0.001}}, "q").cost == pytest.approx(0.015)


@pytest.mark.parametrize(("stop", "finish", "refusal"), [("max_tokens", "length", False), ("refusal", "content_filter", True), ("stop_sequence", "stop", False)])
def test_stop_reasons(server: CountingServer, stop: str, finish: str, refusal: bool) -> None:
    anthropic_server.install(server, lambda req: {"content": "partial", "stop_reason": stop})
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert (response.finish_reason, response.is_refusal) == (finish, refusal)


def test_overloaded_529_is_retried_honouring_retry_after(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: "finally")
    server.fail(529, times=2, path="/v1/messages", retry_after="0.2", body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    started = time.perf_counter()
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    elapsed = time.perf_counter() - started
    assert response.output == "finally"
    assert len(server.requests_to("/v1/messages")) == 3
    assert elapsed >= 0.38


def test_rate_limit_exhausted_reports_the_api_message(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "1")
    anthropic_server.install(server, lambda req: anthropic_error(429, "Number of requests has exceeded your rate limit", "rate_limit_error"))
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.error == "API error 429: Number of requests has exceeded your rate limit (gave up after 2 attempts)"
    assert len(server.requests_to("/v1/messages")) == 2


def test_bad_request_is_not_retried_and_keeps_the_message(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: anthropic_error(400, "max_tokens: must be at most 8192"))
    response = call({"id": "anthropic:messages:claude-sonnet-4-5", "config": {"max_tokens": 99999}}, "q")
    assert response.error == "API error 400: max_tokens: must be at most 8192"
    assert response.output is None
    assert len(server.requests_to("/v1/messages")) == 1


def test_auth_error_does_not_echo_the_key(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: anthropic_error(401, "invalid x-api-key", "authentication_error"))
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.error == "API error 401: invalid x-api-key"
    assert KEY not in response.error


def test_malformed_bodies_are_errors(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: Response(200, body=b"<html>gateway</html>", headers={"Content-Type": "text/html"}))
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.error is not None and "not JSON" in response.error and "gateway" in response.error
    server.route("POST", "/v1/messages", lambda rec: Response(200, json={"id": "x", "type": "message"}))
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.error is not None and response.error.startswith("API reply has no content list")


def test_timeout_is_an_error(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    anthropic_server.install(server, lambda req: (time.sleep(1.0), "late")[1])
    response = call({"id": "anthropic:messages:claude-sonnet-4-5", "config": {"timeout": 0.2}}, "q")
    assert response.error == "request timed out after 0.2s (gave up after 1 attempt)"


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    response = call("anthropic:messages:claude-sonnet-4-5", "q")
    assert response.error == "API key is not set: set ANTHROPIC_API_KEY or config.apiKey for provider anthropic:messages:claude-sonnet-4-5"
    response = call({"id": "anthropic:messages:claude-sonnet-4-5", "config": {"apiKeyEnvar": "MY_CLAUDE_KEY"}}, "q")
    assert response.error is not None and "set MY_CLAUDE_KEY" in response.error


def test_config_key_envar_and_base_url_with_v1(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    anthropic_server.install(server)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # unused: config wins
    monkeypatch.setenv("MY_CLAUDE_KEY", "other-key")
    spec = {"id": "anthropic:messages:claude-sonnet-4-5", "config": {"apiBaseUrl": server.url + "/v1/", "apiKeyEnvar": "MY_CLAUDE_KEY", "headers": {"x-team": "evals"}, "beta": ["tools-1", "cache-2"]}}
    assert call(spec, "q").output == "echo: q"
    (request,) = server.requests_to("/v1/messages")
    assert request.headers["x-api-key"] == "other-key"
    assert request.headers["x-team"] == "evals"
    assert request.headers["anthropic-beta"] == "tools-1,cache-2"


@pytest.mark.parametrize(("provider_id", "why"), [
    ("anthropic:completion:claude-2", "legacy Text Completions API"),
    ("anthropic:claude-agent-sdk", "Claude Agent SDK"),
    ("anthropic:claude-code:sonnet", "Claude Agent SDK"),
    ("anthropic:sonnet-4", "'sonnet-4' is not an Anthropic model name"),
])
def test_ids_promptfoo_runs_elsewhere_or_refuses_are_refused(provider_id: str, why: str) -> None:
    with pytest.raises(UnknownProviderError, match=why):
        make(provider_id)


def test_a_claude_model_id_and_messages_ids_are_taken() -> None:
    assert [make(i).model for i in ("anthropic:claude-sonnet-4-5", "anthropic:messages:claude-3-5-haiku-latest")] == ["claude-sonnet-4-5", "claude-3-5-haiku-latest"]


def test_one_client_serves_many_concurrent_calls(server: CountingServer) -> None:
    anthropic_server.install(server, lambda req: (time.sleep(0.02), "ok")[1])

    async def burst(provider):  # type: ignore[no-untyped-def]
        first = await asyncio.gather(*(provider.call(f"q{i}") for i in range(24)))
        second = await asyncio.gather(*(provider.call(f"r{i}") for i in range(24)))
        return first + second

    responses = use({"id": "anthropic:messages:claude-sonnet-4-5", "config": {"maxConcurrency": 4}}, burst)
    assert len(responses) == 48 and all(r.output == "ok" for r in responses)
    assert len(server.requests_to("/v1/messages")) == 48
    assert 1 <= server.connections <= 4


def test_eval_provider_error_is_an_error_row_and_other_tests_run(server: CountingServer, tmp_path: Path) -> None:
    anthropic_server.install(server, lambda req: anthropic_error(400, "prompt is too long") if "boom" in str(req["messages"]) else "all good")
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [anthropic:messages:claude-sonnet-4-5]
        tests:
          - vars: {q: first}
            assert: [{type: contains, value: good}]
          - vars: {q: boom}
            assert: [{type: contains, value: good}]
          - vars: {q: third}
            assert: [{type: contains, value: good}]
        """,
    )
    assert code == 1
    assert [r["success"] for r in rows] == [True, False, True]
    assert rows[1]["failureReason"] == 2
    assert rows[1]["error"] == "API error 400: prompt is too long"
    assert rows[0]["response"]["output"] == "all good"
    assert rows[0]["response"]["tokenUsage"]["total"] > 0
