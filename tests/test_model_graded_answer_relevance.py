"""`answer-relevance` through the loopback server: 3 question-generation calls, 4 embeddings, mean cosine."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers.llm_server import LLMServer

ANSWER = "Purchases up to $500 need no approval."
QUERY = "max purchase without approval"
Q_SAME = "What purchases need no approval?"
Q_08 = "Which amount needs approval?"
Q_06 = "Who approves purchases?"
E1 = [1.0, 0.0, 0.0, 0.0, 0.0]


def grade(tmp_path: Path, *assertions: dict[str, Any], variables: dict[str, Any] | None = None, prompt: str = "Answer: {{query}}", options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": variables if variables is not None else {"query": QUERY}, "providerOutput": ANSWER, "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": [prompt], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


@pytest.fixture
def server(openai_env: LLMServer) -> LLMServer:
    openai_env.set_embedding(QUERY, E1)
    openai_env.set_embedding(Q_SAME, E1)
    openai_env.set_embedding(Q_08, [4.0, 3.0, 0.0, 0.0, 0.0])
    openai_env.set_embedding(Q_06, [3.0, 4.0, 0.0, 0.0, 0.0])
    return openai_env


def questions(*texts: str) -> Any:
    cycle = itertools.cycle(texts)
    return lambda request: next(cycle)


def test_identical_questions_score_one_with_three_chat_and_four_embedding_calls(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat(ANSWER, Q_SAME)
    (result,) = grade(tmp_path, {"type": "answer-relevance"})
    assert (result.status, result.score) == ("pass", pytest.approx(1.0))
    assert result.reason == "Relevance 1.00 is greater than or equal to threshold 0.5"
    chats = server.requests_to("/v1/chat/completions")
    assert len(chats) == 3
    user = chats[0].json["messages"][-1]["content"]
    assert ANSWER in user and '<answer id="' in user  # the output is fenced
    assert len({json.dumps(c.json["messages"]) for c in chats}) == 3  # three distinct requests (and cache keys)
    assert sorted(r.json["input"] for r in server.requests_to("/v1/embeddings")) == sorted([QUERY, Q_SAME, Q_SAME, Q_SAME])
    meta = result.raw["metadata"]
    assert meta["generatedQuestions"] == [{"question": Q_SAME, "similarity": pytest.approx(1.0)}] * 3
    assert meta["averageSimilarity"] == pytest.approx(1.0) and meta["threshold"] == 0.5
    assert meta["ciGrade"]["grader"] == "openai:chat:gpt-5.6-sol, openai:embedding:text-embedding-3-large"


def test_mean_cosine_at_and_just_below_the_threshold(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat(ANSWER, questions(Q_SAME, Q_08, Q_06), times=3)  # cosines 1, 0.8, 0.6 -> mean 0.8
    (at,) = grade(tmp_path, {"type": "answer-relevance", "threshold": 0.8})
    server.on_chat(ANSWER, questions(Q_SAME, Q_08, Q_06), times=3)
    (below,) = grade(tmp_path, {"type": "answer-relevance", "threshold": 0.8000001})
    assert (at.status, at.score) == ("pass", pytest.approx(0.8))
    assert (below.status, below.score) == ("fail", pytest.approx(0.8))
    assert below.reason == "Relevance 0.80 is less than threshold 0.8000001"


def test_default_threshold_fails_an_unrelated_answer_and_not_inverts_it(tmp_path: Path, server: LLMServer) -> None:
    unrelated = "What colour is the sky?"
    server.set_embedding(unrelated, [0.0, 1.0, 0.0, 0.0, 0.0])
    server.on_chat(ANSWER, unrelated)
    plain, inverse = grade(tmp_path, {"type": "answer-relevance"}, {"type": "not-answer-relevance"})
    assert (plain.status, plain.score) == ("fail", pytest.approx(0.0))
    assert plain.reason == "Relevance 0.00 is less than threshold 0.5"
    assert (inverse.status, inverse.score) == ("pass", pytest.approx(1.0))


def test_the_prompt_is_the_query_when_vars_query_is_missing(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat(ANSWER, Q_06)
    server.set_embedding("Tell me about approvals", [3.0, 4.0, 0.0, 0.0, 0.0])
    (result,) = grade(tmp_path, {"type": "answer-relevance"}, variables={"topic": "approvals"}, prompt="Tell me about {{topic}}")
    assert (result.status, result.score) == ("pass", pytest.approx(1.0))
    assert "Tell me about approvals" in [r.json["input"] for r in server.requests_to("/v1/embeddings")]


def test_missing_query_and_prompt_is_an_error(tmp_path: Path, server: LLMServer) -> None:
    (result,) = grade(tmp_path, {"type": "answer-relevance"}, variables={"blank": " "}, prompt="{{blank}}")
    assert result.status == "error" and "needs a query" in result.reason
    assert server.requests_to("/v1/chat/completions") == []


def test_grader_errors_are_errors_and_never_inverted(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat(ANSWER, Q_SAME)
    server.fail(500, times=30, path="/v1/chat/completions")
    plain, inverse = grade(tmp_path, {"type": "answer-relevance"}, {"type": "not-answer-relevance"})
    for result in (plain, inverse):
        assert result.status == "error" and result.passed is False and result.score == 0
        assert "question generation call to openai:chat:gpt-5.6-sol failed" in result.reason and "500" in result.reason


def test_rate_limits_are_retried(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat(ANSWER, Q_SAME)
    server.fail(429, times=2, path="/v1/chat/completions", retry_after="0")
    server.fail(429, times=1, path="/v1/embeddings", retry_after="0")
    (result,) = grade(tmp_path, {"type": "answer-relevance"})
    assert result.status == "pass"
    assert len(server.requests_to("/v1/chat/completions")) == 5
    assert len(server.requests_to("/v1/embeddings")) == 5


def test_an_empty_question_is_asked_again(tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    server.on_chat(ANSWER, questions(Q_SAME, "   ", Q_SAME))
    (result,) = grade(tmp_path, {"type": "answer-relevance"})
    assert result.status == "pass" and len(server.requests_to("/v1/chat/completions")) == 4


def test_a_question_that_stays_empty_is_an_error(tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    server.on_chat(ANSWER, "   ")
    (result,) = grade(tmp_path, {"type": "answer-relevance"})
    assert result.status == "error" and "empty reply" in result.reason
    assert len(server.requests_to("/v1/chat/completions")) == 12  # three questions, each asked four times


def test_embedding_failure_after_questions_keeps_the_chat_usage(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat(ANSWER, Q_SAME, usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
    server.fail(400, times=1, path="/v1/embeddings", body={"error": {"message": "input too long", "type": "invalid_request_error"}})
    (result,) = grade(tmp_path, {"type": "answer-relevance"})
    assert result.status == "error" and "input too long" in result.reason
    assert result.raw["tokensUsed"]["total"] >= 30


def test_rubric_prompt_replaces_question_generation_and_sees_only_answer(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat("CUSTOM-GEN", Q_SAME)
    rubric = "CUSTOM-GEN answer=[{{answer}}] query=[{{query}}] output=[{{output}}]"
    (result,) = grade(tmp_path, {"type": "answer-relevance", "rubricPrompt": rubric})
    assert result.status == "pass"
    requests = server.requests_to("/v1/chat/completions")
    assert [r.json["messages"] for r in requests] == [[{"role": "user", "content": f"CUSTOM-GEN answer=[{ANSWER}] query=[] output=[]"}]] * 3


def test_test_level_rubric_prompt_as_messages(tmp_path: Path, server: LLMServer) -> None:
    server.on_chat("Frage", Q_SAME)
    messages = [{"role": "system", "content": "Schreibe die Frage."}, {"role": "user", "content": "Frage zu: {{ answer }}"}]
    (result,) = grade(tmp_path, {"type": "answer-relevance"}, options={"rubricPrompt": messages})
    assert result.status == "pass"
    sent = server.requests_to("/v1/chat/completions")[0].json["messages"]
    assert sent == [{"role": "system", "content": "Schreibe die Frage."}, {"role": "user", "content": f"Frage zu: {ANSWER}"}]


def test_token_usage_sums_three_chat_and_four_embedding_calls(tmp_path: Path, server: LLMServer) -> None:
    # 20-character texts: the server counts len // 4 = 5 tokens per embedded text
    query, question = "q" * 20, "Is it about q q q q?"
    assert len(question) == 20
    server.set_embedding(query, E1)
    server.set_embedding(question, E1)
    server.on_chat(ANSWER, question, usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
    (result,) = grade(tmp_path, {"type": "answer-relevance"}, variables={"query": query})
    usage = result.raw["tokensUsed"]
    assert usage["total"] == 3 * 10 + 4 * 5
    assert usage["prompt"] == 3 * 7 + 4 * 5 and usage["completion"] == 3 * 3
    assert usage["numRequests"] == 7
    assert result.raw["metadata"]["ciGrade"]["cost"] > 0  # priced as gpt-4.1 + text-embedding-3-large


def test_text_and_embedding_graders_on_two_servers(tmp_path: Path, server: LLMServer) -> None:
    with LLMServer() as embeddings_server:
        embeddings_server.set_embedding(QUERY, E1)
        embeddings_server.set_embedding(Q_08, [4.0, 3.0, 0.0, 0.0, 0.0])
        server.on_chat(ANSWER, Q_08)
        provider = {
            "text": {"id": "openai:chat:judge-model", "config": {"apiBaseUrl": server.openai_base_url}},
            "embedding": {"id": "openai:embedding:embed-model", "config": {"apiBaseUrl": embeddings_server.openai_base_url}},
        }
        (result,) = grade(tmp_path, {"type": "answer-relevance"}, options={"provider": provider})
        assert (result.status, result.score) == ("pass", pytest.approx(0.8))
        assert [r.json["model"] for r in server.requests_to("/v1/chat/completions")] == ["judge-model"] * 3
        assert server.requests_to("/v1/embeddings") == []
        assert [r.json["model"] for r in embeddings_server.requests_to("/v1/embeddings")] == ["embed-model"] * 4
        assert embeddings_server.requests_to("/v1/chat/completions") == []
        assert result.raw["metadata"]["ciGrade"]["grader"] == "openai:chat:judge-model, openai:embedding:embed-model"


def test_a_single_chat_grader_embeds_with_its_vendors_default_model(tmp_path: Path, server: LLMServer) -> None:
    (result,) = grade(tmp_path, {"type": "answer-relevance", "provider": "openai:chat:gpt-4.1-mini"})
    assert result.raw["metadata"]["ciGrade"]["grader"] == "openai:chat:gpt-4.1-mini, openai:embedding:text-embedding-3-large"
    assert {r.json["model"] for r in server.requests_to("/v1/chat/completions")} == {"gpt-4.1-mini"}
    assert {r.json["model"] for r in server.requests_to("/v1/embeddings")} == {"text-embedding-3-large"}
    assert len(server.requests_to("/v1/embeddings")) == 4
