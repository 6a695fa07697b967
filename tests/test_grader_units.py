"""Small promises of the grading layer, one by one: the pass rules at the threshold, the default
reasons of a rubric verdict, grader replies kept in metadata only up to a limit, numbers written as
text agreeing with numbers in verdicts, and what a scripted grader provider is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade.grading.model_graded.rubric import judge
from ci_grade.grading.scoring import PassRule
from ci_grade.grading.session import excerpt
from ci_grade.grading.verdicts import extract
from tests.assertion_runs import evaluate, first
from tests.conftest import write


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
