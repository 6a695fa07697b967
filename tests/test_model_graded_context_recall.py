"""`context-recall` through the loopback server: [Attributed]/[Not Attributed] lines, prompt fallback, overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers.llm_server import LLMServer

CONTEXT = "Purchases under $500 need no approval. Talk to Fred before submitting anything."
TRUTH = "max purchase price without approval is $500. Talk to Fred before submitting anything."


def grade(tmp_path: Path, *assertions: dict[str, Any], variables: dict[str, Any] | None = None, output: Any = "Up to $500.", prompt: str = "Respond to {{query}}", options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": variables if variables is not None else {"query": "max purchase?", "context": CONTEXT}, "providerOutput": output, "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": [prompt], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


def lines(*verdicts: bool) -> str:
    return "\n".join(f"{i}. sentence {i} | reason {'[Attributed]' if ok else '[Not Attributed]'}" for i, ok in enumerate(verdicts, 1))


def test_all_attributed_passes_and_the_grader_sees_fenced_context_and_ground_truth(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(True, True))
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH, "threshold": 0.9})
    assert (result.status, result.score) == ("pass", 1.0)
    assert result.reason == "Recall 1.00 is >= 0.9"
    (request,) = openai_env.requests_to("/v1/chat/completions")
    assert "response_format" not in request.json  # a free-text contract
    user = request.json["messages"][-1]["content"]
    assert '<context id="' in user and CONTEXT in user and '<ground_truth id="' in user
    meta = result.raw["metadata"]
    assert meta["context"] == CONTEXT and meta["contextSource"] == "vars.context"
    assert meta["totalSentences"] == 2 and meta["attributedSentences"] == 2
    assert meta["sentenceAttributions"][0] == {"sentence": "1. sentence 1 | reason [Attributed]", "attributed": True}


def test_threshold_exactly_at_and_just_above_the_recall(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(True, True, True, False))
    at, below, default = grade(
        tmp_path,
        {"type": "context-recall", "value": TRUTH, "threshold": 0.75},
        {"type": "context-recall", "value": TRUTH, "threshold": 0.7500001},
        {"type": "context-recall", "value": TRUTH},
    )
    assert (at.status, at.score) == ("pass", 0.75)
    assert (below.status, below.reason) == ("fail", "Recall 0.75 is < 0.7500001")
    assert default.status == "pass" and default.reason == "Recall 0.75 is >= 0.5"


def test_not_context_recall_inverts_a_verdict(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(False, False, True, False))
    plain, inverse = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, {"type": "not-context-recall", "value": TRUTH})
    assert (plain.status, plain.score) == ("fail", 0.25)
    assert (inverse.status, inverse.score) == ("pass", 0.75)


def test_markers_are_case_insensitive_and_a_lines_last_marker_decides(tmp_path: Path, openai_env: LLMServer) -> None:
    reply = "Here is my analysis.\n1. A | first I thought [not attributed], but it is stated [ATTRIBUTED]\n2. B | absent [Not  Attributed]\n"
    openai_env.on_chat(TRUTH, reply)
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH})
    assert result.score == 0.5 and result.raw["metadata"]["totalSentences"] == 2


def test_a_reply_without_markers_is_an_error_never_inverted(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, "Both sentences are found in the context.")
    plain, inverse = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, {"type": "not-context-recall", "value": TRUTH})
    for result in (plain, inverse):
        assert result.status == "error" and result.passed is False
        assert result.reason == "grader returned no [Attributed]/[Not Attributed] classifications"
        assert result.raw["metadata"]["graderReply"] == "Both sentences are found in the context."


def test_without_context_the_prompt_is_the_context(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(True))
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, variables={"query": "q"}, prompt="Policy: Fred approves. {{query}}")
    assert result.status == "pass"
    assert result.raw["metadata"]["contextSource"] == "prompt" and result.raw["metadata"]["context"] == "Policy: Fred approves. q"
    assert "Policy: Fred approves. q" in openai_env.requests_to("/v1/chat/completions")[0].json["messages"][-1]["content"]


def test_a_list_context_is_joined_with_blank_lines(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(True))
    no_expansion = {"disableVarExpansion": True}  # promptfoo would otherwise make one test per list item
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, variables={"context": ["chunk one", "chunk two"]}, options=no_expansion)
    assert result.raw["metadata"]["context"] == "chunk one\n\nchunk two"
    assert "chunk one\n\nchunk two" in openai_env.requests_to("/v1/chat/completions")[0].json["messages"][-1]["content"]


def test_bad_inputs_are_errors_that_say_what_is_wrong(tmp_path: Path, openai_env: LLMServer) -> None:
    no_value, blank_value = grade(tmp_path, {"type": "context-recall"}, {"type": "context-recall", "value": "  "})
    assert no_value.status == "error" and "needs a value: the ground-truth" in no_value.reason
    assert blank_value.status == "error"
    (obj,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, variables={"context": {"a": 1}})
    assert obj.status == "error" and obj.reason == "vars.context must be a string or a list of strings, got an object"
    no_expansion = {"disableVarExpansion": True}
    (mixed,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, variables={"context": ["ok", 3]}, options=no_expansion)
    assert mixed.status == "error" and mixed.reason == "vars.context must be a string or a list of strings, but item 1 is a number"
    (empty_chunk,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, variables={"context": ["ok", " "]}, options=no_expansion)
    assert empty_chunk.status == "error" and "non-empty context" in empty_chunk.reason
    assert openai_env.requests_to("/v1/chat/completions") == []


def test_rubric_prompt_override_gets_context_ground_truth_and_test_vars(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("CUSTOM", "1. x [Attributed]\n2. y [Not Attributed]")
    rubric = "CUSTOM ctx={{context}} gt={{groundTruth}} q={{query}}"
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH, "rubricPrompt": rubric})
    assert result.score == 0.5
    sent = openai_env.requests_to("/v1/chat/completions")[0].json["messages"]
    assert sent == [{"role": "user", "content": f"CUSTOM ctx={CONTEXT} gt={TRUTH} q=max purchase?"}]


def test_rubric_prompt_from_a_file_at_default_test_level(tmp_path: Path, openai_env: LLMServer) -> None:
    (tmp_path / "recall.txt").write_text("FILE-PROMPT {{ groundTruth }}")
    openai_env.on_chat("FILE-PROMPT", "1. x [Attributed]")
    test = {"vars": {"context": CONTEXT}, "providerOutput": "x", "assert": [{"type": "context-recall", "value": TRUTH}]}
    config = {"prompts": ["p"], "providers": ["echo"], "defaultTest": {"options": {"rubricPrompt": "file://recall.txt"}}, "tests": [test]}
    (row,) = evaluate(tmp_path, config)
    assert outcome(row["gradingResult"]["componentResults"][0]).status == "pass"
    assert openai_env.requests_to("/v1/chat/completions")[0].json["messages"] == [{"role": "user", "content": f"FILE-PROMPT {TRUTH}"}]


def test_the_seeds_custom_prompt_with_other_markers_is_a_clear_error(tmp_path: Path, openai_env: LLMServer) -> None:
    seed_prompt = (
        "Context: {{context}}\nGround Truth: {{groundTruth}}\nBreak down the ground truth into atomic statements.\n"
        "For each statement, mark it with [FOUND] if it appears in the context,\nor [NOT FOUND] if it does not.\n"
    )
    openai_env.on_chat("Break down the ground truth", "1. max purchase is $500 [FOUND]")
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH}, options={"rubricPrompt": seed_prompt})
    assert result.status == "error" and "no [Attributed]/[Not Attributed]" in result.reason
    assert openai_env.requests_to("/v1/chat/completions")[0].json["messages"][0]["content"].startswith(f"Context: {CONTEXT}\nGround Truth: {TRUTH}")


def test_grader_failures_are_errors_and_rate_limits_are_retried(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(True))
    openai_env.fail(429, times=2, path="/v1/chat/completions", retry_after="0")
    (retried,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH})
    assert retried.status == "pass" and len(openai_env.requests_to("/v1/chat/completions")) == 3
    openai_env.fail(500, times=20, path="/v1/chat/completions")
    (failed,) = grade(tmp_path, {"type": "not-context-recall", "value": TRUTH})
    assert failed.status == "error" and "500" in failed.reason and failed.passed is False


def test_an_empty_grader_reply_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, "")
    (empty,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH})
    assert empty.status == "error" and "returned an empty reply" in empty.reason


def test_usage_and_grader_are_recorded(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(TRUTH, lines(True), usage={"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42})
    (result,) = grade(tmp_path, {"type": "context-recall", "value": TRUTH, "provider": "openai:chat:small-judge"})
    assert result.raw["tokensUsed"]["total"] == 42 and result.raw["tokensUsed"]["numRequests"] == 1
    assert result.raw["metadata"]["ciGrade"]["grader"] == "openai:chat:small-judge"
    assert openai_env.requests_to("/v1/chat/completions")[0].json["model"] == "small-judge"
    assert result.score == pytest.approx(1.0)
