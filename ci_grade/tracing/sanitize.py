"""Secrets out of span attributes.

Two rules, both promptfoo's: the receiver replaces attributes whose key contains one of the
config's `tracing.otlp.http.redactAttributes` (any case) with "[REDACTED]", in nested maps too,
and the span name or status message when it repeats such a value; assertions see the rest. What a
row's results keep (`for_results`) also has values under secret-looking keys (authorization,
cookie, token, api key, secret, password, passphrase; not token counts) replaced with
"<redacted>". Reports then mask known secret values and credential shapes anywhere (`redact`).
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.results.traces import Span, Trace

_SENSITIVE = ("authorization", "cookie", "token", "apikey", "secret", "password", "passphrase")
_COUNT = re.compile(r"tokens$|tokens?[._]?count$|max[._]?tokens", re.I)


def is_sensitive_key(key: str) -> bool:
    squeezed = re.sub(r"[^a-z0-9]", "", key.lower())
    return any(word in squeezed for word in _SENSITIVE) and not _COUNT.search(key)


def redact_configured(span: Span, patterns: list[str]) -> Span:
    """The span with the configured attributes replaced (no change without patterns)."""
    wanted = [p.strip().lower() for p in patterns if p.strip()]
    if not wanted:
        return span
    hidden: set[str] = set()

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {key: hide(key, item) for key, item in value.items()}
        return value

    def hide(key: str, value: Any) -> Any:
        if any(p in key.lower() for p in wanted):
            if isinstance(value, str):
                hidden.add(value)
            return "[REDACTED]"
        return walk(value)

    attributes = {key: hide(key, value) for key, value in span.attributes.items()}
    name = "[REDACTED]" if span.name in hidden else span.name
    message = "[REDACTED]" if span.status_message in hidden else span.status_message
    return span.model_copy(update={"attributes": attributes, "name": name, "status_message": message})


def for_results(trace: Trace) -> Trace:
    """A copy of the trace with secret-looking attribute values replaced."""
    return trace.model_copy(update={"spans": [span.model_copy(update={"attributes": _masked(span.attributes)}) for span in trace.spans]})


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: "<redacted>" if is_sensitive_key(str(key)) else _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value
