"""Reliability: bounded time and interrupted runs leave their results.

A real `ci-grade` process is stopped with SIGTERM or SIGINT while rows wait on a loopback model
that never answers and on a Python provider stuck in user code: every row is still in the results
JSON, the JUnit and the Markdown (the unfinished ones as "cancelled" errors), the verdict is
"cancelled" (console, comment, job summary, the action's `verdict` output) and the process
exits 143 or 130. `--max-duration` (and the action's `max-duration`) cuts a run the same way with
"timed out" errors and the gate's exit code; a dead grader costs two timed-out attempts per call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import xmlschema

from ci_grade.providers.http_clients import sdk
from tests.conftest import run_cli, write
from tests.github_helpers import parse_outputs
from tests.runner_env import TOKEN, model_env, runner_env
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import run_action

sdk()  # imported up front: the time limits below measure runs, not a cold import

JUNIT_XSD = Path(__file__).resolve().parent.parent / "fixtures" / "junit-10-file-line.xsd"
CONFIG = """
prompts: ['{{q}}']
providers: [openai:chat:target-model]
tests:
  - {description: quick one, vars: {q: quick one}, assert: [{type: contains, value: quick}]}
  - {description: quick two, vars: {q: quick two}, assert: [{type: contains, value: quick}]}
  - {description: stuck one, vars: {q: stuck one}, assert: [{type: contains, value: stuck}]}
  - {description: stuck two, vars: {q: stuck two}, assert: [{type: contains, value: stuck}]}
"""
STUCK_PROVIDER = """
import pathlib, time

def call_api(prompt, options, context):
    pathlib.Path("started-" + prompt.replace(" ", "-")).touch()
    time.sleep(3600)  # user code that never returns
"""
OUTPUTS = ("out.json", "out.junit.xml", "out.md")


@pytest.fixture
def model(llm_server: LLMServer) -> LLMServer:
    """Answers the quick prompts, never answers the stuck ones."""
    return llm_server.on_chat("stuck", hang=True).on_chat("quick", "quick answer")


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start(*args: str, cwd: Path, env: dict[str, str], stderr: Path) -> subprocess.Popen[str]:
    """`ci-grade` as a process; its stderr (progress lines) goes to a file the test can watch.

    The process starts with SIGINT at its default, as a job's steps do. (A test session started
    in the background of a script ignores SIGINT, and its children would inherit that: ci-grade
    leaves a signal its process was started ignoring ignored.)"""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a handler: the child gets the default
    try:
        with stderr.open("w") as sink:
            return subprocess.Popen([sys.executable, "-m", "ci_grade", *args], cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=sink, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def statuses(results_path: Path) -> dict[str, tuple[str, str | None]]:
    rows = json.loads(results_path.read_text(encoding="utf-8"))["results"]["results"]
    return {f"{row['provider']['id']} {row['description']}": (row["metadata"]["ciGrade"]["status"], row["error"]) for row in rows}


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_run_writes_every_report_and_exits_with_its_code(tmp_path: Path, model: LLMServer, signum: int, code: int) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("providers: [openai:chat:target-model]", "providers: [openai:chat:target-model, 'file://stuck.py']"))
    write(tmp_path / "stuck.py", STUCK_PROVIDER)
    log = tmp_path / "stderr.txt"
    process = start("eval", "--save-baseline", "baseline.json", *(arg for out in OUTPUTS for arg in ("-o", out)), cwd=tmp_path, env=model_env(model), stderr=log)
    try:
        wait_for(lambda: len(model.requests_to("/v1/chat/completions")) == 4 and len(list(tmp_path.glob("started-*"))) == 4, "every row in flight")
        wait_for(lambda: "2/8 rows done" in log.read_text(), "the quick rows graded")
        process.send_signal(signum)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    err = log.read_text()
    assert process.returncode == code, err
    name = signal.Signals(signum).name
    assert f"ci-grade: stopped by {name}: unfinished rows were recorded as errors (cancelled)" in err
    cancelled = (f"cancelled: stopped by {name} before this row finished")
    assert statuses(tmp_path / "out.json") == {
        "openai:chat:target-model quick one": ("pass", None),
        "openai:chat:target-model quick two": ("pass", None),
        "openai:chat:target-model stuck one": ("error", cancelled),
        "openai:chat:target-model stuck two": ("error", cancelled),
        "file://stuck.py quick one": ("error", cancelled),
        "file://stuck.py quick two": ("error", cancelled),
        "file://stuck.py stuck one": ("error", cancelled),
        "file://stuck.py stuck two": ("error", cancelled),
    }
    junit = (tmp_path / "out.junit.xml").read_text(encoding="utf-8")
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(junit)
    assert junit.count("<testcase ") == 8 and junit.count("<error ") == 6
    assert (tmp_path / "out.md").read_text(encoding="utf-8").count("cancelled: stopped by") == 6
    assert f"{name}: 6 of 8 rows did not finish" in err
    assert "2 passed, 0 failed, 6 errors" in out
    assert f"verdict: CANCELLED (gate failed): stopped by {name} before the run finished; partial results: 6 errors (max 0)" in out
    assert "warning: the run was stopped: no baseline saved to baseline.json" in err and not (tmp_path / "baseline.json").exists()


def test_max_duration_cuts_the_run_and_the_gate_judges_the_errors(tmp_path: Path, model: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_env(model).items():
        monkeypatch.setenv(name, value)
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    started = time.monotonic()
    result = run_cli("eval", "--no-progress", "--max-duration", "3s", *(arg for out in OUTPUTS for arg in ("-o", out)), cwd=tmp_path)
    assert time.monotonic() - started < 60
    assert result.code == 1, result.err
    timed_out = ("error", "timed out: the run reached its time limit of 3s before this row finished")
    assert statuses(tmp_path / "out.json") == {
        "openai:chat:target-model quick one": ("pass", None),
        "openai:chat:target-model quick two": ("pass", None),
        "openai:chat:target-model stuck one": timed_out,
        "openai:chat:target-model stuck two": timed_out,
    }
    assert "warning: timed out: the run reached its time limit of 3s: 2 of 4 rows did not finish and are recorded as errors" in result.err
    assert (tmp_path / "out.junit.xml").read_text(encoding="utf-8").count("<error ") == 2
    assert run_cli("eval", "--max-duration", "soon", cwd=tmp_path).code == 2


def test_the_config_time_limit_applies_without_the_flag(tmp_path: Path, model: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_env(model).items():
        monkeypatch.setenv(name, value)
    write(tmp_path / "promptfooconfig.yaml", CONFIG + "evaluateOptions: {maxEvalTimeMs: 1500}\n")
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1
    assert statuses(tmp_path / "out.json")["openai:chat:target-model stuck one"] == ("error", "timed out: the run reached its time limit of 1.5s before this row finished")


def test_a_run_stopped_before_its_comparisons_passes_no_row(tmp_path: Path, openai_env: LLMServer) -> None:
    """select-best is graded after every row: cut before it, the rows are errors, not passes."""
    openai_env.on_chat("choose the funniest", hang=True)
    write(tmp_path / "promptfooconfig.yaml", """
prompts: ['Write a tweet about {{topic}}', 'Write a funny tweet about {{topic}}']
providers: [echo]
tests:
  - vars: {topic: bananas}
    assert: [{type: contains, value: bananas}, {type: select-best, value: choose the funniest tweet}]
""")
    result = run_cli("eval", "--no-progress", "--max-duration", "1.5s", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1
    reason = "timed out: the run reached its time limit of 1.5s before the comparison assertions were graded"
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert [(row["metadata"]["ciGrade"]["status"], row["error"]) for row in rows] == [("error", reason), ("error", reason)]
    assert "2 of 2 rows did not finish" in result.err


def test_a_dead_grader_costs_two_timeouts_per_call(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "0.5")
    openai_env.on_chat(None, hang=True)
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: llm-rubric, value: is friendly}]\n")
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1
    ((status, _),) = statuses(tmp_path / "out.json").values()
    row = json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]
    assert status == "error" and "request timed out after 0.5s (after retries)" in row["gradingResult"]["reason"]
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2  # retried once, not three times


def test_a_row_deadline_bounds_one_row(tmp_path: Path, model: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_env(model).items():
        monkeypatch.setenv(name, value)
    # roomy enough for a quick row on a loaded machine (its time includes the SDK's first import)
    write(tmp_path / "promptfooconfig.yaml", CONFIG + "evaluateOptions: {timeoutMs: 3000}\n")
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1
    got = statuses(tmp_path / "out.json")
    assert got["openai:chat:target-model stuck one"] == ("error", "test timed out after 3000 ms")
    assert got["openai:chat:target-model quick one"] == ("pass", None)


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, repository="octo/demo") as server:
        yield server


def test_action_max_duration_publishes_everything(tmp_path: Path, model: LLMServer, gh: GitHubServer) -> None:
    ws = tmp_path / "workspace"
    write(ws / "evals" / "promptfooconfig.yaml", CONFIG)
    run = run_action(ws, gh, baseline="", max_duration="3s", env_extra=model_env(model))
    assert run.code == 1, run.result.err
    assert run.outputs["errors"] == "2" and run.outputs["passed"] == "false"
    assert "timed out: the run reached its time limit of 3s" in run.summary
    assert "timed out" in gh.comments[7][0]["body"]
    assert any("2 of 4 rows did not finish" in line for line in run.result.out.splitlines() if line.startswith("::warning"))


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_action_signal_publishes_everything_as_cancelled_then_exits_with_its_code(tmp_path: Path, model: LLMServer, gh: GitHubServer, signum: int, code: int) -> None:
    name = signal.Signals(signum).name
    ws = tmp_path / "workspace"
    write(ws / "evals" / "promptfooconfig.yaml", CONFIG + "  - {description: stuck three, vars: {q: stuck three}}\n")
    step, log = tmp_path / "step", tmp_path / "stderr.txt"
    process = start("action", cwd=ws, env={**model_env(model), **runner_env(ws, step, gh)}, stderr=log)
    try:
        wait_for(lambda: len(model.requests_to("/v1/chat/completions")) == 5, "every row in flight")
        wait_for(lambda: "2/5 rows done" in log.read_text(), "the quick rows graded")
        process.send_signal(signum)
        out, _ = process.communicate(timeout=60)
        assert f"verdict: cancelled: stopped by {name} before the run finished; partial results: 3 errors (max 0)" in out
    finally:
        process.kill()
    assert process.returncode == code, log.read_text()
    outputs = parse_outputs(step / "output.txt")
    assert outputs["errors"] == "3" and outputs["passed"] == "false" and outputs["comment-url"]
    assert outputs["verdict"] == "cancelled"
    summary = (step / "summary.md").read_text(encoding="utf-8")
    verdict_line = f"⏹️ **Cancelled**: stopped by {name} before the run finished; partial results: 3 errors (max 0)"
    assert verdict_line in summary and f"cancelled: stopped by {name}" in summary and "**Failed**" not in summary
    (comment,) = gh.comments[7]
    assert verdict_line in comment["body"] and "could not run" not in comment["body"]
    assert statuses(ws / "evals" / "ci-grade-results" / "results.json")["openai:chat:target-model stuck two"][0] == "error"


def test_durations_and_their_inputs() -> None:
    from ci_grade.errors import UsageError
    from ci_grade.github.inputs import read_inputs
    from ci_grade.run.stop import format_duration, parse_duration

    assert [parse_duration(t) for t in ("90", "90s", "30m", "1h30m", "1.5h", " 2m30s ", "0.5s")] == [90, 90, 1800, 5400, 5400, 150, 0.5]
    for bad in ("", "soon", "0", "-5", "1d", "m", "inf"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert [format_duration(s) for s in (0.5, 45, 90, 1800, 5400, 3600)] == ["0.5s", "45s", "1m30s", "30m", "1h30m", "1h"]
    inputs = read_inputs({"INPUT_MAX-DURATION": "20m", "INPUT_MAX-OUTPUT-CHARS": "0"})
    assert (inputs.max_duration, inputs.max_output_chars) == (1200, 0)
    assert (read_inputs({}).max_duration, read_inputs({}).max_output_chars) == (None, 100_000)
    with pytest.raises(UsageError, match="input `max-duration`: expected a duration"):
        read_inputs({"INPUT_MAX_DURATION": "soon"})
    with pytest.raises(UsageError, match="input `max-output-chars` must be a whole number"):
        read_inputs({"INPUT_MAX-OUTPUT-CHARS": "-1"})
