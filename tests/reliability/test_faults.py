"""Reliability: grader and API faults are retried, and a broken reply is never a verdict.

Every fault kind the loopback server injects (429, 500, 503, a request never answered, a reset
connection, malformed JSON, an empty body, a completion without choices) is retried like a 5xx;
with a seeded 10% of grader calls failing, a 100-test suite ends exactly as a fault-free run; at
50% nothing crashes, no row is lost and no failure turns into a pass. A reply that lacks what the
assertion needs (no moderation results, no choices) is an ERROR, never "no flags detected".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.assertion_runs import evaluate, first
from tests.model_graded_helpers import Eval, run_eval
from tests.servers.llm_server import FAULT_KINDS, LLMServer, request_text


def verdict(request: dict[str, Any]) -> dict[str, Any]:
    """The grader's answer for case N: a pass for most, a fail for every third."""
    number = int(re.search(r"rubric number (\d+)", request_text(request)).group(1))  # type: ignore[union-attr]
    passed = number % 3 != 0
    return {"reason": f"case {number} {'meets' if passed else 'misses'} the rubric", "pass": passed, "score": 1.0 if passed else 0.2}


def suite(tests: int) -> str:
    lines = ["prompts: ['{{q}}']", "providers: [echo]", "tests:"]
    for i in range(tests):
        lines += [f"  - description: case {i}", f"    vars: {{q: 'question {i}'}}", "    assert:", f"      - {{type: llm-rubric, value: 'rubric number {i}'}}"]
    return "\n".join(lines) + "\n"


def verdicts(result: Eval) -> dict[str, tuple[str, float]]:
    return {row["description"]: (row["metadata"]["ciGrade"]["status"], row["score"]) for row in result.rows}


@pytest.fixture
def grader(openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """The loopback grader answering every rubric; a call not answered times out after 1 s."""
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "1")
    return openai_env.on_chat("rubric number", verdict)


@pytest.mark.parametrize("kind", [*FAULT_KINDS, "no_choices"])
def test_each_fault_kind_is_retried_and_changes_nothing(tmp_path: Path, grader: LLMServer, kind: str) -> None:
    grader.fail(int(kind) if kind.isdigit() else 200, kind=None if kind.isdigit() else kind, times=1)
    result = run_eval(tmp_path, suite(2), "-j", "1")
    assert grader.injected == {kind: 1}
    assert verdicts(result) == {"case 0": ("fail", 0.2), "case 1": ("pass", 1.0)}
    assert len(grader.requests_to("/v1/chat/completions")) == 3  # two calls, one of them twice


def test_a_second_timeout_is_retried_while_the_endpoint_answers_others(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two timeouts end a call only when the endpoint answered nothing meanwhile (a dead one: see
    tests/reliability/test_stops.py); here another call is answered during the second, so a third try follows."""
    monkeypatch.setenv("CI_GRADE_CALL_TIMEOUT_SECONDS", "1")
    openai_env.on_chat("rubric number 0", hang=True, times=2)  # case 0 times out at 1 s and 2 s
    openai_env.on_chat("rubric number 1", "busy", status=500, latency=0.7, times=1)  # case 1 is answered at 0.7 s
    openai_env.on_chat("rubric number 1", verdict, latency=0.7)  # and again at 1.4 s, during case 0's second try
    openai_env.on_chat("rubric number", verdict)
    result = run_eval(tmp_path, suite(2), "-j", "2")
    assert verdicts(result) == {"case 0": ("fail", 0.2), "case 1": ("pass", 1.0)}
    assert len([r for r in openai_env.requests_to("/v1/chat/completions") if b"rubric number 0" in r.body]) == 3


def test_ten_percent_faults_end_like_a_fault_free_run(tmp_path: Path, grader: LLMServer) -> None:
    clean = run_eval(tmp_path, suite(100), "-j", "16")
    assert clean.stats["errors"] == 0 and clean.stats["failures"] == 34
    grader.fault_rate(0.1, seed=7)
    faulty = run_eval(tmp_path, suite(100), "-j", "16")
    assert sum(grader.injected.values()) >= 5 and len(grader.injected) >= 4  # several kinds were hit
    assert faulty.stats["errors"] == 0, [r["error"] for r in faulty.rows if r["error"]]
    assert verdicts(faulty) == verdicts(clean)


def test_half_the_calls_failing_loses_no_row_and_passes_nothing_falsely(tmp_path: Path, grader: LLMServer) -> None:
    clean = verdicts(run_eval(tmp_path, suite(60), "-j", "16"))
    grader.fault_rate(0.5, seed=3)
    faulty = run_eval(tmp_path, suite(60), "-j", "16")
    assert faulty.code == 1
    got = verdicts(faulty)
    assert got.keys() == clean.keys()  # no row lost
    errored = [name for name, (status, _) in got.items() if status == "error"]
    assert errored and faulty.stats["errors"] == len(errored)
    for name, outcome in got.items():
        assert outcome == clean[name] or outcome == ("error", 0.0)  # a verdict, or an error: nothing else
    for row in faulty.rows:
        if row["metadata"]["ciGrade"]["status"] == "error":
            assert not row["success"] and "grader call to openai:chat:gpt-5.6-sol failed" in row["gradingResult"]["reason"]


def test_a_grader_reply_without_what_it_needs_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    """200 replies lacking the answer, on every retry: never a verdict, never inverted."""
    openai_env.fail(200, path="/v1/moderations", body={"id": "modr-x", "model": "omni-moderation-latest"}, times=20)
    openai_env.fail(path="/v1/chat/completions", kind="no_choices", times=20)
    openai_env.fail(path="/v1/embeddings", kind="empty", times=20)
    cases = {
        "moderation": {"type": "moderation"},
        "not-moderation": {"type": "not-moderation"},
        "rubric": {"type": "llm-rubric", "value": "is polite"},
        "not-rubric": {"type": "not-llm-rubric", "value": "is polite"},
        "similar": {"type": "similar", "value": "hello"},
    }
    tests = [{"description": name, "vars": {"q": name}, "providerOutput": "hello there", "assert": [assertion]} for name, assertion in cases.items()]
    rows = evaluate(tmp_path, {"prompts": ["{{q}}"], "providers": ["echo"], "tests": tests})
    outcomes = {row["description"]: first(row) for row in rows}
    for name, outcome in outcomes.items():
        assert (outcome.status, outcome.passed) == ("error", False), name
    assert outcomes["moderation"].reason.endswith("API returned no moderation results (after retries)")
    assert "no choices" in outcomes["rubric"].reason and "(after retries)" in outcomes["rubric"].reason
    assert "malformed body" in outcomes["similar"].reason
    assert len(openai_env.requests_to("/v1/moderations")) == 8  # each of the two calls was tried 4 times


def test_empty_completions_are_retried_until_the_model_says_something(tmp_path: Path, grader: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 completion whose content is "" is a transient fault: 30% of them over 60 rows change nothing."""
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    clean = run_eval(tmp_path, suite(60), "-j", "16")
    grader.fault_rate(0.3, kinds=("empty_content",), seed=5)
    faulty = run_eval(tmp_path, suite(60), "-j", "16")
    assert grader.injected["empty_content"] >= 15
    assert faulty.stats["errors"] == 0, [r["error"] or r["gradingResult"]["reason"] for r in faulty.rows if r["metadata"]["ciGrade"]["status"] == "error"]
    assert verdicts(faulty) == verdicts(clean)


def test_a_target_whose_replies_stay_empty_is_asked_four_times_then_graded_as_it_answered(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    openai_env.fail(kind="empty_content", times=10)
    config = "prompts: ['{{q}}']\nproviders: [openai:chat:target-model]\ntests:\n  - vars: {q: say nothing}\n    assert: [{type: equals, value: ''}]\n"
    result = run_eval(tmp_path, config)
    assert len(openai_env.requests_to("/v1/chat/completions")) == 4
    (row,) = result.rows
    assert (row["metadata"]["ciGrade"]["status"], row["response"]["output"]) == ("pass", "")


def test_an_empty_reply_that_its_finish_reason_explains_is_not_asked_again(tmp_path: Path, openai_env: LLMServer) -> None:
    """The token limit spent before any text (finish_reason "length"): asking again gives the same."""
    openai_env.on_chat("think hard", "", finish_reason="length")
    config = "prompts: ['{{q}}']\nproviders: [openai:chat:target-model]\ntests:\n  - vars: {q: think hard}\n"
    result = run_eval(tmp_path, config)
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1
    assert result.rows[0]["response"]["output"] == ""
