"""`skill-used`: which agent skills a provider's response says were called (`metadata.skillCalls`).

Each call is `{name, source?, path?, is_error?}`; calls that failed (`is_error: true`) do not
count. The value is a name, a list of names (all required; with `not-`, all forbidden), or a
matcher `{name | pattern, min?, max?}` counting matching calls (default at least one; `pattern`
is a case-insensitive glob with `*` and `?`), with promptfoo's reasons.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.js_values import JS_WHITESPACE
from ci_grade.templating.nunjucks import js_string

_JS_DOT = "[^\n\r\u2028\u2029]"


def glob_matches(name: str, pattern: str) -> bool:
    """promptfoo's `matchesPattern`: `*` any run, `?` one character, the whole name, any case."""
    body = "".join(f"{_JS_DOT}*" if c == "*" else _JS_DOT if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(body, name, re.IGNORECASE) is not None


@dataclass(frozen=True)
class Matcher:
    name: str | None = None
    pattern: str | None = None
    min: int | None = None
    max: int | None = None

    def matches(self, call: dict[str, Any]) -> bool:
        if self.name and call["name"] != self.name:
            return False
        return not self.pattern or glob_matches(call["name"], self.pattern)


def skill_calls(ctx: AssertionContext) -> list[dict[str, Any]]:
    calls = ctx.response.metadata.get("skillCalls")
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("name"), str) and c.get("is_error") is not True]


def _shown(call: dict[str, Any]) -> str:
    details = ", ".join(js_string(call[k]) for k in ("source", "path") if call.get(k))
    return f"{call['name']} ({details})" if details else str(call["name"])


def _text(value: Any) -> str | None:
    return value.strip(JS_WHITESPACE) if isinstance(value, str) else None


def _count(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value != int(value) or value < 0:
        raise GraderError(f"skill-used assertion object {field} must be a finite non-negative integer")
    return int(value)


def matchers(value: Any) -> list[Matcher] | Matcher:
    """A list of required names, or one counting matcher."""
    if isinstance(value, str) and _text(value):
        return [Matcher(name=_text(value))]
    if isinstance(value, list) and value and all(isinstance(v, str) and _text(v) for v in value):
        return [Matcher(name=_text(v)) for v in value]
    if isinstance(value, dict):
        name, pattern = _text(value.get("name")) or None, _text(value.get("pattern")) or None
        if not name and not pattern:
            raise GraderError("skill-used assertion object must include a name or pattern property")
        low = _count("min", value["min"]) if "min" in value else None
        high = _count("max", value["max"]) if "max" in value else None
        if low is not None and high is not None and high < low:
            raise GraderError("skill-used assertion object max must be greater than or equal to min")
        return Matcher(name, pattern, low, high)
    raise GraderError("skill-used assertion must have a string, string array, or object value")


@assertion("skill-used", handles_inverse=True)
async def skill_used(ctx: AssertionContext) -> Grade:
    calls = skill_calls(ctx)
    actual = ", ".join(map(_shown, calls)) or "(none)"
    wanted = matchers(ctx.value)
    if isinstance(wanted, list):
        names = ", ".join(str(m.name) for m in wanted)
        matched = [m for m in wanted if any(m.matches(c) for c in calls)]
        missing = [m for m in wanted if m not in matched]
        if ctx.inverse:
            passed = not matched
            reason = f"Forbidden skill(s) were not used: {names}" if passed else f"Forbidden skill(s) were used: {', '.join(str(m.name) for m in matched)}. Actual skills: {actual}"
        else:
            passed = not missing
            reason = f"Observed required skill(s): {names}. Actual skills: {actual}" if passed else f"Missing required skill(s): {', '.join(str(m.name) for m in missing)}. Actual skills: {actual}"
        return Grade(passed, 1.0 if passed else 0.0, reason)
    hits = [c for c in calls if wanted.matches(c)]
    label = wanted.pattern or wanted.name or "*"
    if ctx.inverse:
        if wanted.min is not None or (wanted.max is not None and wanted.max != 0):
            raise GraderError("not-skill-used object assertions only support name/pattern with no count bounds, or max: 0")
        passed = not hits
        reason = (f'Forbidden skill "{label}" was not used. Actual skills: {actual}' if passed
                  else f'Forbidden skill "{label}" was used {len(hits)} time(s). Matches: {", ".join(map(_shown, hits))}')
        return Grade(passed, 1.0 if passed else 0.0, reason)
    low = wanted.min if wanted.min is not None else 0 if wanted.max is not None else 1
    passed = len(hits) >= low and (wanted.max is None or len(hits) <= wanted.max)
    reason = f'Matched skill "{label}" {len(hits)} time(s)' + (f" (expected at least {low})" if wanted.max is None else f" (expected {low}-{wanted.max})")
    if hits:
        reason += f". Matches: {', '.join(map(_shown, hits))}"
    return Grade(passed, 1.0 if passed else 0.0, reason)
