"""Reliability: writing reports never changes the verdict, and results files cap each row's output.

A full disk (`/dev/full`) at the job summary or the step outputs, and a file-size limit that makes
the results JSON and the JUnit fail to write, are warnings: the comment is posted, what can be
written is, and the exit code is the gate's. Outputs longer than `--max-output-chars` (or the
action's `max-output-chars`) are masked, then cut, with a note in the row.
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli, write
from tests.github_helpers import commands_in, parse_outputs
from tests.runner_env import TOKEN, model_env, runner_env
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import run_action

LONG = "x" * 6000
CONFIG = f"""
prompts: ['{{{{q}}}}']
providers: [echo]
tests:
  - {{description: long answer, vars: {{q: '{LONG}'}}, assert: [{{type: contains, value: x}}]}}
  - {{description: short answer, vars: {{q: hello}}, assert: [{{type: contains, value: "{{{{expected}}}}"}}]}}
"""
FILE_LIMIT = 4096  # bytes: the results JSON and the JUnit are larger, the outputs and the summary are not


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, repository="octo/demo") as server:
        yield server


def action(workspace: Path, step: Path, gh: GitHubServer, server: LLMServer, *, expected: str, file_limit: int | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """`ci-grade action` as a process, optionally unable to write files above `file_limit` bytes."""
    write(workspace / "evals" / "promptfooconfig.yaml", CONFIG.replace("{{expected}}", expected))

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    variables = {**model_env(server), **runner_env(workspace, step, gh), **env}
    return subprocess.run(
        [sys.executable, "-m", "ci_grade", "action"], cwd=workspace, env={**os.environ, **variables},
        capture_output=True, text=True, timeout=120, preexec_fn=limit_files if file_limit else None,
    )  # fmt: skip


def warnings(stdout: str) -> list[str]:
    return [message for name, _, message in commands_in(stdout) if name == "warning"]


def test_a_full_disk_at_the_summary_and_outputs_keeps_the_gate_exit(tmp_path: Path, llm_server: LLMServer, gh: GitHubServer) -> None:
    ws, step = tmp_path / "ws", tmp_path / "step"
    result = action(ws, step, gh, llm_server, expected="bye", GITHUB_STEP_SUMMARY="/dev/full", GITHUB_OUTPUT="/dev/full")
    assert result.returncode == 1, result.stderr  # the gate failed: a failing test, not exit 3
    assert "Traceback" not in result.stderr
    assert "could not write the job summary: No space left on device; the verdict stands" in warnings(result.stdout)
    assert "could not write the step outputs: No space left on device; the verdict stands" in warnings(result.stdout)
    (comment,) = gh.comments[7]
    assert "short answer" in comment["body"]
    assert (ws / "evals" / "ci-grade-results" / "results.json").exists()


def test_results_that_cannot_be_written_are_warnings(tmp_path: Path, llm_server: LLMServer, gh: GitHubServer) -> None:
    ws, step = tmp_path / "ws", tmp_path / "step"
    result = action(ws, step, gh, llm_server, expected="hello", file_limit=FILE_LIMIT)
    assert result.returncode == 0, result.stderr  # every test passed: the verdict stands
    problems = warnings(result.stdout)
    assert any(p.startswith("cannot write ") and "results.json: File too large" in p for p in problems), problems
    assert any("results.junit.xml: File too large" in p for p in problems), problems
    outputs = parse_outputs(step / "output.txt")
    assert outputs["passed"] == "true" and outputs["comment-url"]
    assert "Passed" in (step / "summary.md").read_text(encoding="utf-8")
    assert not (ws / "evals" / "ci-grade-results" / "results.json").exists()


def test_eval_warns_about_files_it_cannot_write_and_exits_per_the_gate(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("{{expected}}", "hello"))

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))

    result = subprocess.run(
        [sys.executable, "-m", "ci_grade", "eval", "--no-progress", "-o", "big.json", "-o", "small.md"],
        cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, timeout=120, preexec_fn=limit_files,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "warning: cannot write big.json: File too large" in result.stderr
    assert "wrote small.md" in result.stdout and (tmp_path / "small.md").exists()


def test_results_files_cap_each_output_after_masking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("SERVICE_API_KEY", secret)
    text = "a" * 90 + secret + "b" * 5000
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['{{{{q}}}}']\nproviders: [echo]\ntests:\n  - vars: {{q: '{text}'}}\n")
    outs = ["out.json", "out.jsonl", "out.yaml", "out.csv"]
    result = run_cli("eval", "--no-progress", "--max-output-chars", "100", *(a for o in outs for a in ("-o", o)), cwd=tmp_path)
    assert result.code == 0, result.err
    masked = "a" * 90 + "***" + "b" * 5000  # masked first: the cut never leaves half a secret
    cut = masked[:100] + f"… [output cut: {len(masked) - 100:,} more characters]"
    (row,) = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert row["response"]["output"] == cut
    assert row["response"]["metadata"]["outputCut"] == {"keptChars": 100, "totalChars": len(masked)}
    assert json.loads((tmp_path / "out.jsonl").read_text())["response"]["output"] == cut
    assert yaml.safe_load((tmp_path / "out.yaml").read_text())["results"]["results"][0]["response"]["output"] == cut
    (header, values) = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text())))
    assert values[header.index("output")] == cut
    for name in outs:
        assert "sk-live" not in (tmp_path / name).read_text()

    assert run_cli("eval", "--no-progress", "-o", "full.json", cwd=tmp_path).code == 0
    (whole,) = json.loads((tmp_path / "full.json").read_text())["results"]["results"]
    assert whole["response"]["output"] == masked and "outputCut" not in whole["response"]["metadata"]  # whole by default


def test_the_action_input_caps_outputs(tmp_path: Path, gh: GitHubServer) -> None:
    ws = tmp_path / "ws"
    write(ws / "evals" / "promptfooconfig.yaml", CONFIG.replace("{{expected}}", "hello"))
    run = run_action(ws, gh, baseline="", max_output_chars="50")
    assert run.code == 0, run.result.err
    rows = json.loads((ws / "evals" / "ci-grade-results" / "results.json").read_text())["results"]["results"]
    outputs = {row["description"]: row["response"]["output"] for row in rows}
    assert outputs == {"long answer": "x" * 50 + "… [output cut: 5,950 more characters]", "short answer": "hello"}


class _FullDisk(io.RawIOBase):
    """A temporary file on a full disk: writes fail once the buffer is flushed (no wire to a full disk exists here)."""

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        raise OSError(28, "No space left on device")

    def readinto(self, buffer: object) -> int:
        return 0

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0


def test_a_full_temporary_folder_keeps_the_config_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # The config's text waits in a temporary file; a disk that fills only shows when the buffer
    # is flushed, and that must happen while the fallback can still take over.
    from ci_grade.report import outputs

    monkeypatch.setattr(outputs.tempfile, "TemporaryFile", lambda **_: io.BufferedRandom(_FullDisk(), buffer_size=1 << 20))
    encoded = outputs.EncodedConfig(lambda: ['{"prompts": ', '["hi"]}'])
    assert encoded.data() == {"prompts": ["hi"]}
