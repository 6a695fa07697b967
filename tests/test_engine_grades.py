"""How the grading engine turns handler grades into results: scores of errored grades, template
rendering of values, values computed by scripts, transforms that fail, the row's reason, grader
usage totals, and model-graded assertions of one row (also inside an assert-set) waiting on their
graders together."""

from __future__ import annotations

from pathlib import Path

from ci_grade.grading.context import Grade
from ci_grade.grading.engine import _from_grade, grading_totals, verdict
from ci_grade.providers.base import TokenUsage
from ci_grade.results.models import AssertionResult
from tests.assertion_runs import evaluate, first, grade_outputs
from tests.conftest import write
from tests.servers.llm_server import LLMServer

FIELDS = {"type": "javascript", "metric": None, "weight": 1.0, "threshold": None}


def test_a_block_tag_is_rendered_with_each_tests_vars(tmp_path: Path) -> None:
    value = "{% if case == 'first' %}one{% else %}two{% endif %}"
    r = grade_outputs(tmp_path, {"first": ("one", {"type": "equals", "value": value}), "second": ("two", {"type": "equals", "value": value})})
    assert r["first"].passed and r["second"].passed, (r["first"].reason, r["second"].reason)


def test_a_value_from_a_python_file_is_what_its_get_value_returns(tmp_path: Path) -> None:
    write(tmp_path / "expected.py", "def get_value(output, context):\n    return 'Hello ' + context['vars']['case']\n")
    r = grade_outputs(tmp_path, {"bob": ("Hello bob", {"type": "equals", "value": "file://expected.py"})})
    assert r["bob"].passed, r["bob"].reason


def test_an_assertion_transform_that_throws_is_an_error_of_that_assertion(tmp_path: Path) -> None:
    r = grade_outputs(tmp_path, {"x": ("text", {"type": "contains", "value": "t", "transform": "throw new Error('no parse')"})})
    assert r["x"].status == "error" and "no parse" in r["x"].reason


def test_an_errored_grade_scores_zero_whatever_its_score() -> None:
    result = _from_grade(FIELDS, "v", Grade(passed=True, score=0.7, reason="grader failed", error=True))
    assert (result.status, result.score, result.reason) == ("error", 0.0, "grader failed")
    nan = _from_grade(FIELDS, "v", Grade(passed=True, score=float("nan"), reason="odd"))
    assert (nan.status, nan.score) == ("error", 0.0) and nan.reason.startswith("grader produced a non-numeric score (nan)")


def test_the_last_failure_speaks_for_the_test_as_in_promptfoo() -> None:
    """promptfoo keeps the reason of the last failing assertion; one without a reason is named."""
    results = [AssertionResult(type="contains", status="fail", score=0.0, reason="no 'x'"), AssertionResult(type="regex", status="fail", score=0.0, reason="")]
    assert verdict(results[:1], None) == ("fail", 0.0, "no 'x'")
    assert verdict(results, None) == ("fail", 0.0, "regex failed")
    assert verdict(results, 0.125)[2] == "Aggregate score 0.00 < 0.125 threshold"


def test_grader_usage_totals_count_any_usage() -> None:
    results = [
        AssertionResult(type="a", status="pass", score=1.0, token_usage=TokenUsage(prompt=5), cost=0.25),
        AssertionResult(type="b", status="pass", score=1.0, token_usage=TokenUsage(completion=3)),
    ]
    usage, cost = grading_totals(results)
    assert (usage.prompt, usage.completion, cost) == (5, 3, 0.25)


def test_two_model_graded_assertions_of_a_row_wait_on_their_grader_together(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("is polite", {"reason": "fine", "pass": True, "score": 1.0}, latency=0.3)
    openai_env.on_chat("is short", {"reason": "fine", "pass": True, "score": 1.0}, latency=0.3)
    rows = evaluate(tmp_path, {
        "prompts": ["{{q}}"], "providers": ["echo"],
        "tests": [{"vars": {"q": "hi"}, "assert": [{"type": "llm-rubric", "value": "is polite"}, {"type": "llm-rubric", "value": "is short"}]}],
    })
    assert first(rows[0]).passed
    assert openai_env.peak_active == 2


def test_a_row_whose_assertions_all_pass_says_so() -> None:
    assert verdict([AssertionResult(type="contains", status="pass", score=1.0)], None) == ("pass", 1.0, "All assertions passed")


def test_an_assert_set_of_model_graded_assertions_waits_together_with_another(tmp_path: Path, openai_env: LLMServer) -> None:
    for rubric in ("is polite", "is short"):
        openai_env.on_chat(rubric, {"reason": "fine", "pass": True, "score": 1.0}, latency=0.3)
    rows = evaluate(tmp_path, {
        "prompts": ["{{q}}"], "providers": ["echo"],
        "tests": [{"vars": {"q": "hi"}, "assert": [
            {"type": "assert-set", "assert": [{"type": "llm-rubric", "value": "is polite"}, {"type": "contains", "value": "h"}]},
            {"type": "llm-rubric", "value": "is short"},
        ]}],
    })
    assert rows[0]["success"] is True
    assert openai_env.peak_active == 2
