"""OpenAI and Azure OpenAI Assistants (`openai:assistant:`, `azure:assistant:`) through the SDK's
`beta.threads` API against the loopback Assistants stand-in, with function tool callbacks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows
from tests.servers.assistants_server import AssistantsServer

KEY = "assistants-key-5d1"
WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AssistantsServer]:
    with AssistantsServer(KEY, ("asst_support", "your_assistant_id")) as started:
        assert isinstance(started, AssistantsServer)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("AZURE_OPENAI_API_HOST", started.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{started.url}/v1")
        yield started


def weather_calls(prompt: str, tools: list[dict[str, object]]) -> list[tuple[str, str]]:
    if "weather" not in prompt.lower() or not any(t.get("type") == "function" for t in tools):
        return []
    return [("get_weather", json.dumps({"location": city})) for city in ("Seattle", "Tokyo") if city in prompt]


def test_eval_azure_assistant_answers_calls_with_file_and_inline_callbacks(server: AssistantsServer, tmp_path: Path) -> None:
    server.calls = weather_calls
    server.polls = 1
    write(tmp_path / "tools.json", json.dumps([WEATHER_TOOL, {"type": "file_search"}]))
    write(tmp_path / "callbacks/weather.js", """
        function getWeather(args, context) {
          const parsed = JSON.parse(args);
          return JSON.stringify({ location: parsed.location, temperature: 22, via: context.provider });
        }
        module.exports = { getWeather };
        """)
    code, rows = eval_rows(tmp_path, """
        prompts: ['{{q}}']
        providers:
          - id: azure:assistant:your_assistant_id
            label: from-file
            config:
              apiHost: PLACEHOLDER
              apiVersion: '2024-05-01-preview'
              tools: file://tools.json
              tool_resources: {file_search: {vector_store_ids: [vs_1]}}
              functionToolCallbacks:
                get_weather: file://callbacks/weather.js:getWeather
          - id: azure:assistant:your_assistant_id
            label: inline
            config:
              tools: file://tools.json
              functionToolCallbacks:
                get_weather: |
                  async function(args) {
                    const parsed = JSON.parse(args);
                    return { location: parsed.location, inline: true };
                  }
        tests:
          - vars: {q: Weather in Seattle and Tokyo?}
            assert: [{type: contains, value: '"temperature":22'}]
          - vars: {q: Hello there}
            assert: [{type: starts-with, value: '[User] Hello there'}]
        """.replace("PLACEHOLDER", server.url))
    assert code == 1  # the inline callback's answer has no temperature: one FAIL
    assert [r["success"] for r in rows] == [True, False, True, True]
    expected_file = (
        "[User] Weather in Seattle and Tokyo?\n\n[Ran file search]\n\n[File search details: {\"results\":[]}]\n\n"
        "[Call function get_weather with arguments {\"location\": \"Seattle\"}]\n\n"
        "[Function output: {\"location\":\"Seattle\",\"temperature\":22,\"via\":\"azure\"}]\n\n"
        "[Call function get_weather with arguments {\"location\": \"Tokyo\"}]\n\n"
        "[Function output: {\"location\":\"Tokyo\",\"temperature\":22,\"via\":\"azure\"}]\n\n"
        "[Assistant] echo: Weather in Seattle and Tokyo? | {\"location\":\"Seattle\",\"temperature\":22,\"via\":\"azure\"}"
        " | {\"location\":\"Tokyo\",\"temperature\":22,\"via\":\"azure\"}"
    )
    assert rows[0]["response"]["output"] == expected_file
    assert '[Function output: {"location":"Seattle","inline":true}]' in rows[1]["response"]["output"]
    assert rows[2]["response"]["output"].endswith("[Assistant] echo: Hello there")
    starts = server.requests_to("/openai/threads/runs")
    assert all("api-version=2024-05-01-preview" in r.path for r in starts[:2]) or any("2024-05-01-preview" in r.path for r in starts)
    first = next(r.json for r in starts if r.json["thread"]["messages"][0]["content"].startswith("Weather") and "tool_resources" in r.json)
    assert first["assistant_id"] == "your_assistant_id"
    assert first["tool_resources"] == {"file_search": {"vector_store_ids": ["vs_1"]}}
    assert [t["type"] for t in first["tools"]] == ["function", "file_search"]
    submits = [r for r in server.requests if r.path.split("?")[0].endswith("/submit_tool_outputs")]
    assert len(submits) == 2 and all(len(r.json["tool_outputs"]) == 2 for r in submits)


def test_openai_assistant_passes_parsed_arguments_and_reports_usage(server: AssistantsServer, tmp_path: Path) -> None:
    server.calls = weather_calls
    inline = "function(args, context) { return {city: args.location, thread: context.threadId.slice(0, 7)}; }"
    spec = {"id": "openai:assistant:asst_support", "config": {"tools": [WEATHER_TOOL], "functionToolCallbacks": {"get_weather": inline}, "temperature": 0.2, "toolChoice": "auto"}}
    response = call(spec, "Weather in Seattle?")
    assert response.error is None
    assert response.output == (
        "[Call function get_weather with arguments {\"location\": \"Seattle\"}]\n\n"
        "[Function output: {\"city\":\"Seattle\",\"thread\":\"thread_\"}]\n\n"
        "[Assistant] echo: Weather in Seattle? | {\"city\":\"Seattle\",\"thread\":\"thread_\"}"
    )
    assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.total) == (40, 10, 50)
    assert response.cost is not None and response.cost > 0  # priced by the run's model, gpt-4o-mini
    (start,) = server.requests_to("/v1/threads/runs")
    assert start.headers["authorization"] == f"Bearer {KEY}"
    assert (start.json["temperature"], start.json["tool_choice"]) == (0.2, "auto")


def test_a_callback_that_throws_answers_the_error_and_the_run_goes_on(server: AssistantsServer) -> None:
    server.calls = weather_calls
    spec = {"id": "azure:assistant:asst_support", "config": {"tools": [WEATHER_TOOL], "functionToolCallbacks": {"get_weather": "function(args) { throw new Error('no forecast'); }"}}}
    response = call(spec, "Weather in Tokyo?")
    assert response.error is None
    assert '[Function output: {"error":"Error in get_weather: no forecast"}]' in response.output
    assert response.output.endswith('[Assistant] echo: Weather in Tokyo? | {"error":"Error in get_weather: no forecast"}')


def test_failed_runs_filtered_runs_and_unknown_assistants(server: AssistantsServer) -> None:
    server.fail_with = {"code": "server_error", "message": "Sorry, something went wrong."}
    assert call("azure:assistant:asst_support", "hi").error == "Thread run failed: server_error - Sorry, something went wrong."
    assert call("openai:assistant:asst_support", "hi").error == "Thread run failed: Sorry, something went wrong."
    server.fail_with = {"code": "content_filter", "message": "The response was filtered"}
    filtered = call("azure:assistant:asst_support", "hi")
    assert filtered.error is None and filtered.guardrails == {"flagged": True, "flaggedInput": False, "flaggedOutput": True}
    server.fail_with = None
    missing = call("azure:assistant:asst_nobody", "hi")
    assert missing.error is not None and "No assistant found with id 'asst_nobody'" in missing.error


def test_azure_run_that_asks_for_a_function_without_callbacks_is_an_error(server: AssistantsServer) -> None:
    server.calls = weather_calls
    response = call({"id": "azure:assistant:asst_support", "config": {"tools": [WEATHER_TOOL]}}, "Weather in Tokyo?")
    assert response.error == "Thread run failed with status: requires_action"
    shown = call({"id": "openai:assistant:asst_support", "config": {"tools": [WEATHER_TOOL]}}, "Weather in Tokyo?")
    assert shown.error is None and shown.output == '[Call function get_weather with arguments {"location": "Tokyo"}]\n\n[Function output: null]'


def test_an_assistant_id_is_required_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['hi']
        providers: ['azure:assistant:']
        tests: [{vars: {a: 1}}]
        """)
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "name the assistant, e.g. azure:assistant:asst_abc123" in result.err
