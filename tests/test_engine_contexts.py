"""What the grading engine hands to scripts and comparisons: the transform context promptfoo
documents (prompt.raw, test.metadata), the grader usage of a failed comparison on its first output
only, a comparison's metric rendered with the test's vars, its threshold kept, and a long
unreadable grader reply quoted in part."""

from __future__ import annotations

from pathlib import Path

from tests.assertion_runs import evaluate, first
from tests.model_graded_helpers import run_eval, status
from tests.servers.llm_server import LLMServer


def test_a_transform_sees_the_raw_prompt_and_the_tests_metadata(tmp_path: Path) -> None:
    rows = evaluate(tmp_path, """
prompts: ['Say {{case}}']
providers: [echo]
tests:
  - description: refunds
    vars: {case: hi}
    metadata: {owner: support}
    providerOutput: anything
    assert:
      - type: equals
        value: "Say hi|support|refunds|hi"
        transform: "context.prompt.raw + '|' + context.test.metadata.owner + '|' + context.test.description + '|' + context.test.vars.case"
""")
    (row,) = rows
    assert first(row).passed, first(row).reason


def test_a_transform_of_a_test_without_metadata_sees_an_empty_object(tmp_path: Path) -> None:
    rows = evaluate(tmp_path, """
prompts: ['Say {{case}}']
providers: [echo]
tests:
  - vars: {case: hi}
    providerOutput: anything
    assert:
      - {type: equals, value: "{}", transform: "JSON.stringify(context.test.metadata)"}
""")
    assert first(rows[0]).passed, first(rows[0]).reason


def test_prompt_label_is_the_rendered_prompt_for_an_assertion_transform_and_the_label_for_a_tests(tmp_path: Path) -> None:
    # promptfoo 0.123.1: runAssertion passes `prompt: {label: <rendered prompt>}`; the test's
    # own options.transform gets the prompt itself, whose label is the label
    rows = evaluate(tmp_path, """
prompts: [{raw: 'Say {{case}}', label: greeting}]
providers: [echo]
tests:
  - vars: {case: hi}
    options: {transform: "output + '|' + context.prompt.label"}
    assert:
      - {type: equals, value: "Say hi|greeting|Say hi", transform: "output + '|' + context.prompt.label"}
""")
    assert first(rows[0]).passed, first(rows[0]).reason


TWO_PROMPTS = """
prompts:
  - 'Write a tweet about {{topic}}'
  - 'Write a very concise, funny tweet about {{topic}}'
providers: [echo]
tests:
  - vars: {topic: bananas}
    assert:
      - type: select-best
        value: choose the funniest tweet
        metric: funniest-{{topic}}
"""


def _select_best(row: dict) -> dict:
    return next(c for c in row["gradingResult"]["componentResults"] if c["assertion"]["type"] == "select-best")


def test_a_failed_comparison_books_its_grader_usage_on_the_first_output_only(tmp_path: Path, openai_env: LLMServer) -> None:
    usage = {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}
    openai_env.on_chat("choose the funniest tweet", "Both are funny.", usage=usage)
    result = run_eval(tmp_path, TWO_PROMPTS)
    components = [_select_best(row) for row in result.rows]
    assert [status(c) for c in components] == ["error", "error"]
    assert [c["tokensUsed"]["total"] for c in components] == [100, 0]
    assert result.stats["tokenUsage"]["assertions"]["total"] == 100


def test_a_comparisons_metric_is_rendered_with_the_tests_vars(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("choose the funniest tweet", {"reason": "The second is funnier.", "best": 1})
    result = run_eval(tmp_path, TWO_PROMPTS)
    assert [_select_best(row)["assertion"].get("metric") for row in result.rows] == ["funniest-bananas"] * 2
    assert [row["namedScores"] for row in result.rows] == [{"funniest-bananas": 0.0}, {"funniest-bananas": 1.0}]


def test_a_comparison_keeps_its_threshold_and_quotes_a_long_unreadable_reply(tmp_path: Path, openai_env: LLMServer) -> None:
    reply = "Both outputs are funny in their own way. " * 8
    openai_env.on_chat("choose the funniest tweet", reply)
    result = run_eval(tmp_path, TWO_PROMPTS.replace("metric: funniest-{{topic}}", "threshold: 0.5"))
    components = [_select_best(row) for row in result.rows]
    assert [c["assertion"].get("threshold") for c in components] == [0.5, 0.5]
    text = reply.strip()
    shown = text[:200] + f"… [{len(text) - 200} more chars]"
    assert all(c["reason"].endswith(f"grader reply holds no output index: {shown}") for c in components), components[0]["reason"]
