"""The decision on script assertions, end to end: code that throws while grading FAILS that
assertion with the exception in its reason (as promptfoo); code that does not compile, inline or
in a file, exits 2 before any call naming the config's line and the code's; code stopped by a
time limit is an ERROR, never a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.assertion_runs import grade_outputs
from tests.conftest import run_cli, write


def test_code_that_throws_fails_with_the_exception(tmp_path: Path) -> None:
    write(tmp_path / "check.js", "module.exports = (output) => { throw new TypeError('no ' + output); };\n")
    write(tmp_path / "check.py", "def get_assert(output, context):\n    raise KeyError(output)\n")
    r = grade_outputs(tmp_path, {
        "js inline": ("x", {"type": "javascript", "value": "throw new Error('boom');\nreturn true;"}),
        "js file": ("x", {"type": "javascript", "value": "file://check.js"}),
        "py inline": ("x", {"type": "python", "value": "1 / 0"}),
        "py file": ("x", {"type": "python", "value": "file://check.py"}),
        "not- fails too": ("x", {"type": "not-python", "value": "1 / 0"}),
    })  # fmt: skip
    assert {k: (v.status, v.score) for k, v in r.items()} == dict.fromkeys(r, ("fail", 0.0))
    assert r["js inline"].reason.startswith("Custom function threw error: ") and "Error: boom" in r["js inline"].reason
    assert "TypeError: no x" in r["js file"].reason
    assert r["py inline"].reason.startswith("Python code execution failed: ZeroDivisionError: division by zero")
    assert r["py file"].reason.startswith("Error running Python script: KeyError: 'x' (check.py:2 in get_assert)")


@pytest.mark.parametrize(
    ("files", "value", "message"),
    [
        ({"check.js": "module.exports = (output) => {\n  return output ===;\n};\n"}, "file://check.js", "javascript assertion: SyntaxError: Unexpected token ';' (check.js:2)"),
        ({"check.mjs": "export default function (output) {\n  return (output\n}\n"}, "file://check.mjs", "javascript assertion: SyntaxError: Unexpected token '}' (check.mjs:3)"),
        ({}, "const a = 1;\nreturn a ===;", "javascript assertion: SyntaxError: Unexpected token ';' (line 2 of the code)"),
        ({"check.py": "def get_assert(output, context):\n    return (\n"}, "file://check.py", "SyntaxError: '(' was never closed (check.py:2)"),
        ({}, "x = 1\nif x\n    return True", "python assertion: SyntaxError: expected ':' (line 2 of the code)"),
    ],
)
def test_code_that_does_not_compile_exits_2_before_any_call(tmp_path: Path, files: dict[str, str], value: str, message: str) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    kind = "python" if ".py" in value or "if x" in value else "javascript"
    config = {"prompts": ["hi"], "providers": ["echo"], "tests": [{"assert": [{"type": kind, "value": value}]}]}
    write(tmp_path / "promptfooconfig.yaml", json.dumps(config))
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    assert f"promptfooconfig.yaml:1 tests[0].assert[0].value: {message}" in result.err
    assert "Traceback" not in result.err and not (tmp_path / "out.json").exists()


def test_an_es_module_with_imports_is_left_to_run_time(tmp_path: Path) -> None:
    write(tmp_path / "check.mjs", "import fs from 'fs';\nexport default () => true;\n")
    config = {"prompts": ["hi"], "providers": ["echo"], "tests": [{"assert": [{"type": "javascript", "value": "file://check.mjs"}]}]}
    write(tmp_path / "promptfooconfig.yaml", json.dumps(config))
    assert run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path).code in (0, 1)


def test_code_stopped_by_a_time_limit_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "1")
    r = grade_outputs(tmp_path, {
        "py loops": ("x", {"type": "python", "value": "import time\ntime.sleep(5)\nreturn True"}),
        "js loops": ("x", {"type": "javascript", "value": "while (true) {}\nreturn true;"}),
    })  # fmt: skip
    assert r["py loops"].status == "error" and "timed out after 1s" in r["py loops"].reason
    assert r["js loops"].status == "error" and "timed out" in r["js loops"].reason
