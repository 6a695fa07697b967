"""Small promises of the grading layer, one by one: the pass rules at the threshold, the default
reasons and conflicts of rubric verdicts, grader replies kept in metadata only up to a limit,
numbers written as text (and objects in any key order) agreeing in verdicts, costs summed over
calls, what a scripted grader provider is told, and how a failed grader call is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.errors import VerdictError, VerdictProblem
from ci_grade.grading.grader_prompts import try_parse
from ci_grade.grading.model_graded.rubric import judge, parse_rubric_verdict
from ci_grade.grading.scoring import PassRule
from ci_grade.grading.session import Tally, excerpt
from ci_grade.grading.verdicts import extract
from tests.assertion_runs import evaluate, first, outcome
from tests.conftest import write
from tests.servers.llm_server import LLMServer


@pytest.mark.parametrize(
    ("rule", "at", "above", "below"),
    [(PassRule.AT_LEAST, True, True, False), (PassRule.ABOVE, False, True, False)],
)
def test_at_least_reaches_the_threshold_above_must_pass_it(rule: PassRule, at: bool, above: bool, below: bool) -> None:
    assert (rule.passes(0.5, 0.5), rule.passes(0.51, 0.5), rule.passes(0.49, 0.5)) == (at, above, below)


@pytest.mark.parametrize(
    ("verdict", "threshold", "expected"),
    [
        ({"pass": True}, None, (True, 1.0, "Grading passed")),
        ({"pass": True, "score": 0.4, "reason": " "}, 0.5, (True, 0.4, "Score 0.4 is below the threshold 0.5")),
        ({"pass": False}, None, (False, 0.0, "The grader failed the output without giving a reason")),
        ({"pass": "yes", "score": "0.8", "reason": "fine"}, 0.5, (True, 0.8, "fine")),
    ],
)
def test_rubric_verdicts_and_their_default_reasons(verdict: dict[str, object], threshold: float | None, expected: tuple[bool, float, str]) -> None:
    assert judge(verdict, threshold) == expected


def test_grader_replies_are_kept_up_to_their_limit() -> None:
    assert excerpt("x" * 2000) == "x" * 2000
    assert excerpt("x" * 2100) == "x" * 2000 + "… [100 more chars]"
    assert excerpt({"pass": True}, 5) == "{'pas… [9 more chars]"


def test_a_number_written_as_text_agrees_with_the_same_number() -> None:
    reply = 'Verdict: {"score": "0.5", "pass": true} and again {"score": 0.50, "pass": true}'
    assert extract(reply, "score") == {"score": "0.5", "pass": True}


def test_a_scripted_grader_provider_is_told_the_prompt_label(tmp_path: Path) -> None:
    write(tmp_path / "grader.py", """
import json

def call_api(prompt, options, context):
    return {"output": json.dumps({"pass": True, "score": 1, "reason": "label " + context["prompt"]["label"]})}
""")
    rows = evaluate(tmp_path, {
        "prompts": [{"raw": "Answer {{q}}", "label": "support-v2"}],
        "providers": ["echo"],
        "tests": [{"vars": {"q": "hi"}, "options": {"provider": "file://grader.py"}, "assert": [{"type": "llm-rubric", "value": "is polite"}]}],
    })
    assert first(rows[0]).reason == "label support-v2"


def test_a_rubric_reply_with_two_scores_for_one_verdict_conflicts() -> None:
    with pytest.raises(VerdictError) as info:
        parse_rubric_verdict('{"pass": true, "score": 1} and {"pass": true, "score": 0.2}')
    assert info.value.problem is VerdictProblem.CONFLICTING
    with pytest.raises(VerdictError) as bad:
        judge({"pass": True, "score": "high"}, None)
    assert (bad.value.reason, bad.value.problem) == ("grader's 'score' is not a number: 'high'", VerdictProblem.INVALID)


def test_verdict_values_compare_as_data_whatever_their_key_order() -> None:
    reply = '{"pass": {"a": 1, "b": 2}} then again {"pass": {"b": 2, "a": 1}}'
    assert extract(reply, "pass") == {"pass": {"a": 1, "b": 2}}


def test_a_tally_sums_the_cost_of_every_call() -> None:
    tally = Tally()
    tally.add(None, 0.5, "openai:gpt-4.1-mini")
    tally.add(None, 0.25, "openai:gpt-4.1-mini")
    tally.add(None, None, "openai:text-embedding-3-small")
    assert tally.cost == 0.75 and tally.graders == ["openai:gpt-4.1-mini", "openai:text-embedding-3-small"]


def test_grader_guidance_must_be_text_and_failed_calls_name_the_grader_call(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(500, times=50, path="/v1/chat/completions")
    rows = evaluate(tmp_path, {
        "prompts": ["{{q}}"], "providers": ["echo"],
        "tests": [{"vars": {"q": "hi"}, "assert": [
            {"type": "llm-rubric", "value": "is polite", "graderGuidance": 5},
            {"type": "llm-rubric", "value": "is polite"},
        ]}],
    })
    guidance, failed = (outcome(c) for c in rows[0]["gradingResult"]["componentResults"])
    assert (guidance.status, guidance.reason) == ("error", "graderGuidance must be text")
    assert failed.status == "error" and failed.reason.startswith("grader call to openai:"), failed.reason


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', "[1, 2]", " 7", "-0.5", "true", "null", "NaN", "Infinity", '"quoted"', "\n{}", "Answer: {}", "thanks", "", "nope", "{broken"],
)
def test_template_variables_parse_as_json_exactly_when_json_would(text: str) -> None:
    """`try_parse` skips the parser for text JSON cannot begin with: the same value either way."""
    try:
        expected = json.loads(text)
    except ValueError:
        expected = text
    assert json.dumps(try_parse(text)) == json.dumps(expected)  # as JSON, so that NaN equals NaN
