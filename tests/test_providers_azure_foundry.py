"""Azure AI Foundry agents (`azure:foundry-agent:<agent>`) through the Azure AI Projects SDK, over
HTTPS on loopback: DefaultAzureCredential signs in through the Azure CLI (a stand-in `az` on
PATH, as after `azure/login`; `AZURE_TOKEN_CREDENTIALS` selects it), the project's CA is trusted
through SSL_CERT_FILE, and the stand-in project checks the token, paths, api-version and bodies."""

from __future__ import annotations

import json
import os
import secrets
import ssl
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from ci_grade.config.models import ProviderSpec
from ci_grade.providers.azure_foundry import project_url, request_body, spec_warnings
from ci_grade.providers.base import Provider, ProviderResponse
from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows, use
from tests.servers.foundry_server import FoundryServer, error, function_outputs, responses_bodies

SERVERS = Path(__file__).resolve().parent / "servers"


@dataclass
class Foundry:
    server: FoundryServer
    token: str
    az_log: Path

    def az_calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.az_log.read_text().splitlines()] if self.az_log.exists() else []


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def foundry(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Foundry]:
    """A Foundry project over HTTPS with agents `weather-bot` (legacy id `asst_weather`) and two more,
    and an Azure CLI signed in whose token only it accepts."""
    token = f"eyJ0eXAiOiJKV1Qi.{secrets.token_urlsafe(24)}"
    tools = tmp_path / "az-bin"
    tools.mkdir()
    (tools / "token").write_text(token)
    log = tools / "calls.jsonl"
    az = tools / "az"
    az.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SERVERS / "az_cli.py"}" "{tools / "token"}" "{log}" "$@"\n')
    az.chmod(0o755)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", "AzureCliCredential")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    for name in ("SSL_CERT_DIR", "AZURE_AI_PROJECT_URL", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"):
        monkeypatch.delenv(name, raising=False)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    server = FoundryServer(token, {"weather-bot": "asst_weather", "helper": "asst_helper", "legacy-one": "asst_legacy"})
    server.start(tls=context)
    try:
        yield Foundry(server, token, log)
    finally:
        server.stop()


def agent_requests(server: FoundryServer) -> list[str]:
    return [r.path for r in server.requests if "/agents" in r.path]


def test_eval_runs_an_agent_end_to_end_and_the_token_stays_secret(foundry: Foundry, tmp_path: Path) -> None:
    server = foundry.server
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{question}}}}']
        providers:
          - id: azure:foundry-agent:weather-bot
            config:
              projectUrl: {server.project_url}
              instructions: Be brief.
              temperature: 0.2
              max_tokens: 150
              modelName: gpt-4o-mini
        tests:
          - vars: {{question: capital of France}}
            assert: [{{type: contains, value: 'agent says: capital of France'}}]
          - vars: {{question: two plus two}}
            assert: [{{type: contains, value: 'two plus two'}}]
        """,
    )
    assert code == 0, rows
    assert [r["success"] for r in rows] == [True, True]
    assert rows[0]["response"]["tokenUsage"]["cached"] == 4 and rows[0]["cost"] > 0
    assert agent_requests(server) == ["/api/projects/proj/agents/weather-bot?api-version=v1"]  # resolved once, by name
    bodies = sorted(responses_bodies(server), key=lambda b: b["input"][0]["content"])
    assert [r.path for r in server.requests if r.path.endswith("/responses")] == ["/api/projects/proj/openai/v1/responses"] * 2
    assert bodies[0] == {
        "input": [{"type": "message", "role": "user", "content": "capital of France"}],
        "instructions": "Be brief.",
        "model": "gpt-4o-mini",
        "max_output_tokens": 150,
        "temperature": 0.2,
        "agent_reference": {"name": "weather-bot", "type": "agent_reference"},
    }
    assert all(r.headers["authorization"] == f"Bearer {foundry.token}" for r in server.requests)
    assert {tuple(c) for c in foundry.az_calls()} == {("account", "get-access-token", "--output", "json", "--resource", "https://ai.azure.com")}
    written = (tmp_path / "out.json").read_text()
    assert foundry.token not in written


def test_a_legacy_id_is_found_among_the_listed_agents_page_by_page(foundry: Foundry) -> None:
    server = foundry.server
    response = call({"id": "azure:foundry-agent:asst_legacy", "config": {"projectUrl": server.project_url}}, "hello")
    assert response.error is None and response.output == "agent says: hello"
    assert agent_requests(server) == [
        "/api/projects/proj/agents/asst_legacy?api-version=v1",
        "/api/projects/proj/agents?api-version=v1",
        "/api/projects/proj/agents?after=asst_helper&api-version=v1",
    ]
    assert responses_bodies(server)[0]["agent_reference"] == {"name": "legacy-one", "type": "agent_reference"}


def test_an_agent_that_does_not_exist_is_an_error_row(foundry: Foundry, tmp_path: Path) -> None:
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: [hi]
        providers: [{{id: 'azure:foundry-agent:nobody', config: {{projectUrl: '{foundry.server.project_url}'}}}}]
        tests: [{{assert: [{{type: contains, value: hi}}]}}]
        """,
    )
    assert code == 1 and len(rows) == 1
    assert rows[0]["error"].startswith(
        f"Error in Azure Foundry Agent API call: Azure Foundry agent 'nobody' was not found by name or legacy ID in project '{foundry.server.project_url}'."
    )
    assert responses_bodies(foundry.server) == []


def test_function_calls_are_answered_by_the_callbacks_until_the_agent_answers(foundry: Foundry, tmp_path: Path) -> None:
    server = foundry.server
    server.calls = lambda prompt, agent: [("get_weather", json.dumps({"city": "Paris"})), ("get_time", "{}")] if "weather" in prompt else []
    write(tmp_path / "callbacks.js", "module.exports.clock = async (args, context) => `noon for ${context.assistantId} in ${context.provider}`;\n")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers:
          - id: azure:foundry-agent:weather-bot
            config:
              projectUrl: {server.project_url}
              tools: [{{type: function, name: get_weather, parameters: {{type: object, properties: {{city: {{type: string}}}}}}}}]
              functionToolCallbacks:
                get_weather: 'async function(args) {{ return {{city: JSON.parse(args).city, sky: "sunny"}}; }}'
                get_time: file://callbacks.js:clock
        tests:
          - vars: {{q: weather in Paris}}
            assert: [{{type: contains, value: 'agent says: weather in Paris | {{"city":"Paris","sky":"sunny"}} | noon for asst_weather in azure-foundry'}}]
        """,
    )
    assert code == 0, rows[0]["response"]["output"]
    first = responses_bodies(server)[0]
    follow_up = responses_bodies(server)[1]
    assert follow_up["previous_response_id"] == "resp_1" and follow_up["agent_reference"] == {"name": "weather-bot", "type": "agent_reference"}
    assert [item["type"] for item in function_outputs(server)[0]] == ["function_call_output"] * 2
    assert first["tools"][0]["name"] == "get_weather"


def test_calls_without_a_callback_for_each_stay_the_output(foundry: Foundry) -> None:
    foundry.server.calls = lambda prompt, agent: [("get_weather", '{"city":"Oslo"}'), ("unknown_tool", "{}")]
    spec = {"id": "azure:foundry-agent:weather-bot", "config": {"projectUrl": foundry.server.project_url, "functionToolCallbacks": {"get_weather": "async () => 'rain'"}}}
    response = call(spec, "weather in Oslo")
    assert response.error is None and response.finish_reason == "tool_calls"
    assert [c["name"] for c in response.output] == ["get_weather", "unknown_tool"]
    assert function_outputs(foundry.server) == []


def test_the_callback_loop_stops_at_max_poll_time(foundry: Foundry) -> None:
    foundry.server.calls = lambda prompt, agent: [("get_weather", "{}")]
    spec = {"id": "azure:foundry-agent:weather-bot", "config": {"projectUrl": foundry.server.project_url, "maxPollTimeMs": 0, "functionToolCallbacks": {"get_weather": "async () => 'rain'"}}}
    response = call(spec, "weather")
    assert response.error == "Azure Foundry agent tool-calling loop timed out after 0ms. Increase maxPollTimeMs if this evaluation legitimately needs a longer tool-calling loop."


def test_a_json_array_prompt_is_sent_as_the_input_items(foundry: Foundry) -> None:
    items = [{"type": "message", "role": "developer", "content": "Reply in French."}, {"type": "message", "role": "user", "content": "Hello there"}]
    response = call({"id": "azureopenai:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url}}, json.dumps(items))
    assert response.error is None and "Hello there" in response.output
    assert responses_bodies(foundry.server)[0]["input"] == items


def test_api_errors_are_error_rows_and_429s_are_retried(foundry: Foundry) -> None:
    server = foundry.server
    limited = error(429, "too_many_requests", "Rate limit exceeded. Try again in 1ms.")

    async def three(provider: Provider) -> list[ProviderResponse]:
        server.fail_next = [limited]  # while looking up the agent
        first = await provider.call("hello")
        server.fail_next = [limited, error(400, "invalid_prompt", "The prompt was rejected.")]
        second = await provider.call("again")
        server.fail_next = [limited, limited]
        return [first, second, await provider.call("third")]

    first, second, third = use({"id": "azure:foundry-agent:helper", "config": {"projectUrl": server.project_url}}, three)
    assert first.output == "agent says: hello" and third.output == "agent says: third"
    assert second.error == "Error in Azure Foundry Agent API call: API error 400: The prompt was rejected."
    assert agent_requests(server) == ["/api/projects/proj/agents/helper?api-version=v1"] * 2
    assert len(responses_bodies(server)) == 1 + 2 + 3


def test_sign_in_failure_is_an_error_row_without_the_call(foundry: Foundry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    response = call({"id": "azure:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url}}, "hello")
    assert response.error is not None and response.error.startswith("Error in Azure Foundry Agent API call: ")
    assert "Azure CLI not found" in response.error
    assert foundry.server.requests == []


def test_a_missing_project_is_refused_before_any_call(foundry: Foundry, tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders:\n  - id: azure:foundry-agent:helper\n    config: {temperature: 0.2}\ntests: [{vars: {}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    assert "set config.projectUrl or AZURE_AI_PROJECT_URL" in result.err and "promptfooconfig.yaml:4" in result.err
    assert foundry.server.requests == [] and foundry.az_calls() == []


def test_without_the_sdk_the_provider_is_refused_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.ai.projects", None)  # as if `ci-grade[azure]` were not installed
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders:\n  - id: azure:foundry-agent:helper\n    config: {projectUrl: 'https://127.0.0.1:9/api/projects/p'}\ntests: [{vars: {}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "pip install 'ci-grade[azure]'" in result.err and "promptfooconfig.yaml:4" in result.err


def test_the_project_may_come_from_the_environment_and_ignored_settings_are_named(foundry: Foundry, tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"""
        prompts: [hi]
        env: {{AZURE_AI_PROJECT_URL: '{foundry.server.project_url}'}}
        providers:
          - id: azure:foundry-agent:helper
            config: {{seed: 4, stop: [x], frequency_penalty: 0.1}}
        tests: [{{assert: [{{type: contains, value: 'agent says: hi'}}]}}]
        """)
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "ignore these per-request settings: frequency_penalty, seed, stop" in result.err
    assert "seed" not in responses_bodies(foundry.server)[0]


def test_request_options_as_promptfoo_sends_them() -> None:
    config = {
        "max_completion_tokens": 40, "max_tokens": 99, "reasoning_effort": "low", "top_p": 0.5, "tool_choice": "auto", "metadata": {"team": "a"},
        "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}, "verbosity": "low",
    }
    body = request_body("q", config)
    assert body["max_output_tokens"] == 40 and body["reasoning"] == {"effort": "low"} and body["metadata"] == {"team": "a"}
    assert body["text"] == {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True}, "verbosity": "low"}
    assert request_body("q", {"response_format": {"type": "json_object"}})["text"] == {"format": {"type": "json_object"}}
    assert project_url({"projectUrl": "project.services.ai.azure.com/api/projects/p"}, {}) == "https://project.services.ai.azure.com/api/projects/p"
    assert spec_warnings(ProviderSpec(id="azure:foundry-agent:a", config={"stop": [], "temperature": 1})) == []


def test_passthrough_goes_over_the_body(foundry: Foundry) -> None:
    spec = {"id": "azure:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url, "passthrough": {"truncation": "auto", "temperature": 0}}}
    assert call(spec, "hi").error is None
    body = responses_bodies(foundry.server)[0]
    assert body["truncation"] == "auto" and body["temperature"] == 0


def test_replies_are_cached_unless_callbacks_answer_the_agent(foundry: Foundry, tmp_path: Path) -> None:
    server = foundry.server
    server.calls = lambda prompt, agent: [("get_weather", "{}")] if agent == "weather-bot" else []
    write(tmp_path / "promptfooconfig.yaml", f"""
        prompts: ['{{{{q}}}}']
        providers:
          - id: azure:foundry-agent:helper
            label: plain
            config: {{projectUrl: '{server.project_url}'}}
          - id: azure:foundry-agent:weather-bot
            label: tools
            config: {{projectUrl: '{server.project_url}', functionToolCallbacks: {{get_weather: "async () => 'sunny'"}}}}
        tests: [{{vars: {{q: weather now}}, assert: [{{type: contains, value: 'weather now'}}]}}]
        """)
    for _ in range(2):
        assert run_cli("eval", "-o", "out.json", "--no-progress", "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path).code == 0
    agents = [b["agent_reference"]["name"] for b in responses_bodies(server) if "previous_response_id" not in b]
    assert sorted(agents) == ["helper", "weather-bot", "weather-bot"]  # the plain agent's second reply came from the cache


def test_a_refused_token_is_an_error_row_that_does_not_show_it(foundry: Foundry) -> None:
    foundry.server.token = "another-token"  # the project does not accept the CLI's token
    response = call({"id": "azure:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url}}, "hello")
    assert response.error is not None and "The principal does not have access to this project" in response.error
    assert foundry.token not in response.error and len(foundry.server.requests) == 1  # refused sign-ins are not retried


def test_a_project_whose_certificate_is_not_trusted_says_what_to_do(foundry: Foundry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE")
    response = call({"id": "azure:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url}}, "hello")
    assert response.error is not None and "TLS certificate was refused" in response.error and "SSL_CERT_FILE" in response.error
    assert "after retries" not in response.error and foundry.server.requests == []  # refused at the handshake, not retried


def test_a_json_schema_reply_is_read_as_its_data(foundry: Foundry) -> None:
    foundry.server.answer = lambda prompt, outputs: '{"city": "Paris"}'
    schema = {"type": "json_schema", "json_schema": {"name": "place", "schema": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    response = call({"id": "azure:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url, "response_format": schema}}, "where?")
    assert response.error is None and response.output == {"city": "Paris"}
    assert responses_bodies(foundry.server)[0]["text"]["format"]["type"] == "json_schema"


def test_a_sign_in_that_fails_once_the_agent_is_found_is_an_error_row(foundry: Foundry) -> None:
    tools = foundry.az_log.parent
    az = tools / "az"
    once = tools / "signed-in-once"
    az.write_text(  # the CLI's session ends after the project client's first token
        f'#!/bin/sh\nif [ -f "{once}" ]; then echo "ERROR: AADSTS700082: The refresh token has expired." >&2; exit 1; fi\n'
        f'touch "{once}"\nexec "{sys.executable}" "{SERVERS / "az_cli.py"}" "{tools / "token"}" "{foundry.az_log}" "$@"\n'
    )
    response = call({"id": "azure:foundry-agent:helper", "config": {"projectUrl": foundry.server.project_url}}, "hello")
    assert response.error is not None and response.error.startswith("Error in Azure Foundry Agent API call: ")
    assert "AADSTS700082" in response.error and foundry.token not in response.error
    assert agent_requests(foundry.server) == ["/api/projects/proj/agents/helper?api-version=v1"] and responses_bodies(foundry.server) == []
