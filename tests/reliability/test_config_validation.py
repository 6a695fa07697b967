"""A bad config is exit 2 before a cent is spent.

Each config below once ran (exit 0, or errored rows after the model was called), exhausted
memory, hung or crashed. Now each stops at load with one line naming file, line and key path,
and the model server on loopback has seen no request: nothing was spent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_cli_process, write
from tests.servers.llm_server import LLMServer

HEAD = """\
prompts: ['{{q}}']
providers: [openai:chat:gpt-4.1-mini]
"""

# name -> (files, the error line after "ci-grade: error: ")
CASES: dict[str, tuple[dict[str, str], str]] = {
    "boolean threshold": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    threshold: true\n    assert: [{type: contains, value: hi}]\n"},
        "promptfooconfig.yaml:5 tests[0].threshold: expected a number, got true",
    ),
    "NaN threshold": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    threshold: .nan\n    assert: [{type: contains, value: hi}]\n"},
        "promptfooconfig.yaml:5 tests[0].threshold: expected a finite number, got nan",
    ),
    "infinite assertion threshold": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - type: similar\n        value: hi\n        threshold: -.inf\n"},
        "promptfooconfig.yaml:8 tests[0].assert[0].threshold: expected a finite number, got -inf",
    ),
    "text threshold": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    threshold: '0.5'\n    assert: [{type: contains, value: hi}]\n"},
        "promptfooconfig.yaml:5 tests[0].threshold: expected a number, got '0.5'",
    ),
    "non-finite weight": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - {type: contains, value: hi, weight: .inf}\n"},
        "promptfooconfig.yaml:6 tests[0].assert[0].weight: expected a finite number, got inf",
    ),
    "JSON tests file with a trailing comma": (
        {"promptfooconfig.yaml": HEAD + "tests: file://tests.json\n", "tests.json": '[\n  {"vars": {"q": "hi"}},\n]\n'},
        "tests.json:3: invalid JSON: Expecting value",
    ),
    "JSON tests file with NaN": (
        {"promptfooconfig.yaml": HEAD + "tests: file://tests.json\n", "tests.json": '[\n  {"vars": {"q": "hi"},\n   "threshold": NaN}\n]\n'},
        "tests.json:3: invalid JSON: NaN is not a JSON number",
    ),
    "tests file that is a mapping but not a test": (
        {"promptfooconfig.yaml": HEAD + "tests: file://tests.yaml\n", "tests.yaml": "tests:\n  - vars: {q: hi}\n"},
        "tests.yaml:1 tests: expected a list of tests or one test (with one of assert, vars, options, metadata, provider, providerOutput, threshold); this mapping has keys tests",
    ),
    "empty CSV": (
        {"promptfooconfig.yaml": HEAD + "tests: file://tests.csv\n", "tests.csv": ""},
        "tests.csv:1: the CSV file is empty: it needs a header row and one row per test",
    ),
    "CSV with a header only": (
        {"promptfooconfig.yaml": HEAD + "tests: file://tests.csv\n", "tests.csv": "q,__expected\n"},
        "tests.csv:1: the CSV file has a header but no rows: no tests",
    ),
    "CSV with an unterminated quote": (
        {"promptfooconfig.yaml": HEAD + "tests: file://tests.csv\n", "tests.csv": 'q,__expected\nhi,contains:hi\n"yo,contains:yo\nlast,contains:last\n'},
        'tests.csv:3: invalid CSV: a quoted cell is never closed (a missing ")',
    ),
    "missing file:// assertion value": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - type: equals\n        value: file://expected/answer.txt\n"},
        "promptfooconfig.yaml:7 tests[0].assert[0].value: file not found: expected/answer.txt",
    ),
    "missing python assert file": (
        {"promptfooconfig.yaml": HEAD + "defaultTest:\n  assert:\n    - {type: python, value: 'file://checks.py:grade'}\ntests:\n  - vars: {q: hi}\n"},
        "promptfooconfig.yaml:5 defaultTest.assert[0].value: file not found: checks.py",
    ),
    "non-string regex value": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    assert:\n      - type: not-regex\n        value: 42\n"},
        "promptfooconfig.yaml:7 tests[0].assert[0].value: not-regex needs a value: a regular expression as text, got 42",
    ),
    "defaultTest.options.provider that is a number": (
        {"promptfooconfig.yaml": HEAD + "defaultTest:\n  options:\n    provider: 5\ntests:\n  - vars: {q: hi}\n    assert: [{type: llm-rubric, value: polite}]\n"},
        "promptfooconfig.yaml:5 defaultTest.options.provider: expected a provider id, an {id: ...} mapping, a {config: ...} mapping (the default grader with those settings) or a mapping by kind ({text: ..., embedding: ...}), got 5",
    ),
    "grader by kind with a number": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    options:\n      provider: {embedding: 7}\n    assert: [{type: similar, value: hi}]\n"},
        "promptfooconfig.yaml:6 tests[0].options.provider.embedding: expected a provider id or an {id: ...} mapping, got 7",
    ),
    "non-mapping options": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars: {q: hi}\n    options: 5\n    assert: [{type: contains, value: hi}]\n"},
        "promptfooconfig.yaml:5 tests[0].options: expected a mapping, got 5",
    ),
    "absurd repeat": (
        {"promptfooconfig.yaml": HEAD + "evaluateOptions:\n  repeat: 1000000000\ntests:\n  - vars: {q: hi}\n"},
        "promptfooconfig.yaml:4 evaluateOptions.repeat: this eval would run at least 1,000,000,000 rows (1 combination of test, "
        "variables, prompt and provider x 1,000,000,000 repeats), more than the limit of 100,000; lower the repeats or split the "
        "eval (CI_GRADE_MAX_ROWS sets the limit)",
    ),
    "variables that fan out past the limit": (
        {"promptfooconfig.yaml": HEAD + "tests:\n  - vars:\n" + "".join(f"      v{i}: [a, b, c, d, e, f, g, h, i, j]\n" for i in range(6))},
        "promptfooconfig.yaml:4 tests[0]: this eval would run at least 1,000,000 rows (1,000,000 combinations of test, variables, "
        "prompt and provider), more than the limit of 100,000; use fewer variable values or split the eval (CI_GRADE_MAX_ROWS sets the limit)",
    ),
}


@pytest.fixture
def model(openai_env: LLMServer) -> LLMServer:
    openai_env.on_chat("", "hi")
    return openai_env


def _write_case(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_config_is_exit_2_before_any_call(case: str, tmp_path: Path, model: LLMServer) -> None:
    files, expected = CASES[case]
    _write_case(tmp_path, files)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert (result.code, result.err.splitlines()) == (2, [f"ci-grade: error: {expected}"]), result.out
    assert model.requests == [], "nothing may be spent on a config that cannot run"
    assert not (tmp_path / "out.json").exists()


def test_the_configs_run_once_fixed(tmp_path: Path, model: LLMServer) -> None:
    """The checks refuse only what is broken: the same shapes, written right, run (and call the model)."""
    write(tmp_path / "promptfooconfig.yaml", HEAD + """
        evaluateOptions: {repeat: 2}
        tests:
          - vars: {q: hi}
            threshold: 0.5
            assert:
              - {type: regex, value: '^h', weight: 2}
              - {type: equals, value: file://expected.txt}
              - {type: python, value: 'file://checks.py:grade'}
          - file://one_test.yaml
          - file://tests.json
          - file://tests.csv
        """.replace("        ", ""))
    write(tmp_path / "expected.txt", "hi\n")
    write(tmp_path / "checks.py", "def grade(output, context):\n    return output == 'hi'\n")
    write(tmp_path / "one_test.yaml", "vars: {q: one}\nassert: [{type: contains, value: hi}]\n")  # promptfoo reads one test
    write(tmp_path / "tests.json", '[{"vars": {"q": "json"}, "assert": [{"type": "contains", "value": "hi"}]}]')
    write(tmp_path / "tests.csv", 'q,__expected\n"a ""quoted"", multi-line\ncell",contains:hi\n')
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    assert len(model.requests_to("/v1/chat/completions")) == 4 * 2


def test_max_rows_is_a_setting(tmp_path: Path, model: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "promptfooconfig.yaml", HEAD + "tests:\n  - vars: {q: [a, b, c]}\n")
    monkeypatch.setenv("CI_GRADE_MAX_ROWS", "2")
    refused = run_cli("eval", "--no-progress", "--repeat", "1", cwd=tmp_path)
    assert refused.code == 2 and "promptfooconfig.yaml:4 tests[0]: this eval would run at least 3 rows" in refused.err
    monkeypatch.setenv("CI_GRADE_MAX_ROWS", "3")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).code == 0
    monkeypatch.setenv("CI_GRADE_MAX_ROWS", "lots")
    assert run_cli("eval", "--no-progress", cwd=tmp_path).err == "ci-grade: error: CI_GRADE_MAX_ROWS must be a whole number, got 'lots'\n"
    assert len(model.requests) == 3


def test_a_repeat_from_the_command_line_is_bounded_too(tmp_path: Path, model: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", HEAD + "tests:\n  - vars: {q: hi}\n")
    result = run_cli("eval", "--no-progress", "--repeat", "100001", cwd=tmp_path)
    assert result.code == 2 and result.err.startswith("ci-grade: error: promptfooconfig.yaml repeat: this eval would run at least 100,001 rows")
    assert model.requests == []


@pytest.mark.parametrize("layout", ["loop in a ** glob", "two loops in a ** glob", "a file that links to itself", "a loop above the glob"])
def test_a_symlink_loop_is_exit_2_not_a_hang_or_a_crash(layout: str, tmp_path: Path, model: LLMServer) -> None:
    """Two loops made Python's `**` glob walk 2^40 paths; one that links to itself raised RuntimeError."""
    cases = tmp_path / "cases"
    write(cases / "a.yaml", "- vars: {q: hi}\n")
    reference = "file://cases/**/*.yaml"
    if layout == "loop in a ** glob":
        os.symlink("..", cases / "back")
        expected = "a symlink loop: cases/back leads back to ."
    elif layout == "two loops in a ** glob":
        os.symlink(".", cases / "here")
        os.symlink(".", cases / "again")
        expected = "a symlink loop: cases/"
    elif layout == "a loop above the glob":
        os.symlink("../..", cases / "up")
        expected = "a symlink loop: cases/up leads back to "
    else:
        os.symlink("self.yaml", cases / "self.yaml")
        reference = "file://cases/self.yaml"
        expected = "a symlink loop: cases/self.yaml"
    write(tmp_path / "promptfooconfig.yaml", HEAD + f"tests:\n  - {reference}\n")
    result = run_cli_process("eval", "--no-progress", cwd=tmp_path, timeout=60)
    assert result.code == 2, result.err
    assert result.err.startswith(f"ci-grade: error: promptfooconfig.yaml:4 tests[0]: {expected}")
    assert "Traceback" not in result.err and model.requests == []


def test_the_action_stops_before_any_call_and_says_where(tmp_path: Path, model: LLMServer) -> None:
    """The same check through `ci-grade action`: exit 2, an error annotation at the line, no call."""
    _write_case(tmp_path, CASES["CSV with an unterminated quote"][0])
    env = {
        "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path), "GITHUB_EVENT_NAME": "push",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "INPUT_COMMENT": "off",
    }
    result = run_cli_process("action", cwd=tmp_path, env=env)
    assert result.code == 2
    assert "::error file=tests.csv,line=3,title=ci-grade could not run::" in result.out
    assert "a quoted cell is never closed" in (tmp_path / "summary.md").read_text()
    assert model.requests == []
