"""The model-graded types' reply parsers and input checks, directly: the edges their end-to-end
tests (test_model_graded_*.py, against the loopback grader) do not reach one by one."""

from __future__ import annotations

import pytest

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.model_graded.closedqa import parse_closedqa
from ci_grade.grading.model_graded.context_faithfulness import parse_verdicts
from ci_grade.grading.model_graded.context_relevance import context_units
from ci_grade.grading.model_graded.conversation import as_messages
from ci_grade.grading.model_graded.geval import criteria_of, parse_evaluation, parse_steps
from ci_grade.grading.model_graded.rag_context import Context


def test_closedqa_replies() -> None:
    assert parse_closedqa({"pass": "yes"}) == (True, "")
    assert parse_closedqa({"pass": False, "reason": "off topic"}) == (False, "off topic")
    assert parse_closedqa("It answers the question.\nY  \n\n") == (True, "It answers the question.")
    assert parse_closedqa("  N\n") == (False, "  N")  # no reasoning: the reply itself
    assert parse_closedqa('Reasoning first.\n{"pass": true, "reason": "fine"}') == (True, "fine")
    with pytest.raises(VerdictError) as info:
        parse_closedqa("I am not sure.\nMaybe")
    assert (info.value.reason, info.value.problem) == ("grader reply's final line does not end with Y or N", VerdictProblem.MISSING)
    with pytest.raises(VerdictError, match="'pass' is not true or false"):
        parse_closedqa({"pass": "perhaps"})


def test_faithfulness_final_line_must_agree_with_the_statements() -> None:
    with pytest.raises(VerdictError) as info:
        parse_verdicts("Statement 1: stated. Verdict: Yes\nStatement 2: not stated. Verdict: No\nFinal verdict for each statement in order: Yes. Yes.", 2)
    assert (info.value.reason, info.value.problem) == ("the final verdict line contradicts the per-statement verdicts", VerdictProblem.CONFLICTING)


def test_context_units_are_chunks_lines_or_sentences() -> None:
    assert context_units(Context(("one", " ", "two "), "vars.context", True)) == (["one", "two"], True)
    assert context_units(Context(("First line.\n\nSecond line.",), "vars.context", False)) == (["First line.", "Second line."], True)
    assert context_units(Context(("Paris is big. Lyon is smaller.",), "vars.context", False)) == (["Paris is big.", "Lyon is smaller."], False)


def test_conversation_turns_become_chat_messages() -> None:
    window = [{"input": "hi", "output": {"text": "héllo", "n": 1}}, {"input": ["a", 1], "output": "bye"}]
    assert as_messages(window) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": '{"text": "héllo", "n": 1}'},
        {"role": "user", "content": '["a", 1]'},
        {"role": "assistant", "content": "bye"},
    ]


def test_g_eval_criteria_steps_and_evaluations() -> None:
    assert criteria_of("clear") == ["clear"] and criteria_of(["a", "b"]) == ["a", "b"]
    for bad in ("  ", [], ["a", " "], ["a", 1], None, 3):
        with pytest.raises(GraderError) as info:
            criteria_of(bad)
        assert info.value.reason == "g-eval needs a criterion: a non-empty string or a non-empty list of strings"
    assert parse_steps('{"steps": [" read it ", "judge it"]}') == ["read it", "judge it"]
    for steps in ("[]", '["ok", 3]', '["ok", " "]', '"one step"'):
        with pytest.raises(VerdictError) as steps_error:
            parse_steps(f'{{"steps": {steps}}}')
        assert steps_error.value.problem is VerdictProblem.INVALID and "grader's 'steps' must be a non-empty list of texts" in steps_error.value.reason
    assert parse_evaluation('{"score": 0, "reason": " none "}', 10) == (0.0, "none")
    assert parse_evaluation('{"score": "10", "reason": "all"}', 10) == (10.0, "all")
    for score in ("-1", "10.5", '"high"', "null"):
        with pytest.raises(VerdictError) as score_error:
            parse_evaluation(f'{{"score": {score}, "reason": "r"}}', 10)
        assert score_error.value.reason.startswith("grader's 'score' must be a number from 0 to 10, got ")
    with pytest.raises(VerdictError) as reason_error:
        parse_evaluation('{"score": 3, "reason": 42}', 10)
    assert reason_error.value.reason == "grader's 'reason' must be a non-empty text, got 42"
