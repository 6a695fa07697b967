"""JSON schemas as promptfoo's ajv reads them: ajv-formats' formats (checked, never passed
unchecked) and strict mode (typos and unknown formats are errors, not ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade.grading.structured.json_formats import FORMATS, format_checker
from ci_grade.grading.structured.json_schema import strict_problem
from tests.assertion_runs import grade_outputs


def schema(name: str, fmt: str) -> dict[str, object]:
    return {"type": "object", "properties": {name: {"format": fmt}}}


def test_formats_ajv_checks_fail_values_that_do_not_match(tmp_path: Path) -> None:
    """Before, jsonschema passed `date-time`, `uri` and `uuid` unchecked (their checkers need
    optional packages) and took `a@b` for an email; ajv-formats fails all four."""
    r = grade_outputs(
        tmp_path,
        {
            "date-time": ('{"t": "yesterday"}', {"type": "is-json", "value": schema("t", "date-time")}),
            "date-time ok": ('{"t": "2024-02-29T12:00:00Z"}', {"type": "is-json", "value": schema("t", "date-time")}),
            "no leap day": ('{"t": "2023-02-29"}', {"type": "contains-json", "value": schema("t", "date")}),
            "uri": ('Result: {"u": "not a uri"}', {"type": "contains-json", "value": schema("u", "uri")}),
            "uuid": ('{"id": "123"}', {"type": "is-json", "value": schema("id", "uuid")}),
            "email without a dot": ('{"e": "a@b"}', {"type": "is-json", "value": schema("e", "email")}),
            "int32 on a number": ('{"n": 2147483648}', {"type": "is-json", "value": schema("n", "int32")}),
            "int32 on text": ('{"n": "many"}', {"type": "is-json", "value": schema("n", "int32")}),
        },
    )
    assert {name: outcome.status for name, outcome in r.items()} == {
        "date-time": "fail", "date-time ok": "pass", "no leap day": "fail", "uri": "fail", "uuid": "fail",
        "email without a dot": "fail", "int32 on a number": "fail", "int32 on text": "pass",
    }  # fmt: skip
    assert "$.t: 'yesterday' is not a 'date-time'" in r["date-time"].reason


def test_strict_mode_refuses_what_ajv_refuses(tmp_path: Path) -> None:
    """A typo in a keyword would silently validate nothing; promptfoo's ajv refuses the schema,
    and so does ci-grade: the assertion is an ERROR naming the keyword."""
    r = grade_outputs(
        tmp_path,
        {
            "typo": ('{"a": 1}', {"type": "is-json", "value": {"type": "object", "requird": ["a"]}}),
            "unknown format": ('{"a": 1}', {"type": "is-json", "value": schema("a", "phone")}),
            "nested": ('x {"a": 1}', {"type": "contains-json", "value": {"properties": {"a": {"exmaple": 1}}}}),
            "draft 2020-12 keeps its own rules": ('[1]', {"type": "is-json", "value": {"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [{}]}}),
        },
    )
    assert {name: outcome.status for name, outcome in r.items()} == {"typo": "error", "unknown format": "error", "nested": "error", "draft 2020-12 keeps its own rules": "pass"}
    assert r["typo"].reason == 'invalid JSON schema: strict mode: unknown keyword: "requird" (at #)'
    assert r["unknown format"].reason == 'invalid JSON schema: unknown format "phone" ignored in schema at path "#/properties/a"'
    assert '"exmaple" (at #/properties/a)' in r["nested"].reason


@pytest.mark.parametrize(
    ("schema_", "problem"),
    [
        ({"if": {"type": "string"}}, '"if" without "then" and "else"'),
        ({"else": {}}, '"else" without "if"'),
        ({"additionalItems": False}, '"additionalItems" is ignored'),
        ({"nullable": True}, '"nullable" cannot be used without "type"'),
        ({"id": "x"}, 'keyword "id"'),
        ({"definitions": {"a": {"bad": 1}}, "$ref": "#/definitions/a"}, 'unknown keyword: "bad" (at #/definitions/a)'),
        ({"definitions": {"a": {"bad": 1}}}, None),  # never referenced: ajv compiles it not
        ({"properties": {"format": {"type": "string"}}, "dependencies": {"a": ["b"]}}, None),
        ({"type": "string", "nullable": True, "title": "t", "examples": ["x"], "$comment": "c"}, None),
    ],
)
def test_strict_problems(schema_: dict[str, object], problem: str | None) -> None:
    found = strict_problem(schema_)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_every_ajv_format_is_known_and_applies_only_to_its_type() -> None:
    checker = format_checker()
    assert set(checker.checkers) == FORMATS == {
        "date", "time", "date-time", "iso-time", "iso-date-time", "duration", "uri", "uri-reference", "uri-template", "url",
        "email", "hostname", "ipv4", "ipv6", "regex", "uuid", "json-pointer", "json-pointer-uri-fragment",
        "relative-json-pointer", "byte", "int32", "int64", "float", "double", "password", "binary",
    }  # fmt: skip
    cases = {
        ("time", "12:00:00"): False,  # full mode: a time needs its zone
        ("time", "23:59:60Z"): True,
        ("iso-time", "12:00:00"): True,
        ("date-time", "2024-01-01 12:00:00+02:00"): True,
        ("date-time", "2024-01-01T12:00:00Z\n"): False,  # anchored at the very end, as in JavaScript
        ("duration", "P"): False,
        ("duration", "P1W"): True,
        ("url", "http://192.168.1.1"): False,
        ("url", "http://8.8.8.8"): True,
        ("hostname", "a..b"): False,
        ("ipv4", "1.2.3.4\n"): False,
        ("ipv4", "١.2.3.4"): False,  # Arabic-Indic digits are not \d in JavaScript
        ("uri", "//x/y"): False,
        ("uri-reference", "//x/y"): True,
        ("regex", "a\\Z"): False,
        ("byte", "aGVsbG8="): True,
        ("byte", "aGVsbG8"): False,
        ("int64", 1.5): False,
        ("int32", True): True,  # a boolean is not a number: not checked
        ("uuid", 7): True,  # a number is not text: not checked
    }
    assert {(name, value): checker.conforms(value, name) for name, value in cases} == cases


def test_a_value_javascript_takes_for_false_is_no_schema(tmp_path: Path) -> None:
    """promptfoo 0.123.1 checks `if (renderedValue)`: `false` and `0` mean no schema, and `true`
    (neither text nor an object) is an error, not a schema that passes everything."""
    r = grade_outputs(
        tmp_path,
        {
            "false": ('{"a": 1}', {"type": "is-json", "value": False}),
            "zero": ('x {"a": 1}', {"type": "contains-json", "value": 0}),
            "true": ('{"a": 1}', {"type": "contains-json", "value": True}),
        },
    )
    assert {name: outcome.status for name, outcome in r.items()} == {"false": "pass", "zero": "pass", "true": "error"}
    assert r["true"].reason.startswith("contains-json assertion must have a string or object value")


def test_patterns_are_javascript_regular_expressions_as_ajv_runs_them(tmp_path: Path) -> None:
    """ajv matches `pattern` with JavaScript's `new RegExp(p, "u")`: `$` is the very end (Python's
    `$` also matched before a final newline: a false pass), `\\d` is ASCII, `(?<n>…)` is a named
    group and `(?P<n>…)` is an error."""
    r = grade_outputs(
        tmp_path,
        {
            "dollar": ('{"a": "ab\\n"}', {"type": "is-json", "value": {"properties": {"a": {"pattern": "^ab$"}}}}),
            "digits": ('{"a": "٣"}', {"type": "is-json", "value": {"properties": {"a": {"pattern": "^\\d+$"}}}}),
            "named group": ('{"a": "x"}', {"type": "is-json", "value": {"properties": {"a": {"pattern": "^(?<n>x)$"}}}}),
            "python group": ('{"a": "x"}', {"type": "is-json", "value": {"properties": {"a": {"pattern": "^(?P<n>x)$"}}}}),
            "pattern keys": ('{"x-a": 1, "y": 2}', {"type": "is-json", "value": {"patternProperties": {"^x-": {"type": "number"}}, "additionalProperties": False}}),
        },
    )
    assert {name: outcome.status for name, outcome in r.items()} == {"dollar": "fail", "digits": "fail", "named group": "pass", "python group": "error", "pattern keys": "fail"}
    assert "'y' was unexpected" in r["pattern keys"].reason
    assert "is not a JavaScript regular expression" in r["python group"].reason
