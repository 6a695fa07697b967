"""Checks on a row's spans: `trace-span-count`, `trace-span-duration`, `trace-error-spans`.

Semantics and reasons are promptfoo's: span names match a glob (`*`, `?`, any case); a duration
is `endTime - startTime` in milliseconds; the p-th percentile is the nearest-rank value
(`sorted[ceil(p/100 * n) - 1]`); a span is an error when its status is ERROR (2) or a code of 400
or more, when an `error`/`exception`/`failed`/`failure` attribute is true or an object, when its
`http.status_code` is 400 or more, when `otel.status_code`/`status.code` is "ERROR", or when its
status message speaks of an error, failure, exception, timeout or abort. Without tracing, each
is an ERROR. Unlike promptfoo, `not-` inverts them (promptfoo ignores it for these three types).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import MAPPING, ValueSpec, assertion
from ci_grade.js_values import js_fixed
from ci_grade.results.traces import Span
from ci_grade.templating.nunjucks import js_string
from ci_grade.tracing.steps import glob_matches

_ERROR_MESSAGE = re.compile(r"error|failed|failure|exception|timeout|abort", re.I)


def _grade(passed: bool, reason: str) -> Grade:
    return Grade(passed, 1.0 if passed else 0.0, reason)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@assertion(
    "trace-span-count",
    uses_trace=True,
    value=ValueSpec("{type} needs a value object with a pattern (and min and/or max)", MAPPING, at_load=True),
)
async def trace_span_count(ctx: AssertionContext) -> Grade:
    trace = ctx.require_trace()
    value = ctx.value
    if not value.get("pattern"):
        raise GraderError(f"{ctx.type} assertion must have a value object with pattern property")
    pattern, low, high = str(value["pattern"]), value.get("min"), value.get("max")
    names = [span.name for span in trace.spans if glob_matches(span.name, pattern)]
    count = len(names)
    if low is not None and count < low:
        passed, reason = False, f'Found {count} spans matching pattern "{pattern}", expected at least {js_string(low)}'
    elif high is not None and count > high:
        passed, reason = False, f'Found {count} spans matching pattern "{pattern}", expected at most {js_string(high)}'
    else:
        passed, reason = True, f'Found {count} spans matching pattern "{pattern}"'
        if low is not None and high is not None:
            reason += f" (expected {js_string(low)}-{js_string(high)})"
        elif low is not None:
            reason += f" (expected at least {js_string(low)})"
        elif high is not None:
            reason += f" (expected at most {js_string(high)})"
    if names:
        reason += f". Matched spans: {', '.join(dict.fromkeys(names))}"
    return _grade(passed, reason)


def percentile(durations: list[float], p: float) -> float:
    """The nearest-rank percentile (promptfoo's)."""
    if not durations:
        return 0.0
    ordered = sorted(durations)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _ms(value: float) -> str:
    return js_string(value)


@assertion(
    "trace-span-duration",
    uses_trace=True,
    value=ValueSpec("{type} needs a value object with max (milliseconds), and optionally pattern and percentile", MAPPING, at_load=True),
)
async def trace_span_duration(ctx: AssertionContext) -> Grade:
    trace = ctx.require_trace()
    value = ctx.value
    limit, p, pattern = value.get("max"), value.get("percentile"), str(value.get("pattern") or "*")
    if not _number(limit):
        raise GraderError(f"{ctx.type} assertion must have a value object with max property")
    if p is not None and (not _number(p) or not math.isfinite(p) or not 0 <= p <= 100):
        raise GraderError(f"{ctx.type} assertion percentile must be a number between 0 and 100")
    timed = [(s.name, s.end_time - s.start_time) for s in trace.spans if s.end_time is not None and glob_matches(s.name, pattern)]
    if not timed:
        return _grade(True, f'No spans found matching pattern "{pattern}" with complete timing data')
    if p is None:
        slow = sorted((t for t in timed if t[1] > limit), key=lambda t: -t[1])
        if slow:
            shown = ", ".join(f"{name} ({_ms(d)}ms)" for name, d in slow[:3])
            return _grade(False, f"{len(slow)} span(s) exceed duration threshold {_ms(limit)}ms. Slowest: {shown}")
        return _grade(True, f'All {len(timed)} spans matching pattern "{pattern}" completed within {_ms(limit)}ms (max: {_ms(max(d for _, d in timed))}ms)')
    at = percentile([d for _, d in timed], p)
    if at > limit:
        slowest = sorted((t for t in timed if t[1] >= at), key=lambda t: -t[1])[:3]
        shown = ", ".join(f"{name} ({_ms(d)}ms)" for name, d in slowest)
        return _grade(False, f"{js_string(p)}th percentile duration ({_ms(at)}ms) exceeds threshold {_ms(limit)}ms. Slowest spans: {shown}")
    return _grade(True, f"{js_string(p)}th percentile duration ({_ms(at)}ms) is within threshold {_ms(limit)}ms")


def is_error_span(span: Span) -> bool:
    if span.status_code is not None and (span.status_code == 2 or span.status_code >= 400):
        return True
    attributes = span.attributes
    for key in ("error", "exception", "failed", "failure"):
        found = attributes.get(key)
        if found is True or found == "true" or isinstance(found, dict | list):
            return True
    status = attributes.get("http.status_code")
    if status is not None and not isinstance(status, bool | dict | list):
        try:
            if float(status) >= 400:
                return True
        except ValueError:
            pass
    if attributes.get("otel.status_code") == "ERROR" or attributes.get("status.code") == "ERROR":
        return True
    return bool(span.status_message and _ERROR_MESSAGE.search(span.status_message))


@assertion("trace-error-spans", uses_trace=True)
async def trace_error_spans(ctx: AssertionContext) -> Grade:
    trace = ctx.require_trace()
    value = ctx.value
    most: Any = None
    share: Any = None
    pattern = "*"
    if _number(value):
        most = value
    elif isinstance(value, dict):
        most, share, pattern = value.get("max_count"), value.get("max_percentage"), str(value.get("pattern") or "*")
    if most is None and share is None:
        most = 0
    matching = [s for s in trace.spans if glob_matches(s.name, pattern)]
    if not matching:
        return _grade(True, f'No spans found matching pattern "{pattern}"')
    errors = [s for s in matching if is_error_span(s)]
    rate = len(errors) / len(matching) * 100
    if most is not None and len(errors) > most:
        details = [s.name + (f" ({s.status_message})" if s.status_message else f" (status: {s.status_code})" if s.status_code else "") for s in errors[:3]]
        more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
        return _grade(False, f"Found {len(errors)} error spans, expected at most {js_string(most)}. Errors: {', '.join(details)}{more}")
    if share is not None and rate > share:
        return _grade(False, f"Error rate {js_fixed(rate, 1)}% exceeds threshold {js_string(share)}% ({len(errors)} errors out of {len(matching)} spans)")
    if not errors:
        return _grade(True, f'No errors found in {len(matching)} spans matching pattern "{pattern}"')
    reason = f"Found {len(errors)} error(s) in {len(matching)} spans ({js_fixed(rate, 1)}%)"
    if most is not None:
        reason += f", within threshold of {js_string(most)}"
    if share is not None:
        reason += f", within threshold of {js_string(share)}%"
    return _grade(True, reason)
