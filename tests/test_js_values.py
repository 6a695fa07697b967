"""Numbers and JSON written as JavaScript writes them (checked against Node's own output), and
where promptfoo relies on it: a provider's non-text output as the text assertions see it, and
template printing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade.js_values import js_json, js_number
from ci_grade.templating import nunjucks
from tests.assertion_runs import grade_outputs


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"), (-0.0, "0"), (1.0, "1"), (0.1, "0.1"), (0.1 + 0.2, "0.30000000000000004"), (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"), (0.000001, "0.000001"), (0.00001, "0.00001"), (1e20, "100000000000000000000"),
        (1e21, "1e+21"), (123456789012345680000.0, "123456789012345680000"), (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"), (-2.5e-5, "-0.000025"), (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)  # fmt: skip
def test_numbers_as_javascript_prints_them(value: float, text: str) -> None:
    assert js_number(value) == text


def test_json_as_json_stringify_writes_it() -> None:
    value = {"b": 1, "2": 2.0, "1": [1.0, -0.0, 1e-7, float("nan"), 12345678901234567890, 'é\u2028"\\\n\x01'], "a": {"10": 1, "9": 2, "01": 3}, "": None}
    assert js_json(value) == '{"1":[1,0,1e-7,null,12345678901234567000,"é\u2028\\"\\\\\\n\\u0001"],"2":2,"b":1,"a":{"9":2,"10":1,"01":3},"":null}'
    assert js_json({"a": [1, {"b": 2.5}], "c": []}, 2) == '{\n  "a": [\n    1,\n    {\n      "b": 2.5\n    }\n  ],\n  "c": []\n}'


def test_a_non_text_output_is_graded_as_its_json_stringify_text(tmp_path: Path) -> None:
    """A provider's object output reaches `equals`/`contains`/`regex` as promptfoo's
    JSON.stringify writes it: `1.0` as `1`, `1e-7` as `1e-7` (Python wrote `1.0`, `1e-07`)."""
    output = {"score": 1.0, "tiny": 1e-7, "big": 1e20, "neg": -0.0}
    r = grade_outputs(
        tmp_path,
        {
            "equals": (output, {"type": "equals", "value": '{"score":1,"tiny":1e-7,"big":100000000000000000000,"neg":0}'}),
            "contains": (output, {"type": "contains", "value": '"score":1,'}),
            "regex": (output, {"type": "regex", "value": '"tiny":1e-7,'}),
        },
    )
    assert {name: outcome.status for name, outcome in r.items()} == {"equals": "pass", "contains": "pass", "regex": "pass"}


def test_templates_print_numbers_as_nunjucks_does() -> None:
    assert nunjucks.render("{{ a }} {{ b }} {{ c | dump }} {{ d }}", {"a": 0.000001, "b": 1e-7, "c": {"x": 1.0}, "d": 12345678901234567890}) == '0.000001 1e-7 {"x":1} 12345678901234567000'


def test_to_fixed_rounds_the_exact_value_half_away_from_zero() -> None:
    from ci_grade.js_values import js_fixed

    assert [js_fixed(v, 2) for v in (0.125, 1.005, 0.7692307692307692, -0.001, -0.0, 2.0)] == ["0.13", "1.00", "0.77", "-0.00", "0.00", "2.00"]
    assert js_fixed(0.36787944117144233, 4) == "0.3679"


def test_a_json_prompt_renders_as_json_stringify_with_two_spaces() -> None:
    """promptfoo renders a JSON prompt string by string and writes it with JSON.stringify(x, null, 2):
    integer-like keys first, numbers as JavaScript writes them."""
    rendered = nunjucks.render_prompt('{"k": "{{ q }}", "n": 1.0, "2": "two", "1": "one"}', {"q": 'say "hi"'})
    assert rendered == '{\n  "1": "one",\n  "2": "two",\n  "k": "say \\"hi\\"",\n  "n": 1\n}'
