"""A real OpenTelemetry-instrumented agent graded on its trajectory, end to end: `ci-grade eval`
with `tracing:` serves an OTLP receiver, hands each row a traceparent, and grades the spans the
agent exports (OTLP/HTTP protobuf from the SDK's exporter) with the trace-* and trajectory:* types."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.agents.weather_agent import serve
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer
from tests.tracing_helpers import agent_provider, agent_provider_file, free_port, script_model, write_config

TRAJECTORY_ASSERTS = [
    {"type": "trajectory:tool-used", "value": "get_weather"},
    {"type": "not-trajectory:tool-used", "value": ["send_email", "delete_*"]},
    {"type": "trajectory:tool-args-match", "value": {"name": "get_weather", "args": {"city": "Paris"}}},
    {"type": "trajectory:tool-sequence", "value": {"mode": "exact", "steps": ["get_weather"]}},
    {"type": "trajectory:step-count", "value": {"type": "tool", "max": 1}},
    {"type": "trace-span-count", "value": {"pattern": "chat *", "min": 2, "max": 2}},
    {"type": "trace-span-duration", "value": {"pattern": "*", "max": 10000, "percentile": 95}},
    {"type": "trace-error-spans", "value": 0},
]


def _results(folder: Path) -> dict:
    return json.loads((folder / "out.json").read_text())


def test_python_provider_agent_is_graded_on_its_trajectory(tmp_path: Path, llm_server: LLMServer) -> None:
    script_model(llm_server)
    port = free_port()
    agent_provider_file(tmp_path)
    write_config(tmp_path, {
        "prompts": ["What is the weather in {{city}}?"],
        "providers": [agent_provider(llm_server.openai_base_url, port)],
        "tests": [
            {"description": "paris", "vars": {"city": "Paris"}, "assert": TRAJECTORY_ASSERTS},
            {"description": "atlantis", "vars": {"city": "Atlantis"}, "assert": [
                {"type": "trace-error-spans", "value": {"max_count": 0, "pattern": "execute_tool *"}},
                {"type": "trajectory:tool-args-match", "value": {"name": "get_weather", "args": {"city": "Paris"}}},
            ]},
        ],
    }, port)
    result = run_cli("eval", "-o", "out.json", "-o", "report.md", "-o", "junit.xml", "--no-progress", cwd=tmp_path)
    rows = {row["testCase"]["description"]: row for row in _results(tmp_path)["results"]["results"]}
    paris, atlantis = rows["paris"], rows["atlantis"]
    assert paris["success"], paris["gradingResult"]
    reasons = [c["reason"] for c in paris["gradingResult"]["componentResults"]]
    assert "Observed required tool(s): get_weather. Actual tools: tool:get_weather" in reasons
    assert 'Tool "get_weather" matched expected arguments (partial) on tool:get_weather. Args: {"city":"Paris","unit":"c"}' in reasons
    assert re.fullmatch(r"[0-9a-f]{32}", paris["traceId"])
    trace = paris["trace"]
    assert trace["traceId"] == paris["traceId"] and trace["metadata"]["testCaseId"] == "0-0"
    names = sorted(span["name"] for span in trace["spans"])
    assert names == ["chat scripted-model", "chat scripted-model", "execute_tool get_weather", "invoke_agent weather-agent"]
    # the agent's root span is a child of the row's traceparent
    root = next(s for s in trace["spans"] if s["name"] == "invoke_agent weather-agent")
    assert root["parentSpanId"] and root["attributes"]["service.name"] == "weather-agent"
    assert not atlantis["success"]
    reasons = [c["reason"] for c in atlantis["gradingResult"]["componentResults"]]
    assert "Found 1 error spans, expected at most 0. Errors: execute_tool get_weather (no such city: Atlantis)" in reasons
    assert 'No call to tool "get_weather" matched expected arguments (partial): {"city":"Paris"}. Observed args: {"city":"Atlantis","unit":"c"}' in reasons
    report = (tmp_path / "report.md").read_text()
    assert "(steps: tool:get\\_weather {&#34;city&#34;:&#34;Atlantis&#34;" in report  # a failing trajectory is shown as its steps
    assert "no such city: Atlantis" in (tmp_path / "junit.xml").read_text()
    assert result.code in (0, 1), result.err


def test_http_agent_whose_spans_arrive_late_is_waited_for(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    script_model(llm_server)
    port = free_port()
    monkeypatch.setenv("CI_GRADE_TRACE_WAIT_MS", "5000")
    agent = serve(llm_server.openai_base_url, f"http://127.0.0.1:{port}/v1/traces", export="late")
    try:
        write_config(tmp_path, {
            "prompts": ["{{city}}"],
            "providers": [{"id": f"http://127.0.0.1:{agent.server_address[1]}/agent", "config": {"body": {"question": "Weather in {{prompt}}, then mail it"}, "transformResponse": "json.answer"}}],
            "tests": [{"vars": {"city": "Oslo"}, "assert": [
                {"type": "trajectory:tool-sequence", "value": ["get_weather", "send_email"]},
                {"type": "trajectory:tool-used", "value": {"name": "send_email", "min": 1, "max": 1}},
            ]}],
        }, port)
        result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    finally:
        agent.shutdown()
    row = _results(tmp_path)["results"]["results"][0]
    assert result.code == 0, (result.err, row["gradingResult"])
    assert row["response"]["output"] == "It is sunny, 21 degrees."
    assert "Observed tool sequence in order: tool:get_weather, tool:send_email" in row["gradingResult"]["componentResults"][0]["reason"]


def test_spans_that_never_arrive_fail_the_trajectory_as_promptfoo(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    script_model(llm_server)
    port = free_port()
    monkeypatch.setenv("CI_GRADE_TRACE_WAIT_MS", "300")
    agent_provider_file(tmp_path)
    write_config(tmp_path, {
        "prompts": ["Weather in Paris?"],
        "providers": [agent_provider(llm_server.openai_base_url, port, export="never")],
        "tests": [{"assert": [
            {"type": "trajectory:tool-used", "value": "get_weather"},
            {"type": "trace-span-count", "value": {"pattern": "*", "min": 1}},
        ]}],
    }, port)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 1
    reasons = [c["reason"] for c in _results(tmp_path)["results"]["results"][0]["gradingResult"]["componentResults"]]
    assert reasons == ["Missing required tool(s): get_weather. Actual tools: (none)", 'Found 0 spans matching pattern "*", expected at least 1']


def test_a_port_in_use_is_a_config_error_before_any_model_call(tmp_path: Path, llm_server: LLMServer) -> None:
    script_model(llm_server)
    agent_provider_file(tmp_path)
    with __import__("socket").socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        write_config(tmp_path, {
            "prompts": ["Weather in Paris?"],
            "providers": [agent_provider(llm_server.openai_base_url, port)],
            "tests": [{"assert": [{"type": "trajectory:tool-used", "value": "get_weather"}]}],
        }, port)
        result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml" in result.err and "tracing.otlp.http.port" in result.err and "Traceback" not in result.err
    assert llm_server.requests_to("/v1/chat/completions") == []


def test_trace_assertions_without_tracing_are_errors(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ["hi"]
        providers: [echo]
        tests:
          - assert: [{type: trajectory:tool-used, value: search}]
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    row = _results(tmp_path)["results"]["results"][0]
    assert result.code == 1 and row["failureReason"] == 2
    assert "No trace data available for trajectory:tool-used assertion" in row["gradingResult"]["componentResults"][0]["reason"]


def test_goal_success_asks_the_grader_with_the_trajectory(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Goal:", {"reason": "Looked up the weather and reported it.", "pass": True, "score": 0.9})
    script_model(openai_env)
    port = free_port()
    agent_provider_file(tmp_path)
    write_config(tmp_path, {
        "prompts": ["What is the weather in Paris?"],
        "providers": [agent_provider(openai_env.openai_base_url, port)],
        "defaultTest": {"options": {"provider": "openai:chat:gpt-4.1-mini"}},
        "tests": [{"assert": [
            {"type": "trajectory:goal-success", "value": "Tell the user the weather in Paris", "threshold": 0.8},
            {"type": "not-trajectory:goal-success", "value": {"goal": "Tell the user the weather in Paris"}},
        ]}],
    }, port)
    run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    components = _results(tmp_path)["results"]["results"][0]["gradingResult"]["componentResults"]
    assert [(c["pass"], c["score"], c["reason"]) for c in components] == [
        (True, 0.9, "Looked up the weather and reported it."),
        (False, pytest.approx(0.1), "Agent unexpectedly achieved the goal: Tell the user the weather in Paris"),
    ]
    asked = [r for r in openai_env.requests_to("/v1/chat/completions") if "Goal:" in json.dumps(r.json)]
    prompt = asked[0].json["messages"][-1]["content"]
    assert '"type": "tool",\n      "name": "get_weather"' in prompt and "It is sunny" in prompt


def test_the_bundled_example_runs_offline(tmp_path: Path) -> None:
    from tests.tracing_helpers import REPO

    folder = REPO / "examples" / "agent-trajectory"
    result = run_cli("eval", "-o", str(tmp_path / "out.json"), "--no-progress", cwd=folder)
    rows = {r["description"]: r for r in json.loads((tmp_path / "out.json").read_text())["results"]["results"]}
    assert result.code == 1, result.err
    assert [rows[name]["success"] for name in sorted(rows)] == [False, True, True]
    failing = rows["a refund request (fails on purpose: the agent calls issue_refund)"]["gradingResult"]["componentResults"]
    assert failing[0]["reason"] == "Forbidden tool(s) were used: issue_refund. Actual tools: tool:lookup_order, tool:issue_refund"
