"""The OTLP receiver: protobuf and JSON bodies decoded with opentelemetry-proto, bad input refused
without stopping anything, memory bounded, spans kept only for rows in flight."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ci_grade.config.models import Tracing as TracingConfig
from ci_grade.errors import UsageError
from ci_grade.tracing.decode import MAX_ATTRIBUTES, MAX_TEXT
from ci_grade.tracing.session import Tracing

TRACE = "5b8efff798038103d269b633813fc60c"


def _tracing(**http: object) -> Tracing:
    config = TracingConfig.model_validate({"enabled": True, "otlp": {"http": {"port": 0, **http}}})
    tracing = Tracing(config)
    tracing.start()
    return tracing


def _json_body(trace_id: str = TRACE, spans: int = 1, **extra: object) -> dict:
    return {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
        "scopeSpans": [{"scope": {"name": "demo"}, "spans": [
            {"traceId": trace_id, "spanId": f"{i + 1:016x}", "name": f"step {i}", "kind": 3, "startTimeUnixNano": "1700000000000000000",
             "endTimeUnixNano": "1700000000250000000", "attributes": [{"key": "n", "value": {"intValue": str(i)}}], **extra}
            for i in range(spans)
        ]}],
    }]}


def _post(tracing: Tracing, content: bytes, content_type: str, **headers: str) -> httpx.Response:
    assert tracing.receiver is not None
    return httpx.post(f"http://127.0.0.1:{tracing.receiver.port}/v1/traces", content=content, headers={"Content-Type": content_type, **headers})


def test_json_and_protobuf_bodies_are_kept_per_open_trace() -> None:
    tracing = _tracing()
    try:
        tracing.store.open(TRACE)
        assert _post(tracing, json.dumps(_json_body()).encode(), "application/json").json() == {"partialSuccess": {}}
        request = ExportTraceServiceRequest()
        request.resource_spans.add().scope_spans.add().spans.add(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex("00000000000000aa"), name="proto span", start_time_unix_nano=5_000_000, end_time_unix_nano=9_000_000)
        reply = _post(tracing, request.SerializeToString(), "application/x-protobuf")
        assert reply.status_code == 200 and reply.headers["content-type"] == "application/x-protobuf"
        _post(tracing, json.dumps(_json_body("0" * 31 + "1")).encode(), "application/json")  # no row opened it
        trace = tracing.store.snapshot(TRACE)
    finally:
        tracing.stop()
    spans = {s.name: s for s in trace.spans}
    assert set(spans) == {"step 0", "proto span"}
    first = spans["step 0"]
    assert first.span_id == "0000000000000001" and first.end_time - first.start_time == 250
    assert first.attributes == {"service.name": "agent", "n": 0, "otel.scope.name": "demo", "otel.scope.version": None, "otel.span.kind": "client", "otel.span.kind_code": 3}
    assert spans["proto span"].start_time == 5.0 and spans["proto span"].end_time == 9.0
    assert tracing.store.unmatched == 1


@pytest.mark.parametrize(
    ("body", "content_type", "headers", "status"),
    [
        (b"{not json", "application/json", {}, 400),
        (b"[1, 2]", "application/json", {}, 400),
        (b"\xff\xff\xff\xff", "application/x-protobuf", {}, 400),
        (b"hello", "text/plain", {}, 415),
        (b"\x1f\x8b broken", "application/json", {"Content-Encoding": "gzip"}, 400),
    ],
)
def test_malformed_bodies_get_a_4xx_and_the_receiver_goes_on(body: bytes, content_type: str, headers: dict[str, str], status: int) -> None:
    tracing = _tracing()
    try:
        tracing.store.open(TRACE)
        assert _post(tracing, body, content_type, **headers).status_code == status
        good = gzip.compress(json.dumps(_json_body()).encode())
        assert _post(tracing, good, "application/json", **{"Content-Encoding": "gzip"}).status_code == 200
        assert tracing.store.count(TRACE) == 1
    finally:
        tracing.stop()


def test_only_accepted_formats_are_read() -> None:
    tracing = _tracing(acceptFormats=["protobuf"])
    try:
        assert _post(tracing, json.dumps(_json_body()).encode(), "application/json").status_code == 415
    finally:
        tracing.stop()


def test_a_flood_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    tracing = _tracing()
    tracing.store.max_spans = 50
    try:
        tracing.store.open(TRACE)
        huge = {"key": "big", "value": {"stringValue": "x" * (MAX_TEXT * 3)}}
        many = [{"key": f"k{i}", "value": {"boolValue": True}} for i in range(MAX_ATTRIBUTES * 2)]
        body = _json_body(spans=120)
        body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [huge, *many]
        assert _post(tracing, json.dumps(body).encode(), "application/json").status_code == 200
        monkeypatch.setattr("ci_grade.tracing.receiver.MAX_BODY_BYTES", 1000)
        assert _post(tracing, b"{}" + b" " * 2000, "application/json").status_code == 413
        trace = tracing.store.snapshot(TRACE)
    finally:
        tracing.stop()
    assert len(trace.spans) == 50 and trace.dropped_spans == 70
    first = next(s for s in trace.spans if s.name == "step 0")
    assert len(first.attributes["big"]) == MAX_TEXT + 1 and first.attributes["big"].endswith("…")
    assert len([key for key in first.attributes if key.startswith("k")]) == MAX_ATTRIBUTES - 1  # "big" came first


def test_configured_attributes_are_redacted_on_arrival() -> None:
    tracing = _tracing(redactAttributes=["customer"])
    try:
        tracing.store.open(TRACE)
        body = _json_body()
        body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
            {"key": "app.customer_email", "value": {"stringValue": "ann@example.com"}},
            {"key": "payload", "value": {"kvlistValue": {"values": [{"key": "Customer", "value": {"stringValue": "Ann"}}]}}},
        ]
        _post(tracing, json.dumps(body).encode(), "application/json")
        attributes = tracing.store.snapshot(TRACE).spans[0].attributes
    finally:
        tracing.stop()
    assert attributes["app.customer_email"] == "[REDACTED]" and attributes["payload"] == {"Customer": "[REDACTED]"}


def test_a_busy_port_is_a_usage_error() -> None:
    first = _tracing()
    try:
        assert first.receiver is not None
        config = TracingConfig.model_validate({"enabled": True, "otlp": {"http": {"port": first.receiver.port}}})
        with pytest.raises(UsageError, match="cannot serve the OTLP receiver"):
            Tracing(config).start()
    finally:
        first.stop()


def test_a_kept_alive_exporter_reaches_the_next_runs_receiver() -> None:
    """An agent that outlives a run (an HTTP target) keeps its exporter's connection open; once the
    run's receiver stops, that connection is closed, so its next export reaches the next receiver."""
    first = _tracing()
    assert first.receiver is not None
    port = first.receiver.port
    with httpx.Client() as exporter:
        url = f"http://127.0.0.1:{port}/v1/traces"
        assert exporter.post(url, content=json.dumps(_json_body()).encode(), headers={"Content-Type": "application/json"}).status_code == 200
        first.stop()
        second = _tracing(port=port)
        try:
            second.store.open(TRACE)
            assert exporter.post(url, content=json.dumps(_json_body()).encode(), headers={"Content-Type": "application/json"}).status_code == 200
            assert second.store.count(TRACE) == 1
        finally:
            second.stop()


def test_configured_attributes_inside_lists_are_redacted_and_the_lists_kept() -> None:
    tracing = _tracing(redactAttributes=["customer"])
    try:
        tracing.store.open(TRACE)
        body = _json_body()
        entry = {"kvlistValue": {"values": [{"key": "customer", "value": {"stringValue": "Ann"}}, {"key": "room", "value": {"intValue": "7"}}]}}
        body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
            {"key": "bookings", "value": {"arrayValue": {"values": [entry, {"stringValue": "plain"}]}}},
        ]
        assert _post(tracing, json.dumps(body).encode(), "application/json").status_code == 200
        attributes = tracing.store.snapshot(TRACE).spans[0].attributes
    finally:
        tracing.stop()
    assert attributes["bookings"] == [{"customer": "[REDACTED]", "room": 7}, "plain"]


def test_a_gzip_body_inflating_to_exactly_the_limit_is_read_and_one_byte_more_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(_json_body()).encode()
    monkeypatch.setattr("ci_grade.tracing.receiver.MAX_BODY_BYTES", len(text) + 10)
    tracing = _tracing()
    try:
        tracing.store.open(TRACE)
        at_limit = gzip.compress(text + b" " * 10)
        over = gzip.compress(text + b" " * 11)
        assert _post(tracing, over, "application/json", **{"Content-Encoding": "gzip"}).status_code == 400  # "inflated body larger than ..."
        assert _post(tracing, at_limit, "application/json", **{"Content-Encoding": "gzip"}).status_code == 200
        assert [s.name for s in tracing.store.snapshot(TRACE).spans] == ["step 0"]
    finally:
        tracing.stop()


def test_a_span_keeps_the_documented_128_attributes_and_4096_characters_per_text() -> None:
    tracing = _tracing()
    try:
        tracing.store.open(TRACE)
        body = _json_body()
        attributes = [{"key": "big", "value": {"stringValue": "x" * 5000}}, *({"key": f"k{i}", "value": {"boolValue": True}} for i in range(200))]
        body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = attributes
        assert _post(tracing, json.dumps(body).encode(), "application/json").status_code == 200
        (span,) = tracing.store.snapshot(TRACE).spans
    finally:
        tracing.stop()
    own = [key for key in span.attributes if key == "big" or key[0] == "k"]  # besides the resource's and scope's
    assert len(own) == 128 and span.attributes["big"] == "x" * 4096 + "…"  # docs/compatibility.md


def test_a_body_over_10_mib_is_refused_and_the_receiver_goes_on() -> None:
    tracing = _tracing()
    try:
        tracing.store.open(TRACE)
        text = json.dumps(_json_body()).encode()
        assert _post(tracing, text + b" " * (10 * 1024 * 1024 + 1 - len(text)), "application/json").status_code == 413
        assert _post(tracing, text + b" " * (10 * 1024 * 1024 - len(text)), "application/json").status_code == 200
        assert len(tracing.store.snapshot(TRACE).spans) == 1
    finally:
        tracing.stop()
