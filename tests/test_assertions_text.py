"""Text assertions end to end: equals, contains family, starts-with, regex (JavaScript semantics), word-count."""

from __future__ import annotations

import json
from pathlib import Path

from tests.assertion_runs import evaluate, first, grade_outputs
from tests.conftest import run_cli, write


def test_equals_text_json_and_file_values(tmp_path: Path) -> None:
    write(tmp_path / "expected.json", '{"city": "Paris", "tags": ["a", "b"]}')
    r = grade_outputs(
        tmp_path,
        {
            "text equal": ("Hello world", {"type": "equals", "value": "Hello world"}),
            "text differs": ("Hello world!", {"type": "equals", "value": "Hello world"}),
            "templated value": ("Hello Ada", {"type": "equals", "value": "Hello {{ who }}"}),
            "number value": ("42", {"type": "equals", "value": 42}),
            "json object equal despite spacing": ('{ "b": 2,  "a": 1 }', {"type": "equals", "value": {"a": 1, "b": 2}}),
            "json object differs": ('{"a": 1}', {"type": "equals", "value": {"a": 2}}),
            "json value, output not json": ("not json", {"type": "equals", "value": {"a": 1}}),
            "file json equal": ('{"tags": ["a", "b"], "city": "Paris"}', {"type": "equals", "value": "file://expected.json"}),
            "file json differs": ('{"tags": ["b", "a"], "city": "Paris"}', {"type": "equals", "value": "file://expected.json"}),
            "object output": ({"a": 1}, {"type": "equals", "value": {"a": 1}}),
            "not-equals": ("Hello", {"type": "not-equals", "value": "Bye"}),
            "not-equals fails": ("Hello", {"type": "not-equals", "value": "Hello"}),
            "empty output": ("", {"type": "equals", "value": "x"}),
        },
        defaultTest={"vars": {"who": "Ada"}},
    )
    passing = {"text equal", "templated value", "number value", "json object equal despite spacing", "file json equal", "object output", "not-equals"}
    for name, result in r.items():
        assert result.status == ("pass" if name in passing else "fail"), (name, result)
        assert result.score == (1.0 if name in passing else 0.0)
    assert r["text differs"].reason == 'Expected output "Hello world!" to equal "Hello world"'  # promptfoo's wording
    assert r["not-equals fails"].reason == 'Expected output "Hello" to not equal "Hello"'


def test_equals_on_data_is_strict_as_node_compares(tmp_path: Path) -> None:
    """promptfoo compares data with `isDeepStrictEqual`: `true` is not `1` nor `1.0` (Python's
    `==` would say it is), `1` and `1.0` are one JavaScript number, and key order does not matter."""
    r = grade_outputs(
        tmp_path,
        {
            "true is not 1": ('{"ok": 1}', {"type": "equals", "value": {"ok": True}}),
            "1 is not true": ('[true, false]', {"type": "equals", "value": [1, 0]}),
            "1 is 1.0": ('{"n": 1.0, "m": [2]}', {"type": "equals", "value": {"m": [2.0], "n": 1}}),
            "nested strictness": ('{"a": {"b": [0]}}', {"type": "equals", "value": {"a": {"b": [False]}}}),
            "not-equals true vs 1": ('{"ok": 1}', {"type": "not-equals", "value": {"ok": True}}),
        },
    )
    assert {k: v.status for k, v in r.items()} == {
        "true is not 1": "fail", "1 is not true": "fail", "1 is 1.0": "pass", "nested strictness": "fail", "not-equals true vs 1": "pass",
    }  # fmt: skip


def test_equals_null_compares_the_output_parsed_as_json(tmp_path: Path) -> None:
    """`value: null` is an object to promptfoo (`typeof null`): it equals output that parses as JSON null."""
    r = grade_outputs(
        tmp_path,
        {
            "null": ("null", {"type": "equals", "value": None}),
            "null with spaces": (" null\n", {"type": "equals", "value": None}),
            "text": ("hello", {"type": "equals", "value": None}),
            "not-equals null": ("null", {"type": "not-equals", "value": None}),
            "not-equals null on text": ("hello", {"type": "not-equals", "value": None}),
            "no value is JavaScript's undefined": ("undefined", {"type": "equals"}),
            "no value on null": ("null", {"type": "equals"}),
        },
    )
    assert {k: v.status for k, v in r.items()} == {
        "null": "pass", "null with spaces": "pass", "text": "fail", "not-equals null": "fail",
        "not-equals null on text": "pass", "no value is JavaScript's undefined": "pass", "no value on null": "fail",
    }  # fmt: skip
    assert r["text"].reason == 'Expected output "hello" to equal "null"'


# A provider that deletes the file it is told to, as a file can vanish while an eval runs.
VANISHING = """
import os


def call_api(prompt, options, context):
    os.remove(prompt.split()[-1])  # the prompt: "delete <file>"
    return {"output": "x"}
"""


def test_a_missing_value_file_is_a_config_error_and_one_gone_at_run_time_an_error_row(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['{{f}}']
        providers: [echo]
        tests:
          - vars: {f: x}
            assert: [{type: equals, value: file://nope.json}]
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and not (tmp_path / "out.json").exists()
    assert result.err == "ci-grade: error: promptfooconfig.yaml:5 tests[0].assert[0].value: file not found: nope.json\n"
    write(tmp_path / "expected.json", '"x"')
    write(tmp_path / "vanish.py", VANISHING)
    rows = evaluate(tmp_path, {"prompts": ["delete expected.json"], "providers": ["file://vanish.py"], "tests": [{"assert": [{"type": "equals", "value": "file://expected.json"}]}]})
    missing = first(rows[0])
    assert missing.status == "error" and "value file not found" in missing.reason


def test_contains_family(tmp_path: Path) -> None:
    out = "The quick brown Fox jumps"
    r = grade_outputs(
        tmp_path,
        {
            "contains": (out, {"type": "contains", "value": "brown Fox"}),
            "contains is case sensitive": (out, {"type": "contains", "value": "fox"}),
            "contains number": ("order 0 of 7", {"type": "contains", "value": 0}),
            "icontains": (out, {"type": "icontains", "value": "QUICK BROWN"}),
            "not-icontains": (out, {"type": "not-icontains", "value": "cat"}),
            "not-contains fails": (out, {"type": "not-contains", "value": "quick"}),
            "contains-any list": (out, {"type": "contains-any", "value": ["cat", "Fox"]}),
            "contains-any none": (out, {"type": "contains-any", "value": ["cat", "dog"]}),
            "contains-any csv string": (out, {"type": "contains-any", "value": "cat, jumps"}),
            "contains-all": (out, {"type": "contains-all", "value": ["quick", "jumps"]}),
            "contains-all missing": (out, {"type": "contains-all", "value": ["quick", "lazy"]}),
            "contains-all quoted comma": ("1,000 in stock", {"type": "contains-all", "value": '"1,000", in stock'}),
            "icontains-any": (out, {"type": "icontains-any", "value": ["FOX", "owl"]}),
            "icontains-all": (out, {"type": "icontains-all", "value": ["FOX", "QUICK"]}),
            "icontains-all missing": (out, {"type": "icontains-all", "value": ["FOX", "OWL"]}),
            "not-contains-all": (out, {"type": "not-contains-all", "value": ["quick", "lazy"]}),
            "not-contains-any fails": (out, {"type": "not-contains-any", "value": ["lazy", "quick"]}),
            "object output as JSON.stringify text": ({"a": 1, "b": [1, 2]}, {"type": "contains", "value": '"b":[1,2]'}),
            "empty output": ("", {"type": "contains", "value": "x"}),
            "missing value": (out, {"type": "contains"}),
            "empty list": (out, {"type": "contains-any", "value": []}),
        },
    )
    passing = {
        "contains", "contains number", "icontains", "not-icontains", "contains-any list", "contains-any csv string",
        "contains-all", "contains-all quoted comma", "icontains-any", "icontains-all", "not-contains-all",
        "object output as JSON.stringify text",
    }  # fmt: skip
    errors = {"missing value", "empty list"}
    for name, result in r.items():
        expected = "error" if name in errors else "pass" if name in passing else "fail"
        assert result.status == expected, (name, result)
    assert r["contains-all missing"].reason == "Expected output to contain all of [quick, lazy]. Missing: [lazy]"
    assert r["icontains-all missing"].reason.endswith(". Missing: [OWL]")
    assert r["not-contains fails"].reason == 'Expected output to not contain "quick"'
    assert r["missing value"].reason == "contains needs a value: text or a number"
    assert r["empty list"].reason == "contains-any needs a list of values"


def test_contains_any_and_all_read_quoted_fields_as_promptfoo(tmp_path: Path) -> None:
    """promptfoo's comma-separated values: `"..."` fields with `\\"`, `\\\\` and `""` escapes; an
    unterminated field or text after a closing quote is an error; a null list item is `null`."""
    r = grade_outputs(
        tmp_path,
        {
            "backslash-escaped quotes": ('he said "hi"', {"type": "contains-any", "value": '"said \\"hi\\"", zzz'}),
            "doubled quotes": ('they say "hi" often', {"type": "contains-all", "value": '"say ""hi""", often'}),
            "escaped backslash": ("path a\\b", {"type": "icontains-all", "value": '"A\\\\B", path'}),
            "other backslash kept": ("a\\nb", {"type": "contains-any", "value": '"a\\nb"'}),
            "quote inside unquoted field": ('a"b c', {"type": "contains-all", "value": 'a"b, c'}),
            "repeated commas": ("a b", {"type": "contains-all", "value": "a,, ,b"}),
            "not-icontains-any": ('he said "hi"', {"type": "not-icontains-any", "value": '"SAID \\"HI\\"", zzz'}),
            "unterminated": ("abc, def", {"type": "contains-any", "value": '"abc, def'}),
            "text after quoted field": ("abc def", {"type": "contains-any", "value": '"abc" def, x'}),
            "number value": ("5 apples", {"type": "contains-any", "value": 5}),
            "null item": ("null here", {"type": "contains-all", "value": ["here", None]}),
            "null item missing": ("nothing", {"type": "contains-any", "value": ["zzz", None]}),
        },
    )
    assert {k: v.status for k, v in r.items()} == {
        "backslash-escaped quotes": "pass", "doubled quotes": "pass", "escaped backslash": "pass",
        "other backslash kept": "pass", "quote inside unquoted field": "pass", "repeated commas": "pass",
        "not-icontains-any": "fail", "unterminated": "error", "text after quoted field": "error",
        "number value": "error", "null item": "pass", "null item missing": "fail",
    }  # fmt: skip
    assert r["unterminated"].reason == "Unterminated quoted field in contains assertion value"
    assert r["text after quoted field"].reason == "Expected comma after quoted field in contains assertion value"
    assert r["not-icontains-any"].reason == 'Expected output to not contain one of "SAID "HI", zzz"'


def test_starts_with(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "yes": ("Yes, indeed", {"type": "starts-with", "value": "Yes"}),
            "no": (" Yes", {"type": "starts-with", "value": "Yes"}),
            "not": ("No way", {"type": "not-starts-with", "value": "Yes"}),
            "missing value": ("Yes", {"type": "starts-with", "value": ""}),
        },
    )
    assert [r[k].status for k in ("yes", "no", "not", "missing value")] == ["pass", "fail", "pass", "error"]
    assert r["no"].reason == 'Expected output to start with "Yes"'


def test_regex_has_javascript_semantics(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "named group (JS syntax)": ("date: 2026-11-21", {"type": "regex", "value": r"(?<year>\d{4})-(?<month>\d{2})"}),
            "lookbehind": ("price: $42", {"type": "regex", "value": r"(?<=\$)\d+"}),
            "lookbehind no match": ("price: 42", {"type": "regex", "value": r"(?<=\$)\d+"}),
            # Python's \d matches Arabic-Indic digits; JavaScript's matches ASCII 0-9 only.
            "digits are ASCII only": ("٤٢", {"type": "regex", "value": r"^\d+$"}),
            "ascii digits": ("42", {"type": "regex", "value": r"^\d+$"}),
            "python named group syntax is invalid JS": ("ab", {"type": "regex", "value": r"(?P<x>a)"}),
            "invalid pattern": ("ab", {"type": "regex", "value": "(unclosed"}),
            "not-regex": ("hello", {"type": "not-regex", "value": "^\\d"}),
            "not-regex fails": ("1 hello", {"type": "not-regex", "value": "^\\d"}),
            "not-regex invalid fails too": ("x", {"type": "not-regex", "value": "[z-a]"}),
            "object output": ({"id": 7}, {"type": "regex", "value": '"id":7'}),
            "missing value": ("x", {"type": "regex"}),
        },
    )
    expected = {
        "named group (JS syntax)": "pass",
        "lookbehind": "pass",
        "lookbehind no match": "fail",
        "digits are ASCII only": "fail",
        "ascii digits": "pass",
        # An invalid pattern is a FAIL, with or without not-, as promptfoo grades it (it was an ERROR).
        "python named group syntax is invalid JS": "fail",
        "invalid pattern": "fail",
        "not-regex": "pass",
        "not-regex fails": "fail",
        "not-regex invalid fails too": "fail",
        "object output": "pass",
        "missing value": "error",
    }
    assert {k: v.status for k, v in r.items()} == expected
    # promptfoo's reason with V8's message (it was "invalid regular expression '(unclosed': SyntaxError ...").
    assert r["invalid pattern"].reason == "Invalid regex pattern: Invalid regular expression: /(unclosed/: Unterminated group"
    assert r["not-regex invalid fails too"].reason == "Invalid regex pattern: Invalid regular expression: /[z-a]/: Range out of order in character class"
    assert r["invalid pattern"].score == 0.0
    assert r["not-regex fails"].reason == 'Expected output to not match regex "^\\d"'


def test_word_count_exact_and_range(tmp_path: Path) -> None:
    five = "one two  three\nfour five "
    r = grade_outputs(
        tmp_path,
        {
            "exact": (five, {"type": "word-count", "value": 5}),
            "exact as string": (five, {"type": "word-count", "value": "5"}),
            "exact wrong": (five, {"type": "word-count", "value": 4}),
            "fractional never matches": (five, {"type": "word-count", "value": 5.5}),
            "range": (five, {"type": "word-count", "value": {"min": 3, "max": 5}}),
            "below min": (five, {"type": "word-count", "value": {"min": 6}}),
            "above max": (five, {"type": "word-count", "value": {"max": 4}}),
            "not in range": (five, {"type": "not-word-count", "value": {"min": 1, "max": 3}}),
            "empty output": ("", {"type": "word-count", "value": 0}),
            "min greater than max": (five, {"type": "word-count", "value": {"min": 6, "max": 2}}),
            "no bounds": (five, {"type": "word-count", "value": {}}),
            "not a number": (five, {"type": "word-count", "value": "many"}),
            "missing value": (five, {"type": "word-count"}),
        },
    )
    expected = {
        "exact": "pass", "exact as string": "pass", "exact wrong": "fail", "fractional never matches": "fail",
        "range": "pass", "below min": "fail", "above max": "fail", "not in range": "pass", "empty output": "pass",
        "min greater than max": "error", "no bounds": "error", "not a number": "error", "missing value": "error",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected
    assert r["exact wrong"].reason == "Expected output to have exactly 4 words (found 5)"
    assert r["above max"].reason == "Expected output to have at most 4 words (found 5)"
    assert r["min greater than max"].reason == "word-count min (6) is greater than max (2)"


def test_csv_expected_columns_reach_the_handlers(tmp_path: Path) -> None:
    write(
        tmp_path / "tests.csv",
        """\
        answer,__expected1,__expected2,__expected3
        Paris is nice,contains:Paris,not-icontains:london,"contains-all:Paris,nice"
        Rome,starts-with:Ro,regex:^R\\w+$,word-count:2
        """,
    )
    rows = evaluate(tmp_path, {"prompts": ["{{answer}}"], "providers": ["echo"], "tests": "file://tests.csv"})
    paris, rome = rows
    assert paris["success"] is True
    statuses = [c["metadata"]["ciGrade"]["status"] for c in rome["gradingResult"]["componentResults"]]
    assert statuses == ["pass", "pass", "fail"]
    assert first(rome).reason == "Assertion passed"


def test_empty_and_data_outputs(tmp_path: Path) -> None:
    data = {"answer": "Yes", "n": 2}
    r = grade_outputs(
        tmp_path,
        {
            "starts-with empty": ("", {"type": "starts-with", "value": "Y"}),
            "starts-with data": (data, {"type": "starts-with", "value": '{"answer":"Yes"'}),
            "regex empty": ("", {"type": "regex", "value": "^$"}),
            "regex data": (data, {"type": "regex", "value": '"n":\\d'}),
            "word-count data": (data, {"type": "word-count", "value": 1}),
            "icontains-any empty": ("", {"type": "icontains-any", "value": ["a"]}),
            "not-contains-all empty": ("", {"type": "not-contains-all", "value": ["a"]}),
        },
    )
    assert {k: v.status for k, v in r.items()} == {
        "starts-with empty": "fail", "starts-with data": "pass", "regex empty": "pass", "regex data": "pass",
        "word-count data": "pass", "icontains-any empty": "fail", "not-contains-all empty": "pass",
    }  # fmt: skip


def test_invalid_static_regex_is_warned_about_at_load_with_file_key_and_line(tmp_path: Path) -> None:
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ["{{q}}"]
        providers: [echo]
        tests:
          - vars: {q: Hello, pattern: "(?i)hello"}
            assert:
              - type: regex
                value: "(?i)hello"
              - type: regex
                value: "{{pattern}}"
              - type: regex
                value: "^Hel+o$"
          - file://more.csv
        """,
    )
    write(tmp_path / "more.csv", "q,__expected\nHi,regex:[z-a]\n")
    rows = evaluate(tmp_path, (tmp_path / "promptfooconfig.yaml").read_text())
    warnings = json.loads((tmp_path / "out.json").read_text())["ciGrade"]["warnings"]
    regex_warnings = [w for w in warnings if "regular expression" in w]
    assert regex_warnings == [
        "promptfooconfig.yaml:7 tests[0].assert[0].value: regex '(?i)hello' is not a valid JavaScript regular expression "
        "(Invalid regular expression: /(?i)hello/: Invalid group); JavaScript has no inline flags such as (?i); every row will fail this assertion",
        "more.csv:2 tests[1].assert[0].value: regex '[z-a]' is not a valid JavaScript regular expression "
        "(Invalid regular expression: /[z-a]/: Range out of order in character class); every row will fail this assertion",
    ]
    # The templated pattern is not checked at load (it is only known per row), but grades the same way.
    components = rows[0]["gradingResult"]["componentResults"]
    assert [c["pass"] for c in components] == [False, False, True]
    assert components[1]["reason"] == "Invalid regex pattern: Invalid regular expression: /(?i)hello/: Invalid group"
    assert rows[0]["failureReason"] == 1 and rows[1]["failureReason"] == 1
