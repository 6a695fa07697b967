"""g-eval: steps then evaluation per criterion, averages, default threshold 0.7, {steps, evaluate} overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.model_graded_helpers import all_text, fenced_blocks, grader_calls, run_eval, status
from tests.servers.llm_server import LLMServer, request_text

STEPS = {"steps": ["Read the reply.", "Check the criterion.", "Score it."]}


def steps_call(criterion: str = ""):
    return lambda request: "grading procedures" in request_text(request) and criterion in request_text(request)


def evaluate_call(criterion: str = ""):
    return lambda request: "Evaluation steps" in request_text(request) and criterion in request_text(request)


def script(server: LLMServer, score: object, criterion: str = "", reason: str = "well organised") -> None:
    server.on_chat(steps_call(criterion), STEPS)
    server.on_chat(evaluate_call(criterion), {"score": score, "reason": reason})


def config(value: str = "Coherence - the reply is well structured", extra: str = "", kind: str = "g-eval", prompt: str = "Hello! How are you?") -> str:
    return f"""
prompts: ['{prompt}']
providers:
  - id: echo
    transform: '"I am fine, thanks. And you?"'
tests:
  - assert:
      - type: {kind}
        value: {value}
{extra}"""


@pytest.mark.parametrize(("raw", "threshold", "passed"), [(7, None, True), (6.9, None, False), (5, 0.5, True), (4.9, 0.5, False), (10, 1, True)])
def test_score_and_threshold_edges(tmp_path: Path, openai_env: LLMServer, raw: float, threshold: float | None, passed: bool) -> None:
    script(openai_env, raw)
    extra = f"        threshold: {threshold}\n" if threshold is not None else ""
    result = run_eval(tmp_path, config(extra=extra))
    component = result.component()
    assert component["pass"] is passed and component["score"] == pytest.approx(raw / 10)
    assert component["reason"] == "well organised"
    assert component["metadata"]["criteria"][0]["steps"] == STEPS["steps"]


def test_two_calls_in_order_with_steps_fed_to_the_evaluation(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 8)
    openai_env.on_chat(None, {"score": 1, "reason": "unexpected"})
    result = run_eval(tmp_path, config())
    assert result.component()["pass"] is True
    steps, evaluate = grader_calls(openai_env)
    assert "Coherence - the reply is well structured" in all_text(steps)
    assert steps["response_format"] == {"type": "json_object"}
    text = all_text(evaluate)
    assert "- Read the reply.\n- Check the criterion.\n- Score it." in text
    assert fenced_blocks(text, "source")[0][1] == "Hello! How are you?"
    assert fenced_blocks(text, "reply")[0][1] == "I am fine, thanks. And you?"
    assert "from 0 (the criterion is not met at all) to 10" in text
    usage = result.component()["tokensUsed"]
    assert usage["numRequests"] == 2 and usage["total"] > 0


def test_list_of_criteria_averages(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 8, "Coherence", "coherent")
    script(openai_env, 6, "Fluency", "some slips")
    result = run_eval(tmp_path, config(value="[Coherence - structure, Fluency - grammar]"))
    component = result.component()
    assert component["pass"] is True and component["score"] == pytest.approx(0.7)
    assert component["reason"] == "coherent\n\nsome slips"
    assert len(grader_calls(openai_env)) == 4
    assert component["tokensUsed"]["numRequests"] == 4


def test_not_fails_when_the_score_is_high(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 8)
    result = run_eval(tmp_path, config(kind="not-g-eval"))
    assert (result.component()["pass"], result.component()["score"]) == (False, pytest.approx(0.2))


def test_not_passes_when_the_score_is_low(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 3)
    result = run_eval(tmp_path, config(kind="not-g-eval"))
    assert (result.component()["pass"], result.component()["score"]) == (True, pytest.approx(0.7))


@pytest.mark.parametrize(
    ("steps", "evaluation", "message"),
    [
        ("No steps today.", {"score": 5, "reason": "r"}, "g-eval steps: grader reply contains no JSON object with 'steps'"),
        ({"steps": []}, {"score": 5, "reason": "r"}, "non-empty list"),
        (STEPS, {"score": 11, "reason": "r"}, "from 0 to 10"),
        (STEPS, {"score": "high", "reason": "r"}, "from 0 to 10"),
        (STEPS, "Seven out of ten.", "g-eval evaluation"),
        (STEPS, '{"score": 7, "reason": "a"} {"score": 2, "reason": "b"}', "conflicting"),
        # A verdict without a reason is a grader error, as in promptfoo (it used to pass as "Scored 7/10").
        (STEPS, {"score": 7}, "g-eval evaluation: grader's 'reason' must be a non-empty text, got None"),
        (STEPS, {"score": 7, "reason": "  "}, "grader's 'reason' must be a non-empty text"),
    ],
)
def test_bad_replies_are_errors_even_under_not(tmp_path: Path, openai_env: LLMServer, steps: object, evaluation: object, message: str) -> None:
    openai_env.on_chat(steps_call(), steps)
    openai_env.on_chat(evaluate_call(), evaluation)
    result = run_eval(tmp_path, config(kind="not-g-eval"))
    component = result.component()
    assert status(component) == "error" and component["pass"] is False and message in component["reason"], component["reason"]
    assert result.rows[0]["failureReason"] == 2


def test_failing_second_criterion_names_it(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 8, "Coherence")
    openai_env.on_chat(steps_call("Fluency"), STEPS)
    openai_env.on_chat(evaluate_call("Fluency"), "no idea")
    result = run_eval(tmp_path, config(value="[Coherence - structure, Fluency - grammar]"))
    component = result.component()
    assert status(component) == "error"
    assert component["reason"].startswith("g-eval criterion 2/2 ('Fluency - grammar') failed: g-eval evaluation:")
    assert component["tokensUsed"]["numRequests"] == 4


def test_missing_inputs(tmp_path: Path, openai_env: LLMServer) -> None:
    no_prompt = run_eval(tmp_path, config(prompt="{{nothing}}"))
    assert status(no_prompt.component()) == "error" and "needs the prompt" in no_prompt.component()["reason"]
    empty_list = run_eval(tmp_path, config(value="[]"))
    assert status(empty_list.component()) == "error" and "needs a criterion" in empty_list.component()["reason"]
    assert grader_calls(openai_env) == []


def test_steps_evaluate_override_and_its_variables(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("STEPS FOR", {"steps": ["one", "two"]})
    openai_env.on_chat("EVALUATE", '{"score": 9, "reason": "great"}')
    result = run_eval(
        tmp_path,
        """
prompts: ['Tell me about {{topic}}']
providers:
  - id: echo
    transform: '"{\\"text\\": \\"Cats purr.\\"}"'
tests:
  - vars: {topic: cats}
    assert:
      - type: g-eval
        value: Accuracy
        rubricPrompt:
          steps: 'STEPS FOR {{criteria}} [{{topic}}]'
          evaluate:
            - role: system
              content: "EVALUATE {{criteria}} out of {{maxScore}} with steps:\\n- {{steps}}"
            - role: user
              content: 'Q: {{input}} A: {{output}} T: [{{topic}}]'
""",
    )
    assert result.component()["pass"] is True and result.component()["score"] == pytest.approx(0.9)
    steps, evaluate = grader_calls(openai_env)
    assert steps["messages"] == [{"role": "user", "content": "STEPS FOR Accuracy []"}]
    assert evaluate["messages"] == [
        {"role": "system", "content": "EVALUATE Accuracy out of 10 with steps:\n- one\n- two"},
        {"role": "user", "content": 'Q: Tell me about cats A: {"text":"Cats purr."} T: []'},
    ]


def test_string_rubric_prompt_from_defaultTest_is_ignored_but_on_the_assertion_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 7)
    result = run_eval(
        tmp_path,
        """
prompts: ['Hello!']
providers: [echo]
defaultTest:
  options:
    rubricPrompt: '[{"role": "user", "content": "Ausgabe: {{ output }} Kriterium: {{ rubric }}"}]'
tests:
  - assert:
      - {type: g-eval, value: 'Klar und praezise'}
  - assert:
      - {type: g-eval, value: 'Klar', rubricPrompt: 'plain text prompt'}
""",
    )
    inherited, own = (row["gradingResult"]["componentResults"][0] for row in result.rows)
    assert inherited["pass"] is True and inherited["score"] == pytest.approx(0.7)
    assert status(own) == "error" and "rubricPrompt must be a mapping with 'steps'" in own["reason"]
    assert not any("Ausgabe" in all_text(b) for b in grader_calls(openai_env))


def test_persistent_grader_error(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(500, times=20, path="/v1/chat/completions")
    result = run_eval(tmp_path, config())
    assert status(result.component()) == "error" and "g-eval steps call" in result.component()["reason"] and "500" in result.component()["reason"]


def test_an_evaluate_only_rubric_prompt_keeps_the_built_in_steps_prompt(tmp_path: Path, openai_env: LLMServer) -> None:
    script(openai_env, 8)
    openai_env.on_chat("MY EVALUATE", {"score": 6, "reason": "fine"})
    result = run_eval(
        tmp_path,
        """
prompts: ['Hello!']
providers: [echo]
tests:
  - assert:
      - {type: g-eval, value: 'Clear', rubricPrompt: {evaluate: 'MY EVALUATE {{criteria}}: {{output}}'}}
""",
    )
    assert result.component()["score"] == pytest.approx(0.6), result.component()["reason"]
    assert any("MY EVALUATE Clear" in all_text(b) for b in grader_calls(openai_env))
