"""Spans kept per trace id, for the traces of rows in flight only.

The receiver's threads add spans; rows read them. Spans for a trace no row opened (or one whose
row has already taken its spans) are dropped and counted, so memory holds at most the rows in
flight times `MAX_SPANS_PER_TRACE` bounded spans. A span sent twice (an exporter's retry) is kept once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ci_grade.results.traces import Span, Trace

MAX_SPANS_PER_TRACE = 5000
"""Spans kept per row; more are counted in the trace's `droppedSpans`."""


@dataclass
class _Open:
    spans: dict[str, Span] = field(default_factory=dict)
    dropped: int = 0


class SpanStore:
    """Thread-safe: `open` a row's trace, `add` spans from any thread, `snapshot`, then `close`."""

    def __init__(self, max_spans: int = MAX_SPANS_PER_TRACE) -> None:
        self._lock = threading.Lock()
        self._traces: dict[str, _Open] = {}
        self.max_spans = max_spans
        self.unmatched = 0
        """Spans received for no open trace (another program's, or later than their row)."""

    def open(self, trace_id: str) -> None:
        with self._lock:
            self._traces.setdefault(trace_id, _Open())

    def add(self, spans: list[tuple[str, Span]]) -> None:
        with self._lock:
            for trace_id, span in spans:
                held = self._traces.get(trace_id)
                if held is None:
                    self.unmatched += 1
                elif span.span_id in held.spans or len(held.spans) < self.max_spans:
                    held.spans[span.span_id] = span
                else:
                    held.dropped += 1

    def count(self, trace_id: str) -> int:
        with self._lock:
            held = self._traces.get(trace_id)
            return len(held.spans) if held else 0

    def snapshot(self, trace_id: str) -> Trace:
        """The trace's spans so far, in the order they arrived."""
        with self._lock:
            held = self._traces.get(trace_id) or _Open()
            return Trace(trace_id=trace_id, spans=list(held.spans.values()), dropped_spans=held.dropped)

    def close(self, trace_id: str) -> None:
        """Forget the trace: spans that arrive for it from now on are dropped."""
        with self._lock:
            self._traces.pop(trace_id, None)
