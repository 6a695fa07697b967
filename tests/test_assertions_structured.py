"""Structured-output assertions end to end: is-/contains- json, xml, html and sql."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ci_grade.errors import GraderError
from ci_grade.grading.structured.html import html_indicators
from ci_grade.grading.structured.json import extract_json
from ci_grade.grading.structured.xml import xml_fragments
from tests.assertion_runs import evaluate, grade_outputs
from tests.conftest import write

COORDS = {
    "type": "object",
    "required": ["latitude", "longitude"],
    "properties": {
        "latitude": {"type": "number", "minimum": -90, "maximum": 90},
        "longitude": {"type": "number", "minimum": -180, "maximum": 180},
    },
}


def statuses(results: dict) -> dict[str, str]:
    return {name: r.status for name, r in results.items()}


def test_is_json_with_and_without_schema(tmp_path: Path) -> None:
    write(tmp_path / "schema.json", '{"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}')
    r = grade_outputs(
        tmp_path,
        {
            "object": ('{"a": [1, 2, {"b": null}]}', {"type": "is-json"}),
            "scalar": ("42", {"type": "is-json"}),
            "surrounding whitespace": ('\n  {"a": 1}  \n', {"type": "is-json"}),
            "prose": ("Sure! {\"a\": 1}", {"type": "is-json"}),
            "NaN is not JSON": ('{"a": NaN}', {"type": "is-json"}),
            "single quotes": ("{'a': 1}", {"type": "is-json"}),
            "empty": ("", {"type": "is-json"}),
            "object output": ({"latitude": 1, "longitude": 2}, {"type": "is-json", "value": COORDS}),
            "schema ok": ('{"latitude": 48.8, "longitude": 2.35}', {"type": "is-json", "value": COORDS}),
            "schema violated": ('{"latitude": 148.8, "longitude": "east"}', {"type": "is-json", "value": COORDS}),
            "schema as yaml text": ('{"id": 3}', {"type": "is-json", "value": "type: object\nrequired: [id]"}),
            "schema from file": ('{"id": 3}', {"type": "is-json", "value": "file://schema.json"}),
            "schema from file violated": ('{"id": "3"}', {"type": "is-json", "value": "file://schema.json"}),
            "format checked": ('{"email": "nope"}', {"type": "is-json", "value": {"properties": {"email": {"type": "string", "format": "email"}}}}),
            "draft 2020-12 honoured": (
                '[1, "x"]',
                {"type": "is-json", "value": {"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [{"type": "integer"}, {"type": "integer"}]}},
            ),
            "not-is-json": ("plain text", {"type": "not-is-json"}),
            "not-is-json fails": ("[]", {"type": "not-is-json"}),
            "not-is-json with schema mismatch": ('{"latitude": "x"}', {"type": "not-is-json", "value": COORDS}),
            "invalid schema": ('{"a": 1}', {"type": "is-json", "value": {"type": "nonsense"}}),
            "unknown $schema": ('{"a": 1}', {"type": "is-json", "value": {"$schema": "https://example.com/my-draft", "type": "object"}}),
            "schema not a mapping": ('{"a": 1}', {"type": "is-json", "value": ["a", "b"]}),
            "unparseable schema text": ('{"a": 1}', {"type": "is-json", "value": "{type: [unclosed"}),
            "remote $ref is not fetched": ('{"a": 1}', {"type": "is-json", "value": {"$ref": "https://example.invalid/schema.json"}}),
            "invalid output with broken schema": ("not json", {"type": "is-json", "value": {"type": "nonsense"}}),
        },
    )
    assert statuses(r) == {
        "object": "pass", "scalar": "pass", "surrounding whitespace": "pass", "prose": "fail", "NaN is not JSON": "fail",
        "single quotes": "fail", "empty": "fail", "object output": "pass", "schema ok": "pass", "schema violated": "fail",
        "schema as yaml text": "pass", "schema from file": "pass", "schema from file violated": "fail", "format checked": "fail",
        "draft 2020-12 honoured": "fail", "not-is-json": "pass", "not-is-json fails": "fail",
        "not-is-json with schema mismatch": "pass", "invalid schema": "error", "unknown $schema": "error",
        "schema not a mapping": "error", "unparseable schema text": "error", "remote $ref is not fetched": "error",
        "invalid output with broken schema": "error",
    }  # fmt: skip
    violated = r["schema violated"].reason
    assert violated.startswith("JSON does not conform to the provided schema. Errors: ")
    assert "$.latitude: 148.8 is greater than the maximum of 90" in violated
    assert "$.longitude: 'east' is not of type 'number'" in violated
    assert r["schema violated"].score == 0.0
    assert "$[1]: 'x' is not of type 'integer'" in r["draft 2020-12 honoured"].reason
    assert r["prose"].reason == "Expected output to be valid JSON"
    assert r["not-is-json fails"].reason == "Expected output to not be valid JSON"
    assert r["invalid schema"].reason.startswith("invalid JSON schema: 'nonsense' is not valid")
    assert r["unknown $schema"].reason == "invalid JSON schema: unknown $schema 'https://example.com/my-draft'"
    assert "JSON schema could not be applied" in r["remote $ref is not fetched"].reason


def test_contains_json_extracts_from_prose_and_fences(tmp_path: Path) -> None:
    """Outcomes as promptfoo 0.123.1 grades them: only `{...}` objects are found, read as YAML (so
    `{'a': 1}` and `{a: 1}` count), braces counted without regard to strings. These used to pin a
    JSON scan that also took arrays and skipped strings ("array", "no json", "braces in ...")."""
    fenced = 'Here you go:\n```json\n{"latitude": 10, "longitude": 20}\n```\nAnything else?'
    tricky = 'Use {curly} words, then {"note": "a } inside a string", "latitude": 1, "longitude": 2} done.'
    name = {"type": "object", "required": ["name"]}
    r = grade_outputs(
        tmp_path,
        {
            "fenced": (fenced, {"type": "contains-json"}),
            "fenced with schema": (fenced, {"type": "contains-json", "value": COORDS}),
            "braces in prose and strings": (tricky, {"type": "contains-json", "value": COORDS}),
            "array": ("The list is [1, 2, 3].", {"type": "contains-json"}),
            "objects in an array": ('Result: [{"name": "a"}, {"name": "b"}]', {"type": "contains-json", "value": name}),
            "only an array": ('```json\n["a", "b"]\n```', {"type": "contains-json"}),
            "single quotes": ("{'a': 1}", {"type": "contains-json"}),
            "unquoted keys": ("Answer: {name: Ada, age: 36}", {"type": "contains-json", "value": name}),
            "comment": ('{\n  "name": "x", // the name\n  "url": "http://a.b/c"\n}', {"type": "contains-json", "value": name}),
            "unclosed": ('The result is {"name": "a", "b": [1, 2]', {"type": "contains-json", "value": name}),
            "outer object first": ('{"outer": {"name": "x"}}', {"type": "contains-json", "value": name}),
            "second value conforms": ('First {"a": 1} then {"latitude": 0, "longitude": 0}', {"type": "contains-json", "value": COORDS}),
            "none conforms": ('{"latitude": 100, "longitude": 0} and {"a": 1}', {"type": "contains-json", "value": COORDS}),
            "braces around words": ("No JSON here {just braces}", {"type": "contains-json"}),
            "no braces": ("No JSON here", {"type": "contains-json"}),
            "whole output is json": ('{"latitude": 1, "longitude": 1}', {"type": "contains-json", "value": COORDS}),
            "csv-style schema string": ('x {"id": 1} y', {"type": "contains-json", "value": '{"type": "object", "required": ["id"]}'}),
            "not-contains-json": ("nothing", {"type": "not-contains-json"}),
            "not-contains-json fails": ('see {"a": 1}', {"type": "not-contains-json"}),
            "not-contains-json none conforms": ('{"a": 1}', {"type": "not-contains-json", "value": COORDS}),
            "not-contains-json one conforms": ('{"a": 1} {"latitude": 1, "longitude": 1}', {"type": "not-contains-json", "value": COORDS}),
            "invalid schema": ('{"a": 1}', {"type": "contains-json", "value": {"required": "latitude"}}),
        },
    )
    assert statuses(r) == {
        "fenced": "pass", "fenced with schema": "pass", "braces in prose and strings": "fail", "array": "fail",
        "objects in an array": "pass", "only an array": "fail", "single quotes": "pass", "unquoted keys": "pass",
        "comment": "pass", "unclosed": "pass", "outer object first": "fail", "second value conforms": "pass",
        "none conforms": "fail", "braces around words": "pass", "no braces": "fail", "whole output is json": "pass",
        "csv-style schema string": "pass", "not-contains-json": "pass", "not-contains-json fails": "fail",
        "not-contains-json none conforms": "pass", "not-contains-json one conforms": "fail", "invalid schema": "error",
    }  # fmt: skip
    assert r["no braces"].reason == "Expected output to contain valid JSON"
    assert "$: 'latitude' is a required property" in r["braces in prose and strings"].reason
    none = r["none conforms"].reason
    assert "$.latitude: 100 is greater than the maximum of 90" in none and "(2 JSON values found, none conforms)" in none


def test_json_extraction_unit() -> None:
    """The objects promptfoo's extractJsonObjects returns for the same text."""
    assert extract_json('He said {not json} and "{" then {"a": "}", "b": [1, {"c": 2}]} and [1,2] end') == [
        {"not json": None},
        {"c": 2},
    ]
    assert extract_json('escaped quote {"q": "say \\"hi\\" {"}') == []
    assert extract_json("[1, 2] [3]") == []
    assert extract_json('Result: [{"name": "a"}, {"name": "b"}]') == [{"name": "a"}, {"name": "b"}]
    assert extract_json("{'a': 1} and {b: [x, y]}") == [{"a": 1}, {"b": ["x", "y"]}]
    # keys are text, a repeated key keeps its last value
    assert extract_json('{"a": 1, "a": 2, 3: null, true: 1.50}') == [{"a": 2, "3": None, "true": 1.5}]
    assert extract_json("{\n  \"url\": \"http://x.y/z\", // a comment\n  'it''s': 1 /// three slashes\n}") == [
        {"url": "http://x.y/z", "it's": 1}
    ]
    # an object still open at the end is closed; a `{` that ends the text is not read
    assert extract_json('open {"a": {"b": 1}') == [{"a": {"b": 1}}]
    assert extract_json("abc {") == []
    assert extract_json("abc { ") == [{}]
    assert extract_json("{{name}}") == [{"name": None}]  # a mapping as a key is refused
    nested: Any = 1
    for _ in range(97):
        nested = [nested]
    assert extract_json("{x: " + "[" * 97 + "1" + "]" * 97 + "}") == [{"x": nested}]
    assert extract_json("{x: " + "[" * 98 + "1" + "]" * 98 + "}") == []  # js-yaml reads 99 levels at most
    assert extract_json('{"x": ' + "[" * 99 + "]" * 99 + "}") == []
    with pytest.raises(GraderError, match="too many unbalanced"):
        extract_json("{" * 100_000)  # promptfoo reads for a minute and finds nothing
    # an object spans 100,000 UTF-16 units at most (an emoji is two), then is closed as it stands
    assert extract_json('{"a": "' + "😀" * 49_996 + '"}') == [{"a": "😀" * 49_996}]
    assert extract_json('{"a": "' + "😀" * 49_997 + '"}') == []


def test_is_xml(tmp_path: Path) -> None:
    nested = "<root><parent><child><grandchild>x</grandchild></child></parent></root>"
    r = grade_outputs(
        tmp_path,
        {
            "document": ('<?xml version="1.0"?>\n<root a="1"><child>Content</child></root>\n', {"type": "is-xml"}),
            "missing closing bracket": ("<root><child>Content</child></root", {"type": "is-xml"}),
            "mismatched tag": ("<root><child></root>", {"type": "is-xml"}),
            "prose around": ("Here: <root/>", {"type": "is-xml"}),
            "two roots": ("<a/><b/>", {"type": "is-xml"}),
            "empty": ("", {"type": "is-xml"}),
            "required present": (
                "<analysis><classification>T-shirt</classification><color>Red</color></analysis>",
                {"type": "is-xml", "value": {"requiredElements": ["analysis.classification", "analysis.color"]}},
            ),
            "required missing": (
                "<analysis><classification>T-shirt</classification></analysis>",
                {"type": "is-xml", "value": {"requiredElements": ["analysis.classification", "analysis.color"]}},
            ),
            "nested path": (nested, {"type": "is-xml", "value": {"requiredElements": ["root.parent.child.grandchild"]}}),
            "comma string value": (nested, {"type": "is-xml", "value": "root.parent, root.parent.child"}),
            "list value": (nested, {"type": "is-xml", "value": ["root.parent.missing"]}),
            "indexed repeated element and attribute": (
                '<r><item id="1"/><item id="2"><leaf/></item></r>',
                {"type": "is-xml", "value": ["r.item.1.leaf", "r.item.@_id"]},
            ),
            "internal DTD subset refused": (
                '<?xml version="1.0"?><!DOCTYPE lol [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><lol>&lol2;</lol>',
                {"type": "is-xml"},
            ),
            "undefined entity": ("<r>&nbsp;</r>", {"type": "is-xml"}),
            "not-is-xml": ("just words", {"type": "not-is-xml"}),
            "not-is-xml fails": ("<r/>", {"type": "not-is-xml"}),
            "bad value": ("<r/>", {"type": "is-xml", "value": {"elements": ["r"]}}),
        },
    )
    assert statuses(r) == {
        "document": "pass", "missing closing bracket": "fail", "mismatched tag": "fail", "prose around": "fail",
        "two roots": "fail", "empty": "fail", "required present": "pass", "required missing": "fail", "nested path": "pass",
        "comma string value": "pass", "list value": "fail", "indexed repeated element and attribute": "pass",
        "internal DTD subset refused": "fail", "undefined entity": "fail", "not-is-xml": "pass", "not-is-xml fails": "fail",
        "bad value": "error",
    }  # fmt: skip
    assert r["required missing"].reason == "XML is missing required elements: analysis.color"
    assert r["mismatched tag"].reason == "XML parsing failed: mismatched tag (line 1, column 16)"
    assert r["internal DTD subset refused"].reason == "DTD internal subsets are not supported"
    assert r["empty"].reason == "Output is empty"
    assert r["not-is-xml fails"].reason == "Expected output to not be an XML document"
    assert "requiredElements" in r["bad value"].reason


def test_contains_xml(tmp_path: Path) -> None:
    chatty = "Sure, here is your xml:\n<root><child>Content</child></root>\nlet me know if you have any other questions!"
    wrapped = "Text <wrapper><root><child>Content</child></root></wrapper> more"
    r = grade_outputs(
        tmp_path,
        {
            "fragment in prose": (chatty, {"type": "contains-xml"}),
            "required relative to fragment root": (chatty, {"type": "contains-xml", "value": {"requiredElements": ["root.child"]}}),
            "wrapper must be in the path": (wrapped, {"type": "contains-xml", "value": {"requiredElements": ["root.child"]}}),
            "wrapper path": (wrapped, {"type": "contains-xml", "value": {"requiredElements": ["wrapper.root.child"]}}),
            "later fragment satisfies": ("<a>x</a> and then <b><c/></b>", {"type": "contains-xml", "value": ["b.c"]}),
            "no xml": ("a < b and c > d", {"type": "contains-xml"}),
            "unclosed only": ("use <b> tags", {"type": "contains-xml"}),
            "refused DTD": ('<!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>', {"type": "contains-xml"}),
            "not-contains-xml": ("plain", {"type": "not-contains-xml"}),
            "not-contains-xml fails": (chatty, {"type": "not-contains-xml"}),
        },
    )
    assert statuses(r) == {
        "fragment in prose": "pass", "required relative to fragment root": "pass", "wrapper must be in the path": "fail",
        "wrapper path": "pass", "later fragment satisfies": "pass", "no xml": "fail", "unclosed only": "fail",
        "refused DTD": "fail", "not-contains-xml": "pass", "not-contains-xml fails": "fail",
    }  # fmt: skip
    assert r["no xml"].reason == "No XML content found in the output"
    assert r["wrapper must be in the path"].reason == "XML is missing required elements: root.child"
    assert xml_fragments("x <a><b/></a> <c/>") == [(2, 13), (5, 9), (14, 18)]


def test_is_html(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "document": ("<!DOCTYPE html><html><head><title>T</title></head><body><p>Hi</p></body></html>", {"type": "is-html"}),
            "fragment": ("<div>Content</div>", {"type": "is-html"}),
            "multiple elements": ("<h1>Title</h1>\n<p>Paragraph</p>\n", {"type": "is-html"}),
            "self-closing": ('<img src="test.jpg" />', {"type": "is-html"}),
            "custom element": ("<my-widget>x</my-widget>", {"type": "is-html"}),
            "plain text": ("Just text", {"type": "is-html"}),
            "mixed content": ("Text before <div>HTML</div> text after", {"type": "is-html"}),
            "text between elements": ("<p>a</p> loose text <p>b</p>", {"type": "is-html"}),
            "xml document": ('<?xml version="1.0"?><root>x</root>', {"type": "is-html"}),
            "incomplete": ("<div>Unclosed div", {"type": "is-html"}),
            "unknown elements": ("<example>hi</example>", {"type": "is-html"}),
            "empty": ("  ", {"type": "is-html"}),
            "not-is-html": ("Just text", {"type": "not-is-html"}),
            "not-is-html fails": ("<p>x</p>", {"type": "not-is-html"}),
        },
    )
    assert statuses(r) == {
        "document": "pass", "fragment": "pass", "multiple elements": "pass", "self-closing": "pass", "custom element": "pass",
        "plain text": "fail", "mixed content": "fail", "text between elements": "fail", "xml document": "fail",
        "incomplete": "fail", "unknown elements": "fail", "empty": "fail", "not-is-html": "pass", "not-is-html fails": "fail",
    }  # fmt: skip
    assert r["xml document"].reason == "Output appears to be XML, not HTML"
    assert r["text between elements"].reason == "Output contains text outside of HTML tags"
    assert r["unknown elements"].reason == "Output does not contain recognized HTML elements"
    assert r["incomplete"].reason == "Output does not end with an HTML tag"


def test_contains_html(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "div in prose": ("Here is markup: <div>hello</div>. Enjoy!", {"type": "contains-html"}),
            "entity and comment": ("5 &lt; 6 <!-- note -->", {"type": "contains-html"}),
            "comparison is not html": ("a < b and c > d", {"type": "contains-html"}),
            "single unknown tag": ("Wrap it in <example>", {"type": "contains-html"}),
            "email address": ("Mail <john@example.com>", {"type": "contains-html"}),
            "not-contains-html": ("plain words", {"type": "not-contains-html"}),
            "not-contains-html fails": ("<p>x</p>", {"type": "not-contains-html"}),
        },
    )
    assert statuses(r) == {
        "div in prose": "pass", "entity and comment": "pass", "comparison is not html": "fail", "single unknown tag": "fail",
        "email address": "fail", "not-contains-html": "pass", "not-contains-html fails": "fail",
    }  # fmt: skip
    assert r["comparison is not html"].reason == "Expected output to contain HTML content"
    assert html_indicators('<!DOCTYPE html><p class="x">a&amp;b</p><br/>') == 2 + 1 + 1 + 2 + 1 + 2


def test_is_sql(tmp_path: Path) -> None:
    tables = {"allowedTables": ["(select|update|insert|delete)::null::departments"]}
    columns = {"allowedColumns": ["select::null::name", "update::null::id"]}
    r = grade_outputs(
        tmp_path,
        {
            "select": ("SELECT id, name FROM users WHERE id = 1;", {"type": "is-sql"}),
            "several statements": ("INSERT INTO t (a) VALUES (1); UPDATE t SET a = 2 WHERE a = 1;", {"type": "is-sql"}),
            "mysql backticks": ("SELECT `id` FROM `users`", {"type": "is-sql"}),
            "backticks are not postgres": ("SELECT `id` FROM `users`", {"type": "is-sql", "value": {"databaseType": "PostgresQL"}}),
            "top is transact-sql": ("SELECT TOP 5 * FROM t", {"type": "is-sql", "value": {"databaseType": "TransactSQL"}}),
            "top is not mysql": ("SELECT TOP 5 * FROM t", {"type": "is-sql"}),
            "broken": ("SELECT * FROM WHERE", {"type": "is-sql"}),
            "prose": ("This is not SQL", {"type": "is-sql"}),
            "prose with a command word": ("Set the table for dinner", {"type": "is-sql"}),
            "prose starting with insert": ("Insert coin", {"type": "is-sql"}),
            "fenced block is not bare sql": ("```sql\nSELECT 1\n```", {"type": "is-sql"}),
            "empty": ("", {"type": "is-sql"}),
            "allowed table": ("SELECT * FROM departments", {"type": "is-sql", "value": tables}),
            "table not allowed": ("SELECT * FROM employees", {"type": "is-sql", "value": tables}),
            "allowed columns": ("SELECT name FROM departments", {"type": "is-sql", "value": columns}),
            "column not allowed": ("SELECT name, salary FROM departments", {"type": "is-sql", "value": columns}),
            "star needs the .* authority": ("SELECT * FROM departments", {"type": "is-sql", "value": columns}),
            "update column allowed": ("UPDATE departments SET id = 3", {"type": "is-sql", "value": columns}),
            "drop is not an allowed action": ("DROP TABLE departments", {"type": "is-sql", "value": tables}),
            "not-is-sql": ("hello there", {"type": "not-is-sql"}),
            "not-is-sql fails": ("SELECT 1", {"type": "not-is-sql"}),
            "unknown database": ("SELECT 1", {"type": "is-sql", "value": {"databaseType": "Foo"}}),
            "string value": ("SELECT 1", {"type": "is-sql", "value": "MySQL"}),
            "bad allow pattern": ("SELECT 1", {"type": "is-sql", "value": {"allowedTables": ["(select"]}}),
        },
    )
    assert statuses(r) == {
        "select": "pass", "several statements": "pass", "mysql backticks": "pass", "backticks are not postgres": "fail",
        "top is transact-sql": "pass", "top is not mysql": "fail", "broken": "fail", "prose": "fail",
        "prose with a command word": "fail", "prose starting with insert": "fail", "fenced block is not bare sql": "fail",
        "empty": "fail", "allowed table": "pass", "table not allowed": "fail", "allowed columns": "pass",
        "column not allowed": "fail", "star needs the .* authority": "fail", "update column allowed": "pass",
        "drop is not an allowed action": "fail", "not-is-sql": "pass", "not-is-sql fails": "fail", "unknown database": "error",
        "string value": "error", "bad allow pattern": "error",
    }  # fmt: skip
    assert r["broken"].reason.startswith("SQL statement does not conform to the provided MySQL database syntax")
    assert "'This is not SQL' is not a SQL statement" in r["prose"].reason
    assert r["table not allowed"].reason == "SQL validation failed: authority 'select::null::employees' is not in the allowed table list"
    assert r["column not allowed"].reason == "SQL validation failed: authority 'select::null::salary' is not in the allowed column list"
    assert "select::null::(.*)" in r["star needs the .* authority"].reason
    assert "drop::null::departments" in r["drop is not an allowed action"].reason
    assert r["not-is-sql fails"].reason == "Expected output to not be valid SQL"
    assert "unsupported databaseType 'Foo'" in r["unknown database"].reason


def test_contains_sql(tmp_path: Path) -> None:
    fenced = "Here is the query:\n```sql\nSELECT `id` FROM `users` WHERE active = 1;\n```\nIt lists active users."
    r = grade_outputs(
        tmp_path,
        {
            "fenced sql": (fenced, {"type": "contains-sql"}),
            "untagged fence": ("Query:\n```\nDELETE FROM t WHERE id = 2\n```", {"type": "contains-sql"}),
            "bare sql": ("SELECT 1", {"type": "contains-sql"}),
            "prose only": ("I would select the best option.", {"type": "contains-sql"}),
            "broken fenced sql": ("```sql\nSELEC id FORM users\n```", {"type": "contains-sql"}),
            "fence with disallowed table": (fenced, {"type": "contains-sql", "value": {"allowedTables": ["select::null::orders"]}}),
            "not-contains-sql": ("no query here", {"type": "not-contains-sql"}),
            "not-contains-sql fails": (fenced, {"type": "not-contains-sql"}),
        },
    )
    assert statuses(r) == {
        "fenced sql": "pass", "untagged fence": "pass", "bare sql": "pass", "prose only": "fail", "broken fenced sql": "fail",
        "fence with disallowed table": "fail", "not-contains-sql": "pass", "not-contains-sql fails": "fail",
    }  # fmt: skip
    assert "select::null::users" in r["fence with disallowed table"].reason


def test_data_outputs_are_graded_as_their_json_text(tmp_path: Path) -> None:
    """An output that is data (a transform result, a parsed response) is checked as JSON.stringify text."""
    data = {"rows": [1, 2], "sql": "SELECT 1"}
    r = grade_outputs(
        tmp_path,
        {
            "is-json": (data, {"type": "is-json", "value": {"required": ["rows"]}}),
            "contains-json": (data, {"type": "contains-json", "value": {"required": ["sql"]}}),
            "is-xml": (data, {"type": "is-xml"}),
            "is-html": (data, {"type": "is-html"}),
            "is-sql": (data, {"type": "is-sql"}),
        },
    )
    assert statuses(r) == {"is-json": "pass", "contains-json": "pass", "is-xml": "fail", "is-html": "fail", "is-sql": "fail"}


def test_csv_expected_values_arrive_as_raw_strings(tmp_path: Path) -> None:
    write(
        tmp_path / "tests.csv",
        """\
        out,__expected1,__expected2
        "{""id"": 1}","is-json:{""type"": ""object"", ""required"": [""id""]}",not-is-xml
        "{""id"": ""x""}","is-json:{""properties"": {""id"": {""type"": ""integer""}}}",contains-json
        <root><child/></root>,"is-xml:root.child, root",not-contains-sql
        """,
    )
    rows = evaluate(tmp_path, {"prompts": ["{{out}}"], "providers": ["echo"], "tests": "file://tests.csv"})
    outcomes = [[c["metadata"]["ciGrade"]["status"] for c in row["gradingResult"]["componentResults"]] for row in rows]
    assert outcomes == [["pass", "pass"], ["fail", "pass"], ["pass", "pass"]]
    assert "$.id: 'x' is not of type 'integer'" in rows[1]["gradingResult"]["componentResults"][0]["reason"]


def test_contains_checks_on_empty_output(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "contains-json": ("", {"type": "contains-json"}),
            "contains-xml": ("", {"type": "contains-xml"}),
            "contains-html": ("", {"type": "contains-html"}),
            "contains-sql": ("", {"type": "contains-sql"}),
            "not-contains-sql": ("", {"type": "not-contains-sql"}),
            "contains-xml data": ({"xml": "<a/>"}, {"type": "contains-xml"}),
        },
    )
    assert statuses(r) == {
        "contains-json": "fail", "contains-xml": "fail", "contains-html": "fail", "contains-sql": "fail",
        "not-contains-sql": "pass", "contains-xml data": "pass",
    }  # fmt: skip
    assert r["contains-sql"].reason == "Output is empty"
