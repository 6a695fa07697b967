"""OTLP/HTTP trace bodies (protobuf or JSON) -> spans, with the OpenTelemetry project's own
message classes (`opentelemetry-proto`) and protobuf's JSON mapping.

Spans come from untrusted processes, so what one span may hold is bounded: attribute count,
text length, list length and nesting depth. A body that does not decode raises `BadBody`.
Attributes are flattened as promptfoo flattens them: resource attributes, then the span's own,
then `otel.scope.name`, `otel.scope.version`, `otel.span.kind` and `otel.span.kind_code`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ci_grade.results.traces import Span

MAX_ATTRIBUTES = 128
"""Attributes kept per span (the OpenTelemetry SDK's own default limit)."""
MAX_TEXT = 4096
"""Characters kept of a span name or a text attribute (longer ones end with an ellipsis)."""
MAX_ITEMS = 128
"""Entries kept of a list or map attribute."""
MAX_DEPTH = 8
"""Nesting kept of list and map attributes."""

_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_ID_FIELDS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}


class BadBody(ValueError):
    """The body is not an OTLP trace export request."""


def decode(body: bytes, content_type: str) -> list[tuple[str, Span]]:
    """The (trace id, span) pairs of one export request; `content_type` is "json" or "protobuf"."""
    request = ExportTraceServiceRequest()
    if content_type == "json":
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise BadBody("the body is not a JSON object")
            json_format.ParseDict(_ids_as_base64(data), request, ignore_unknown_fields=True)
        except (ValueError, json_format.ParseError, RecursionError) as exc:
            raise BadBody(f"invalid OTLP JSON: {exc}") from None
    else:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError) as exc:
            raise BadBody(f"invalid OTLP protobuf: {exc}") from None
    spans: list[tuple[str, Span]] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            for span in scope_spans.spans:
                trace_id = span.trace_id.hex()
                if len(trace_id) != 32:
                    continue  # not a span of any row's trace
                attributes = {**resource, **_attributes(span.attributes)}
                attributes.update({
                    "otel.scope.name": scope.name or None,
                    "otel.scope.version": scope.version or None,
                    "otel.span.kind": _KINDS.get(span.kind, "unspecified"),
                    "otel.span.kind_code": span.kind,
                })
                spans.append((trace_id, Span(
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex() or None,
                    name=_text(span.name),
                    start_time=_ms(span.start_time_unix_nano),
                    end_time=_ms(span.end_time_unix_nano) if span.end_time_unix_nano else None,
                    attributes=attributes,
                    status_code=span.status.code,
                    status_message=_text(span.status.message) or None,
                )))
    return spans


def _ms(nanoseconds: int) -> float:
    """Milliseconds, exact to the microsecond (nanoseconds since 1970 do not fit a float exactly)."""
    return nanoseconds // 1000 / 1000


def _ids_as_base64(data: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON writes span and trace ids as hex; protobuf's JSON mapping reads bytes as base64."""
    for resource_spans in _items(data.get("resourceSpans")):
        for scope_spans in _items(resource_spans.get("scopeSpans") if isinstance(resource_spans, dict) else None):
            for span in _items(scope_spans.get("spans") if isinstance(scope_spans, dict) else None):
                if not isinstance(span, dict):
                    continue
                for key, length in _ID_FIELDS.items():
                    value = span.get(key)
                    if isinstance(value, str) and len(value) == length and _HEX.match(value):
                        span[key] = base64.b64encode(binascii.unhexlify(value)).decode()
    return data


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _attributes(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if len(out) >= MAX_ATTRIBUTES:
            break
        item: KeyValue = pair
        value = _value(item.value, 0)
        if value is not None:
            out[_text(item.key)] = value
    return out


def _value(value: AnyValue, depth: int) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return _text(value.string_value)
    if kind in ("bool_value", "int_value", "double_value"):
        return getattr(value, kind)
    if kind == "bytes_value":
        return _text(base64.b64encode(value.bytes_value).decode())
    if depth >= MAX_DEPTH:
        return "…"
    if kind == "array_value":
        return [_value(item, depth + 1) for item in value.array_value.values[:MAX_ITEMS]]
    if kind == "kvlist_value":
        return {_text(kv.key): _value(kv.value, depth + 1) for kv in value.kvlist_value.values[:MAX_ITEMS]}
    return None


def _text(text: str) -> str:
    return text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT]}…"
