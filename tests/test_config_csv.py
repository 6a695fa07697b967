"""CSV tests: promptfoo's special columns and its `__expected` grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.config.csv_tests import assertion_from_string, read_csv_tests
from ci_grade.errors import ConfigError
from ci_grade.grading import registry
from tests.conftest import run_cli, write

TYPES = registry.vocabulary()


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("javascript: output.length > 3", {"type": "javascript", "value": "output.length > 3"}),
        ("fn:output === 'x'", {"type": "javascript", "value": "output === 'x'"}),
        ("eval:1 + 1", {"type": "javascript", "value": "1 + 1"}),
        ("file://checks/len.js:check", {"type": "javascript", "value": "file://checks/len.js:check"}),
        ("grade:Is it polite?", {"type": "llm-rubric", "value": "Is it polite?"}),
        ("llm-rubric:Mentions {{topic}}", {"type": "llm-rubric", "value": "Mentions {{topic}}"}),
        ("python: 'a' in output", {"type": "python", "value": "'a' in output"}),
        ("file://checks/grade.py", {"type": "python", "value": "file://checks/grade.py"}),
        ("file://checks/grade.py:custom", {"type": "python", "value": "file://checks/grade.py:custom"}),
        ("contains:Paris", {"type": "contains", "value": "Paris"}),
        ("contains: Paris ", {"type": "contains", "value": "Paris"}),
        ("not-icontains:foo", {"type": "not-icontains", "value": "foo"}),
        ("similar(0.8):Hello there", {"type": "similar", "value": "Hello there", "threshold": 0.8}),
        ("similar:Hello", {"type": "similar", "value": "Hello", "threshold": 0.8}),
        ("levenshtein(3):kitten", {"type": "levenshtein", "value": "kitten", "threshold": 3.0}),
        ("rouge-n:the cat", {"type": "rouge-n", "value": "the cat", "threshold": 0.75}),
        ("contains-any:red, green,blue", {"type": "contains-any", "value": ["red", "green", "blue"]}),
        ("not-icontains-all:a,b", {"type": "not-icontains-all", "value": ["a", "b"]}),
        ("is-json", {"type": "is-json", "value": None}),
        ('contains-json:{"type": "object"}', {"type": "contains-json", "value": '{"type": "object"}'}),
        ("starts-with:Yes", {"type": "starts-with", "value": "Yes", "threshold": 0.75}),
        ("Paris", {"type": "equals", "value": "Paris"}),
        ("contians:Paris", {"type": "equals", "value": "contians:Paris"}),
        ("multi\nline: answer", {"type": "equals", "value": "multi\nline: answer"}),
    ],
)
def test_expected_grammar(cell: str, expected: dict) -> None:
    assert assertion_from_string(cell, TYPES) == expected


CSV = '''\
question,__expected,__expected2,__description,__metric,__threshold,__prefix,__suffix,__metadata:area,__metadata:tags[],__config:__expected2:threshold,__providerOutput
capital of France,contains:Paris,"similar(0.7):Paris is the capital",France,geo,0.5,Q: ,?,europe,"a,b\\,c, d",0.9,Paris is the capital
capital of Peru,,icontains:lima,,,,,,,,,
'''


def test_special_columns() -> None:
    (first, line1), (second, line2) = read_csv_tests(CSV, "tests.csv", TYPES)
    assert (line1, line2) == (2, 3)
    assert first == {
        "description": "France",
        "threshold": 0.5,
        "providerOutput": "Paris is the capital",
        "vars": {"question": "capital of France"},
        "assert": [
            {"type": "contains", "value": "Paris", "metric": "geo"},
            {"type": "similar", "value": "Paris is the capital", "threshold": 0.9, "metric": "geo"},
        ],
        "options": {"prefix": "Q: ", "suffix": "?"},
        "metadata": {"area": "europe", "tags": ["a", "b,c", "d"]},
    }
    assert second == {"vars": {"question": "capital of Peru"}, "assert": [{"type": "icontains", "value": "lima"}], "options": {"prefix": "", "suffix": ""}}


def test_config_threshold_follows_its_column_even_when_an_earlier_cell_is_blank() -> None:
    text = "q,__expected1,__expected2,__config:__expected2:threshold,__config:__expected:threshold\nx,,levenshtein:abc,2,7\ny,contains:a,levenshtein:b,4,1\n"
    (first, _), (second, _) = read_csv_tests(text, "t.csv", TYPES)
    # promptfoo would put row 1's `__expected2` threshold on the wrong (index 1) assertion; `__expected` means the first
    assert first["assert"] == [{"type": "levenshtein", "value": "abc", "threshold": 7.0}]
    assert second["assert"] == [{"type": "contains", "value": "a", "threshold": 1.0}, {"type": "levenshtein", "value": "b", "threshold": 4.0}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q,__threshold\nx,0.5\ny,high\n", "t.csv:3 __threshold: expected a number, got 'high'"),
        ("q,__config:__expected:weight\nx,1\n", "t.csv:1 __config:__expected:weight: unknown setting 'weight'; only threshold is supported"),
        ("q,__config:answer:threshold\nx,1\n", "t.csv:1 __config:answer:threshold: 'answer' is not __expected or __expected<N>"),
        ("q,__expected,__config:__expected:threshold\nx,contains:a,lots\n", "t.csv:2 __config:__expected:threshold: expected a number, got 'lots'"),
        ("q\nx,extra\n", "t.csv:2: row has more cells than the header has columns"),
    ],
)
def test_bad_cells_name_file_line_and_column(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        read_csv_tests(text, "t.csv", TYPES)
    assert str(caught.value) == message


def test_csv_tests_end_to_end(tmp_path: Path) -> None:
    write(
        tmp_path / "tests.csv",
        "name,__expected,__expected2,__description,__metadata:tier\n"
        "Ada,contains:Ada,not-contains:Bob,greets Ada,gold\n"
        'Bob,"contains-any:Bob,Robert",Hello Bob,,silver\n'
        "Cy,javascript: output.startsWith('Hello'),,,gold\n",
    )
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['Hello {{name}}']\nproviders: [echo]\ntests: file://tests.csv\n")
    result = run_cli("eval", "--no-progress", "-o", "out.json", "--filter-metadata", "tier=gold", cwd=tmp_path)
    assert result.code == 0, result.err
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert [(r["vars"]["name"], r["description"], r["success"]) for r in rows] == [("Ada", "greets Ada", True), ("Cy", None, True)]
    assert [c["assertion"]["type"] for c in rows[0]["gradingResult"]["componentResults"]] == ["contains", "not-contains"]

    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    bob = rows[1]
    assert [(c["assertion"]["type"], c["assertion"]["value"], c["pass"]) for c in bob["gradingResult"]["componentResults"]] == [
        ("contains-any", ["Bob", "Robert"], True),
        ("equals", "Hello Bob", True),
    ]
