"""`context-faithfulness` through the loopback server: statements, then per-statement verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers.llm_server import LLMServer

QUERY = "What is the return policy?"
CONTEXT = "Returns are accepted for 30 days from purchase. Refunds go to the original card."
ANSWER = "You can return items within 30 days and get cash back."
# the statements call shows the answer; the verdicts call shows the numbered statements
STATEMENTS_CALL = "cash back"
VERDICTS_CALL = "1. S1"


def grade(tmp_path: Path, *assertions: dict[str, Any], variables: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": variables if variables is not None else {"query": QUERY, "context": CONTEXT}, "providerOutput": ANSWER, "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": ["{{query}}"], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


def script(server: LLMServer, statements: int, verdicts: str, usage: dict[str, int] | None = None) -> None:
    server.on_chat(VERDICTS_CALL, verdicts, usage=usage)
    server.on_chat(STATEMENTS_CALL, "\n".join(f"S{i}" for i in range(1, statements + 1)), usage=usage)


def test_statements_then_verdicts_give_the_share_of_supported_statements(tmp_path: Path, openai_env: LLMServer) -> None:
    reply = "Statement 1: stated. Verdict: Yes\nStatement 2: stated. Verdict: Yes\nStatement 3: not stated. Verdict: No\nFinal verdict for each statement in order: Yes. Yes. No."
    script(openai_env, 3, reply, usage={"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25})
    (result,) = grade(tmp_path, {"type": "context-faithfulness", "threshold": 0.6})
    assert (result.status, round(result.score, 4)) == ("pass", 0.6667)
    assert result.reason == "Faithfulness 0.67 is >= 0.6"
    first, second = openai_env.requests_to("/v1/chat/completions")
    first_user = first.json["messages"][-1]["content"]
    assert '<answer id="' in first_user and ANSWER in first_user and QUERY in first_user
    second_user = second.json["messages"][-1]["content"]
    assert "1. S1\n2. S2\n3. S3" in second_user and CONTEXT in second_user and "Statements (3)" in second_user
    meta = result.raw["metadata"]
    assert [s["supported"] for s in meta["statements"]] == [True, True, False]
    assert result.raw["tokensUsed"]["total"] == 50 and result.raw["tokensUsed"]["numRequests"] == 2


def test_threshold_exactly_at_and_just_above_the_score(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 4, "Final verdict for each statement in order: Yes. Yes. No. Yes.")
    at, below = grade(tmp_path, {"type": "context-faithfulness", "threshold": 0.75}, {"type": "context-faithfulness", "threshold": 0.7500001})
    assert (at.status, at.score) == ("pass", 0.75)
    assert (below.status, below.score, below.reason) == ("fail", 0.75, "Faithfulness 0.75 is < 0.7500001")


def test_per_statement_verdicts_without_a_final_line_and_missing_verdicts_count_as_unsupported(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 4, "Statement 1: ok. **Verdict:** Yes\nStatement 2: ok. Verdict: yes\nStatement 3: absent. Verdict: No")
    (result,) = grade(tmp_path, {"type": "context-faithfulness"})
    assert (result.status, result.score) == ("pass", 0.5)  # 2 supported, 1 unsupported, 1 missing
    assert result.raw["metadata"]["missingVerdicts"] == 1


def test_final_verdicts_may_span_lines_and_stop_at_a_blank_line(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 2, "Final verdict for each statement in order:\nNo.\nNo.\n\nI hope this helps.")
    plain, inverse = grade(tmp_path, {"type": "context-faithfulness"}, {"type": "not-context-faithfulness"})
    assert (plain.status, plain.score) == ("fail", 0.0)
    assert (inverse.status, inverse.score) == ("pass", 1.0)


def test_unreadable_extra_or_conflicting_verdicts_are_errors(tmp_path: Path, openai_env: LLMServer) -> None:
    cases = {
        "no verdicts": ("The statements look fine to me.", "could not find any Yes/No verdicts"),
        "unreadable final": ("Final verdict for each statement in order: Yes. Mostly.", "unreadable verdict 'mostly'"),
        "extra": ("Final verdict for each statement in order: Yes. No. Yes.", "gave 3 verdicts for 2 statements"),
        "conflict": ("Statement 1: ok. Verdict: Yes\nStatement 2: ok. Verdict: Yes\nFinal verdict for each statement in order: Yes. No.", "contradicts"),
    }
    for name, (reply, expected) in cases.items():
        openai_env.on_chat(VERDICTS_CALL, reply, times=1)
        openai_env.on_chat(STATEMENTS_CALL, "S1\nS2", times=1)
        (result,) = grade(tmp_path, {"type": "not-context-faithfulness"})
        assert result.status == "error" and result.passed is False, name
        assert expected in result.reason, (name, result.reason)
        assert result.raw["metadata"]["graderReply"] == reply


def test_no_statements_is_an_error_without_a_second_call(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(STATEMENTS_CALL, "```\n\n```")
    (result,) = grade(tmp_path, {"type": "context-faithfulness"})
    assert result.status == "error" and "could not extract context-faithfulness statements" in result.reason
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1


def test_statement_lines_lose_bullets_and_numbers(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(VERDICTS_CALL, "Final verdict for each statement in order: Yes. Yes.")
    openai_env.on_chat(STATEMENTS_CALL, "Statements:\n1. S1 holds\n- S2 holds")
    (result,) = grade(tmp_path, {"type": "context-faithfulness"})
    assert result.score == 1.0
    assert [s["statement"] for s in result.raw["metadata"]["statements"]] == ["S1 holds", "S2 holds"]


def test_a_failing_second_call_is_an_error_carrying_the_first_calls_usage(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(VERDICTS_CALL, "server down", status=500)
    openai_env.on_chat(STATEMENTS_CALL, "S1", usage={"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10})
    (result,) = grade(tmp_path, {"type": "context-faithfulness"})
    assert result.status == "error" and "statement verification call" in result.reason and "500" in result.reason
    assert result.raw["tokensUsed"]["total"] == 10


def test_missing_query_or_context_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    (no_query,) = grade(tmp_path, {"type": "context-faithfulness"}, variables={"context": CONTEXT})
    assert no_query.status == "error" and "needs vars.query" in no_query.reason
    (no_context,) = grade(tmp_path, {"type": "context-faithfulness"}, variables={"query": QUERY})
    assert no_context.status == "error" and "needs a context" in no_context.reason  # no prompt fallback
    assert openai_env.requests_to("/v1/chat/completions") == []


def test_two_item_rubric_prompt_with_its_documented_variables(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("NLI", "Final verdict for each statement in order: Yes. No.")
    openai_env.on_chat("LONGFORM", "A one\nA two")
    rubric = [
        "LONGFORM question={{question}} answer={{answer}} lang={{lang}}",
        {"role": "user", "content": "NLI context={{context}} statements={{statements | join('|')}} lang={{lang}}"},
    ]
    (result,) = grade(tmp_path, {"type": "context-faithfulness", "rubricPrompt": rubric}, variables={"query": QUERY, "context": CONTEXT, "lang": "de"})
    assert result.score == 0.5
    first, second = (r.json["messages"] for r in openai_env.requests_to("/v1/chat/completions"))
    assert first == [{"role": "user", "content": f"LONGFORM question={QUERY} answer={ANSWER} lang=de"}]
    assert second == [{"role": "user", "content": f"NLI context={CONTEXT} statements=A one|A two lang=de"}]


def test_a_rubric_prompt_that_is_not_two_prompts_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    (text,) = grade(tmp_path, {"type": "context-faithfulness"}, options={"rubricPrompt": "Grade {{output}}"})
    assert text.status == "error" and "must be a list of two prompts" in text.reason
    (bad_item,) = grade(tmp_path, {"type": "context-faithfulness", "rubricPrompt": ["ok {{answer}}", {"role": "user"}]})
    assert bad_item.status == "error" and "item 2" in bad_item.reason
    assert openai_env.requests_to("/v1/chat/completions") == []
