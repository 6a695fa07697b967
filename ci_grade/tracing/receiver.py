"""The OTLP/HTTP trace receiver: `POST /v1/traces` with a protobuf or JSON body, as OpenTelemetry
exporters send it (`OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318`).

It serves from its own threads (the standard library's HTTP server) while the run goes on, and
hands decoded spans to a `SpanStore`. Everything it is sent is bounded: a body over
`MAX_BODY_BYTES` (gzip-inflated size included) is refused with 413, a body without a length with
411, a format the config does not accept with 415, a body that does not decode with 400; at most
`MAX_CONNECTIONS` requests are served at once. None of these stops the run.
"""

from __future__ import annotations

import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ci_grade.config.models import OtlpHttp
from ci_grade.errors import ConfigError, UsageError
from ci_grade.tracing.decode import BadBody, decode
from ci_grade.tracing.sanitize import redact_configured
from ci_grade.tracing.store import SpanStore

MAX_BODY_BYTES = 10 * 1024 * 1024
"""promptfoo's limit too."""
MAX_CONNECTIONS = 16
_FORMATS = {"application/json": "json", "application/x-protobuf": "protobuf", "application/protobuf": "protobuf"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], store: SpanStore, formats: list[str], redact: list[str]) -> None:
        self.store = store
        self.formats = formats
        self.redact = redact
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.rejected = 0
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.slots.acquire()  # back-pressure: a flood waits in the listen queue, not in threads
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the run's output is its reports."""

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/health":
            self._reply(200, {"status": "ok"})
        else:
            self._reply(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path.split("?")[0] != "/v1/traces":
            self._refuse(404, "not found")
            return
        kind = _FORMATS.get((self.headers.get("Content-Type") or "").split(";")[0].strip().lower())
        if kind is None or kind not in self.server.formats:
            self._refuse(415, "unsupported content type")
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._refuse(411, "a Content-Length is required")
            return
        if int(length) > MAX_BODY_BYTES:
            self._refuse(413, f"body larger than {MAX_BODY_BYTES} bytes")
            return
        body = self.rfile.read(int(length))
        try:
            if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                body = _gunzip(body)
            spans = decode(body, kind)
        except BadBody as exc:
            self._refuse(400, str(exc), drain=False)
            return
        patterns = self.server.redact
        self.server.store.add([(trace_id, redact_configured(span, patterns)) for trace_id, span in spans] if patterns else spans)
        if kind == "protobuf":
            self._send(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")
        else:
            self._reply(200, {"partialSuccess": {}})

    def _refuse(self, status: int, message: str, drain: bool = True) -> None:
        self.server.rejected += 1
        if drain:
            self.close_connection = True  # the unread body must not be taken for the next request
        self._reply(status, {"error": message})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def _gunzip(body: bytes) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as exc:
        raise BadBody(f"invalid gzip body: {exc}") from None
    if len(out) > MAX_BODY_BYTES:
        raise BadBody(f"inflated body larger than {MAX_BODY_BYTES} bytes")
    return out


class Receiver:
    """A running receiver; `start` binds (before any model is called), `stop` ends it."""

    def __init__(self, settings: OtlpHttp, store: SpanStore, where: Any = None) -> None:
        self.settings = settings
        self.store = store
        self.where = where
        """Where the config sets `tracing` (for an error naming the line)."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the configured one, or the one the system chose for port 0)."""
        return self._server.server_address[1] if self._server else self.settings.port

    @property
    def rejected(self) -> int:
        """Requests refused (bad format, size or body)."""
        return self._server.rejected if self._server else 0

    def start(self) -> None:
        try:
            self._server = _Server((self.settings.host, self.settings.port), self.store, list(self.settings.acceptFormats), list(self.settings.redactAttributes or []))
        except OSError as exc:
            message = f"cannot serve the OTLP receiver on {self.settings.host}:{self.settings.port}: {exc.strerror or exc}; free the port or set tracing.otlp.http.port"
            raise ConfigError.at(message, self.where, "tracing.otlp.http.port") if self.where else UsageError(message) from None
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="otlp-receiver", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
