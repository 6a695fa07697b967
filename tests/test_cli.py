"""The command-line contract: exit codes, --version start-up, the console summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, run_cli, run_cli_process, write
from tests.servers.llm_server import LLMServer

PASSING = """
description: cli contract
prompts: ['Hello {{name}}']
providers: [echo]
tests:
  - vars: {name: Ada}
    assert: [{type: contains, value: Ada}]
"""

FAILING = PASSING + """
  - vars: {name: Bob}
    assert: [{type: contains, value: Alice}]
"""


def test_exit_0_when_everything_passes(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", PASSING)
    result = run_cli_process("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "1 passed, 0 failed, 0 errors" in result.out
    assert result.err == ""


def test_exit_1_on_a_failed_test(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", FAILING)
    result = run_cli_process("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1
    assert "1 passed, 1 failed, 0 errors" in result.out
    assert 'Expected output to contain "Alice"' in result.out
    assert (tmp_path / "out.json").exists()


def test_exit_1_on_an_error_row(tmp_path: Path) -> None:
    """A provider that cannot be called makes an ERROR row (exit 1), not a crash."""
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['Hello {{name}}']
        providers: [openai:gpt-4o-mini, echo]
        tests:
          - vars: {name: Ada}
        """,
    )
    result = run_cli_process("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 1
    assert "1 passed, 0 failed, 1 error " in result.out
    assert "API key is not set" in result.out
    assert "Traceback" not in result.err


def test_exit_2_on_usage_errors(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", PASSING)
    bad_flag = run_cli_process("eval", "--no-such-flag", cwd=tmp_path)
    assert bad_flag.code == 2
    assert bad_flag.err.strip() == "ci-grade: error: unrecognized arguments: --no-such-flag (see 'ci-grade --help')"
    zero = run_cli_process("eval", "-j", "0", cwd=tmp_path)
    assert zero.code == 2
    assert zero.err.strip() == "ci-grade: error: --max-concurrency must be at least 1"
    not_a_number = run_cli("eval", "-j", "many", cwd=tmp_path)
    assert not_a_number.code == 2
    assert not_a_number.err.strip() == "ci-grade: error: argument -j/--max-concurrency: invalid int value: 'many' (see 'ci-grade eval --help')"
    unknown_output = run_cli_process("eval", "-o", "results.pdf", cwd=tmp_path)
    assert unknown_output.code == 2
    assert "unsupported output type" in unknown_output.err
    no_command = run_cli(cwd=tmp_path)
    assert no_command.code == 2 and "usage: ci-grade" in no_command.err


def test_exit_2_on_a_config_error(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", PASSING.replace("assert: [{type: contains, value: Ada}]", "threshold: lots"))
    result = run_cli_process("eval", cwd=tmp_path)
    assert result.code == 2
    assert result.err.strip() == "ci-grade: error: promptfooconfig.yaml:6 tests[0].threshold: expected a number, got 'lots'"
    assert result.out == ""


def test_exit_3_when_an_output_cannot_be_written(tmp_path: Path, llm_server: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", PASSING)
    write(tmp_path / "a-file", "not a folder")
    result = run_cli_process("eval", "--no-progress", "-o", "a-file/results.json", cwd=tmp_path)
    assert result.code == 3
    assert result.err.strip() == f"ci-grade: error: cannot write a-file/results.json: {Path('a-file')} is not a folder"
    assert "Traceback" not in result.err


def test_exit_3_names_every_output_it_could_not_write(tmp_path: Path) -> None:
    from ci_grade.errors import InfrastructureError
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import write_files
    from ci_grade.results.models import EvalRun

    (tmp_path / "blocked").write_text("a file")
    try:
        write_files([str(tmp_path / "ok.json"), str(tmp_path / "blocked" / "x.md"), str(tmp_path / "ok.md")], Document([Part("", EvalRun())]))
    except InfrastructureError as exc:
        assert str(exc).startswith(f"cannot write {tmp_path / 'blocked' / 'x.md'}: ")
    else:
        raise AssertionError("expected InfrastructureError")
    assert (tmp_path / "ok.json").exists() and (tmp_path / "ok.md").exists()


def test_version_is_quick_and_imports_nothing_heavy() -> None:
    result = run_cli_process("--version")
    assert result.code == 0
    assert re.fullmatch(r"ci-grade \d+\.\d+\.\d+\S*\n", result.out)
    probe = (
        "import sys, runpy; sys.argv = ['ci-grade', '--version']\n"
        "try:\n    runpy.run_module('ci_grade', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'py_mini_racer', 'pydantic', 'httpx', 'jinja2'))\n"
        "sys.stderr.write(repr(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60, check=True)
    assert proc.stderr == "[]"
    timed = subprocess.run([sys.executable, "-X", "importtime", "-m", "ci_grade", "--version"], capture_output=True, text=True, cwd=REPO, timeout=60, check=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in timed.stderr.splitlines() if line.startswith("import time:")}
    assert "ci_grade.cli" in imported
    assert not {m for m in imported if m.split(".")[0] in ("openai", "py_mini_racer", "pydantic")}


def test_console_summary_shows_counts_tokens_and_duration(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Ada", "Hi Ada", usage={"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15})
    openai_env.on_chat("Bob", "Hi Robert", usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12})
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['Hello {{name}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {name: Ada}
            assert: [{type: contains, value: Ada}]
          - description: Bob by name
            vars: {name: Bob}
            assert: [{type: contains, value: Bob}]
        """,
    )
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 1
    lines = result.out.splitlines()
    assert lines[0] == "ci-grade"
    assert lines[1].strip() == "1 passed, 1 failed, 0 errors  (2 rows, pass rate 50.0%)"
    assert re.fullmatch(r"  tokens 27 \(provider 27, grading 0\)  cost \$\d+\.\d{4}  duration \d+\.\ds", lines[2])
    assert lines[3:5] == ["Failed:", "  - [openai:gpt-4o-mini] Bob by name (promptfooconfig.yaml:6): Expected output to contain \"Bob\""]


def test_progress_goes_to_stderr_and_stdout_stays_clean(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", PASSING)
    result = run_cli_process("eval", cwd=tmp_path)
    assert result.code == 0
    assert "1/1 rows done" in result.err
    assert "rows done" not in result.out
    assert "1 passed, 0 failed, 0 errors" in result.out
