"""Trace context beyond the provider: `context.trace` in script assertions, the exec provider's
traceparent, grader calls in the row's trace, and the results JSON's promptfoo-shaped `traces[]`,
each end to end with the instrumented weather agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ci_grade.results.promptfoo import read_results_and_config
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer, Recorded, Response
from tests.tracing_helpers import (
    REPO,
    agent_provider,
    agent_provider_file,
    free_port,
    script_model,
    write_config,
)

PY_CHECK = """
def get_assert(output, context):
    trace = context["trace"]
    tools = [s["attributes"].get("gen_ai.tool.name") for s in trace["spans"] if s["name"].startswith("execute_tool")]
    return {"pass": tools == ["get_weather"], "score": 1.0, "reason": f"{trace['testCaseId']} {trace['metadata']['testIdx']} {len(trace['spans'])} spans, tools {tools}"}
"""

JS_CHECK = """
module.exports = (output, context) => {
  const spans = context.trace.spans;
  const chats = spans.filter((s) => s.name.startsWith('chat ')).length;
  return { pass: chats === 2, score: 1, reason: `${context.trace.traceId.length} ${context.trace.evaluationId.slice(0, 5)} ${chats} chats` };
};
"""


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text())["results"]["results"]


def test_script_assertions_read_the_row_trace_and_the_results_json_has_promptfoo_traces(tmp_path: Path, llm_server: LLMServer) -> None:
    script_model(llm_server)
    port = free_port()
    agent_provider_file(tmp_path)
    (tmp_path / "check.py").write_text(PY_CHECK)
    (tmp_path / "check.js").write_text(JS_CHECK)
    write_config(tmp_path, {
        "prompts": ["What is the weather in {{city}}?"],
        "providers": [agent_provider(llm_server.openai_base_url, port)],
        "tests": [{"vars": {"city": "Paris"}, "assert": [
            {"type": "python", "value": "file://check.py"},
            {"type": "javascript", "value": "file://check.js"},
            {"type": "javascript", "value": "context.trace.spans.some((s) => s.name === 'invoke_agent weather-agent')"},
        ]}],
    }, port)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    data = json.loads((tmp_path / "out.json").read_text())
    row = data["results"]["results"][0]
    assert result.code == 0, (result.err, row["gradingResult"])
    reasons = [c["reason"] for c in row["gradingResult"]["componentResults"]]
    assert reasons[0] == "0-0 0 4 spans, tools ['get_weather']"
    assert reasons[1].startswith("32 eval- 2 chats")
    # promptfoo's shape: the row names its trace, the top-level traces[] holds it
    assert "trace" not in row and row["evaluationId"].startswith("eval-")
    (trace,) = data["traces"]
    assert trace["traceId"] == row["traceId"] and trace["evaluationId"] == row["evaluationId"] and trace["testCaseId"] == "0-0"
    assert trace["metadata"] == {"testIdx": 0, "promptIdx": 0, "providerId": "file://agent_provider.py", "repeatIndex": 0, "vars": {"city": "Paris"}}
    assert "droppedSpans" not in trace
    assert len(trace["spans"]) == 4 and {"spanId", "name", "startTime", "endTime", "attributes"} <= set(trace["spans"][0])
    # and it reads back: a baseline, a merge or --retry-errors gets the spans again
    run, _ = read_results_and_config(str(tmp_path / "out.json"))
    back = run.results[0].trace
    assert back is not None and back.trace_id == row["traceId"] and len(back.spans) == 4 and back.test_case_id == "0-0"


def test_exec_provider_gets_the_traceparent(tmp_path: Path, llm_server: LLMServer) -> None:
    script_model(llm_server)
    port = free_port()
    (tmp_path / "agent_exec.py").write_text(
        f"import json, sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from tests.agents.weather_agent import run_agent\n"
        "context = json.loads(sys.argv[3])\n"
        f"print(context['traceparent'] + ' ' + run_agent(sys.argv[1], context['traceparent'], {llm_server.openai_base_url!r}, 'http://127.0.0.1:{port}/v1/traces'))\n"
    )
    write_config(tmp_path, {
        "prompts": ["Weather in {{city}}?"],
        "providers": [f"exec: {sys.executable} agent_exec.py"],
        "tests": [{"vars": {"city": "Paris"}, "assert": [{"type": "trajectory:tool-args-match", "value": {"name": "get_weather", "args": {"city": "Paris"}}}]}],
    }, port)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    row = _rows(tmp_path / "out.json")[0]
    assert result.code == 0, (result.err, row["gradingResult"])
    assert row["response"]["output"].startswith(f"00-{row['traceId']}-")


def test_http_provider_and_grader_calls_carry_the_row_trace(tmp_path: Path, llm_server: LLMServer) -> None:
    """The HTTP target gets `traceparent` as a header; a grader call (here an HTTP grader) gets a
    traceparent in the same trace under a new span id, as promptfoo's grader calls do."""

    def target(request: Recorded) -> Response:
        return Response(json={"answer": "sunny"})

    def grader(request: Recorded) -> Response:
        return Response(json={"output": json.dumps({"pass": True, "score": 1, "reason": "fine"})})

    llm_server.route("POST", "/target", target).route("POST", "/grader", grader)
    port = free_port()
    write_config(tmp_path, {
        "prompts": ["{{q}}"],
        "providers": [{"id": f"{llm_server.url}/target", "config": {"body": {"q": "{{prompt}}"}, "transformResponse": "json.answer"}}],
        "defaultTest": {"options": {"provider": {"id": f"{llm_server.url}/grader", "config": {"body": {"p": "{{prompt}}"}, "transformResponse": "json.output"}}}},
        "tests": [{"vars": {"q": "weather?"}, "assert": [{"type": "llm-rubric", "value": "mentions the weather"}]}],
    }, port)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    row = _rows(tmp_path / "out.json")[0]
    assert result.code == 0, (result.err, row["gradingResult"])
    (sent,) = llm_server.requests_to("/target")
    (graded,) = llm_server.requests_to("/grader")
    _, trace_id, target_span, flags = sent.headers["traceparent"].split("-")
    _, grader_trace, grader_span, _ = graded.headers["traceparent"].split("-")
    assert trace_id == grader_trace == row["traceId"] and flags == "01"
    assert grader_span != target_span and len(grader_span) == 16


def test_inline_script_without_tracing_sees_no_trace(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ["hi"]
        providers: [echo]
        tests:
          - assert: [{type: javascript, value: "context.trace === undefined"}]
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    row = _rows(tmp_path / "out.json")[0]
    assert result.code == 0 and "traceId" not in row
    assert "traces" not in json.loads((tmp_path / "out.json").read_text())


FLAKY = """import pathlib, sys
sys.path.insert(0, {repo!r})
from tests.agents.weather_agent import call_api as agent  # noqa: E402


def call_api(prompt, options, context):
    if "Oslo" in prompt and pathlib.Path(__file__).with_name("down").exists():
        return {{"error": "the agent is down"}}
    return agent(prompt, options, context)
"""


def test_shards_merge_and_retry_errors_keep_every_row_trace(tmp_path: Path, llm_server: LLMServer) -> None:
    script_model(llm_server)
    port = free_port()
    (tmp_path / "agent_provider.py").write_text(FLAKY.format(repo=str(REPO)))
    (tmp_path / "down").write_text("")
    write_config(tmp_path, {
        "prompts": ["What is the weather in {{city}}?"],
        "providers": [agent_provider(llm_server.openai_base_url, port)],
        "tests": [{"vars": {"city": city}, "assert": [{"type": "trajectory:tool-used", "value": "get_weather"}]} for city in ("Paris", "Atlantis", "Oslo")],
    }, port)
    for k in (1, 2):
        assert run_cli("eval", "--no-progress", "--shard", f"{k}/2", "-o", f"s{k}.json", cwd=tmp_path).code == 0
    merged = run_cli("merge", "s1.json", "s2.json", "-o", "merged.json", "--fail-on", "never", cwd=tmp_path)
    assert merged.code == 0, merged.err
    data = json.loads((tmp_path / "merged.json").read_text())
    rows = {row["vars"]["city"]: row for row in data["results"]["results"]}
    traces = {trace["traceId"]: trace for trace in data["traces"]}
    assert set(traces) == {row["traceId"] for row in rows.values()}
    assert rows["Oslo"]["failureReason"] == 2 and traces[rows["Oslo"]["traceId"]]["spans"] == []
    assert len(traces[rows["Paris"]["traceId"]]["spans"]) == 4
    (tmp_path / "down").unlink()
    again = run_cli("eval", "--no-progress", "--retry-errors", "merged.json", "-o", "again.json", cwd=tmp_path)
    assert again.code == 0, again.err
    data = json.loads((tmp_path / "again.json").read_text())
    retried = {row["vars"]["city"]: row for row in data["results"]["results"]}
    traces = {trace["traceId"]: trace for trace in data["traces"]}
    assert retried["Paris"]["traceId"] == rows["Paris"]["traceId"]  # kept rows keep their trace
    assert retried["Oslo"]["traceId"] != rows["Oslo"]["traceId"] and retried["Oslo"]["success"]
    assert [s["name"] for s in traces[retried["Oslo"]["traceId"]]["spans"] if s["name"].startswith("execute_tool")] == ["execute_tool get_weather", "execute_tool send_email"]
    assert set(traces) == {row["traceId"] for row in retried.values()}


def test_cached_replies_and_grades_still_get_a_trace(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Say hi", "hi there")
    openai_env.on_chat("Rubric", {"reason": "ok", "pass": True, "score": 1.0})
    port = free_port()
    write_config(tmp_path, {
        "prompts": ["Say hi"],
        "providers": ["openai:chat:gpt-4.1-mini"],
        "tests": [{"assert": [
            {"type": "javascript", "value": "context.trace.traceId.length === 32 && context.trace.spans.length === 0"},
            {"type": "llm-rubric", "value": "Rubric: greets"},
        ]}],
    }, port)
    ids = []
    for _ in range(2):
        result = run_cli("eval", "--no-progress", "--cache-dir", "cache", "-o", "out.json", cwd=tmp_path)
        row = _rows(tmp_path / "out.json")[0]
        assert result.code == 0, (result.err, row["gradingResult"])
        ids.append((row["traceId"], row["response"]["cached"]))
    assert ids[0][1] is False and ids[1][1] is True and ids[0][0] != ids[1][0]  # a fresh trace, the reply from the cache
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2  # the reply and the grade, once each


FLOOD = """import json, httpx


def _body(trace_id, count, parent):
    spans = [{"traceId": trace_id, "spanId": f"{i + 1:016x}", "parentSpanId": parent, "name": f"step {i}",
              "startTimeUnixNano": str(1700000000000000000 + i), "endTimeUnixNano": str(1700000000000001000 + i),
              "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "search" if i == 0 else "noise"}}]} for i in range(count)]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def call_api(prompt, options, context):
    _, trace_id, parent, _ = context["traceparent"].split("-")
    url = options["config"]["endpoint"]
    codes = [httpx.post(url, content=b"{broken", headers={"Content-Type": "application/json"}).status_code]
    codes.append(httpx.post(url, content=_body(trace_id, options["config"]["spans"], parent), headers={"Content-Type": "application/json"}).status_code)
    codes.append(httpx.post(url, content=_body("ab" * 16, 500, parent), headers={"Content-Type": "application/json"}).status_code)
    return {"output": " ".join(map(str, codes))}
"""


def test_a_flood_and_a_malformed_body_leave_the_run_going_and_memory_bounded(tmp_path: Path) -> None:
    from ci_grade.tracing.store import MAX_SPANS_PER_TRACE

    port = free_port()
    (tmp_path / "flood.py").write_text(FLOOD)
    write_config(tmp_path, {
        "prompts": ["go"],
        "providers": [{"id": "file://flood.py", "config": {"endpoint": f"http://127.0.0.1:{port}/v1/traces", "spans": MAX_SPANS_PER_TRACE + 100}}],
        "tests": [{"assert": [
            {"type": "equals", "value": "400 200 200"},
            {"type": "trajectory:tool-used", "value": "search"},
            {"type": "trace-span-count", "value": {"pattern": "step *", "max": MAX_SPANS_PER_TRACE}},
        ]}],
    }, port)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    data = json.loads((tmp_path / "out.json").read_text())
    row = data["results"]["results"][0]
    assert result.code == 0, (result.err, row["gradingResult"])
    (trace,) = data["traces"]
    # the row keeps at most MAX_SPANS_PER_TRACE spans and counts the rest; another trace's spans are not kept at all
    assert len(trace["spans"]) == MAX_SPANS_PER_TRACE and trace["droppedSpans"] == 100 and trace["traceId"] != "ab" * 16


def test_trace_values_promptfoo_loads_are_row_errors_and_wrong_kinds_are_refused_at_load(tmp_path: Path) -> None:
    port = free_port()
    write_config(tmp_path, {
        "prompts": ["hi"],
        "providers": ["echo"],
        "tests": [{"assert": [{"type": "trace-span-count", "value": {"min": 1}}]}, {"assert": [{"type": "trace-span-duration", "value": {"max": 5, "percentile": 120}}]}],
    }, port)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    rows = _rows(tmp_path / "out.json")
    assert result.code == 1 and [row["failureReason"] for row in rows] == [2, 2]
    assert [row["gradingResult"]["componentResults"][0]["reason"] for row in rows] == [
        "trace-span-count assertion must have a value object with pattern property",
        "trace-span-duration assertion percentile must be a number between 0 and 100",
    ]
    write_config(tmp_path, {"prompts": ["hi"], "providers": ["echo"], "tests": [{"assert": [{"type": "trace-span-count", "value": ["a"]}]}]}, port)
    refused = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert refused.code == 2 and "promptfooconfig.yaml" in refused.err and "assert[0]" in refused.err and "Traceback" not in refused.err
