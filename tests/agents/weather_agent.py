"""A small tool-calling agent instrumented with the OpenTelemetry SDK, for tracing tests.

It asks a model (the OpenAI SDK against a scripted loopback server) what to do, runs the tools
the model calls, and answers with the model's final reply. Each step is a span in the trace whose
W3C `traceparent` it was given, with OpenTelemetry GenAI attributes: `invoke_agent weather-agent`,
`chat <model>` per model call, `execute_tool <name>` per tool (`gen_ai.tool.name`,
`gen_ai.tool.call.arguments`). Spans go to an OTLP/HTTP endpoint (protobuf, the SDK's exporter):
`export` "flush" sends them before answering, "late" some time after (a batch processor), "never"
not at all.

As a Python provider: `call_api(prompt, options, context)` with `options.config` holding
`model_url`, `otlp_endpoint`, `export`. As an HTTP target: `serve(model_url, otlp_endpoint)`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai import OpenAI
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "send_email", "description": "Send an email", "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}},
]
_providers: dict[tuple[str, str], TracerProvider] = {}


def tracer(endpoint: str, export: str) -> Tracer:
    key = (endpoint, export)
    if key not in _providers:
        provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
        exporter = OTLPSpanExporter(endpoint=endpoint, timeout=5)
        if export == "late":
            provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=400))
        elif export == "flush":
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        _providers[key] = provider
    return _providers[key].get_tracer("weather-agent")


def run_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    if name == "get_weather":
        if args.get("city") == "Atlantis":
            raise LookupError("no such city: Atlantis")
        return {"city": args.get("city"), "forecast": "sunny", "temperature": 21}
    return {"sent": True}


def run_agent(question: str, traceparent: str | None, model_url: str, endpoint: str, export: str = "flush") -> str:
    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent} if traceparent else {})
    tracer_ = tracer(endpoint, export)
    client = OpenAI(base_url=model_url, api_key="sk-agent-test", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    with tracer_.start_as_current_span("invoke_agent weather-agent", context=parent, attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent"}):
        for _ in range(4):
            with tracer_.start_as_current_span("chat scripted-model", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-model"}):
                reply = client.chat.completions.create(model="scripted-model", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append({"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in message.tool_calls]})
            for call in message.tool_calls:
                name, arguments = call.function.name, call.function.arguments
                attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call.id, "gen_ai.tool.call.arguments": arguments}
                with tracer_.start_as_current_span(f"execute_tool {name}", attributes=attributes, record_exception=False, set_status_on_exception=False) as span:
                    try:
                        result = run_tool(name, json.loads(arguments))
                    except LookupError as exc:
                        span.set_status(Status(StatusCode.ERROR, str(exc)))
                        result = {"error": str(exc)}
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return "I could not finish."


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    config = options.get("config") or {}
    output = run_agent(prompt, context.get("traceparent"), config["model_url"], config["otlp_endpoint"], config.get("export", "flush"))
    return {"output": output}


def serve(model_url: str, endpoint: str, export: str = "flush") -> ThreadingHTTPServer:
    """The agent as an HTTP target on loopback: POST {"question": ...} -> {"answer": ...}."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = run_agent(body["question"], self.headers.get("traceparent"), model_url, endpoint, export)
            data = json.dumps({"answer": answer}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
