"""`classifier` through a loopback Hugging Face Inference API stand-in (text classification)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.servers import hf_server
from tests.servers.llm_server import LLMServer, Response

MODEL = "facebook/roberta-hate-speech-dynabench-r4-target"
HF = f"huggingface:text-classification:{MODEL}"
TOKEN = "hf_secret_token_123"


def hate_scores(text: str) -> dict[str, float]:
    """Scores chosen by the text: `score=<x>` gives nothate x, hate 1 - x."""
    value = float(text.split("score=")[1]) if "score=" in text else 0.02
    return {"nothate": value, "hate": round(1 - value, 10)}


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("HF_API_BASE_URL", llm_server.url)
    monkeypatch.setenv("HF_API_TOKEN", TOKEN)
    hf_server.install(llm_server, MODEL, hate_scores)
    return llm_server


def grade(tmp_path: Path, output: str, *assertions: dict[str, Any], options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": {"q": "x"}, "providerOutput": output, "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": ["{{q}}"], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


def test_label_score_exactly_at_and_just_below_the_threshold(tmp_path: Path, server: LLMServer) -> None:
    at, below = grade(
        tmp_path,
        "score=0.5",
        {"type": "classifier", "provider": HF, "value": "nothate", "threshold": 0.5},
        {"type": "classifier", "provider": HF, "value": "nothate", "threshold": 0.5000001},
    )
    assert (at.status, at.score, at.reason) == ("pass", 0.5, "Classification nothate has score 0.50 >= 0.5")
    assert (below.status, below.reason) == ("fail", "Classification nothate has score 0.50 < 0.5000001")
    assert at.raw["metadata"]["ciGrade"]["grader"] == HF
    request = server.requests_to(f"/models/{MODEL}")[0]
    assert request.json == {"inputs": "score=0.5"} and request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in (tmp_path / "out.json").read_text()


def test_default_threshold_is_one(tmp_path: Path, server: LLMServer) -> None:
    almost, full = grade(
        tmp_path,
        "score=0.99",
        {"type": "classifier", "provider": HF, "value": "nothate"},
        {"type": "classifier", "provider": HF, "value": "nothate", "threshold": 0.99},
    )
    assert (almost.status, almost.score) == ("fail", 0.99)
    assert full.status == "pass"


def test_without_a_label_the_highest_score_counts(tmp_path: Path, server: LLMServer) -> None:
    (result,) = grade(tmp_path, "score=0.3", {"type": "classifier", "provider": HF, "threshold": 0.7})
    assert (result.status, result.score) == ("pass", 0.7)
    assert result.reason == "Maximum classification score 0.70 (hate) >= 0.7"
    assert result.raw["metadata"]["classification"] == {"nothate": 0.3, "hate": 0.7}


def test_not_classifier_inverts(tmp_path: Path, server: LLMServer) -> None:
    (result,) = grade(tmp_path, "score=0.2", {"type": "not-classifier", "provider": HF, "value": "hate", "threshold": 0.5})
    assert (result.status, result.score) == ("fail", pytest.approx(0.2))


def test_a_label_the_classifier_did_not_return_scores_zero_and_says_so(tmp_path: Path, server: LLMServer) -> None:
    (result,) = grade(tmp_path, "score=0.9", {"type": "classifier", "provider": HF, "value": "toxic", "threshold": 0.1})
    assert (result.status, result.score) == ("fail", 0.0)
    assert "returned no score for 'toxic'; labels: hate, nothate" in result.reason


def test_a_classifier_from_test_options_or_a_kind_map(tmp_path: Path, server: LLMServer) -> None:
    from_options, from_map = grade(
        tmp_path,
        "score=0.8",
        {"type": "classifier", "value": "nothate", "threshold": 0.8},
        {"type": "classifier", "value": "nothate", "threshold": 0.8, "provider": {"text": "openai:chat:gpt-4.1", "classification": HF}},
        options={"provider": HF},
    )
    assert from_options.status == "pass" and from_map.status == "pass"


def test_a_bad_value_is_an_error(tmp_path: Path, server: LLMServer) -> None:
    (bad_value,) = grade(tmp_path, "score=0.8", {"type": "classifier", "provider": HF, "value": 3})
    assert bad_value.status == "error" and "must be a label name" in bad_value.reason
    # with no provider anywhere the run does not start (tests/test_preflight_graders.py)


def test_model_loading_is_waited_for_and_failures_are_errors_never_inverted(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_API_BASE_URL", llm_server.url)
    hf_server.install(llm_server, MODEL, hate_scores, loading=1, estimated_time=0.01)
    (loaded,) = grade(tmp_path, "score=0.9", {"type": "classifier", "provider": HF, "value": "nothate", "threshold": 0.9})
    assert loaded.status == "pass" and len(llm_server.requests_to(f"/models/{MODEL}")) == 2
    llm_server.fail(500, times=50, path=f"/models/{MODEL}")
    (failed,) = grade(tmp_path, "score=0.9", {"type": "not-classifier", "provider": HF, "value": "nothate"})
    assert failed.status == "error" and failed.passed is False
    assert f"classification call to {HF} failed" in failed.reason and "500" in failed.reason


def test_malformed_and_empty_replies_are_errors(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_API_BASE_URL", llm_server.url)
    llm_server.route("POST", "/models/acme/odd", lambda rec: Response(200, json={"labels": ["a"], "scores": [0.5]}))
    llm_server.route("POST", "/models/acme/empty", lambda rec: Response(200, json=[[]]))
    odd, empty = grade(
        tmp_path,
        "text",
        {"type": "classifier", "provider": "huggingface:text-classification:acme/odd"},
        {"type": "classifier", "provider": "huggingface:text-classification:acme/empty"},
    )
    assert odd.status == "error" and "not a list of {label, score}" in odd.reason
    assert empty.status == "error"
