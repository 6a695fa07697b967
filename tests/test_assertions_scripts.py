"""javascript and python assertions end to end: inline and file code, return normalisation, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.assertion_runs import evaluate, first, grade_outputs
from tests.conftest import run_cli, write

MULTILINE_JS = """\
const words = output.split(' ');
if (words.length === 0) return false;
return words.length >= 2;
"""

MULTILINE_PY = """\
words = output.split()
ratio = len(words) / 4
return ratio
"""


def test_javascript_inline_and_file_code(tmp_path: Path) -> None:
    """An object's verdict stands whatever the threshold, as in promptfoo (the threshold applies to
    numbers only); ci-grade used to fail objects scoring below it, as for Python."""
    write(
        tmp_path / "checks.js",
        """\
        module.exports = {
          scoreIt: (output, context) => ({ pass: output.length > 3, score: 0.8, reason: `checked ${context.vars.case}` }),
          lengthScore: (output) => output.length / 10,
        };
        """,
    )
    write(tmp_path / "default.js", "module.exports = (output, context) => output.startsWith(context.config.prefix);\n")
    r = grade_outputs(
        tmp_path,
        {
            "expression": ("Paris is lovely", {"type": "javascript", "value": "output.includes('Paris')"}),
            "expression false": ("Rome", {"type": "javascript", "value": "output.includes('Paris')"}),
            "multi-line body": ("two words", {"type": "javascript", "value": MULTILINE_JS}),
            "multi-line body false": ("one", {"type": "javascript", "value": MULTILINE_JS}),
            "file function returning object": ("hello", {"type": "javascript", "value": "file://checks.js:scoreIt"}),
            "file function returning number": ("12345", {"type": "javascript", "value": "file://checks.js:lengthScore", "threshold": 0.5}),
            "number below threshold": ("1234", {"type": "javascript", "value": "file://checks.js:lengthScore", "threshold": 0.5}),
            "default export with assertion config": ("abc", {"type": "javascript", "value": "file://default.js", "config": {"prefix": "ab"}}),
            "number without threshold, zero": ("x", {"type": "javascript", "value": "0"}),
            "number without threshold, positive": ("x", {"type": "javascript", "value": "0.25"}),
            "object below threshold": ("x", {"type": "javascript", "value": "({pass: true, score: 0.3, reason: 'meh'})", "threshold": 0.5}),
            "object fail": ("x", {"type": "javascript", "value": "({pass: false, score: 0.1, reason: 'too short'})"}),
            "context vars and prompt": ("x", {"type": "javascript", "value": "context.vars.case === 'context vars and prompt' && context.prompt === 'context vars and prompt'"}),
            "not-javascript": ("Rome", {"type": "not-javascript", "value": "output.includes('Paris')"}),
            "not-javascript number": ("x", {"type": "not-javascript", "value": "0.8"}),
            "thrown error": ("x", {"type": "javascript", "value": "throw new Error('boom');\nreturn true;"}),
            "type error": ("x", {"type": "javascript", "value": "output.nope.deeper"}),
            "returns nothing": ("x", {"type": "javascript", "value": "const n = output.length;\nif (n > 100) { return true; }"}),
            "returns a string": ("x", {"type": "javascript", "value": "'looks fine'"}),
            "missing function": ("x", {"type": "javascript", "value": "file://checks.js:nothing"}),
            "not-javascript error fails too": ("x", {"type": "not-javascript", "value": "undefinedFunction()"}),
        },
    )
    expected = {
        "expression": "pass", "expression false": "fail", "multi-line body": "pass", "multi-line body false": "fail",
        "file function returning object": "pass", "file function returning number": "pass", "number below threshold": "fail",
        "default export with assertion config": "pass", "number without threshold, zero": "fail",
        "number without threshold, positive": "pass", "object below threshold": "pass", "object fail": "fail",
        "context vars and prompt": "pass", "not-javascript": "pass", "not-javascript number": "fail", "thrown error": "fail",
        "type error": "fail", "returns nothing": "fail", "returns a string": "fail",
        "missing function": "fail", "not-javascript error fails too": "fail",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected
    assert r["file function returning object"].score == 0.8
    assert r["file function returning object"].reason == "checked file function returning object"
    assert r["file function returning number"].score == pytest.approx(0.5)
    assert r["number below threshold"].score == pytest.approx(0.4)
    assert r["number without threshold, positive"].score == 0.25
    assert (r["object below threshold"].score, r["object below threshold"].reason) == (pytest.approx(0.3), "meh")
    assert r["object fail"].reason == "too short" and r["object fail"].score == pytest.approx(0.1)
    # as promptfoo: `not-` flips the verdict, never the score; a failure names the verdict and the code
    assert r["not-javascript number"].score == pytest.approx(0.8)
    assert r["not-javascript number"].reason == "Custom function returned true\n0.8"
    assert r["expression false"].reason == "Custom function returned false\noutput.includes('Paris')"
    assert r["number below threshold"].reason == "Custom function returned false\nfile://checks.js:lengthScore"
    # as promptfoo: code that throws fails its assertion (never inverted), the error and the code in the reason
    assert r["thrown error"].reason == "Custom function threw error: <anonymous>:2: Error: boom\nthrow new Error('boom');\nreturn true;"
    assert r["type error"].reason.startswith("Custom function threw error: <anonymous>:2: TypeError: Cannot read properties of undefined")
    assert r["not-javascript error fails too"].reason.startswith("Custom function threw error: <anonymous>:2: ReferenceError: undefinedFunction is not defined")
    assert r["not-javascript error fails too"].score == 0
    assert "got nothing" in r["returns nothing"].reason
    assert "has no function nothing" in r["missing function"].reason


VANISHING = """
import os


def call_api(prompt, options, context):
    os.remove(prompt.split()[-1])  # the prompt: "delete <file>"
    return {"output": "x"}
"""


@pytest.mark.parametrize("kind", ["javascript", "python"])
def test_a_missing_script_file_is_a_config_error_and_one_gone_at_run_time_an_error_row(tmp_path: Path, kind: str) -> None:
    suffix = "js" if kind == "javascript" else "py"
    write(tmp_path / "promptfooconfig.yaml", f"""
        prompts: ['x']
        providers: [echo]
        tests:
          - assert:
              - type: {kind}
                value: file://nope.{suffix}
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and not (tmp_path / "out.json").exists()
    assert result.err == f"ci-grade: error: promptfooconfig.yaml:6 tests[0].assert[0].value: file not found: nope.{suffix}\n"
    write(tmp_path / f"check.{suffix}", "module.exports = () => true;\n" if kind == "javascript" else "def get_assert(output, context):\n    return True\n")
    write(tmp_path / "vanish.py", VANISHING)
    rows = evaluate(tmp_path, {"prompts": [f"delete check.{suffix}"], "providers": ["file://vanish.py"], "tests": [{"assert": [{"type": kind, "value": f"file://check.{suffix}"}]}]})
    missing = first(rows[0])
    assert missing.status == "error" and "file not found" in missing.reason


def test_python_inline_and_file_code(tmp_path: Path) -> None:
    """Objects carry a score and a reason: promptfoo rejects them without (see
    test_script_objects_need_pass_score_and_reason)."""
    write(
        tmp_path / "grader.py",
        """\
        def get_assert(output, context):
            return {
                "pass": "Paris" in output,
                "score": 0.9,
                "reason": "default function for " + context["vars"]["case"],
                "named_scores": {"geography": 1.0},
            }


        def ratio(output, context):
            return len(output) / 10


        def as_json(output, context):
            return '{"pass": true, "score": 0.6, "reason": "from json text"}'


        def explode(output, context):
            return 1 / 0


        def nothing(output, context):
            return None


        def snake(output, context):
            return {"pass_": False, "score": 0.2, "reason": "snake keys"}
        """,
    )
    write(tmp_path / "raising.py", "import json\nraise RuntimeError('no key')\n")
    r = grade_outputs(
        tmp_path,
        {
            "expression": ("Paris", {"type": "python", "value": "'Paris' in output"}),
            "expression false": ("Rome", {"type": "python", "value": "'Paris' in output"}),
            "multi-line body": ("one two three", {"type": "python", "value": MULTILINE_PY, "threshold": 0.5}),
            "multi-line body below threshold": ("one", {"type": "python", "value": MULTILINE_PY, "threshold": 0.5}),
            "file default get_assert": ("Paris!", {"type": "python", "value": "file://grader.py", "metric": "quality"}),
            "file named function": ("12345678", {"type": "python", "value": "file://grader.py:ratio", "threshold": 0.7}),
            "json text return": ("x", {"type": "python", "value": "file://grader.py:as_json"}),
            "snake_case pass key": ("x", {"type": "python", "value": "file://grader.py:snake"}),
            "dict with threshold": ("x", {"type": "python", "value": "{'pass': True, 'score': 0.4, 'reason': 'meh'}", "threshold": 0.5}),
            "context access": ("x", {"type": "python", "value": "context['vars']['case'] == 'context access' and context['config']['k'] == 1", "config": {"k": 1}}),
            "not-python": ("Rome", {"type": "not-python", "value": "'Paris' in output"}),
            "not-python number": ("x", {"type": "not-python", "value": "0.75"}),
            "exception": ("x", {"type": "python", "value": "file://grader.py:explode"}),
            "inline exception": ("x", {"type": "python", "value": "output['missing']"}),
            "failing import": ("x", {"type": "python", "value": "file://raising.py"}),
            "returns None": ("x", {"type": "python", "value": "file://grader.py:nothing"}),
            "missing function": ("x", {"type": "python", "value": "file://grader.py:absent"}),
            "bad named scores": ("x", {"type": "python", "value": "{'pass': True, 'score': 1, 'reason': '', 'named_scores': {'a': 'high'}}"}),
            "not-python exception fails too": ("x", {"type": "not-python", "value": "1/0"}),
        },
    )
    expected = {
        "expression": "pass", "expression false": "fail", "multi-line body": "pass", "multi-line body below threshold": "fail",
        "file default get_assert": "pass", "file named function": "pass", "json text return": "pass",
        "snake_case pass key": "fail", "dict with threshold": "fail", "context access": "pass", "not-python": "pass",
        "not-python number": "fail", "exception": "fail", "inline exception": "fail", "failing import": "fail",
        "returns None": "fail", "missing function": "fail", "bad named scores": "fail", "not-python exception fails too": "fail",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected
    assert r["multi-line body"].score == pytest.approx(0.75)
    assert r["file default get_assert"].score == pytest.approx(0.9)
    assert r["file default get_assert"].reason == "default function for file default get_assert"
    assert r["file default get_assert"].raw["namedScores"] == {"geography": 1.0}
    assert r["json text return"].reason == "from json text" and r["json text return"].score == pytest.approx(0.6)
    assert r["snake_case pass key"].reason == "snake keys"
    assert r["not-python number"].score == pytest.approx(0.75)
    assert r["not-python number"].reason == "Python code returned true\n0.75"
    # As promptfoo: code that raises fails its assertion (score 0, never inverted), with the exception in the reason.
    assert r["exception"].reason == "Error running Python script: ZeroDivisionError: division by zero (grader.py:19 in explode)"
    assert r["inline exception"].reason == "Python code execution failed: TypeError: string indices must be integers, not 'str' (line 1 of the code)"
    assert r["failing import"].reason == "Error running Python script: importing raising.py failed: RuntimeError: no key (raising.py:2 in <module>)"
    assert r["returns None"].reason == "Python code execution failed: Python assertion must return a boolean, number, or {pass, score, reason} object; got nothing"
    assert r["missing function"].reason == "Error running Python script: grader.py has no function 'absent'"
    assert r["not-python exception fails too"].reason == "Python code execution failed: ZeroDivisionError: division by zero (line 1 of the code)"
    assert all(r[k].score == 0 for k in ("exception", "inline exception", "not-python exception fails too"))


def test_named_scores_from_scripts_reach_the_row(tmp_path: Path) -> None:
    rows = evaluate(
        tmp_path,
        {
            "prompts": ["{{q}}"],
            "providers": ["echo"],
            "tests": [
                {
                    "vars": {"q": "positive"},
                    "assert": [
                        {"type": "javascript", "metric": "accuracy", "value": "({pass: true, score: 1, reason: 'ok', namedScores: {tp: 1, fp: 0}})"},
                        {"type": "python", "value": "{'pass': True, 'score': 1, 'reason': 'fluent', 'named_scores': {'fluency': 0.5}}"},
                    ],
                }
            ],
        },
    )
    (row,) = rows
    assert row["success"] is True
    assert row["namedScores"] == {"accuracy": 1.0, "tp": 1.0, "fp": 0.0, "fluency": 0.5}
    assert first(row).raw["namedScores"] == {"tp": 1.0, "fp": 0.0}


def test_scripts_receive_data_outputs_as_data(tmp_path: Path) -> None:
    data = {"items": [1, 2, 3], "label": "ok"}
    r = grade_outputs(
        tmp_path,
        {
            "javascript": (data, {"type": "javascript", "value": "output.items.length === 3 && output.label === 'ok'"}),
            "python": (data, {"type": "python", "value": "len(output['items']) / 3"}),
            "javascript empty": ("", {"type": "javascript", "value": "output === ''"}),
            "python empty": ("", {"type": "python", "value": "output == ''"}),
        },
    )
    assert {k: v.status for k, v in r.items()} == {"javascript": "pass", "python": "pass", "javascript empty": "pass", "python empty": "pass"}
    assert r["python"].score == 1.0


def test_script_objects_need_pass_score_and_reason(tmp_path: Path) -> None:
    """promptfoo accepts an object result only with a boolean `pass`, a number `score` and a string
    `reason` (Python's snake_case keys are mapped first); anything less is not a result, so the
    assertion cannot pass. ci-grade reports it as an error, like any script that gives no result."""
    r = grade_outputs(
        tmp_path,
        {
            "js no score": ("abc", {"type": "javascript", "value": "const ok = output.includes('a');\nreturn { pass: ok, reason: 'has a' };"}),
            "js no reason": ("abc", {"type": "javascript", "value": "({pass: true, score: 1})"}),
            "js snake key": ("abc", {"type": "javascript", "value": "({pass_: true, score: 1, reason: 'x'})"}),
            "js complete": ("abc", {"type": "javascript", "value": "({pass: true, score: 0.5, reason: 'ok'})"}),
            "py no score": ("abc", {"type": "python", "value": "ok = 'a' in output\nreturn {'pass': ok, 'reason': 'has a'}"}),
            "py no reason": ("abc", {"type": "python", "value": "{'pass': True, 'score': 1}"}),
            "py passed key": ("abc", {"type": "python", "value": "{'passed': True, 'score': 1, 'reason': 'x'}"}),
            "py snake key": ("abc", {"type": "python", "value": "{'pass_': True, 'score': 1, 'reason': 'x'}"}),
        },
    )
    expected = {
        "js no score": "fail", "js no reason": "fail", "js snake key": "fail", "js complete": "pass",
        "py no score": "fail", "py no reason": "fail", "py passed key": "fail", "py snake key": "pass",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected
    assert all(r[k].score == 0 for k, status in expected.items() if status == "fail")
    assert "must return a boolean, number, or GradingResult" in r["js no score"].reason
    assert "must return a boolean, number, or {pass, score, reason}" in r["py no score"].reason


def test_inline_python_has_json_imported(tmp_path: Path) -> None:
    """promptfoo's wrapper for inline Python starts with `import json`."""
    r = grade_outputs(tmp_path, {"json": ('{"a": 1}', {"type": "python", "value": "json.loads(output)['a'] == 1"})})
    assert r["json"].status == "pass", r["json"].reason


def test_inline_python_is_a_function_body_exactly_when_it_has_a_newline(tmp_path: Path) -> None:
    """As promptfoo: text with a newline (a YAML block's final one included) is the function's body,
    each line indented as the first indented line is; one line is returned as written, so a trailing
    comment is fine and a block holding only an expression returns None (not a result)."""
    r = grade_outputs(
        tmp_path,
        {
            "block with return": ("abc", {"type": "python", "value": "return len(output) > 2\n"}),
            "line with comment": ("abc", {"type": "python", "value": "len(output) > 2  # long enough"}),
            "block holding an expression": ("abc", {"type": "python", "value": "len(output) > 2\n"}),
            "indented block": ("abc", {"type": "python", "value": "if output:\n  n = len(output)\n  return n > 2\nreturn False\n"}),
        },
    )
    expected = {"block with return": "pass", "line with comment": "pass", "block holding an expression": "fail", "indented block": "pass"}
    assert {k: v.status for k, v in r.items()} == expected, {k: v.reason for k, v in r.items()}


def test_inline_javascript_is_a_function_body_as_promptfoo_builds_it(tmp_path: Path) -> None:
    """promptfoo trims the end; text with a newline is the body as written; one line starting with
    `const`/`let`/`var` gets `return` before its last statement; any other line gets `return` before
    it, so a line that already starts with `return` is a syntax error (found before the run, see
    test_script_syntax_errors_exit_2_before_any_call)."""
    r = grade_outputs(
        tmp_path,
        {
            "declaration then expression": ("abc", {"type": "javascript", "value": "const n = output.length; n === 3"}),
            "semicolon in a string": ("a;b", {"type": "javascript", "value": "const s = output; s === 'a;b';"}),
            "declaration only": ("abc", {"type": "javascript", "value": "let n = output.length;"}),
            "block holding an expression": ("abc", {"type": "javascript", "value": "output === 'abc'\n"}),
            "expression over two lines": ("abc", {"type": "javascript", "value": "output.length === 3 &&\n  output === 'abc'\n"}),
        },
    )
    expected = {
        "declaration then expression": "pass", "semicolon in a string": "pass", "declaration only": "fail",
        "block holding an expression": "pass", "expression over two lines": "fail",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected, {k: v.reason for k, v in r.items()}


def test_javascript_and_python_results_follow_their_own_rules(tmp_path: Path) -> None:
    """promptfoo's JavaScript results are a boolean, a number or a complete result object, whose
    pass stands whatever the threshold (it applies to numbers only); text is not a result. Python's
    threshold also fails objects scoring below it, and text reading true/false (any case), a JSON
    object, or starting with a number is a result."""
    low = "({pass: true, score: 0.2, reason: 'low'})"
    r = grade_outputs(
        tmp_path,
        {
            "js object below threshold": ("abc", {"type": "javascript", "value": low, "threshold": 0.5}),
            "js text true": ("abc", {"type": "javascript", "value": "'true'"}),
            "js json text": ("abc", {"type": "javascript", "value": "'{\"pass\": true, \"score\": 1, \"reason\": \"x\"}'"}),
            "js number below threshold": ("abc", {"type": "javascript", "value": "0.2", "threshold": 0.5}),
            "py object below threshold": ("abc", {"type": "python", "value": "{'pass': True, 'score': 0.2, 'reason': 'low'}", "threshold": 0.5}),
            "py text true": ("abc", {"type": "python", "value": "'TRUE'"}),
            "py text false": ("abc", {"type": "python", "value": "'false'"}),
            "py text with spaces": ("abc", {"type": "python", "value": "' true'"}),
            "py json text": ("abc", {"type": "python", "value": "'{\"pass\": true, \"score\": 1, \"reason\": \"x\"}'"}),
            "py number text": ("abc", {"type": "python", "value": "'0.75 of 1'"}),
            "py list": ("abc", {"type": "python", "value": "[True]"}),
        },
    )
    expected = {
        "js object below threshold": "pass", "js text true": "fail", "js json text": "fail", "js number below threshold": "fail",
        "py object below threshold": "fail", "py text true": "pass", "py text false": "fail", "py text with spaces": "fail",
        "py json text": "pass", "py number text": "pass", "py list": "fail",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected, {k: v.reason for k, v in r.items()}
    assert (r["js object below threshold"].score, r["js object below threshold"].reason) == (pytest.approx(0.2), "low")
    assert r["py object below threshold"].reason == "Python score 0.2 is less than threshold 0.5: low"
    assert r["py number text"].score == pytest.approx(0.75)


def test_scripts_see_the_provider_as_promptfoo_passes_it(tmp_path: Path) -> None:
    """JavaScript gets promptfoo's provider object: `id` is a method (so JSON leaves it out) and
    `label` is text, empty when none is set. Python gets that object as JSON: no `id`."""
    write(tmp_path / "check.js", "module.exports = (output, context) => context.provider.id() === 'echo';\n")
    js_checks = (
        "typeof context.provider.id === 'function' && context.provider.id() === 'echo'"
        " && context.provider.label === context.vars.label && !('id' in JSON.parse(JSON.stringify(context.provider)))"
    )
    py_checks = "'id' not in context['provider'] and context['provider']['label'] == context['vars']['label']"
    asserts = [{"type": "javascript", "value": js_checks}, {"type": "javascript", "value": "file://check.js"}, {"type": "python", "value": py_checks}]
    for label in ("", "mine"):
        provider = {"id": "echo", "label": label} if label else "echo"
        rows = evaluate(tmp_path, {"prompts": ["{{label}}"], "providers": [provider], "tests": [{"vars": {"label": label}, "assert": asserts}]})
        components = rows[0]["gradingResult"]["componentResults"]
        assert [c["pass"] for c in components] == [True, True, True], [c["reason"] for c in components]


def test_not_and_thresholds_read_results_as_promptfoo_does(tmp_path: Path) -> None:
    """promptfoo's normalisation: `not-` flips an object's verdict and keeps its score, its reason
    while the verdict stands and `... returned true` when it flips; Python's threshold message
    prints numbers as JavaScript does."""
    r = grade_outputs(
        tmp_path,
        {
            "not object": ("x", {"type": "not-javascript", "value": "({pass: true, score: 0.9, reason: 'mine'})"}),
            "not object flips to pass": ("x", {"type": "not-javascript", "value": "({pass: false, score: 0.1, reason: 'mine'})"}),
            "not python object": ("x", {"type": "not-python", "value": "{'pass': True, 'score': 0.9, 'reason': 'mine'}"}),
            "python threshold": ("x", {"type": "python", "value": "{'pass': True, 'score': 0.1234567, 'reason': 'low'}", "threshold": 0.5}),
            "python false": ("x", {"type": "python", "value": "output == 'y'"}),
            "no config key without config": ("x", {"type": "javascript", "value": "!('config' in context) && !('metadata' in context)"}),
            "config key with config": ("x", {"type": "python", "value": "context['config'] == {'k': 1} and 'config' in context", "config": {"k": 1}}),
        },
    )
    assert {k: (v.status, v.score, v.reason) for k, v in r.items()} == {
        "not object": ("fail", pytest.approx(0.9), "Custom function returned true"),
        "not object flips to pass": ("pass", pytest.approx(0.1), "Assertion passed"),
        "not python object": ("fail", pytest.approx(0.9), "Python code returned true"),
        "python threshold": ("fail", pytest.approx(0.1234567), "Python score 0.1234567 is less than threshold 0.5: low"),
        "python false": ("fail", 0.0, "Python code returned false\noutput == 'y'"),
        "no config key without config": ("pass", 1.0, "Assertion passed"),
        "config key with config": ("pass", 1.0, "Assertion passed"),
    }


def test_nan_and_infinity_in_vars_and_metadata_are_javascript_numbers(tmp_path: Path) -> None:
    """YAML's `.nan` and `.inf` reach scripts as NaN and Infinity, as js-yaml gives them to promptfoo
    (they used to make the whole batch of script calls fail, and a later batch get wrong results)."""
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ["n={{n}} big={{big}}"]
        providers: [echo]
        tests:
          - vars: {n: .nan, big: .inf}
            metadata: {area: -.inf}
            assert:
              - type: javascript
                value: "context.test.metadata.area === -Infinity"
              - type: javascript
                value: "Number.isNaN(context.vars.n) && context.vars.big === Infinity"
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.out + result.err
    row = json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]
    assert row["prompt"]["raw"] == "n=NaN big=Infinity"  # promptfoo 0.123.1's rendering
    assert [c["pass"] for c in row["gradingResult"]["componentResults"]] == [True, True]
