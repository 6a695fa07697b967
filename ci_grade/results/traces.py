"""A row's trace: the spans the system under test exported for the row's W3C trace context.

Field names follow promptfoo's trace export (`traces[]` of its results JSON), so a row's trace
reads and writes in promptfoo's shape. Times are milliseconds since the Unix epoch.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Span(_Model):
    """One span, as promptfoo stores it (OTLP status codes: 0 unset, 1 ok, 2 error)."""

    span_id: str = Field(alias="spanId")
    parent_span_id: str | None = Field(default=None, alias="parentSpanId")
    name: str
    start_time: float = Field(alias="startTime")
    end_time: float | None = Field(default=None, alias="endTime")
    attributes: dict[str, Any] = Field(default_factory=dict)
    status_code: int | None = Field(default=None, alias="statusCode")
    status_message: str | None = Field(default=None, alias="statusMessage")


class Trace(_Model):
    """The spans of one row's trace, and how many more arrived than the receiver kept."""

    trace_id: str = Field(alias="traceId")
    spans: list[Span] = Field(default_factory=list)
    dropped_spans: int = Field(default=0, alias="droppedSpans")
    metadata: dict[str, Any] = Field(default_factory=dict)


def trajectory_steps(metadata: dict[str, Any]) -> list[str]:
    """A failing trajectory check's steps as `type:name args` lines (arguments shortened)."""
    steps = metadata.get("trajectory")
    if not isinstance(steps, list):
        return []
    lines = []
    for step in steps:
        if isinstance(step, dict):
            args = str(step.get("args") or "")
            args = args if len(args) <= 80 else f"{args[:79]}…"
            lines.append(f"{step.get('type')}:{step.get('name')}" + (f" {args}" if args else ""))
    return lines
