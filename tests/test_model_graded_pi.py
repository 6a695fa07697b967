"""`pi` through a loopback stand-in for the With Pi scoring API (httpx, retries, x-api-key)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers import pi_server
from tests.servers.llm_server import LLMServer, Response

KEY = "pi-test-key-123456"
QUESTION = "Is not apologetic and provides a clear, concise answer"


def by_output(llm_input: str, llm_output: str, question: str) -> float:
    """The stand-in's judgement: `score=<x>` in the output is the score."""
    return float(llm_output.split("score=")[1]) if "score=" in llm_output else 0.1


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("WITHPI_API_KEY", KEY)
    monkeypatch.setenv("WITHPI_API_BASE_URL", pi_server.base_url(llm_server))
    pi_server.install(llm_server, by_output, api_key=KEY)
    return llm_server


def grade(tmp_path: Path, output: str, *assertions: dict[str, Any]) -> tuple[dict[str, Any], list[Outcome]]:
    test = {"vars": {"q": "Where is my order?"}, "providerOutput": output, "assert": list(assertions)}
    (row,) = evaluate(tmp_path, {"prompts": ["Customer asks: {{q}}"], "providers": ["echo"], "tests": [test]})
    return row, [outcome(c) for c in row["gradingResult"]["componentResults"]]


def test_the_seed_example_scores_above_its_threshold(tmp_path: Path, server: LLMServer) -> None:
    row, (result,) = grade(tmp_path, "It ships today. score=0.9", {"type": "pi", "value": QUESTION, "threshold": 0.8})
    assert (result.status, result.score) == ("pass", pytest.approx(0.9))
    assert result.reason == "Pi score 0.90 is above threshold 0.8"
    assert result.raw["namedScores"] == {QUESTION: pytest.approx(0.9)}
    assert row["namedScores"][QUESTION] == pytest.approx(0.9)
    assert result.raw["metadata"]["ciGrade"]["grader"] == "withpi:scoring_system"
    (request,) = server.requests_to(pi_server.PATH)
    assert request.json == {"llm_input": "Customer asks: Where is my order?", "llm_output": "It ships today. score=0.9", "scoring_spec": [{"question": QUESTION}]}
    assert request.headers["x-api-key"] == KEY
    assert KEY not in (tmp_path / "out.json").read_text()


def test_pass_needs_a_score_strictly_above_the_threshold(tmp_path: Path, server: LLMServer) -> None:
    _, (at, above, default_at) = grade(
        tmp_path,
        "score=0.5",
        {"type": "pi", "value": QUESTION, "threshold": 0.5},
        {"type": "pi", "value": QUESTION, "threshold": 0.4999999},
        {"type": "pi", "value": QUESTION},
    )
    assert (at.status, at.reason) == ("fail", "Pi score 0.50 is not above threshold 0.5")
    assert above.status == "pass"
    assert default_at.status == "fail"


def test_pi_keeps_its_own_scale(tmp_path: Path, server: LLMServer) -> None:
    _, (result,) = grade(tmp_path, "score=3.5", {"type": "pi", "value": QUESTION, "threshold": 2})
    assert (result.status, result.score) == ("pass", 3.5)


def test_not_pi_is_honoured(tmp_path: Path, server: LLMServer) -> None:
    _, (low, high) = grade(tmp_path, "score=0.2", {"type": "not-pi", "value": QUESTION}, {"type": "not-pi", "value": QUESTION, "threshold": 0.1})
    assert (low.status, low.score) == ("pass", pytest.approx(0.8))
    assert (high.status, high.score) == ("fail", pytest.approx(0.8))


def test_missing_key_or_question_is_an_error_without_a_call(tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _, (no_value,) = grade(tmp_path, "score=0.9", {"type": "pi"})
    assert no_value.status == "error" and "pi needs a value" in no_value.reason
    monkeypatch.delenv("WITHPI_API_KEY")
    _, (no_key, inverse) = grade(tmp_path, "score=0.9", {"type": "pi", "value": QUESTION}, {"type": "not-pi", "value": QUESTION})
    for result in (no_key, inverse):
        assert result.status == "error" and result.passed is False
        assert result.reason == "pi needs a With Pi API key: set WITHPI_API_KEY"
    assert server.requests_to(pi_server.PATH) == []


def test_a_rejected_key_is_an_error_that_does_not_leak_it(tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WITHPI_API_KEY", "pi-wrong-key-999999")
    _, (result,) = grade(tmp_path, "score=0.9", {"type": "pi", "value": QUESTION})
    assert result.status == "error" and result.reason == "Pi scoring API error 401: Invalid or missing API key"
    assert len(server.requests_to(pi_server.PATH)) == 1  # a 401 is not retried
    assert "pi-wrong-key-999999" not in (tmp_path / "out.json").read_text()


def test_rate_limits_are_retried_and_server_errors_become_errors(tmp_path: Path, server: LLMServer) -> None:
    server.fail(429, times=2, path=pi_server.PATH, retry_after="0")
    _, (retried,) = grade(tmp_path, "score=0.9", {"type": "pi", "value": QUESTION})
    assert retried.status == "pass" and len(server.requests_to(pi_server.PATH)) == 3
    server.fail(500, times=50, path=pi_server.PATH)
    _, (failed,) = grade(tmp_path, "score=0.9", {"type": "not-pi", "value": QUESTION})
    assert failed.status == "error" and failed.passed is False
    assert failed.reason.startswith("Pi scoring API error 500: injected fault 500 (gave up after")


def test_malformed_replies_are_errors(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WITHPI_API_KEY", KEY)
    monkeypatch.setenv("WITHPI_API_BASE_URL", pi_server.base_url(llm_server))
    replies = iter([{"question_scores": {}}, {"total_score": "high"}, {"total_score": None}])
    pi_server.install(llm_server, by_output, api_key=KEY, reply=lambda request: next(replies))
    _, results = grade(tmp_path, "x", *({"type": "pi", "value": QUESTION} for _ in range(3)))
    for result in results:
        assert result.status == "error" and "no numeric total_score" in result.reason
    llm_server.route("POST", pi_server.PATH, lambda rec: Response(200, body=b"<html>maintenance</html>", headers={"Content-Type": "text/html"}))
    _, (html,) = grade(tmp_path, "x", {"type": "pi", "value": QUESTION})
    assert html.status == "error" and "not JSON" in html.reason


def test_retry_after_is_honoured(tmp_path: Path, server: LLMServer) -> None:
    server.fail(429, times=1, path=pi_server.PATH, retry_after="0.4")
    started = time.perf_counter()
    _, (result,) = grade(tmp_path, "score=0.9", {"type": "pi", "value": QUESTION})
    assert result.status == "pass" and len(server.requests_to(pi_server.PATH)) == 2
    assert time.perf_counter() - started >= 0.4  # the backoff without Retry-After is ~0.01 s here


def test_a_pi_api_that_never_answers_costs_two_timeouts(tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "0.3")
    server.fail(times=10, path=pi_server.PATH, kind="timeout")
    _, (result,) = grade(tmp_path, "score=0.9", {"type": "pi", "value": QUESTION})
    assert result.status == "error" and result.reason.startswith("Pi scoring API timed out after 0.3s")
    assert len(server.requests_to(pi_server.PATH)) == 2  # a timed-out call is tried twice, not once per attempt
