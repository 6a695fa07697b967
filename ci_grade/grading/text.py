"""Text assertions: equals, contains and friends, starts-with, regex, word-count."""

from __future__ import annotations

import json
import math
from typing import Any

from ci_grade.config import comma_values
from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import MAPPING, SCALAR, STRING, Kind, ValueSpec, assertion
from ci_grade.js_values import js_json
from ci_grade.scripting import js
from ci_grade.templating.nunjucks import js_string


def _text(value: Any) -> str:
    return value if isinstance(value, str) else js_string(value)


NEEDS_TEXT_OR_NUMBER = ValueSpec("{type} needs a value: text or a number", (Kind.STRING, Kind.NUMBER), blank=True)
NEEDS_LIST = ValueSpec("{type} needs a list of values", (Kind.STRING, Kind.LIST))


@assertion("equals", handles_inverse=True)
async def equals(ctx: AssertionContext) -> Grade:
    """An object, list or null value equals the output parsed as JSON; any other value, the output's
    text (no value at all is JavaScript's `undefined`, as the text `undefined`)."""
    expected = ctx.value
    if expected is None and "value" not in ctx.assertion.model_fields_set:
        expected = "undefined"
    if expected is None or isinstance(expected, dict | list):
        try:
            actual = json.loads(ctx.output_text) if isinstance(ctx.output, str) else ctx.output
        except ValueError:
            actual = _NOT_JSON
        return _equals_grade(ctx, _strictly_equal(actual, expected), js_json(expected))
    return _equals_grade(ctx, ctx.output_text == _text(expected), _text(expected))


def _equals_grade(ctx: AssertionContext, equal: bool, shown: str) -> Grade:
    """promptfoo's wording: `Expected output "…" to equal "…"`, the output in full."""
    if equal != ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    return Grade(False, 0.0, f'Expected output "{ctx.output_text}" to {"not " if ctx.inverse else ""}equal "{shown}"')


_NOT_JSON = object()


def _strictly_equal(a: Any, b: Any) -> bool:
    """Node's `isDeepStrictEqual` on JSON data: `true` is not `1` (Python's `==` says it is), while
    `1` and `1.0` are one JavaScript number; mappings compare regardless of key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strictly_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


@assertion("contains", handles_inverse=True, value=NEEDS_TEXT_OR_NUMBER)
async def contains(ctx: AssertionContext) -> Grade:
    needle = _text(ctx.value)
    return ctx.check(needle in ctx.output_text, f'contain "{needle}"')


@assertion("icontains", handles_inverse=True, value=NEEDS_TEXT_OR_NUMBER)
async def icontains(ctx: AssertionContext) -> Grade:
    needle = _text(ctx.value)
    return ctx.check(needle.lower() in ctx.output_text.lower(), f'contain "{needle}"')


def split_list(value: str | list[Any]) -> list[str]:
    """A list's items as JavaScript's `String()` writes them, or promptfoo's comma-separated fields
    (`comma_values`)."""
    if isinstance(value, list):
        return ["null" if v is None else _text(v) for v in value]
    try:
        return comma_values.split(value)
    except ValueError as exc:
        raise GraderError(f"{exc} in contains assertion value") from None


def _needles(ctx: AssertionContext) -> list[str]:
    needles = split_list(ctx.value)
    if not needles:
        raise GraderError(f"{ctx.type} needs a list of values")
    return needles


def _any_all(ctx: AssertionContext, *, any_of: bool, ignore_case: bool) -> Grade:
    needles = _needles(ctx)
    haystack = ctx.output_text.lower() if ignore_case else ctx.output_text
    found = [n for n in needles if (n.lower() if ignore_case else n) in haystack]
    ok = bool(found) if any_of else len(found) == len(needles)
    if any_of:
        return ctx.check(ok, f'contain one of "{", ".join(needles)}"')
    missing = [n for n in needles if n not in found]
    return ctx.check(ok, f"contain all of [{', '.join(needles)}]. Missing: [{', '.join(missing)}]")


@assertion("contains-any", handles_inverse=True, value=NEEDS_LIST)
async def contains_any(ctx: AssertionContext) -> Grade:
    return _any_all(ctx, any_of=True, ignore_case=False)


@assertion("contains-all", handles_inverse=True, value=NEEDS_LIST)
async def contains_all(ctx: AssertionContext) -> Grade:
    return _any_all(ctx, any_of=False, ignore_case=False)


@assertion("icontains-any", handles_inverse=True, value=NEEDS_LIST)
async def icontains_any(ctx: AssertionContext) -> Grade:
    return _any_all(ctx, any_of=True, ignore_case=True)


@assertion("icontains-all", handles_inverse=True, value=NEEDS_LIST)
async def icontains_all(ctx: AssertionContext) -> Grade:
    return _any_all(ctx, any_of=False, ignore_case=True)


@assertion("starts-with", handles_inverse=True, value=ValueSpec("{type} needs a value: text", STRING, blank=True), csv_threshold=0.75)
async def starts_with(ctx: AssertionContext) -> Grade:
    prefix = _text(ctx.value)
    return ctx.check(ctx.output_text.startswith(prefix), f'start with "{prefix}"')


@assertion("regex", handles_inverse=True, value=ValueSpec("{type} needs a value: a regular expression as text", STRING, blank=True, at_load=True))
async def regex(ctx: AssertionContext) -> Grade:
    """JavaScript `new RegExp(value).test(output)`, run in V8 so the syntax and semantics are exact.

    A pattern JavaScript rejects fails (with or without `not-`) with promptfoo's reason."""
    pattern = _text(ctx.value)
    matched = await js.regex_test(pattern, ctx.output_text)
    if isinstance(matched, str):
        return Grade(False, 0.0, f"Invalid regex pattern: {matched}")
    return ctx.check(matched, f'match regex "{pattern}"')


@assertion("word-count", handles_inverse=True, value=ValueSpec("{type} needs a number or {{min, max}}", (*SCALAR, *MAPPING)))
async def word_count(ctx: AssertionContext) -> Grade:
    count = len(ctx.output_text.split())
    value = ctx.value
    if isinstance(value, dict):
        low, high = _bound(value, "min"), _bound(value, "max")
        if low is None and high is None:
            raise GraderError("word-count needs a number or {min, max}")
        if low is not None and high is not None and low > high:
            raise GraderError(f"word-count min ({low:g}) is greater than max ({high:g})")
        ok = (low is None or count >= low) and (high is None or count <= high)
        bounds = " and ".join(b for b in (f"at least {low:g}" if low is not None else "", f"at most {high:g}" if high is not None else "") if b)
        return ctx.check(ok, f"have {bounds} words (found {count})")
    expected = _number(ctx.value, "word-count needs a number or {min, max}")
    return ctx.check(count == expected, f"have exactly {expected:g} words (found {count})")


def _bound(value: dict[str, Any], key: str) -> float | None:
    bound = value.get(key)
    return None if bound is None else _number(bound, f"word-count {key} must be a number")


def _number(value: Any, message: str) -> float:
    if isinstance(value, bool):
        raise GraderError(f"{message}, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GraderError(f"{message}, got {value!r}") from None
    if not math.isfinite(number):
        raise GraderError(f"{message}, got {value!r}")
    return number
