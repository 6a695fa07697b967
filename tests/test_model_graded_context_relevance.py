"""`context-relevance` through the loopback server: quoted context units over all units, strict about quotes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers.llm_server import LLMServer

QUERY = "How long is maternity leave?"
PROSE = "Maternity leave lasts 4 months. Elephants get 22 months. The cafeteria opens at 8. Parking is free."
NO_EXPANSION = {"disableVarExpansion": True}


def grade(tmp_path: Path, *assertions: dict[str, Any], variables: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": variables if variables is not None else {"query": QUERY, "context": PROSE}, "providerOutput": "Four months.", "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": ["{{query}}"], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


def test_half_the_sentences_quoted_is_exactly_the_default_threshold(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, "Maternity leave lasts 4 months.\nElephants get 22 months.")
    at, below = grade(tmp_path, {"type": "context-relevance"}, {"type": "context-relevance", "threshold": 0.5000001})
    assert (at.status, at.score) == ("pass", 0.5)
    assert at.reason == "Context relevance 0.50 is >= 0.5"
    assert (below.status, below.reason) == ("fail", "Context relevance 0.50 is < 0.5000001")
    meta = at.raw["metadata"]
    assert meta["totalContextUnits"] == 4 and meta["relevantSentenceCount"] == 2
    assert meta["insufficientInformation"] is False
    user = openai_env.requests_to("/v1/chat/completions")[0].json["messages"][-1]["content"]
    assert '<query id="' in user and '<context id="' in user and PROSE in user


def test_lines_of_a_multi_line_context_and_chunks_of_a_list_are_the_units(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, "- Leave: 4 months\n- leave: 4 MONTHS")  # list markers stripped, duplicates count once
    (lines,) = grade(tmp_path, {"type": "context-relevance"}, variables={"query": QUERY, "context": "Leave: 4 months\nParking: free\nCafe: 8am"})
    assert lines.score == 1 / 3 and lines.raw["metadata"]["contextUnits"] == ["Leave: 4 months", "Parking: free", "Cafe: 8am"]
    chunks = ["Leave: 4 months. Ask HR for forms.", "Parking: free"]
    (listed,) = grade(tmp_path, {"type": "context-relevance"}, variables={"query": QUERY, "context": chunks}, options=NO_EXPANSION)
    assert listed.score == 0.5 and listed.raw["metadata"]["totalContextUnits"] == 2


def test_only_quotes_count_and_paraphrases_are_ignored(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, 'Candidate sentences:\n1. "Maternity leave lasts 4 months."\n2. Mothers get a third of a year off.')
    (result,) = grade(tmp_path, {"type": "context-relevance"})
    assert result.score == 0.25 and result.status == "fail"
    assert result.raw["metadata"]["extractedSentences"] == ["Candidate sentences:", "Maternity leave lasts 4 months.", "Mothers get a third of a year off."]


def test_insufficient_information_scores_zero_and_not_inverts_it(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, "Insufficient Information")
    plain, inverse = grade(tmp_path, {"type": "context-relevance"}, {"type": "not-context-relevance"})
    assert (plain.status, plain.score) == ("fail", 0.0)
    assert plain.raw["metadata"]["insufficientInformation"] is True
    assert (inverse.status, inverse.score) == ("pass", 1.0)


def test_a_reply_that_quotes_nothing_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, "The policy is generous and covers several months.")
    plain, inverse = grade(tmp_path, {"type": "context-relevance"}, {"type": "not-context-relevance"})
    for result in (plain, inverse):
        assert result.status == "error" and result.passed is False
        assert "does not quote the provided context" in result.reason


def test_quotes_plus_insufficient_information_is_a_conflict(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, "Maternity leave lasts 4 months.\nInsufficient Information")
    (result,) = grade(tmp_path, {"type": "context-relevance"})
    assert result.status == "error" and "both quotes the context and says 'Insufficient Information'" in result.reason


def test_missing_query_or_context_names_what_is_missing(tmp_path: Path, openai_env: LLMServer) -> None:
    (no_query,) = grade(tmp_path, {"type": "context-relevance"}, variables={"context": PROSE})
    assert no_query.status == "error"
    assert no_query.reason == "context-relevance needs vars.query (the question the output answers) as a string; vars.query is missing"
    (number_query,) = grade(tmp_path, {"type": "context-relevance"}, variables={"query": 3, "context": PROSE})
    assert number_query.reason.endswith("vars.query is a number")
    (no_context,) = grade(tmp_path, {"type": "context-relevance"}, variables={"query": QUERY})
    assert no_context.status == "error"
    assert no_context.reason == "context-relevance needs a context: set vars.context (a string or a list of strings) or the assertion's contextTransform"
    (blank,) = grade(tmp_path, {"type": "context-relevance"}, variables={"query": QUERY, "context": "   "})
    assert blank.status == "error" and blank.reason == "context-relevance needs a non-empty context, but vars.context gave an empty string"
    assert openai_env.requests_to("/v1/chat/completions") == []


def test_rubric_prompt_override_sees_only_context_and_query(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("PICK", "Parking is free.")
    rubric = [{"role": "system", "content": "PICK sentences"}, {"role": "user", "content": "q={{query}} c={{context}} extra={{extra}} out={{output}}"}]
    (result,) = grade(tmp_path, {"type": "context-relevance", "rubricPrompt": rubric}, variables={"query": QUERY, "context": PROSE, "extra": "hidden"})
    assert result.score == 0.25
    sent = openai_env.requests_to("/v1/chat/completions")[0].json["messages"]
    assert sent[1] == {"role": "user", "content": f"q={QUERY} c={PROSE} extra= out="}


def test_grader_errors_are_not_inverted(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(QUERY, "Maternity leave lasts 4 months.", status=503)
    (result,) = grade(tmp_path, {"type": "not-context-relevance"})
    assert result.status == "error" and "503" in result.reason and result.passed is False
