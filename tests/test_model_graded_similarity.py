"""`similar` (cosine, dot, euclidean) through the loopback OpenAI embeddings endpoint, with scripted vectors."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ci_grade.errors import InputRejected
from ci_grade.grading.model_graded.similarity import cosine, dot, euclidean, judge
from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers.llm_server import LLMServer

OUT = "the output text"
# 5-dimensional integer vectors with exact cosines: cos(OUT, AT_075) = 3/4, cos(OUT, AT_08) = 4/5.
OUT_VEC = [1.0, 0.0, 0.0, 0.0, 0.0]
AT_075 = [3.0, 2.0, 1.0, 1.0, 1.0]
AT_08 = [4.0, 3.0, 0.0, 0.0, 0.0]
AT_06 = [3.0, 4.0, 0.0, 0.0, 0.0]


def grade(tmp_path: Path, *assertions: dict[str, Any], output: str = OUT, options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": {"q": "x"}, "providerOutput": output, "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": ["{{q}}"], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


@pytest.fixture
def vectors(openai_env: LLMServer) -> LLMServer:
    openai_env.set_embedding(OUT, OUT_VEC)
    openai_env.set_embedding("three quarters", AT_075)
    openai_env.set_embedding("four fifths", AT_08)
    openai_env.set_embedding("three fifths", AT_06)
    return openai_env


def test_default_threshold_075_passes_exactly_at_it_and_fails_just_below(tmp_path: Path, vectors: LLMServer) -> None:
    at, below, above = grade(
        tmp_path,
        {"type": "similar", "value": "three quarters"},
        {"type": "similar", "value": "three fifths"},
        {"type": "similar", "value": "four fifths"},
    )
    assert (at.status, at.score) == ("pass", pytest.approx(0.75))
    assert at.reason == "Similarity 0.75 is greater than or equal to threshold 0.75"
    assert (below.status, below.score) == ("fail", pytest.approx(0.6))
    assert below.reason == "Similarity 0.60 is less than threshold 0.75"
    assert above.status == "pass" and above.score == pytest.approx(0.8)
    embeddings = vectors.requests_to("/v1/embeddings")
    assert len(embeddings) == 6
    assert all(r.json["model"] == "text-embedding-3-large" for r in embeddings)
    assert at.raw["metadata"]["ciGrade"]["grader"] == "openai:embedding:text-embedding-3-large"


def test_explicit_threshold_at_and_just_above_the_similarity(tmp_path: Path, vectors: LLMServer) -> None:
    at, short = grade(
        tmp_path,
        {"type": "similar:cosine", "value": "four fifths", "threshold": 0.8},
        {"type": "similar:cosine", "value": "four fifths", "threshold": 0.8000001},
    )
    assert at.status == "pass"
    assert short.status == "fail" and short.reason == "Similarity 0.80 is less than threshold 0.8000001"


def test_not_similar_is_the_exact_complement_including_the_boundary(tmp_path: Path, vectors: LLMServer) -> None:
    at, below = grade(
        tmp_path,
        {"type": "not-similar", "value": "four fifths", "threshold": 0.8},
        {"type": "not-similar", "value": "three fifths", "threshold": 0.8},
    )
    assert (at.status, at.score) == ("fail", pytest.approx(0.2))
    assert (below.status, below.score) == ("pass", pytest.approx(0.4))
    assert below.reason == "Similarity 0.60 is less than threshold 0.8"


def test_dot_product_is_unbounded_and_euclidean_uses_the_threshold_as_a_distance(tmp_path: Path, vectors: LLMServer) -> None:
    vectors.set_embedding("origin", [0.0, 0.0])
    vectors.set_embedding("three four", [3.0, 4.0])
    vectors.set_embedding("one two", [1.0, 2.0])
    dot_at, dot_below, euc_at, euc_over, not_euc = grade(
        tmp_path,
        {"type": "similar:dot", "value": "three four", "threshold": 11},
        {"type": "similar:dot", "value": "three four", "threshold": 11.5},
        {"type": "similar:euclidean", "value": "three four", "threshold": 5},
        {"type": "similar:euclidean", "value": "three four", "threshold": 4.99},
        {"type": "not-similar:euclidean", "value": "three four", "threshold": 4.99},
        output="one two",
    )
    assert (dot_at.status, dot_at.score) == ("pass", pytest.approx(11.0))
    assert dot_below.status == "fail"
    # |(1,2) - (3,4)| = sqrt(8)
    distance = math.sqrt(8)
    assert (euc_at.status, euc_at.score) == ("pass", pytest.approx(1 / (1 + distance)))
    assert euc_at.reason == "Distance 2.83 is less than or equal to threshold 5"
    assert euc_over.status == "pass"
    assert not_euc.status == "fail" and not_euc.score == pytest.approx(1 - 1 / (1 + distance))


def test_euclidean_distance_beyond_the_threshold_fails(tmp_path: Path, vectors: LLMServer) -> None:
    vectors.set_embedding("far", [0.0, 0.0])
    vectors.set_embedding("away", [3.0, 4.0])
    (result, inverse) = grade(
        tmp_path,
        {"type": "similar:euclidean", "value": "away", "threshold": 4.99},
        {"type": "not-similar:euclidean", "value": "away", "threshold": 4.99},
        output="far",
    )
    assert (result.status, result.score) == ("fail", pytest.approx(1 / 6))
    assert result.reason == "Distance 5.00 is greater than threshold 4.99"
    assert (inverse.status, inverse.score) == ("pass", pytest.approx(5 / 6))


def test_a_list_passes_on_the_first_passing_value_and_stops_there(tmp_path: Path, vectors: LLMServer) -> None:
    (result,) = grade(tmp_path, {"type": "similar", "value": ["three fifths", "four fifths", "three quarters"]})
    assert result.status == "pass" and result.score == pytest.approx(0.8)
    assert result.reason == "Similarity 0.80 is greater than or equal to threshold 0.75 (expected value 2 of 3)"
    embedded = [r.json["input"] for r in vectors.requests_to("/v1/embeddings")]
    assert embedded == [OUT, "three fifths", "four fifths"]  # the output once; the third value is never needed


def test_a_list_with_no_passing_value_fails_with_the_best_score(tmp_path: Path, vectors: LLMServer) -> None:
    (result,) = grade(tmp_path, {"type": "similar", "value": ["three fifths", "four fifths"], "threshold": 0.9})
    assert result.status == "fail" and result.score == pytest.approx(0.8)
    assert result.reason.startswith("None of the 2 expected values met the similarity threshold")


def test_not_similar_with_a_list_needs_every_value_to_be_dissimilar(tmp_path: Path, vectors: LLMServer) -> None:
    all_far, one_close = grade(
        tmp_path,
        {"type": "not-similar", "value": ["three fifths", "three quarters"], "threshold": 0.8},
        {"type": "not-similar", "value": ["three fifths", "four fifths", "three quarters"], "threshold": 0.8},
    )
    assert all_far.status == "pass" and all_far.score == pytest.approx(0.25)  # the smallest inverse score
    assert one_close.status == "fail" and one_close.score == pytest.approx(0.2)
    assert "expected value 2 of 3" in one_close.reason


def test_overflowing_vectors_and_mismatched_lengths_are_errors_not_nan(tmp_path: Path, vectors: LLMServer) -> None:
    # float32 on the wire (the SDK asks for base64), so an overflow arrives as infinity
    vectors.set_embedding("huge", [math.inf, 1.0])
    vectors.set_embedding("huge too", [math.inf, 1.0])
    vectors.set_embedding("short", [1.0, 0.0])
    vectors.set_embedding("not a number", [math.nan, 1.0])
    overflow, euclid, nan, mismatch = grade(
        tmp_path,
        {"type": "similar", "value": "huge too"},
        {"type": "not-similar:euclidean", "value": "short"},
        {"type": "similar:dot", "value": "not a number"},
        {"type": "not-similar", "value": "three quarters"},
        output="huge",
    )
    assert overflow.status == "error" and "overflow or contain NaN" in overflow.reason
    assert overflow.raw["score"] == 0 and overflow.passed is False
    assert euclid.status == "error" and "euclidean distance" in euclid.reason
    assert nan.status == "error" and "invalid dot product" in nan.reason
    assert mismatch.status == "error" and "different lengths (2 and 5)" in mismatch.reason


def test_missing_or_malformed_values_are_errors(tmp_path: Path, vectors: LLMServer) -> None:
    missing, empty_list, bad_item = grade(
        tmp_path,
        {"type": "similar"},
        {"type": "similar", "value": []},
        {"type": "similar", "value": ["ok", 3]},
    )
    assert missing.status == "error" and "needs a value" in missing.reason
    assert empty_list.status == "error" and "needs a value" in empty_list.reason
    assert bad_item.status == "error" and "non-empty strings" in bad_item.reason
    assert vectors.requests_to("/v1/embeddings") == []


def test_embedding_server_errors_are_retried_then_reported(tmp_path: Path, vectors: LLMServer) -> None:
    vectors.fail(429, times=1, path="/v1/embeddings", retry_after="0")
    (recovered,) = grade(tmp_path, {"type": "similar", "value": "four fifths"})
    assert recovered.status == "pass"
    assert len(vectors.requests_to("/v1/embeddings")) == 3

    vectors.fail(500, times=20, path="/v1/embeddings")
    (failed,) = grade(tmp_path, {"type": "not-similar", "value": "four fifths"})
    assert failed.status == "error" and failed.passed is False  # never inverted into a pass
    assert "500" in failed.reason and "embedding call to openai:embedding:text-embedding-3-large failed" in failed.reason


def test_malformed_and_empty_embedding_replies_are_errors(tmp_path: Path, vectors: LLMServer) -> None:
    vectors.fail(200, times=10, path="/v1/embeddings", body=b"<html>not json</html>")  # on every retry
    (malformed,) = grade(tmp_path, {"type": "similar", "value": "four fifths"})
    assert malformed.status == "error" and "embedding call" in malformed.reason

    vectors.clear_faults()
    vectors.fail(200, times=10, path="/v1/embeddings", body={"object": "list", "data": [], "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    (empty,) = grade(tmp_path, {"type": "similar", "value": "four fifths"})
    assert empty.status == "error" and "no embedding" in empty.reason.lower()


def test_grader_choice_and_usage(tmp_path: Path, vectors: LLMServer) -> None:
    chat_only, by_map = grade(
        tmp_path,
        {"type": "similar", "value": "four fifths", "provider": "openai:chat:gpt-4.1-mini"},
        {"type": "similar", "value": "four fifths"},
        options={"provider": {"text": "openai:chat:gpt-4.1-mini", "embedding": "openai:embedding:text-embedding-3-small"}},
    )
    # a chat grader given alone embeds with its vendor's default embedding model, same credentials
    assert chat_only.status == "pass"
    assert chat_only.raw["metadata"]["ciGrade"]["grader"] == "openai:embedding:text-embedding-3-large"
    assert by_map.status == "pass"
    assert by_map.raw["metadata"]["ciGrade"]["grader"] == "openai:embedding:text-embedding-3-small"
    # the server counts len(text) // 4 tokens per embedded text
    assert by_map.raw["tokensUsed"]["total"] == len(OUT) // 4 + len("four fifths") // 4
    assert by_map.raw["tokensUsed"]["numRequests"] == 2


def test_a_grader_whose_vendor_has_no_embeddings_is_an_error(tmp_path: Path, vectors: LLMServer) -> None:
    (result,) = grade(tmp_path, {"type": "similar", "value": "four fifths", "provider": "anthropic:messages:claude-sonnet-4-5"})
    assert result.status == "error"
    assert "cannot serve embedding" in result.reason
    assert not vectors.requests_to("/v1/embeddings")


def test_the_measures_on_known_vectors() -> None:
    assert dot([1.0, 2.0, 3.0], [4.0, -5.0, 6.0]) == 12.0
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)
    assert cosine([1.0, 0.0], [-1.0, 0.0]) == -1.0 and cosine([0.0, 0.0], [1.0, 2.0]) == 0.0
    assert euclidean([1.0, 2.0], [4.0, 6.0]) == 5.0 and euclidean([1.0, 1.0], [1.0, 1.0]) == 0.0
    with pytest.raises(InputRejected, match=r"embeddings have different lengths \(2 and 3\)"):
        euclidean([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(InputRejected, match="invalid dot product"):
        dot([1e308, 1e308], [1e308, 1e308])
    with pytest.raises(InputRejected, match="invalid euclidean distance"):
        euclidean([math.nan], [1.0])


@pytest.mark.parametrize(
    ("metric", "measure", "inverse", "passed", "score", "reason"),
    [
        ("cosine", 0.75, False, True, 0.75, "Similarity 0.75 is greater than or equal to threshold 0.75"),
        ("cosine", 0.7499, False, False, 0.7499, "Similarity 0.75 is less than threshold 0.75"),
        ("cosine", 0.75, True, False, 0.25, "Similarity 0.75 is greater than or equal to threshold 0.75"),
        ("cosine", 0.5, True, True, 0.5, "Similarity 0.50 is less than threshold 0.75"),
        ("euclidean", 0.75, False, True, 1 / 1.75, "Distance 0.75 is less than or equal to threshold 0.75"),
        ("euclidean", 0.76, False, False, 1 / 1.76, "Distance 0.76 is greater than threshold 0.75"),
        ("euclidean", 0.5, True, False, 1 - 1 / 1.5, "Distance 0.50 is less than or equal to threshold 0.75"),
        ("euclidean", 3.0, True, True, 0.75, "Distance 3.00 is greater than threshold 0.75"),
    ],
)
def test_judge_at_and_around_the_threshold(metric: str, measure: float, inverse: bool, passed: bool, score: float, reason: str) -> None:
    verdict = judge(metric, measure, 0.75, inverse, "expected text")
    assert (verdict.expected, verdict.measure, verdict.passed, verdict.reason) == ("expected text", measure, passed, reason)
    assert verdict.score == pytest.approx(score)
