"""conversation-relevance: sliding windows, scoring, summary reason, not-, overrides, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.model_graded_helpers import all_text, calls_matching, fenced_blocks, grader_calls, run_eval, status
from tests.servers.llm_server import LLMServer

WEDDING = """
      _conversation:
        - input: 'I need help planning my wedding'
          output: "Congratulations! What's your vision?"
        - input: 'We want an outdoor ceremony'
          output: 'Outdoor ceremonies can be beautiful! Have a backup plan for weather.'
        - input: 'What about flowers?'
          output: 'The stock market has been volatile lately.'
        - input: 'I meant wedding flowers'
          output: 'Peonies and hydrangeas are popular; seasonal blooms cost less.'
"""


def window_of(request: dict) -> list[dict]:
    ((_, block),) = fenced_blocks(all_text(request), "conversation")
    return json.loads(block)


def judge(request: dict) -> dict:
    last = window_of(request)[-1]["content"]
    if "stock market" in last:
        return {"verdict": "no", "reason": "Talks about stocks instead of flowers."}
    return {"verdict": "yes", "reason": "On topic."}


def is_window(request: dict) -> bool:
    return "<conversation id=" in all_text(request)


def config(kind: str = "conversation-relevance", extra: str = "", conversation: str = WEDDING) -> str:
    return f"""
prompts: ['{{{{message}}}}']
providers: [echo]
tests:
  - vars:
{conversation}    assert:
      - type: {kind}
{extra}"""


def test_four_turns_with_window_three(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(is_window, judge)
    openai_env.on_chat("Relevance score", {"reason": "One of four replies (0.75) wandered off to the stock market."})
    result = run_eval(tmp_path, config(extra="        threshold: 0.7\n        config: {windowSize: 3}\n"))
    component = result.component()
    assert (component["pass"], component["score"]) == (True, 0.75)
    assert component["reason"] == "One of four replies (0.75) wandered off to the stock market."
    windows = [window_of(b) for b in grader_calls(openai_env) if is_window(b)]
    assert len(windows) == 4
    assert [len(w) // 2 for w in windows] == [1, 2, 3, 3]
    assert windows[3][0] == {"role": "user", "content": "We want an outdoor ceremony"}
    assert windows[3][-1]["role"] == "assistant" and windows[3][-1]["content"].startswith("Peonies")
    (summary,) = calls_matching(openai_env, "Relevance score")
    assert "0.75" in all_text(summary)
    assert "Talks about stocks instead of flowers." in fenced_blocks(all_text(summary), "notes")[0][1]
    assert len(grader_calls(openai_env)) == 5
    assert component["tokensUsed"]["numRequests"] == 5
    assert [w["relevant"] for w in component["metadata"]["windows"]] == [True, True, False, True]


@pytest.mark.parametrize(("threshold", "passed"), [(0.75, True), (0.76, False)])
def test_threshold_edges(tmp_path: Path, openai_env: LLMServer, threshold: float, passed: bool) -> None:
    openai_env.on_chat(is_window, judge)
    openai_env.on_chat("Relevance score", {"reason": "summary"})
    result = run_eval(tmp_path, config(extra=f"        threshold: {threshold}\n"))
    assert (result.component()["pass"], result.component()["score"]) == (passed, 0.75)


def test_default_window_is_five_and_default_threshold_is_half(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(is_window, {"verdict": "no", "reason": ""})
    turns = "".join(f"        - {{input: 'question {i}', output: 'answer {i}'}}\n" for i in range(6))
    result = run_eval(tmp_path, config(conversation="      _conversation:\n" + turns))
    windows = [window_of(b) for b in grader_calls(openai_env)]
    assert [len(w) // 2 for w in windows] == [1, 2, 3, 4, 5, 5]
    assert windows[-1][0]["content"] == "question 1"
    component = result.component()
    assert (component["pass"], component["score"]) == (False, 0.0)
    assert component["reason"] == "0 out of 6 conversation windows were relevant"  # no reasons given, no summary call


def test_single_turn_uses_prompt_and_output(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(is_window, {"verdict": "yes", "reason": "answers it"})
    result = run_eval(
        tmp_path,
        """
prompts: ['Respond to: {{message}}']
providers:
  - id: echo
    transform: '"Spring and autumn are best."'
tests:
  - vars: {message: "What's the best time to visit Paris?"}
    assert:
      - {type: conversation-relevance, threshold: 0.9}
""",
    )
    assert (result.component()["pass"], result.component()["score"]) == (True, 1.0)
    assert result.component()["reason"] == "1 out of 1 conversation windows were relevant"
    (body,) = grader_calls(openai_env)
    assert window_of(body) == [
        {"role": "user", "content": "Respond to: What's the best time to visit Paris?"},
        {"role": "assistant", "content": "Spring and autumn are best."},
    ]
    assert body["response_format"] == {"type": "json_object"}


def test_not_inverts(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(is_window, judge)
    openai_env.on_chat("Relevance score", {"reason": "summary"})
    result = run_eval(tmp_path, config(kind="not-conversation-relevance", extra="        threshold: 0.9\n"))
    assert (result.component()["pass"], result.component()["score"]) == (True, 0.25)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"verdict": "maybe", "reason": "r"}, "'yes' or 'no'"),
        ("It is relevant.", "no JSON object with 'verdict'"),
        ('{"verdict": "yes"} {"verdict": "no"}', "conflicting"),
    ],
)
def test_unreadable_window_aborts_with_an_error_never_inverted(tmp_path: Path, openai_env: LLMServer, reply: object, message: str) -> None:
    openai_env.on_chat(lambda r: is_window(r) and "outdoor" in all_text(r), reply)
    openai_env.on_chat(is_window, judge)
    result = run_eval(tmp_path, config(kind="not-conversation-relevance"))
    component = result.component()
    assert status(component) == "error" and component["pass"] is False and message in component["reason"]
    assert component["reason"].startswith("window 2/4")
    assert len(grader_calls(openai_env)) == 2


def test_failed_summary_keeps_the_verdict_and_says_why(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(is_window, judge)
    openai_env.on_chat("Relevance score", "no json here")
    result = run_eval(tmp_path, config(extra="        threshold: 0.7\n"))
    component = result.component()
    assert (component["pass"], component["score"]) == (True, 0.75)
    assert component["reason"] == "3 out of 4 conversation windows were relevant"
    assert "no JSON object with 'reason'" in component["metadata"]["summaryError"]


@pytest.mark.parametrize(
    ("conversation", "extra", "message"),
    [
        ("      _conversation: 'turns'\n", "", "must be a list of {input, output} turns"),
        ("      _conversation: [{input: hi}]\n", "", "_conversation[0] must be a mapping with 'input' and 'output'"),
        (WEDDING, "        config: {windowSize: 0}\n", "windowSize must be a whole number"),
    ],
)
def test_bad_inputs_are_errors(tmp_path: Path, openai_env: LLMServer, conversation: str, extra: str, message: str) -> None:
    result = run_eval(tmp_path, config(conversation=conversation, extra=extra))
    assert status(result.component()) == "error" and message in result.component()["reason"]
    assert grader_calls(openai_env) == []


def test_rubric_prompt_gets_raw_messages(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("TURNS", '{"verdict": "yes", "reason": "fine"}')
    result = run_eval(
        tmp_path,
        config(
            conversation="      topic: weddings\n" + WEDDING,
            extra="        config: {windowSize: 2}\n        rubricPrompt: 'TURNS about {{topic}}:{% for m in messages %} {{m.input}} => {{m.output}} |{% endfor %}'\n",
        ),
    )
    assert result.component()["pass"] is True
    bodies = grader_calls(openai_env)
    assert len(bodies) == 4
    assert bodies[1]["messages"] == [
        {
            "role": "user",
            "content": "TURNS about weddings: I need help planning my wedding => Congratulations! What's your vision? | "
            "We want an outdoor ceremony => Outdoor ceremonies can be beautiful! Have a backup plan for weather. |",
        }
    ]


def test_grader_outage_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(500, times=50, path="/v1/chat/completions")
    result = run_eval(tmp_path, config())
    assert status(result.component()) == "error" and "500" in result.component()["reason"]


def test_windows_and_notes_are_indented_json_that_keeps_its_characters(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
    openai_env.on_chat(is_window, lambda request: {"verdict": "no", "reason": "Spricht über Aktien."} if "stock market" in window_of(request)[-1]["content"] else {"verdict": "yes", "reason": "ok"})
    openai_env.on_chat("Relevance score", "")  # an empty reply, asked again and still empty: the summary call fails
    result = run_eval(tmp_path, config(extra="        threshold: 0.7\n"))
    component = result.component()
    assert component["reason"] == "3 out of 4 conversation windows were relevant"
    assert component["metadata"]["summaryError"].startswith("conversation-relevance reason call to ")
    window = next(b for b in grader_calls(openai_env) if is_window(b))
    ((_, block),) = fenced_blocks(all_text(window), "conversation")
    assert block.startswith('[\n  {\n    "role": ')
    summary, *again = calls_matching(openai_env, "Relevance score")
    assert len(again) == 3 and all(call == summary for call in again)
    assert '"Spricht über Aktien."' in fenced_blocks(all_text(summary), "notes")[0][1]


def test_a_custom_prompt_sees_the_configs_env(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Judge for weddings", {"verdict": "yes", "reason": "fine"})
    text = config(extra="        rubricPrompt: 'Judge for {{ env.EVENT_KIND }}: {{ messages | length }} turns'\n")
    result = run_eval(tmp_path, "env: {EVENT_KIND: weddings}\n" + text)
    assert result.component()["pass"] is True, result.component()["reason"]
    assert all("Judge for weddings:" in all_text(b) for b in grader_calls(openai_env))


def test_a_multi_turn_test_judges_each_reply_with_the_turns_before_it(tmp_path: Path, openai_env: LLMServer) -> None:
    # promptfoo 0.123.1: its `_conversation` is the live history, so each turn's windows end with
    # the reply under test; the first turn, with no history, is judged as prompt -> output.
    openai_env.on_chat(lambda request: is_window(request) and "TURN_TWO" in all_text(request), {"verdict": "no", "reason": "Off topic."})
    openai_env.on_chat(is_window, {"verdict": "yes", "reason": "On topic."})
    openai_env.on_chat("Relevance score", {"reason": "summary"})
    result = run_eval(tmp_path, """
prompts: ['{% for turn in _conversation %}User: {{ turn.input }} Assistant: {{ turn.output }} {% endfor %}User: {{ q }}']
providers: [echo]
tests:
  - vars: {q: TURN_ONE}
    assert: [{type: conversation-relevance}]
  - vars: {q: TURN_TWO}
    assert: [{type: conversation-relevance, threshold: 0.9}]
  - vars: {q: TURN_THREE}
    assert: [{type: conversation-relevance, config: {windowSize: 1}}]
""")
    first, second, third = (row["gradingResult"]["componentResults"][0] for row in result.rows)
    assert (first["pass"], first["score"]) == (True, 1.0)
    assert (second["pass"], second["score"]) == (False, 0.5)  # turn one relevant, turn two (under test) not
    assert (third["pass"], third["score"]) == (False, pytest.approx(1 / 3))  # windows of one; turn three repeats turn two
