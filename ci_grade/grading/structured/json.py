"""`is-json` and `contains-json`: strict JSON (as JavaScript parses it), optionally against a JSON schema."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.grading.structured import clip, first_line


def parse_json(text: str) -> tuple[bool, Any]:
    """Strict JSON (as JavaScript's JSON.parse: no NaN or Infinity); returns (ok, value)."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return False, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_OUTSIDE_STRING = re.compile(r'["{}\[\]]')
_INSIDE_STRING = re.compile(r'\\.|"', re.S)
_CLOSERS = {"{": "}", "[": "]"}
_OPENER = re.compile(r"[{\[]")
_SCAN_BUDGET = 1_000_000  # characters examined while looking for JSON in one output


def extract_json(text: str) -> list[Any]:
    """JSON objects and arrays embedded in text (prose, fenced blocks), outermost first.

    Each `{` or `[` starts a string-aware scan for its balanced closer; a balanced span that
    parses as JSON is taken whole and scanning resumes after it. Total work is bounded.
    """
    values: list[Any] = []
    budget = _SCAN_BUDGET
    match = _OPENER.search(text)
    while match and budget > 0:
        start = match.start()
        end = _balanced_end(text, start)
        budget -= (end or len(text)) - start
        if end is not None:
            ok, value = parse_json(text[start:end])
            if ok:
                values.append(value)
                match = _OPENER.search(text, end)
                continue
        match = _OPENER.search(text, start + 1)
    return values


def _balanced_end(text: str, start: int) -> int | None:
    """The index just past the bracket closing the one at `start`, or None if unbalanced."""
    closers: list[str] = []
    pos = start
    while True:
        found = _OUTSIDE_STRING.search(text, pos)
        if found is None:
            return None
        char, pos = found.group(), found.end()
        if char == '"':
            while True:
                inside = _INSIDE_STRING.search(text, pos)
                if inside is None:
                    return None
                pos = inside.end()
                if inside.group() == '"':
                    break
        elif char in _CLOSERS:
            closers.append(_CLOSERS[char])
        else:
            if closers.pop() != char:
                return None
            if not closers:
                return pos


def json_schema_validator(ctx: AssertionContext) -> Any | None:
    """A validator for the assertion's schema value (mapping, boolean or YAML/JSON text), or None."""
    schema = ctx.value
    if schema is None or schema == "":
        return None
    if isinstance(schema, str):
        from ci_grade.config import yaml12

        try:
            schema = yaml12.loads(schema)
        except Exception as exc:
            raise GraderError(f"{ctx.type} value is not a JSON schema: it does not parse as YAML or JSON ({first_line(exc)})") from None
    if not isinstance(schema, dict | bool):
        raise GraderError(f"{ctx.type} value must be a JSON schema (a mapping), got {type(schema).__name__}")
    return schema_validator(schema, "JSON schema")


def schema_validator(schema: dict[str, Any] | bool, what: str) -> Any:
    """A jsonschema validator honouring `$schema` (draft 7 by default), with format checks.

    An invalid schema is a GraderError naming `what`. The registry is empty, so a `$ref` to a
    remote document is an error, never a network fetch.
    """
    import jsonschema
    import referencing
    from jsonschema import validators

    declared = schema.get("$schema") if isinstance(schema, dict) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cls = validators.validator_for(schema, default=None)  # type: ignore[arg-type]
    if cls is None:
        if declared is not None:
            raise GraderError(f"invalid {what}: unknown $schema {declared!r}")
        cls = jsonschema.Draft7Validator
    try:
        cls.check_schema(schema)  # type: ignore[arg-type]  # a boolean schema is valid JSON Schema
    except jsonschema.SchemaError as exc:
        raise GraderError(f"invalid {what}: {exc.message}") from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER, registry=referencing.Registry())


def schema_errors(validator: Any, instance: Any) -> list[str]:
    """Readable schema violations of `instance` (empty when it conforms)."""
    from jsonschema.exceptions import relevance

    try:
        errors = sorted(validator.iter_errors(instance), key=relevance)
    except Exception as exc:  # e.g. an unresolvable $ref
        raise GraderError(f"JSON schema could not be applied: {first_line(exc)}") from None
    return [f"{_json_path(e.absolute_path)}: {clip(e.message, 200)}" for e in errors]


def _json_path(parts: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _schema_failure(errors: list[str]) -> str:
    shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
    return f"JSON does not conform to the provided schema. Errors: {shown}"


@assertion("is-json", handles_inverse=True)
async def is_json(ctx: AssertionContext) -> Grade:
    validator = json_schema_validator(ctx)
    ok, value = parse_json(ctx.output_text)
    if not ok:
        return ctx.check(False, "be valid JSON")
    if validator is None:
        return ctx.check(True, "be valid JSON")
    errors = schema_errors(validator, value)
    if ctx.inverse:
        return ctx.check(not errors, "be JSON conforming to the provided schema")
    return Grade(True, 1.0, "Assertion passed") if not errors else Grade(False, 0.0, _schema_failure(errors))


@assertion("contains-json", handles_inverse=True)
async def contains_json(ctx: AssertionContext) -> Grade:
    validator = json_schema_validator(ctx)
    values = extract_json(ctx.output_text)
    if not values:
        return ctx.check(False, "contain valid JSON")
    if validator is None:
        return ctx.check(True, "contain valid JSON")
    first_errors: list[str] = []
    for value in values:
        errors = schema_errors(validator, value)
        if not errors:
            return ctx.check(True, "contain JSON conforming to the provided schema")
        first_errors = first_errors or errors
    if ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    found = f" ({len(values)} JSON values found, none conforms)" if len(values) > 1 else ""
    return Grade(False, 0.0, _schema_failure(first_errors) + found)
