"""factuality / model-graded-factuality: categories, score overrides, legacy form, strictness, inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.model_graded_helpers import fenced_blocks, grader_calls, run_eval, status
from tests.servers.llm_server import LLMServer

IDEAL = "Sacramento is the capital of California"


def config(kind: str = "factuality", extra: str = "", test_options: str = "", prompt: str = "What is the capital of {{state}}?") -> str:
    return f"""
prompts: ['{prompt}']
providers:
  - id: echo
    transform: '"The capital is Sacramento."'
tests:
  - vars: {{state: California}}
{test_options}    assert:
      - type: {kind}
        value: {IDEAL}
{extra}"""


@pytest.mark.parametrize(
    ("category", "passed", "score"),
    [("A", True, 1.0), ("B", True, 1.0), ("C", True, 1.0), ("D", False, 0.0), ("E", True, 1.0), (" c ", True, 1.0), ("(B)", True, 1.0)],
)
def test_default_scores_per_category(tmp_path: Path, openai_env: LLMServer, category: str, passed: bool, score: float) -> None:
    openai_env.on_chat(IDEAL, {"category": category, "reason": "compared"})
    result = run_eval(tmp_path, config())
    component = result.component()
    assert (component["pass"], component["score"], component["reason"]) == (passed, score, "compared")
    assert component["metadata"]["category"] == category.strip(" ()").upper()


def test_request_fences_question_and_submission_and_asks_for_json(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(IDEAL, {"category": "C", "reason": "same"})
    run_eval(tmp_path, config())
    (body,) = grader_calls(openai_env)
    user = body["messages"][-1]["content"]
    assert fenced_blocks(user, "question")[0][1] == "What is the capital of California?"
    assert fenced_blocks(user, "submission")[0][1] == "The capital is Sacramento."
    assert IDEAL in user
    assert body["response_format"] == {"type": "json_object"}


def test_alias_and_missing_reason(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(IDEAL, {"category": "D"})
    result = run_eval(tmp_path, config(kind="model-graded-factuality"))
    component = result.component()
    assert component["pass"] is False
    assert component["reason"].startswith("Category D: ")


@pytest.mark.parametrize(
    ("reply", "passed", "reason"),
    [
        ("(A) The submission is a subset of the expert answer.", True, "The submission is a subset of the expert answer."),
        ("(D)\nThey disagree.", False, "They disagree."),
        ("Category: E - wording differs only.", True, "- wording differs only."),
    ],
)
def test_legacy_text_form(tmp_path: Path, openai_env: LLMServer, reply: str, passed: bool, reason: str) -> None:
    openai_env.on_chat(IDEAL, reply)
    result = run_eval(tmp_path, config())
    assert result.component()["pass"] is passed
    assert result.component()["reason"] == reason


SEED_OPTIONS = """        options:
          factuality:
            subset: 0.8
            superset: 0
            agree: 1
            disagree: 0
            differButFactual: 0
"""


@pytest.mark.parametrize(
    ("category", "passed", "score"),
    [("A", True, 0.8), ("B", False, 0.0), ("C", True, 1.0), ("D", False, 0.0), ("E", False, 0.0)],
)
def test_seed_score_overrides_nested_under_the_assertion(tmp_path: Path, openai_env: LLMServer, category: str, passed: bool, score: float) -> None:
    openai_env.on_chat(IDEAL, {"category": category, "reason": "r"})
    result = run_eval(tmp_path, config(extra=SEED_OPTIONS))
    assert (result.component()["pass"], result.component()["score"]) == (passed, score)


def test_overrides_in_test_options_and_assertion_wins(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(IDEAL, {"category": "D", "reason": "r"})
    test_options = "    options:\n      factuality: {disagree: 0.2}\n"
    result = run_eval(tmp_path, config(test_options=test_options))
    assert (result.component()["pass"], result.component()["score"]) == (True, 0.2)
    both = run_eval(tmp_path, config(test_options=test_options, extra="        options: {factuality: {disagree: 0}}\n"))
    assert (both.component()["pass"], both.component()["score"]) == (False, 0.0)


@pytest.mark.parametrize(("threshold", "passed"), [(0.8, True), (0.81, False)])
def test_threshold_edges_with_partial_scores(tmp_path: Path, openai_env: LLMServer, threshold: float, passed: bool) -> None:
    openai_env.on_chat(IDEAL, {"category": "A", "reason": "subset"})
    result = run_eval(tmp_path, config(extra=SEED_OPTIONS + f"        threshold: {threshold}\n"))
    assert (result.component()["pass"], result.component()["score"]) == (passed, 0.8)


@pytest.mark.parametrize(("category", "passed", "score"), [("A", False, 0.0), ("D", True, 1.0)])
def test_not_inverts(tmp_path: Path, openai_env: LLMServer, category: str, passed: bool, score: float) -> None:
    openai_env.on_chat(IDEAL, {"category": category, "reason": "r"})
    result = run_eval(tmp_path, config(kind="not-factuality"))
    assert (result.component()["pass"], result.component()["score"]) == (passed, score)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"category": "F", "reason": "r"}, "not one of A-E"),
        ({"reason": "fine", "pass": True, "score": 1}, "names no category"),
        ("The answers agree.", "names no category"),
        ("(A) subset, or maybe (D) a disagreement", "conflicting categories"),
        ('{"category": "A", "reason": "x"} {"category": "D", "reason": "y"}', "conflicting"),
        ('{category: A, reason: the answer is correct which I disagree with, my finding: {"category": "D", "reason": "wrong"}', "ambiguous"),
    ],
)
def test_bad_replies_are_errors_even_under_not(tmp_path: Path, openai_env: LLMServer, reply: object, message: str) -> None:
    openai_env.on_chat(IDEAL, reply)
    result = run_eval(tmp_path, config(kind="not-factuality"))
    component = result.component()
    assert status(component) == "error" and component["pass"] is False and message in component["reason"], component["reason"]


def test_missing_inputs_and_bad_overrides(tmp_path: Path, openai_env: LLMServer) -> None:
    no_prompt = run_eval(tmp_path, config(prompt="{{nothing}}"))
    assert status(no_prompt.component()) == "error" and "needs the prompt" in no_prompt.component()["reason"]
    bad_key = run_eval(tmp_path, config(extra="        options: {factuality: {partial: 0.5}}\n"))
    assert status(bad_key.component()) == "error" and "unknown keys ['partial']" in bad_key.component()["reason"]
    no_value = run_eval(
        tmp_path,
        """
prompts: [hi]
providers: [echo]
tests:
  - assert: [{type: factuality}]
""",
    )
    assert status(no_value.component()) == "error" and "needs a string value" in no_value.component()["reason"]
    assert grader_calls(openai_env) == []


def test_rubric_prompt_variables_reserved_names_win(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("FACT", '{"category": "B", "reason": "more"}')
    result = run_eval(
        tmp_path,
        config(
            test_options="    options:\n      rubricPrompt: 'FACT {{input}} | {{ideal}} | {{completion}} | {{state}}'\n",
        ).replace("vars: {state: California}", "vars: {state: California, ideal: shadowed}"),
    )
    assert result.component()["pass"] is True
    (body,) = grader_calls(openai_env)
    assert body["messages"] == [
        {"role": "user", "content": f"FACT What is the capital of California? | {IDEAL} | The capital is Sacramento. | California"}
    ]


def test_grader_error_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(502, times=20, path="/v1/chat/completions")
    result = run_eval(tmp_path, config(kind="not-factuality"))
    assert status(result.component()) == "error" and "502" in result.component()["reason"]


def test_overrides_that_are_not_a_mapping_name_the_keys_to_use(tmp_path: Path, openai_env: LLMServer) -> None:
    result = run_eval(tmp_path, config(extra="        options: {factuality: [1, 0]}\n"))
    component = result.component()
    assert status(component) == "error"
    assert component["reason"] == "options.factuality must map subset/superset/agree/disagree/differButFactual to scores"
