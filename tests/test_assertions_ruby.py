"""`ruby` assertions end to end: inline code and file functions run by the `ruby` on PATH, read by
promptfoo's rules for Ruby (as for Python); code that raises fails; syntax errors and a missing
Ruby are refused before any call; a script that runs too long is an ERROR."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.assertion_runs import grade_outputs
from tests.conftest import run_cli, write

pytestmark = pytest.mark.skipif(shutil.which("ruby") is None, reason="needs Ruby on PATH (apt-get install ruby)")

CHECKS = """
def get_assert(output, context)
  { 'pass' => output.include?(context['vars']['case'][0, 3]), 'score' => 0.75, 'reason' => "saw #{output}" }
end

def too_short(output, context)
  output.length > 100
end

def explode(output, context)
  raise ArgumentError, 'bad output'
end

def grade(output, context)
  0.4
end
"""


def test_ruby_assertions(tmp_path: Path) -> None:
    write(tmp_path / "checks.rb", CHECKS)
    r = grade_outputs(tmp_path, {
        "inline true": ("hello world", {"type": "ruby", "value": "output.include?('world')"}),
        "inline false": ("hello", {"type": "ruby", "value": "output.include?('world')"}),
        "multiline": ("abc", {"type": "ruby", "value": "n = output.length\nreturn n == 3"}),
        "context vars": ("x", {"type": "ruby", "value": "context['vars']['case'] == 'context vars'"}),
        "file default": ("file default output", {"type": "ruby", "value": "file://checks.rb"}),
        "file function": ("short", {"type": "ruby", "value": "file://checks.rb:too_short"}),
        "number": ("x", {"type": "ruby", "value": "file://checks.rb:grade", "threshold": 0.5}),
        "raises": ("x", {"type": "ruby", "value": "file://checks.rb:explode"}),
        "inline raises": ("x", {"type": "ruby", "value": "raise 'nope'"}),
        "not-ruby": ("hello", {"type": "not-ruby", "value": "output == 'bye'"}),
        "object below threshold": ("file default", {"type": "ruby", "value": "file://checks.rb", "threshold": 0.9}),
        "bad result": ("x", {"type": "ruby", "value": "[1, 2]"}),
    })  # fmt: skip
    assert {k: v.status for k, v in r.items()} == {
        "inline true": "pass", "inline false": "fail", "multiline": "pass", "context vars": "pass", "file default": "pass",
        "file function": "fail", "number": "fail", "raises": "fail", "inline raises": "fail", "not-ruby": "pass",
        "object below threshold": "fail", "bad result": "fail",
    }  # fmt: skip
    assert r["inline false"].reason == "Ruby code returned false\noutput.include?('world')"
    assert r["file default"].reason == "saw file default output" and r["file default"].score == 0.75
    assert r["number"].score == 0.4
    assert r["raises"].reason == "Error running Ruby script: ArgumentError: bad output"
    assert r["inline raises"].reason == "Ruby code execution failed: RuntimeError: nope"
    assert r["object below threshold"].reason == "Ruby score 0.75 is less than threshold 0.9: saw file default"
    assert r["bad result"].reason.startswith("Ruby code execution failed: Ruby assertion must return a boolean, number")


def test_a_slow_ruby_script_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "1")
    r = grade_outputs(tmp_path, {"slow": ("x", {"type": "ruby", "value": "sleep 5\ntrue"})})
    assert r["slow"].status == "error"
    assert "did not finish within 1 s" in r["slow"].reason


def _refused(tmp_path: Path, value: str) -> str:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert:\n      - type: ruby\n        value: {value}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2, result.err
    return result.err


def test_syntax_errors_are_refused_before_any_call(tmp_path: Path) -> None:
    err = _refused(tmp_path, "\"n = (1 +\\nreturn n\"")
    assert "promptfooconfig.yaml:6" in err and "ruby assertion: SyntaxError" in err and "line 2 of the code" in err
    write(tmp_path / "broken.rb", "def get_assert(output, context)\n  if output\nend\n")
    err = _refused(tmp_path, "file://broken.rb")
    assert "ruby assertion: SyntaxError" in err and "broken.rb:3" in err


def test_without_ruby_the_config_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMPTFOO_RUBY", str(tmp_path / "no-such-ruby"))
    err = _refused(tmp_path, "output.empty?")
    assert "ruby assertions need Ruby" in err and "tests[0].assert[0]" in err
