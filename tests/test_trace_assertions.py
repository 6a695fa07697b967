"""The trace-* and trajectory:* types with promptfoo's semantics: on the spans of promptfoo's own
tracing example (its config's assertions, the same verdicts and reasons promptfoo gives), on
spans that arrive out of order, and on secrets carried in span attributes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.results.traces import Span, Trace
from ci_grade.tracing.steps import glob_matches, judge_summary, steps
from ci_grade.tracing.store import SpanStore
from tests.conftest import run_cli
from tests.tracing_helpers import free_port, write_config

# (name, parent, start ms, duration ms, attributes, status code, status message): the spans of
# promptfoo's examples/opentelemetry-tracing provider, with fixed timings.
RAG_SPANS = [
    ("rag_agent_workflow", None, 0, 3900, {"agent.type": "rag_assistant"}, 1, None),
    ("query_analysis", "rag_agent_workflow", 5, 300, {"step.type": "preprocessing"}, 1, None),
    ("document_retrieval", "rag_agent_workflow", 310, 650, {"retrieval.method": "vector_similarity"}, 1, None),
    ("retrieve_document_0", "document_retrieval", 311, 170, {"search.query": "quantum computing"}, 1, None),
    ("retrieve_document_1", "document_retrieval", 490, 220, {"search.query": "quantum computing"}, 1, None),
    ("retrieve_document_2", "document_retrieval", 720, 240, {"search.query": "quantum computing"}, 1, None),
    ("context_augmentation", "rag_agent_workflow", 965, 200, {"augmentation.strategy": "rerank_and_merge"}, 1, None),
    ("reasoning_chain", "rag_agent_workflow", 1170, 1360, {"reasoning.type": "chain_of_thought"}, 1, None),
    ("reasoning_identify_key_concepts", "reasoning_chain", 1171, 320, {}, 1, None),
    ("reasoning_analyze_relationships", "reasoning_chain", 1495, 450, {}, 1, None),
    ("reasoning_synthesize_answer", "reasoning_chain", 1950, 580, {}, 1, None),
    ("response_generation", "rag_agent_workflow", 2540, 850, {"generation.type": "augmented_response", "authorization": "Bearer tok-9f8e7d6c5b4a3", "note": "sent with tok-9f8e7d6c5b4a3"}, 1, None),
]

PROVIDER = '''
import json, sys
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

def call_api(prompt, options, context):
    config = options["config"]
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=config["endpoint"])))
    tracer = provider.get_tracer("rag")
    parent_of = {None: TraceContextTextMapPropagator().extract({"traceparent": context["traceparent"]})}
    base = 1_700_000_000_000_000_000
    made = []
    for name, parent, start, duration, attributes, code, message in config["spans"]:
        span = tracer.start_span(name, context=parent_of[parent], attributes=attributes, start_time=base + start * 1_000_000)
        span.set_status(Status(StatusCode.OK if code == 1 else StatusCode.ERROR, message))
        parent_of[name] = set_span_in_context(span)
        made.append((span, base + (start + duration) * 1_000_000))
    for span, end in reversed(made) if config.get("reverse") else made:  # arrival order is not start order
        span.end(end_time=end)
    provider.shutdown()
    return {"output": "Quantum computing explained."}
'''

EXAMPLE_ASSERTS = [
    {"type": "trace-span-count", "value": {"pattern": "rag_agent_workflow", "min": 1, "max": 1}},
    {"type": "trace-span-count", "value": {"pattern": "retrieve_document_*", "min": 3, "max": 3}},
    {"type": "trace-span-count", "value": {"pattern": "reasoning_*", "min": 3}},
    {"type": "trace-span-duration", "value": {"pattern": "rag_agent_workflow", "max": 5000}},
    {"type": "trace-span-duration", "value": {"pattern": "*", "max": 1000}},
    {"type": "trace-error-spans", "value": {"max_count": 0}},
]
DEFAULT_ASSERTS = [
    {"type": "trace-span-duration", "value": {"pattern": "*", "max": 2000, "percentile": 95}, "weight": 0, "metric": "p95_latency"},
    {"type": "trace-span-duration", "value": {"pattern": "retrieve_document_*", "max": 300}},
    {"type": "trace-error-spans", "value": {"max_percentage": 5, "pattern": "*"}, "metric": "error_rate"},
]
# What promptfoo 0.123.1's handlers say about these spans (its reasons, character for character).
EXPECTED = [
    (True, 'Found 1 spans matching pattern "rag_agent_workflow" (expected 1-1). Matched spans: rag_agent_workflow'),
    (True, 'Found 3 spans matching pattern "retrieve_document_*" (expected 3-3). Matched spans: retrieve_document_0, retrieve_document_1, retrieve_document_2'),
    (True, 'Found 4 spans matching pattern "reasoning_*" (expected at least 3). Matched spans: reasoning_chain, reasoning_identify_key_concepts, reasoning_analyze_relationships, reasoning_synthesize_answer'),
    (True, 'All 1 spans matching pattern "rag_agent_workflow" completed within 5000ms (max: 3900ms)'),
    (False, "2 span(s) exceed duration threshold 1000ms. Slowest: rag_agent_workflow (3900ms), reasoning_chain (1360ms)"),
    (True, 'No errors found in 12 spans matching pattern "*"'),
    (True, "95th percentile duration (3900ms) exceeds threshold 2000ms. Slowest spans: rag_agent_workflow (3900ms)"),
    (True, 'All 3 spans matching pattern "retrieve_document_*" completed within 300ms (max: 240ms)'),
    (True, 'No errors found in 12 spans matching pattern "*"'),
]


@pytest.mark.parametrize("reverse", [False, True])
def test_promptfoos_tracing_example_gets_promptfoos_verdicts(tmp_path: Path, reverse: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_API_TOKEN", "tok-9f8e7d6c5b4a3")
    port = free_port()
    (tmp_path / "rag_provider.py").write_text(PROVIDER)
    write_config(tmp_path, {
        "prompts": ["Explain how {{topic}} works in simple terms"],
        "providers": [{"id": "file://rag_provider.py", "config": {"endpoint": f"http://127.0.0.1:{port}/v1/traces", "spans": RAG_SPANS, "reverse": reverse}}],
        "tests": [{"vars": {"topic": "quantum computing"}, "metadata": {"testCaseId": "test-case-1"}, "assert": EXAMPLE_ASSERTS}],
        "defaultTest": {"assert": DEFAULT_ASSERTS},
    }, port)
    result = run_cli("eval", "-o", "out.json", "-o", "report.md", "-o", "junit.xml", "--no-progress", cwd=tmp_path)
    assert result.code == 1, result.err
    text = (tmp_path / "out.json").read_text()
    row = json.loads(text)["results"]["results"][0]
    (trace,) = json.loads(text)["traces"]
    got = [(c["pass"], _arrival_free(c["reason"])) for c in row["gradingResult"]["componentResults"]]
    assert sorted(got) == sorted((passed, _arrival_free(reason)) for passed, reason in EXPECTED)
    assert row["gradingResult"]["reason"] == EXPECTED[4][1]
    assert trace["testCaseId"] == "test-case-1" and trace["traceId"] == row["traceId"]
    # a secret carried in a span attribute never reaches a report
    for name in ("out.json", "report.md", "junit.xml"):
        assert "tok-9f8e7d6c5b4a3" not in (tmp_path / name).read_text()
    response = next(s for s in trace["spans"] if s["name"] == "response_generation")
    assert response["attributes"]["authorization"] == "<redacted>"


def _arrival_free(reason: str) -> str:
    """A reason with its list of matched span names sorted (they are listed in arrival order, as in promptfoo)."""
    head, _, names = reason.partition("Matched spans: ")
    return head + ", ".join(sorted(names.split(", "))) if names else reason


def _trace(*spans: tuple[str, float, dict[str, object]]) -> Trace:
    return Trace(trace_id="1" * 32, spans=[Span(span_id=f"{i:016x}", name=name, start_time=start, end_time=start + 1, attributes=attrs) for i, (name, start, attrs) in enumerate(spans)])


def test_steps_follow_start_time_not_arrival_and_read_promptfoos_conventions() -> None:
    trace = _trace(
        ("agent response", 9, {}),
        ("execute_tool search_orders", 2, {"gen_ai.tool.name": "search_orders", "gen_ai.tool.call.arguments": '{"id": 7}'}),
        ("shell", 3, {"tool.name": "exec_command", "tool.arguments": '{"cmd": ["ls", "-la"]}'}),
        ("mcp github/create_issue", 4, {}),
        ("lookup", 5, {"query": "refund policy"}),
        ("reasoning step", 1, {}),
        ("http get", 6, {"function_name": "fetch_page", "input": "https://example.com"}),
    )
    shown = [(s.type, s.name) for s in steps(trace)]
    assert shown == [
        ("reasoning", "reasoning step"), ("tool", "search_orders"), ("command", "ls -la"), ("tool", "create_issue"),
        ("search", "refund policy"), ("tool", "fetch_page"), ("message", "agent response"),
    ]
    assert steps(trace)[1].args == {"id": 7} and "ls" in steps(trace)[2].aliases
    summary = json.loads(judge_summary(trace))
    assert summary["stepCount"] == 7 and summary["steps"][1] == {"index": 2, "type": "tool", "name": "search_orders", "spanName": "execute_tool search_orders"}


def test_globs_are_promptfoos() -> None:
    assert glob_matches("Retrieve_Document_1", "retrieve_document_?")
    assert glob_matches("a.b(c)", "a.b(c)") and not glob_matches("axb(c)", "a.b(c)")
    assert not glob_matches("retrieve_document_10", "retrieve_document_?")


def test_args_match_ignore_defaults_and_exact(tmp_path: Path) -> None:
    port = free_port()
    spans = [
        ("execute_tool book", None, 0, 5, {"gen_ai.tool.name": "book", "gen_ai.tool.call.arguments": json.dumps({"city": "Oslo", "nights": 2, "currency": "EUR", "request_id": "r-1"})}, 1, None),
        ("execute_tool book", None, 10, 5, {"gen_ai.tool.name": "book", "gen_ai.tool.call.arguments": json.dumps({"city": "Rome", "nights": True})}, 2, "timeout while booking"),
    ]
    (tmp_path / "rag_provider.py").write_text(PROVIDER)
    asserts = [
        {"type": "trajectory:tool-args-match", "value": {"name": "book", "args": {"city": "Oslo", "nights": 2}, "mode": "exact", "ignore": ["request_*"], "defaults": {"currency": "EUR"}}},
        {"type": "trajectory:tool-args-match", "value": {"name": "book", "args": {"nights": 1}}},
        {"type": "not-trajectory:tool-args-match", "value": {"name": "book", "args": {"city": "Rome"}}},
        {"type": "trajectory:tool-used", "value": {"pattern": "bo?k", "min": 3}},
        {"type": "not-trace-error-spans", "value": 0},
        {"type": "trajectory:step-count", "value": {"type": ["tool", "command"], "min": 2, "max": 2}},
    ]
    write_config(tmp_path, {"prompts": ["go"], "providers": [{"id": "file://rag_provider.py", "config": {"endpoint": f"http://127.0.0.1:{port}/v1/traces", "spans": spans}}], "tests": [{"assert": asserts}]}, port)
    run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    got = [(c["pass"], c["reason"]) for c in json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]["gradingResult"]["componentResults"]]
    assert got == [
        (True, 'Tool "book" matched expected arguments (exact) on tool:book. Args: {"city":"Oslo","nights":2,"currency":"EUR","request_id":"r-1"}. Ignored argument(s): request_id. Ignored default argument(s): currency'),
        (False, 'No call to tool "book" matched expected arguments (partial): {"nights":1}. Observed args: {"city":"Oslo","nights":2,"currency":"EUR","request_id":"r-1"}, {"city":"Rome","nights":true}'),
        (False, 'Forbidden argument match for tool "book" was observed on tool:book. Args: {"city":"Rome","nights":true}'),
        (False, 'Matched tool "bo?k" 2 time(s) (expected at least 3). Matches: tool:book, tool:book'),
        (True, "Found 1 error spans, expected at most 0. Errors: execute_tool book (timeout while booking)"),
        (True, "Matched 2 trajectory step(s) for type=tool|command (expected 2-2). Matches: tool:book, tool:book"),
    ]



def test_exactly_three_error_spans_are_all_listed_with_none_more(tmp_path: Path) -> None:
    port = free_port()
    spans = [(f"step {i}", None, i * 10, 5, {}, 2, f"failure {i}") for i in range(3)]
    (tmp_path / "rag_provider.py").write_text(PROVIDER)
    asserts = [{"type": "trace-error-spans", "value": 0}, {"type": "trace-error-spans", "value": {"max_count": 1, "pattern": "step ?"}}]
    write_config(tmp_path, {"prompts": ["go"], "providers": [{"id": "file://rag_provider.py", "config": {"endpoint": f"http://127.0.0.1:{port}/v1/traces", "spans": spans}}], "tests": [{"assert": asserts}]}, port)
    run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    got = [(c["pass"], c["reason"]) for c in json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]["gradingResult"]["componentResults"]]
    assert [(passed, _sorted_errors(reason)) for passed, reason in got] == [
        (False, "Found 3 error spans, expected at most 0. Errors: step 0 (failure 0), step 1 (failure 1), step 2 (failure 2)"),
        (False, "Found 3 error spans, expected at most 1. Errors: step 0 (failure 0), step 1 (failure 1), step 2 (failure 2)"),
    ]


def _sorted_errors(reason: str) -> str:
    """A reason with its listed error spans sorted (they are listed in arrival order, as in promptfoo)."""
    head, _, names = reason.partition("Errors: ")
    return head + "Errors: " + ", ".join(sorted(names.split(", "))) if names else reason


def test_a_tools_own_arguments_come_before_a_generic_input() -> None:
    trace = _trace(
        ("book", 1, {"tool.name": "book", "tool.arguments": '{"city": "Oslo"}', "tool.input": "book a room in Oslo"}),
        ("pay", 2, {"function.name": "pay", "function.input": '{"amount": 3}', "input": "pay for it"}),
    )
    assert [s.args for s in steps(trace)] == [{"city": "Oslo"}, {"amount": 3}]


def test_a_row_keeps_five_thousand_spans_and_counts_the_rest_as_dropped() -> None:
    store = SpanStore()
    store.open("1" * 32)
    store.add([("1" * 32, Span(span_id=f"{i:016x}", name=f"step {i}", start_time=i, end_time=i + 1)) for i in range(5001)])
    trace = store.snapshot("1" * 32)
    assert (len(trace.spans), trace.dropped_spans) == (5000, 1)


@pytest.mark.parametrize("key", ["Authorization", "session.cookie", "oauth_token", "x-apikey", "client_secret", "db.password", "ssh.passphrase"])
def test_secret_looking_span_attributes_are_masked_in_results_and_counts_are_kept(key: str) -> None:
    from ci_grade.tracing.sanitize import for_results

    trace = _trace(("call", 1, {key: "s3cr3t-value", "llm.usage.total_tokens": 12, "user": "ann", "nested": [{key: "again"}]}))
    (span,) = for_results(trace).spans
    assert span.attributes == {key: "<redacted>", "llm.usage.total_tokens": 12, "user": "ann", "nested": [{key: "<redacted>"}]}
