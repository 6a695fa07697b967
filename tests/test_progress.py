"""Progress while a run goes: a live line on a terminal (a real pseudo-terminal here), a line per
10% in CI logs, one collapsible group in GitHub Actions; counts, cost, elapsed time and ETA."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from ci_grade.report.progress import Progress
from ci_grade.results import models
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

KEY = "sk-test-0123456789"
LINE = re.compile(
    r"  (?P<done>\d+)/(?P<total>\d+) rows done \((?P<percent>\d+)%\)  (?P<passed>\d+) passed, (?P<failed>\d+) failed, "
    r"(?P<errors>\d+) errors?  cost \$(?P<cost>[\d.]+)  elapsed (?:\d+\.\ds|\d+m\d\ds)(?:  ETA (?:\d+\.\ds|\d+m\d\ds|-))?"  # 2 minutes on: `4m11s`
)


def _config(count: int) -> str:
    tests = "".join(f"  - vars: {{q: 'question {i}'}}\n    assert: [{{type: contains, value: answer}}]\n" for i in range(count))
    return f"prompts: ['{{{{q}}}}']\nproviders: [openai:chat:gpt-4.1-mini]\ntests:\n{tests}"


@pytest.fixture
def twenty(tmp_path: Path, openai_env: LLMServer) -> Path:
    """20 rows: 18 pass, one fails, one errors; every call costs something."""
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    openai_env.on_chat("question 3", "::error file=x.yaml::injected", usage=usage)
    openai_env.on_chat("question 7", {"error": {"message": "bad request"}}, status=400)
    openai_env.on_chat("question", "the answer", usage=usage)
    write(tmp_path / "promptfooconfig.yaml", _config(20))
    return tmp_path


def test_ci_logs_get_a_line_per_tenth(twenty: Path) -> None:
    result = run_cli("eval", cwd=twenty)
    assert result.code == 1, result.err
    lines = result.err.splitlines()
    assert lines[0] == "  running 20 rows"
    matches = [LINE.fullmatch(line) for line in lines[1:]]
    assert all(matches), lines
    done = [int(m["done"]) for m in matches if m]
    assert done == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
    last = matches[-1]
    assert last is not None and (last["passed"], last["failed"], last["errors"]) == ("18", "1", "1")
    assert "ETA" not in lines[-1] and all("ETA" in line for line in lines[1:-1])
    costs = [float(m["cost"]) for m in matches if m]
    assert costs == sorted(costs) and costs[-1] > 0
    assert "19 passed" not in result.out and "18 passed, 1 failed, 1 errors" in result.out
    assert KEY not in result.err


def test_actions_logs_group_the_run_and_carry_no_injected_commands(twenty: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run_cli("eval", "-j", "4", cwd=twenty)
    assert result.code == 1
    lines = result.err.splitlines()
    assert lines[0] == "::group::ci-grade: evaluate" and lines[-1] == "::endgroup::"
    assert sum(bool(LINE.fullmatch(line)) for line in lines) == 10
    commands = [line for line in (result.out + result.err).splitlines() if line.startswith("::")]
    assert commands == ["::group::ci-grade: evaluate", "::endgroup::"], "a model's output never starts a workflow command"


def test_a_terminal_gets_one_live_line(twenty: Path) -> None:
    """stderr on a real pseudo-terminal: the status line is redrawn in place and ends with a newline."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))  # 200 columns
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "COLUMNS")}
    process = subprocess.Popen([sys.executable, "-m", "ci_grade", "eval"], cwd=twenty, env=env,
                               stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    chunks: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(leader, chunks))
    reader.start()
    stdout, _ = process.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(leader)
    terminal = b"".join(chunks).decode()
    assert process.returncode == 1
    assert "18 passed, 1 failed, 1 errors" in stdout and "rows done" not in stdout
    frames = terminal.split("\r\x1b[2K")
    assert frames[0] == "", "nothing but the status line goes to the terminal"
    shown = [LINE.fullmatch(frame.rstrip("\r\n")) for frame in frames[1:]]
    assert all(shown), frames
    done = [int(m["done"]) for m in shown if m]
    assert done[0] == 0 and done == sorted(done) and set(done) == set(range(21))
    assert all("\n" not in frame for frame in frames[1:-1]), "one line, redrawn in place"
    assert frames[-1].startswith("  20/20 rows done (100%)  18 passed, 1 failed, 1 error  cost") and frames[-1].endswith("\n")
    assert KEY not in terminal


def _drain(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            return
        if not data:
            return
        into.append(data)


def _row(status: models.Status, cost: float = 0.0) -> models.TestResult:
    prompt = models.PromptInfo(raw="p", label="p", key="p")
    return models.TestResult(test_id="t", prompt=prompt, provider=models.ProviderInfo(id="echo"), status=status, cost=cost)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_elapsed_eta_and_counts() -> None:
    clock, stream = _Clock(), io.StringIO()
    with Progress(stream, total=4, clock=clock) as progress:
        clock.now += 2.0
        progress(_row("pass", 0.25), 1, 4)
        clock.now += 2.0
        progress(_row("error"), 2, 4)
        clock.now += 1.0
        progress(_row("fail", 0.5), 3, 4)
        assert progress.status() == "3/4 rows done (75%)  1 passed, 1 failed, 1 error  cost $0.7500  elapsed 5.0s  ETA 1.7s"
        progress(_row("pass"), 4, 4)
    assert stream.getvalue().splitlines() == [
        "  running 4 rows",
        "  1/4 rows done (25%)  1 passed, 0 failed, 0 errors  cost $0.2500  elapsed 2.0s  ETA 6.0s",
        "  2/4 rows done (50%)  1 passed, 0 failed, 1 error  cost $0.2500  elapsed 4.0s  ETA 4.0s",
        "  3/4 rows done (75%)  1 passed, 1 failed, 1 error  cost $0.7500  elapsed 5.0s  ETA 1.7s",
        "  4/4 rows done (100%)  2 passed, 1 failed, 1 error  cost $0.7500  elapsed 5.0s",
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_terminal_line_moves_while_no_row_finishes_and_an_interrupted_run_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    stream = _Terminal()
    with Progress(stream, total=3, tick=0.01):
        deadline = time.monotonic() + 30
        while stream.getvalue().count("\r\x1b[2K") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stream.getvalue().count("\r\x1b[2K  0/3 rows done (0%)") >= 3, "redrawn without any row finishing"
    assert stream.getvalue().endswith("ETA -\n"), "the open line is ended when the run stops early"


def test_the_line_fits_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    stream = _Terminal()
    with Progress(stream, total=2, tick=60) as progress:
        progress(_row("pass"), 1, 2)
        progress(_row("pass"), 2, 2)
    frames = stream.getvalue().split("\r\x1b[2K")[1:]
    assert len(frames) == 3 and all(len(frame.rstrip("\n")) == 39 for frame in frames)
    assert frames[-1] == "  2/2 rows done (100%)  2 passed, 0 fai\n"


def test_disabled_progress_prints_nothing(twenty: Path) -> None:
    result = run_cli("eval", "--no-progress", cwd=twenty)
    assert result.code == 1 and result.err == ""
    config = twenty / "promptfooconfig.yaml"
    config.write_text(config.read_text() + "evaluateOptions: {showProgressBar: false}\n")
    result = run_cli("eval", cwd=twenty)
    assert result.code == 1 and result.err == "", "promptfoo's config switch is honoured"
