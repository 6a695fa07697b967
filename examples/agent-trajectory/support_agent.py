"""A support agent under test, instrumented with OpenTelemetry (runs offline).

ci-grade passes each row's W3C trace context as `context["traceparent"]`; the agent continues that
trace and exports its spans to ci-grade's OTLP receiver (the config's `tracing.otlp.http`). The
"model" deciding which tools to call is a small rule table here, so the example needs no API key;
a real agent would ask its LLM. Tool spans follow the OpenTelemetry GenAI conventions
(`gen_ai.operation.name: execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.arguments`).

Needs: pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_provider: TracerProvider | None = None

ORDERS = {"A-100": "shipped on Monday", "A-200": "waiting for stock"}


def _tracer(endpoint: str) -> Any:
    global _provider
    if _provider is None:
        _provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
        _provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return _provider.get_tracer("support-agent")


def _plan(question: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a model would choose for the question."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for order in ORDERS:
        if order in question:
            calls.append(("lookup_order", {"order_id": order}))
    if "refund" in question.lower():
        calls.append(("issue_refund", {"order_id": calls[0][1]["order_id"] if calls else None, "amount": 20}))
    return calls


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    tracer = _tracer(options["config"]["otlp_endpoint"])
    parent = TraceContextTextMapPropagator().extract({"traceparent": context.get("traceparent", "")})
    answers = []
    with tracer.start_as_current_span("invoke_agent support-agent", context=parent, attributes={"gen_ai.operation.name": "invoke_agent"}):
        for tool, args in _plan(prompt):
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.arguments": json.dumps(args)}
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes) as span:
                if tool == "lookup_order":
                    answers.append(f"Order {args['order_id']} is {ORDERS[args['order_id']]}.")
                else:
                    span.set_status(Status(StatusCode.ERROR, "refunds need a human"))
                    answers.append("A colleague will handle the refund.")
    return {"output": " ".join(answers) or "How can I help?"}
