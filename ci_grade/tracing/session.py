"""A run's tracing: the receiver, a trace context per row, and each row's spans.

As promptfoo does, every row gets a fresh trace (a random 16-byte trace id and 8-byte span id for
its root) whose W3C `traceparent` (`00-<trace id>-<span id>-01`) reaches the provider: the Python
and exec providers' `context.traceparent` (with `evaluationId` and `testCaseId`), the HTTP
provider's `traceparent` header, and the grader calls of the row's assertions (a new span id in
the same trace). After the reply, a row whose assertions read its trace waits for late spans: until
its span count has not changed for CI_GRADE_TRACE_QUIET_MS (default 500) with at least one span,
or CI_GRADE_TRACE_WAIT_MS (default 1500, at most 60000) in all. Other rows take the spans that
have arrived. Then the trace is closed: spans that arrive later are dropped.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass

from ci_grade import settings
from ci_grade.config.models import Tracing as TracingConfig
from ci_grade.results.traces import Trace
from ci_grade.tracing.receiver import Receiver
from ci_grade.tracing.store import SpanStore

DEFAULT_WAIT_MS = 1500
DEFAULT_QUIET_MS = 500
MAX_WAIT_MS = 60_000
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class TraceContext:
    """One row's trace: the ids its `traceparent` carries."""

    trace_id: str
    span_id: str
    evaluation_id: str
    test_case_id: str

    @property
    def traceparent(self) -> str:
        return traceparent(self.trace_id, self.span_id)

    def child(self) -> str:
        """A traceparent in the same trace under a new span id (for a grader call)."""
        return traceparent(self.trace_id, secrets.token_hex(8))


def traceparent(trace_id: str, span_id: str) -> str:
    return f"00-{trace_id}-{span_id}-01"


class Tracing:
    """Start it before any model is called (a port in use is a ConfigError), stop it after the run."""

    def __init__(self, config: TracingConfig, where: object = None) -> None:
        self.config = config
        self.store = SpanStore()
        receiver = config.receiver
        self.receiver = Receiver(receiver, self.store, where) if receiver is not None else None
        self.evaluation_id = f"eval-{secrets.token_hex(6)}"
        self.wait_ms = min(settings.number("CI_GRADE_TRACE_WAIT_MS", DEFAULT_WAIT_MS), MAX_WAIT_MS)
        self.quiet_ms = min(settings.number("CI_GRADE_TRACE_QUIET_MS", DEFAULT_QUIET_MS), MAX_WAIT_MS)

    def start(self) -> None:
        if self.receiver is not None:
            self.receiver.start()

    def stop(self) -> None:
        if self.receiver is not None:
            self.receiver.stop()

    def open(self, test_case_id: str) -> TraceContext:
        context = TraceContext(secrets.token_hex(16), secrets.token_hex(8), self.evaluation_id, test_case_id)
        self.store.open(context.trace_id)
        return context

    async def collect(self, context: TraceContext, wait: bool) -> Trace:
        """The row's spans (after waiting for late ones when `wait`); closes the row's trace."""
        try:
            if wait and self.receiver is not None:
                await self._settle(context.trace_id)
            trace = self.store.snapshot(context.trace_id)
        finally:
            self.store.close(context.trace_id)
        trace.metadata = {"evaluationId": context.evaluation_id, "testCaseId": context.test_case_id}
        if self.config.commandToolNames:
            trace.metadata["commandToolNames"] = list(self.config.commandToolNames)
        return trace

    async def _settle(self, trace_id: str) -> None:
        started = last_change = time.monotonic()
        count = self.store.count(trace_id)
        while (now := time.monotonic()) - started < self.wait_ms / 1000:
            if count and now - last_change >= self.quiet_ms / 1000:
                return
            await asyncio.sleep(POLL_SECONDS)
            latest = self.store.count(trace_id)
            if latest != count:
                count, last_change = latest, time.monotonic()
