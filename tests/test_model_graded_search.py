"""search-rubric: a web-search grader by default, configured graders kept (and flagged), llm-rubric verdict rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.model_graded_helpers import all_text, fenced_blocks, grader_calls, run_eval, status
from tests.servers import anthropic_server
from tests.servers.llm_server import LLMServer, Recorded, Response

ECHO = """
prompts: ['{{out}}']
providers: [echo]
"""


def one(value: str = "names the current CEO", extra: str = "", out: str = "Satya Nadella is the CEO of Microsoft") -> str:
    return (
        ECHO
        + f"""
tests:
  - vars: {{out: {out}}}
    assert:
      - {{type: search-rubric, value: {value}{extra}}}
"""
    )


def test_default_is_openai_responses_with_web_search(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("names the current CEO", {"reason": "Search confirms Nadella is CEO.", "pass": True, "score": 1})
    result = run_eval(tmp_path, one())
    component = result.component()
    assert component["pass"] is True and component["reason"] == "Search confirms Nadella is CEO."
    assert component["metadata"]["webSearch"] is True
    assert component["metadata"]["searchProvider"] == "openai:responses:gpt-5.6-terra"
    assert component["metadata"]["ciGrade"]["grader"] == "openai:responses:gpt-5.6-terra"
    (body,) = grader_calls(openai_env, "/v1/responses")
    assert body["model"] == "gpt-5.6-terra" and body["tools"] == [{"type": "web_search_preview"}]
    assert "text" not in body  # no forced JSON format, so the search tool stays usable
    assert grader_calls(openai_env) == []
    assert fenced_blocks(all_text(body))[0][1] == "Satya Nadella is the CEO of Microsoft"
    assert component["tokensUsed"]["total"] > 0


def test_search_results_from_the_responses_api_are_recorded(tmp_path: Path, openai_env: LLMServer) -> None:
    def responses(recorded: Recorded) -> Response:
        text = '{"reason": "Two sources agree.", "pass": true, "score": 0.9}'
        return Response(
            200,
            json={
                "id": "resp-1",
                "object": "response",
                "created_at": 0,
                "model": "gpt-4.1",
                "status": "completed",
                "output": [
                    {"type": "web_search_call", "id": "ws-1", "status": "completed", "action": {"type": "search", "query": "microsoft ceo"}},
                    {
                        "type": "message",
                        "id": "msg-1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [
                            {
                                "type": "output_text",
                                "text": text,
                                "annotations": [{"type": "url_citation", "url": "https://example.com/ceo", "title": "CEO page", "start_index": 0, "end_index": 5}],
                            }
                        ],
                    },
                ],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {"input_tokens": 50, "output_tokens": 7, "total_tokens": 57, "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
            },
        )

    openai_env.route("POST", "/v1/responses", responses)
    result = run_eval(tmp_path, one(extra=", threshold: 0.9"))
    component = result.component()
    assert component["pass"] is True and component["score"] == 0.9
    assert component["metadata"]["searchResults"] == [{"url": "https://example.com/ceo", "title": "CEO page"}]
    assert component["tokensUsed"]["total"] == 57


def test_configured_grader_without_search_is_used_and_flagged(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("names the current CEO", {"reason": "Nadella, as far as I know.", "pass": True, "score": 1})
    result = run_eval(
        tmp_path,
        ECHO
        + """
defaultTest:
  options:
    provider: openai:chat:gpt-4.1-mini
tests:
  - vars: {out: Satya Nadella}
    assert:
      - {type: search-rubric, value: names the current CEO}
""",
    )
    component = result.component()
    assert component["pass"] is True
    assert component["metadata"]["webSearch"] is False
    assert "openai:chat:gpt-4.1-mini, which has no web search tool" in component["reason"]
    assert [b["model"] for b in grader_calls(openai_env)] == ["gpt-4.1-mini"]
    assert grader_calls(openai_env, "/v1/responses") == []


def test_configured_search_grader_is_used_as_configured(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("names the current CEO", {"reason": "ok", "pass": True, "score": 1})
    result = run_eval(
        tmp_path,
        ECHO
        + """
tests:
  - vars: {out: Satya Nadella}
    assert:
      - type: search-rubric
        value: names the current CEO
        provider:
          id: openai:responses:gpt-4.1-mini
          config: {tools: [{type: web_search, search_context_size: low}]}
""",
    )
    assert result.component()["metadata"]["webSearch"] is True
    (body,) = grader_calls(openai_env, "/v1/responses")
    assert body["model"] == "gpt-4.1-mini" and body["tools"] == [{"type": "web_search", "search_context_size": "low"}]


def test_only_anthropic_key_grades_with_claude_web_search(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    anthropic_server.install(llm_server, lambda request: 'I searched.\n{"reason": "Bitcoin price is stale.", "pass": false, "score": 0}')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.url)
    result = run_eval(tmp_path, one(value="gives the current bitcoin price", out="Bitcoin is $3"))
    component = result.component()
    assert component["pass"] is False and component["reason"] == "Bitcoin price is stale."
    assert component["metadata"]["searchProvider"] == "anthropic:messages:claude-sonnet-4-6"
    (recorded,) = llm_server.requests_to("/v1/messages")
    assert recorded.json["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]
    assert "tool_choice" not in recorded.json


@pytest.mark.parametrize(
    ("reply", "threshold", "inverse", "passed", "score"),
    [
        ({"reason": "r", "pass": True, "score": 0.7}, 0.7, False, True, 0.7),
        ({"reason": "r", "pass": True, "score": 0.69}, 0.7, False, False, 0.69),
        ({"reason": "r", "pass": True}, None, False, True, 1.0),
        ({"reason": "r", "pass": False}, None, False, False, 0.0),
        ({"reason": "r", "pass": True, "score": 0}, None, False, True, 0.0),
        ({"reason": "r", "pass": True, "score": 0}, 1, False, False, 0.0),
        ({"reason": "r", "pass": True, "score": 0.75}, None, True, False, 0.25),
        ({"reason": "r", "pass": False, "score": 0.0}, None, True, True, 1.0),
    ],
)
def test_verdicts_thresholds_and_not(tmp_path: Path, openai_env: LLMServer, reply: dict, threshold: float | None, inverse: bool, passed: bool, score: float) -> None:
    openai_env.on_chat("names the current CEO", reply)
    kind = "not-search-rubric" if inverse else "search-rubric"
    extra = f", threshold: {threshold}" if threshold is not None else ""
    result = run_eval(tmp_path, one(extra=extra).replace("type: search-rubric", f"type: {kind}"))
    component = result.component()
    assert (component["pass"], component["score"]) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ('{"reason": "no verdict here", "score": 1}', "no JSON object with 'pass'"),
        ('{"reason": "r", "pass": "perhaps"}', "'pass' is not true or false"),
        ('{"pass": true, "reason": "a"} and also {"pass": false, "reason": "b"}', "conflicting"),
        ("I could not search today.", "no JSON object with 'pass'"),
    ],
)
def test_malformed_replies_are_errors_even_under_not(tmp_path: Path, openai_env: LLMServer, reply: str, message: str) -> None:
    openai_env.on_chat("names the current CEO", reply)
    result = run_eval(tmp_path, one().replace("type: search-rubric", "type: not-search-rubric"))
    component = result.component()
    assert status(component) == "error" and component["pass"] is False and message in component["reason"]
    assert result.rows[0]["failureReason"] == 2


def test_http_errors_and_retries(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(503, times=20, path="/v1/responses")
    result = run_eval(tmp_path, one())
    assert status(result.component()) == "error" and "503" in result.component()["reason"]
    assert len(openai_env.requests_to("/v1/responses")) == 4


def test_rate_limit_retry_then_pass(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("names the current CEO", {"reason": "ok", "pass": True, "score": 1})
    openai_env.fail(429, times=1, path="/v1/responses", retry_after="0.2")
    started = time.perf_counter()
    result = run_eval(tmp_path, one())
    assert time.perf_counter() - started >= 0.2
    assert result.component()["pass"] is True
    assert len(openai_env.requests_to("/v1/responses")) == 2


def test_value_must_be_a_string(tmp_path: Path, openai_env: LLMServer) -> None:
    result = run_eval(
        tmp_path,
        ECHO
        + """
tests:
  - vars: {out: x}
    assert:
      - {type: search-rubric}
""",
    )
    assert status(result.component()) == "error" and "needs a string value" in result.component()["reason"]
    assert openai_env.requests == []


def test_rubric_prompt_override_and_vars(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("SEARCH FOR", {"reason": "ok", "pass": True})
    result = run_eval(
        tmp_path,
        ECHO
        + """
tests:
  - vars: {out: Nadella, company: Microsoft, rubric: shadowed}
    assert:
      - type: search-rubric
        value: names the CEO of {{company}}
        rubricPrompt: 'SEARCH FOR {{company}}: {{output}} / {{rubric}}'
""",
    )
    assert result.component()["pass"] is True
    (body,) = grader_calls(openai_env, "/v1/responses")
    assert body["input"] == [{"role": "user", "content": "SEARCH FOR Microsoft: Nadella / names the CEO of Microsoft"}]


def test_a_failed_search_call_is_named_as_the_grader_call(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(400, times=20, path="/v1/responses")
    result = run_eval(tmp_path, one())
    reason = result.component()["reason"]
    assert status(result.component()) == "error" and reason.startswith("grader call to openai:"), reason
