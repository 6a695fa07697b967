"""`is-json` (strict JSON, as JavaScript parses it) and `contains-json` (the objects promptfoo finds in
text), optionally against a JSON schema."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from ci_grade.config import yaml12
from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.grading.structured import first_line
from ci_grade.grading.structured.json_schema import schema_errors, schema_validator
from ci_grade.js_values import JS_WHITESPACE
from ci_grade.safe_text import from_utf16_units, utf16_units
from ci_grade.templating.nunjucks import js_string


def parse_json(text: str) -> tuple[bool, Any]:
    """Strict JSON (as JavaScript's JSON.parse: no NaN or Infinity); returns (ok, value)."""
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return False, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


MAX_OBJECT_UNITS = 100_000  # promptfoo reads an object over at most this many UTF-16 code units
JS_YAML_MAX_DEPTH = 100  # js-yaml refuses a node with this many levels above it (the root is level 1)
_SCAN_BUDGET = 1_000_000_000  # characters of candidate objects read in one output (seconds of work)
_BRACES = re.compile("[{}]")
_BRACKETS = re.compile(r"[\[\]{}]")


def extract_json(text: str) -> list[dict[str, Any]]:
    """The objects promptfoo's `extractJsonObjects` finds in `text`, in order.

    From each `{`, braces are counted (quotes do not hide them) up to the `}` that balances it, or
    for at most 100,000 UTF-16 code units, closing what is still open with `}`. That span is read
    as YAML with `//` comments made `#` (so `{'a': 1}` and `{a: 1}` count); an object is taken and
    the search goes on after it, anything else on from the next `{`. Arrays are not looked for.
    """
    units = utf16_units(text)
    closing = _closing_braces(units)
    values: list[dict[str, Any]] = []
    budget = _SCAN_BUDGET
    start = units.find("{")
    while start >= 0:
        limit = min(start + MAX_OBJECT_UNITS, len(units))
        close = closing.get(start)
        end = close + 1 if close is not None and close < limit else limit
        value = None
        if end > start + 1:
            candidate = units[start:end] + "}" * (units.count("{", start, end) - units.count("}", start, end))
            budget -= len(candidate)
            if budget < 0:
                raise GraderError(f"contains-json: the output has too many unbalanced `{{` to look for objects in (over {_SCAN_BUDGET:,} characters to read)")
            value = _object(from_utf16_units(candidate))
        if value is not None:
            values.append(value)
        start = units.find("{", end if value is not None else start + 1)
    return values


def _closing_braces(text: str) -> dict[int, int]:
    """For each `{` that a later `}` balances (strings not skipped), the index of that `}`."""
    opened: list[int] = []
    closing: dict[int, int] = {}
    for brace in _BRACES.finditer(text):
        if brace.group() == "{":
            opened.append(brace.start())
        elif opened:
            closing[opened.pop()] = brace.start()
    return closing


class _JsYamlLoader(yaml12.Yaml12Loader):
    """YAML as js-yaml reads it with `json: true`: a repeated key keeps its last value, keys become
    text as JavaScript writes them, and a collection as a key is an error."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
        self.flatten_mapping(node)
        return {_js_key(self.construct_object(key, deep=True)): self.construct_object(value, deep=deep) for key, value in node.value}


def _js_key(key: Any) -> str:
    if isinstance(key, dict | list):
        raise ValueError("a collection cannot be a key")
    return "null" if key is None else js_string(key)


def _object(candidate: str) -> dict[str, Any] | None:
    """`candidate` as promptfoo's js-yaml reads it, if that is an object."""
    try:
        ok, value = parse_json(candidate)  # JSON is YAML: the quick path
    except RecursionError:
        return None  # nested far deeper than js-yaml reads
    if not ok:
        if _nested_deeper_than(candidate, 2 * JS_YAML_MAX_DEPTH):
            return None  # far deeper than js-yaml reads (unless quoted), and libyaml could run out of stack
        try:
            yaml12.check_depth(candidate, 2 * JS_YAML_MAX_DEPTH)  # an alias bomb in a reply is no object
            value = yaml.load(_hash_comments(candidate), Loader=_JsYamlLoader)
        except yaml12.UNREADABLE:  # `_js_key`'s refusal of a collection as a key is a ValueError
            return None
    return value if isinstance(value, dict) and not _too_deep(value) else None


def _nested_deeper_than(text: str, limit: int) -> bool:
    """Whether brackets in `text` (quoted or not) nest more than `limit` deep."""
    depth = 0
    for bracket in _BRACKETS.finditer(text):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def _too_deep(value: Any, level: int = 1) -> bool:
    """Whether a node of `value` sits at js-yaml's depth limit (a key at its value's level)."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return level >= JS_YAML_MAX_DEPTH or any(_too_deep(child, level + 1) for child in children)


def _hash_comments(text: str) -> str:
    """promptfoo's `convertSlashCommentsToHash`: on each line the first `//` outside quotes (and not
    in a word with `://`) starts a comment, its slashes becoming half as many `#`."""
    return "\n".join(_hash_comment(line) if "//" in line else line for line in text.split("\n"))


def _hash_comment(line: str) -> str:
    quote = ""
    for at, char in enumerate(line):
        if quote:
            if char == quote and not _escaped(line, at) and (quote == '"' or not _ascii_letter(line[at + 1 : at + 2])):
                quote = ""
        elif char == '"' or (char == "'" and not _ascii_letter(line[at - 1 : at])):
            quote = char
        elif line.startswith("//", at):
            word = at
            while word > 0 and line[word - 1] not in JS_WHITESPACE:
                word -= 1
            if "://" not in line[word : at + 2]:
                slashes = len(line) - at - len(line[at:].lstrip("/"))
                return line[:at] + "#" * (slashes // 2) + line[at + slashes :]
    return line


def _escaped(line: str, at: int) -> bool:
    """Whether the quote at `at` follows an odd number of backslashes."""
    backslashes = 0
    while backslashes < at and line[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _ascii_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()


def json_schema_validator(ctx: AssertionContext) -> Any | None:
    """A validator for the assertion's schema value (a mapping or YAML/JSON text), or None for
    none: as in promptfoo, a value JavaScript takes for false (`false`, `0`, empty text) is no
    schema, and any other value that is neither text nor a mapping is an error."""
    schema = ctx.value
    if schema is None or schema is False or schema == "" or (isinstance(schema, int | float) and not schema):
        return None
    if not isinstance(schema, str | dict):
        raise GraderError(f"{ctx.type} assertion must have a string or object value, got {json.dumps(schema)[:60]}")
    if isinstance(schema, str):
        try:
            schema = yaml12.loads(schema)
        except yaml12.UNREADABLE as exc:
            raise GraderError(f"{ctx.type} value is not a JSON schema: it does not parse as YAML or JSON ({first_line(exc)})") from None
    if not isinstance(schema, dict | bool):
        raise GraderError(f"{ctx.type} value must be a JSON schema (a mapping), got {type(schema).__name__}")
    return schema_validator(schema, "JSON schema")


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
