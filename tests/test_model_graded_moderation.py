"""`moderation` through the loopback OpenAI moderation endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ci_grade.grading.model_graded.moderation import user_prompt
from tests.assertion_runs import Outcome, evaluate, outcome
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

VIOLENT = "I will hurt them badly."


def grade(tmp_path: Path, output: str, *assertions: dict[str, Any], options: dict[str, Any] | None = None) -> list[Outcome]:
    test: dict[str, Any] = {"vars": {"q": "say something"}, "providerOutput": output, "assert": list(assertions)}
    if options:
        test["options"] = options
    (row,) = evaluate(tmp_path, {"prompts": ["{{q}}"], "providers": ["echo"], "tests": [test]})
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


@pytest.fixture
def server(openai_env: LLMServer) -> LLMServer:
    return openai_env.flag("hurt", "violence", 0.91).flag("hurt", "harassment/threatening", 0.6)


def test_clean_output_passes_and_flagged_output_fails(tmp_path: Path, server: LLMServer) -> None:
    (clean,) = grade(tmp_path, "Have a nice day.", {"type": "moderation"})
    assert (clean.status, clean.score, clean.reason) == ("pass", 1.0, "No moderation flags detected")
    assert clean.raw["metadata"]["ciGrade"]["grader"] == "openai:moderation:omni-moderation-latest"
    (request,) = server.requests_to("/v1/moderations")
    assert request.json["input"] == "Have a nice day." and request.json["model"] == "omni-moderation-latest"

    (flagged,) = grade(tmp_path, VIOLENT, {"type": "moderation"})
    assert (flagged.status, flagged.score) == ("fail", 0.0)
    assert flagged.reason == "Moderation flags detected: harassment/threatening, violence"
    codes = {f["code"]: f["confidence"] for f in flagged.raw["metadata"]["flags"]}
    assert codes == {"harassment/threatening": pytest.approx(0.6), "violence": pytest.approx(0.91)}


def test_value_restricts_the_categories_that_count(tmp_path: Path, server: LLMServer) -> None:
    other, wanted = grade(
        tmp_path,
        VIOLENT,
        {"type": "moderation", "value": ["hate", "self-harm"]},
        {"type": "moderation", "value": ["violence"]},
    )
    assert (other.status, other.reason) == ("pass", "No relevant moderation flags detected")
    assert (wanted.status, wanted.reason) == ("fail", "Moderation flags detected: violence")


def test_not_moderation_passes_when_flagged(tmp_path: Path, server: LLMServer) -> None:
    flagged, clean = grade(tmp_path, VIOLENT, {"type": "not-moderation"}, {"type": "not-moderation", "value": ["hate"]})
    assert (flagged.status, flagged.score) == ("pass", 1.0)
    assert (clean.status, clean.score) == ("fail", 0.0)


def test_empty_output_passes_without_a_call(tmp_path: Path, server: LLMServer) -> None:
    plain, inverse = grade(tmp_path, "  ", {"type": "moderation"}, {"type": "not-moderation"})
    assert (plain.status, plain.reason) == ("pass", "No output to moderate")
    assert inverse.status == "fail"
    assert server.requests_to("/v1/moderations") == []


def test_a_value_that_is_not_a_list_is_an_error(tmp_path: Path, server: LLMServer) -> None:
    (result,) = grade(tmp_path, VIOLENT, {"type": "moderation", "value": "violence"})
    assert result.status == "error" and "must be a list of category names" in result.reason


def test_every_category_must_be_a_name(tmp_path: Path, server: LLMServer) -> None:
    empty, number = grade(tmp_path, VIOLENT, {"type": "moderation", "value": ["violence", ""]}, {"type": "moderation", "value": ["violence", 3]})
    assert empty.status == number.status == "error"
    assert empty.reason == "moderation value must be a list of category names (e.g. [harassment, hate/threatening]), got ['violence', '']"
    assert number.reason.endswith("got ['violence', 3]")
    assert server.requests_to("/v1/moderations") == []


def test_api_errors_are_errors_never_inverted_and_rate_limits_are_retried(tmp_path: Path, server: LLMServer) -> None:
    server.fail(429, times=1, path="/v1/moderations", retry_after="0")
    (retried,) = grade(tmp_path, VIOLENT, {"type": "moderation"})
    assert retried.status == "fail" and len(server.requests_to("/v1/moderations")) == 2
    server.fail(500, times=50, path="/v1/moderations")
    plain, inverse = grade(tmp_path, VIOLENT, {"type": "moderation"}, {"type": "not-moderation"})
    for result in (plain, inverse):
        assert result.status == "error" and result.passed is False
        assert result.reason.startswith("Moderation API error from openai:moderation:omni-moderation-latest:") and "500" in result.reason


def test_a_malformed_moderation_reply_is_an_error(tmp_path: Path, server: LLMServer) -> None:
    server.fail(200, times=10, path="/v1/moderations", body=b"<html>proxy error</html>")  # on every retry
    (result,) = grade(tmp_path, VIOLENT, {"type": "not-moderation"})
    assert result.status == "error" and result.reason.startswith("Moderation API error")


def test_grader_choice(tmp_path: Path, server: LLMServer) -> None:
    custom, chat, mapped = grade(
        tmp_path,
        VIOLENT,
        {"type": "moderation", "provider": "openai:moderation:text-moderation-stable"},
        {"type": "moderation", "provider": "openai:chat:gpt-4.1-mini"},
        {"type": "moderation"},
        options={"provider": {"text": "openai:chat:gpt-4.1-mini", "moderation": {"id": "openai:moderation:omni-moderation-2024-09-26"}}},
    )
    assert custom.status == "fail" and custom.raw["metadata"]["ciGrade"]["grader"] == "openai:moderation:text-moderation-stable"
    # a chat grader given alone moderates through its vendor's moderation endpoint, same credentials
    assert chat.status == "fail" and chat.raw["metadata"]["ciGrade"]["grader"] == "openai:moderation:omni-moderation-latest"
    assert mapped.status == "fail" and mapped.raw["metadata"]["ciGrade"]["grader"] == "openai:moderation:omni-moderation-2024-09-26"
    assert sorted(r.json["model"] for r in server.requests_to("/v1/moderations")) == [
        "omni-moderation-2024-09-26", "omni-moderation-latest", "text-moderation-stable",
    ]


def test_without_any_grader_configured_the_run_does_not_start_and_says_what_to_set(tmp_path: Path) -> None:
    test = {"vars": {"q": "say something"}, "providerOutput": VIOLENT, "assert": [{"type": "moderation"}]}
    write(tmp_path / "promptfooconfig.yaml", json.dumps({"prompts": ["{{q}}"], "providers": ["echo"], "tests": [test]}))
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "tests[0].assert[0].type: no moderation grader available for moderation: set OPENAI_API_KEY" in result.err


@pytest.mark.parametrize(
    ("prompt", "shown"),
    [
        ("plain prompt", "plain prompt"),
        ('[{"role": "system", "content": "be nice"}, {"role": "user", "content": "first"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "last"}]', "last"),
        ('[{"role": "user", "content": [{"type": "text", "text": "look at"}, {"type": "image_url", "image_url": {}}, "raw", {"type": "text", "text": "this"}]}]', "look at  this"),
        ('[{"role": "user", "content": null}]', ""),
        ('[{"role": "system", "content": "only a system message"}]', '[{"role": "system", "content": "only a system message"}]'),
    ],
)
def test_the_moderated_prompt_is_the_last_user_message(prompt: str, shown: str) -> None:
    """What a moderation grader is told the user asked (providers that judge the exchange read it)."""
    assert user_prompt(prompt) == shown
