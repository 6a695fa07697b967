"""Reliability: an endpoint that never answers is declared down, and costs a few timeouts, not one per row.

A grader that accepts connections and never answers, or a port that refuses them, is declared
down after CI_GRADE_ENDPOINT_DOWN_AFTER (3) attempts in a row got no answer: its remaining rows
are ERRORs at once that say so. One answer sets the count back; a flaky endpoint, answering
between its failures, is never declared down.
"""

from __future__ import annotations

import itertools
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from ci_grade.errors import EndpointDown, TransientError
from ci_grade.providers.health import Liveness
from tests.model_graded_helpers import Eval, run_eval
from tests.servers.llm_server import LLMServer


def rubric_suite(rows: int) -> str:
    lines = ["prompts: ['{{q}}']", "providers: [echo]", "tests:"]
    lines += [f"  - {{description: case {i}, vars: {{q: 'question {i}'}}, assert: [{{type: llm-rubric, value: 'is an answer {i}'}}]}}" for i in range(rows)]
    return "\n".join(lines) + "\n"


def reasons(result: Eval) -> set[str]:
    return {row["gradingResult"]["reason"] for row in result.rows}


def test_a_grader_that_never_answers_is_declared_down_and_200_rows_end_in_a_few_timeouts(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "0.5")
    openai_env.on_chat(None, hang=True)
    started = time.monotonic()
    result = run_eval(tmp_path, rubric_suite(200), "-j", "4")
    elapsed = time.monotonic() - started
    assert result.code == 1 and len(result.rows) == 200
    assert {row["metadata"]["ciGrade"]["status"] for row in result.rows} == {"error"}
    (reason,) = reasons(result)
    assert "endpoint declared down after 3 consecutive failures: request timed out after 0.5s" in reason, reason
    assert len(openai_env.requests_to("/v1/chat/completions")) <= 6  # the first round of calls, then none
    assert elapsed < 30, elapsed  # 200 rows at one or two timeouts each would take 100 s or more


def test_a_refused_port_is_declared_down_after_three_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.05")
    result = run_eval(tmp_path, rubric_suite(200), "-j", "1")
    assert result.code == 1 and len(result.rows) == 200
    (reason,) = reasons(result)
    assert "endpoint declared down after 3 consecutive failures: connection failed" in reason, reason


def test_a_flaky_grader_is_never_declared_down(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other request never answered, even with the strictest setting: each row's retry is answered."""
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "0.3")
    monkeypatch.setenv("CI_GRADE_ENDPOINT_DOWN_AFTER", "2")
    counter = itertools.count()
    openai_env.on_chat(lambda request: next(counter) % 2 == 0, hang=True)
    openai_env.on_chat(None, {"pass": True, "score": 1, "reason": "fine"})
    result = run_eval(tmp_path, rubric_suite(8), "-j", "1")
    assert result.code == 0, reasons(result)
    assert result.stats["successes"] == 8 and len(openai_env.requests_to("/v1/chat/completions")) == 16


def failure(timeout: bool = True) -> TransientError:
    return TransientError("request timed out after 1s" if timeout else "connection refused", timeout=timeout)


def test_consecutive_unanswered_attempts_declare_an_endpoint_down_and_an_answer_resets_them() -> None:
    health = Liveness(down_after=3)
    for _ in range(2):
        health.failed(failure(), time.monotonic())
    health.answered()
    for _ in range(2):
        health.failed(failure(False), time.monotonic())
    health.check()  # two in a row since the answer: still up
    began = time.monotonic()
    health.answered()  # another call was answered while this attempt ran: it proves nothing
    health.failed(failure(), began)
    assert health.failures == 0
    for _ in range(3):
        health.check()
        health.failed(failure(False), time.monotonic())
    with pytest.raises(EndpointDown, match=r"^endpoint declared down after 3 consecutive failures: connection refused$"):
        health.check()
    never: Any = Liveness(down_after=0)
    for _ in range(100):
        never.failed(failure(), time.monotonic())
    never.check()
