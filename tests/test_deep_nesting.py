"""Text nested absurdly deep (a model's reply, a config, a data file) is an error, never a crash:
libyaml composes recursively on the C stack and Python's JSON reader stops at its recursion limit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, run_cli, write
from tests.model_graded_helpers import run_eval, status
from tests.servers.llm_server import LLMServer

DEPTH = 100_000


def test_deep_yaml_is_a_yaml_error_with_its_line_not_a_crash() -> None:
    """In a fresh interpreter (a crash there cannot take the test run down): block sequences, flow
    mappings and an unclosed flow sequence, each 100,000 levels deep, are YAML errors."""
    code = f"""
import yaml
from ci_grade.config import yaml12
for text in ["- " * {DEPTH} + "x", "{{a: " * {DEPTH} + "1" + "}}" * {DEPTH}, "x: " + "[" * {DEPTH}, "ok: " + "[" * 900 + "]" * 900]:
    try:
        yaml12.loads(text)
        print("loaded")
    except yaml.MarkedYAMLError as exc:
        print(exc.problem, exc.problem_mark.line + 1)
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.splitlines() == ["collections nested more than 1000 levels deep 1"] * 3 + ["loaded"]


def test_a_config_nested_too_deep_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars:\n      q: " + "[" * 5000 + "]" * 5000 + "\n")
    write(tmp_path / "deep.json", "[" * DEPTH + "]" * DEPTH)
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "Traceback" not in result.err
    assert "promptfooconfig.yaml:5: invalid YAML: collections nested more than 100 levels deep" in result.err
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://deep.json\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "Traceback" not in result.err and "deep.json" in result.err and "nested too deep" in result.err


def test_config_values_nested_past_promptfoos_limit_exit_2_and_those_within_it_run(tmp_path: Path) -> None:
    # js-yaml (promptfoo) refuses collections nested more than 100 deep; deeper values than that
    # used to crash ci-grade's later stages (exit 3) from some 280 levels on
    def config(depth: int) -> str:
        return "prompts: ['{{q | dump | length}}']\nproviders: [echo]\ntests:\n  - vars:\n      q: " + "[" * depth + "]" * depth + "\n"

    for name, depth in (("yaml", 300), ("json", 300)):
        folder = tmp_path / name
        if name == "yaml":
            write(folder / "promptfooconfig.yaml", config(depth))
        else:
            write(folder / "promptfooconfig.json", '{"prompts": ["{{q}}"], "providers": ["echo"], "tests": [{"vars": {"q": ' + "[" * depth + "]" * depth + "}}]}")
        result = run_cli("eval", "--no-progress", cwd=folder)
        assert result.code == 2 and "collections nested more than 100 levels deep" in result.err, result.err
    write(tmp_path / "ok" / "promptfooconfig.yaml", config(90))
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path / "ok")
    assert result.code == 0, result.err


def test_a_grader_reply_nested_too_deep_is_an_error_for_its_row(tmp_path: Path, openai_env: LLMServer) -> None:
    """A grader's reply is anyone's text: `{a: {a: …` 50,000 levels deep has no verdict in it; the
    row's assertion is an ERROR and the run goes on to grade the next row."""
    openai_env.on_chat("is polite", "{a: " * 50_000 + "1" + "}" * 50_000)
    openai_env.on_chat("is short", {"reason": "short", "pass": True, "score": 1.0})
    result = run_eval(
        tmp_path,
        """
prompts: ['{{out}}']
providers: [echo]
tests:
  - vars: {out: Hello}
    assert: [{type: llm-rubric, value: is polite}]
  - vars: {out: Hi}
    assert: [{type: llm-rubric, value: is short}]
""",
    )
    first, second = result.rows
    assert status(first["gradingResult"]["componentResults"][0]) == "error"
    assert second["success"] is True
