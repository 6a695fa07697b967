"""`contextTransform` and the processing order, plus the seeds' RAG examples run unchanged.

Order: provider call -> `transformResponse` -> test `options.transform` -> assertion `transform`
for the graded output; `contextTransform` sees the output after `transformResponse` only, with
`context = {vars, prompt: {label}, metadata}` where metadata is the provider response's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.assertion_runs import Outcome, evaluate, outcome
from tests.conftest import COMPAT, run_cli, write
from tests.servers import rag_script
from tests.servers.llm_server import LLMServer, Recorded, Response

ANSWER = "Purchases up to $500 need no approval."
RETRIEVED = ["Expenses exceeding $500 must be pre-approved.", "Talk to Fred first."]

PY_PROVIDER = f"""
def call_api(prompt, options, context):
    return {{
        "output": {{"answer": {ANSWER!r}, "context": "From the handbook: expenses over $500 need approval."}},
        "metadata": {{"retrieved_docs": [{{"content": {RETRIEVED[0]!r}}}, {{"content": {RETRIEVED[1]!r}}}]}},
    }}
"""


def components(row: dict[str, Any]) -> list[Outcome]:
    return [outcome(c) for c in row["gradingResult"]["componentResults"]]


def user_messages(server: LLMServer) -> list[str]:
    return [r.json["messages"][-1]["content"] for r in server.requests_to("/v1/chat/completions")]


def test_context_from_the_output_and_from_provider_metadata(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "rag_provider.py", PY_PROVIDER)
    openai_env.on_chat("From the handbook", "1. max purchase is $500 | stated [Attributed]")
    openai_env.on_chat("Talk to Fred first.", "Expenses exceeding $500 must be pre-approved.")
    config = {
        "prompts": ["{{query}}"],
        "providers": ["file://rag_provider.py"],
        "tests": [
            {
                "vars": {"query": "What is the max purchase without approval?", "context": "IGNORED static context"},
                "assert": [
                    {"type": "context-recall", "contextTransform": "output.context", "value": "max purchase is $500", "threshold": 0.9},
                    {
                        "type": "context-relevance",
                        "contextTransform": 'context.metadata.retrieved_docs.map(d => d.content).join("\\n")',
                        "threshold": 0.5,
                    },
                ],
            }
        ],
    }
    (row,) = evaluate(tmp_path, config)
    recall, relevance = components(row)
    assert (recall.status, recall.score) == ("pass", 1.0)
    assert recall.raw["metadata"]["context"] == "From the handbook: expenses over $500 need approval."
    assert recall.raw["metadata"]["contextSource"] == "contextTransform"
    assert (relevance.status, relevance.score) == ("pass", 0.5)  # two lines, one quoted
    assert relevance.raw["metadata"]["contextUnits"] == RETRIEVED
    assert not any("IGNORED" in text for text in user_messages(openai_env))


def test_processing_order_transform_response_then_transforms_then_context_transform(tmp_path: Path, openai_env: LLMServer) -> None:
    def rag(recorded: Recorded) -> Response:
        query = json.loads(recorded.body)["q"]
        docs = [{"text": "Office hours are 9 to 5."}, {"text": "Closed on Sundays."}]
        return Response(200, json={"data": {"answer": f"We open at 9 ({query})", "documents": docs}})

    openai_env.route("POST", "/rag", rag)
    openai_env.on_chat("Closed on Sundays", "Final verdict for each statement in order: Yes.")
    openai_env.on_chat("WE OPEN AT 9", "The office opens at 9.")
    config = {
        "prompts": ["{{query}}"],
        "providers": [{"id": f"{openai_env.url}/rag", "config": {"body": {"q": "{{prompt}}"}, "transformResponse": "json.data"}}],
        "tests": [
            {
                "vars": {"query": "What are the office hours?"},
                "options": {"transform": "output.answer"},
                "assert": [
                    {
                        "type": "context-faithfulness",
                        "transform": "output.toUpperCase()",
                        "contextTransform": 'output.documents.map(d => d.text).join(" ")',
                        "threshold": 0.85,
                    }
                ],
            }
        ],
    }
    (row,) = evaluate(tmp_path, config)
    (result,) = components(row)
    assert (result.status, result.score) == ("pass", 1.0)
    assert result.raw["metadata"]["context"] == "Office hours are 9 to 5. Closed on Sundays."
    statements_call, verdicts_call = user_messages(openai_env)
    assert "WE OPEN AT 9 (WHAT ARE THE OFFICE HOURS?)" in statements_call  # test transform, then assertion transform
    assert "Office hours are 9 to 5. Closed on Sundays." in verdicts_call
    assert row["response"]["output"] == "We open at 9 (What are the office hours?)"


def test_a_list_result_is_chunks_and_the_context_argument_has_vars_and_prompt_label(tmp_path: Path, openai_env: LLMServer) -> None:
    # promptfoo 0.123.1 passes `prompt: {label: <the rendered prompt>}` to contextTransform
    openai_env.on_chat("chunk-b", "chunk-b from q?")
    config = {
        "prompts": [{"raw": "{{query}}", "label": "label-x"}],
        "providers": ["echo"],
        "tests": [
            {
                "vars": {"query": "q?", "name": "chunk"},
                "assert": [{"type": "context-relevance", "contextTransform": '[context.vars.name + "-a", context.vars.name + "-b from " + context.prompt.label]'}],
            }
        ],
    }
    (row,) = evaluate(tmp_path, config)
    (result,) = components(row)
    assert result.raw["metadata"]["contextUnits"] == ["chunk-a", "chunk-b from q?"]
    assert (result.status, result.score) == ("pass", 0.5)


def test_context_transform_from_a_python_file(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "ctx.py", "def pick(output, context):\n    return [c.strip() for c in output.split('|')]\n")
    openai_env.on_chat("alpha", "1. alpha [Attributed]")
    config = {
        "prompts": ["alpha | beta"],
        "providers": ["echo"],
        "tests": [{"assert": [{"type": "context-recall", "value": "alpha", "contextTransform": "file://ctx.py:pick"}]}],
    }
    (row,) = evaluate(tmp_path, config)
    (result,) = components(row)
    assert result.status == "pass" and result.raw["metadata"]["context"] == "alpha\n\nbeta"


def test_bad_context_transform_results_are_errors_naming_the_expression(tmp_path: Path, openai_env: LLMServer) -> None:
    cases = {
        "output.missing": "contextTransform 'output.missing' returned no value; it must return a non-empty string or list of strings (the output is text here: parse it first, e.g. JSON.parse(output).context)",
        "42": "the result of contextTransform '42' must be a string or a list of strings, got a number",
        "({a: 1})": "the result of contextTransform '({a: 1})' must be a string or a list of strings, got an object",
        "['ok', 1]": "but item 1 is a number",
        '""': "needs a non-empty context, but contextTransform gave an empty string",
        "[]": "needs a non-empty context, but contextTransform gave an empty list",
        "JSON.parse(output).x": "contextTransform 'JSON.parse(output).x' failed:",
        "output.": "contextTransform 'output.' failed:",
        "true": "must be a string or a list of strings, got a boolean",
        "[['a']]": "but item 0 is a list",
        "['ok', {}]": "but item 1 is an object",
        "['ok', null]": "but item 1 is null",
        "['ok', 2.5]": "but item 1 is a number",
        "['ok', '  ']": "needs a non-empty context, but contextTransform gave an empty chunk",
        "null": "contextTransform 'null' returned no value",
        "  output\n   .nope  ": "contextTransform 'output .nope' returned no value",
        "output.length > 1 ? output.missing : output.missing /* a long expression, cut in the reason */": (
            "contextTransform 'output.length > 1 ? output.missing : output.missing /* a long expression, cut...' returned no value"
        ),
    }
    tests = [{"description": code, "vars": {"query": "q"}, "assert": [{"type": "context-relevance", "contextTransform": code}]} for code in cases]
    rows = evaluate(tmp_path, {"prompts": ["not json"], "providers": ["echo"], "tests": tests})
    assert len(rows) == len(cases)
    for row in rows:
        (result,) = components(row)
        assert result.status == "error" and row["success"] is False
        assert cases[row["description"]] in result.reason, (row["description"], result.reason)
    assert openai_env.requests_to("/v1/chat/completions") == []


def test_bad_vars_context_is_an_error_naming_what_it_is(tmp_path: Path, openai_env: LLMServer) -> None:
    cases = {
        "number": (5, "vars.context must be a string or a list of strings, got a number"),
        "boolean": (True, "vars.context must be a string or a list of strings, got a boolean"),
        "mapping": ({"a": 1}, "vars.context must be a string or a list of strings, got an object"),
        "blank": (" ", "needs a non-empty context, but vars.context gave an empty string"),
    }
    tests = [{"description": name, "vars": {"query": "q", "context": value}, "assert": [{"type": "context-relevance"}]} for name, (value, _) in cases.items()]
    rows = evaluate(tmp_path, {"prompts": ["p"], "providers": ["echo"], "tests": tests})
    assert len(rows) == len(cases)
    for row in rows:
        (result,) = components(row)
        assert result.status == "error" and cases[row["description"]][1] in result.reason, (row["description"], result.reason)
    assert openai_env.requests_to("/v1/chat/completions") == []


def test_an_object_output_gets_no_parse_hint(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "objects.py", "def call_api(prompt, options, context):\n    return {'output': {'answer': 'x'}}\n")
    tests = [{"vars": {"query": "q"}, "assert": [{"type": "context-relevance", "contextTransform": "output.context"}]}]
    (row,) = evaluate(tmp_path, {"prompts": ["p"], "providers": ["file://objects.py"], "tests": tests})
    (result,) = components(row)
    assert result.status == "error"
    assert result.reason.endswith("returned no value; it must return a non-empty string or list of strings")


# -- the seeds' examples, unchanged ---------------------------------------------------------------

SEED_TRANSFORM = """
providers:
  - echo

tests:
  - vars:
      prompt: '{"answer": "Paris is the capital of France", "confidence": 0.95}'
      context: 'France is a country in Europe. Its capital city is Paris, which has over 2 million residents.'
    assert:
      - type: context-faithfulness
        transform: 'JSON.parse(output).answer' # Grade only the answer field
        threshold: 0.9

      - type: context-recall
        transform: 'JSON.parse(output).answer' # Check if answer appears in context
        value: 'Paris is the capital of France'
        threshold: 0.8
"""

SEED_CONTEXT_TRANSFORM = """
providers:
  - echo

tests:
  - vars:
      prompt: '{"answer": "Returns accepted within 30 days", "sources": ["Returns are accepted for 30 days from purchase", "30-day money-back guarantee"]}'
      query: 'What is the return policy?'
    assert:
      - type: context-faithfulness
        transform: 'JSON.parse(output).answer'
        contextTransform: 'JSON.parse(output).sources.join(". ")' # Extract sources as context
        threshold: 0.9

      - type: context-relevance
        contextTransform: 'JSON.parse(output).sources.join(". ")' # Check if context is relevant to query
        threshold: 0.8
"""

SEED_OUTPUT_CONTEXT = """
prompts:
  - |
    You are an internal corporate chatbot.
    Respond to this query: {{query}}
providers:
  - openai:gpt-5
tests:
  - vars:
      query: What is the max purchase that doesn't require approval?
    assert:
      - type: context-recall
        contextTransform: 'output.context'
        threshold: 0.9
        value: max purchase price without approval is $500
      - type: context-relevance
        contextTransform: 'output.context'
        threshold: 0.9
      - type: context-faithfulness
        contextTransform: 'output.context'
        threshold: 0.9
"""


def run_seed(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    write(tmp_path / "promptfooconfig.yaml", text)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code in (0, 1), result.err
    return json.loads((tmp_path / "out.json").read_text())["results"]["results"]


def test_seed_transform_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Paris is the capital of France", "1. Paris is the capital of France | stated [Attributed]")
    (row,) = run_seed(tmp_path, SEED_TRANSFORM)
    faithfulness, recall = components(row)
    # as in promptfoo, context-faithfulness needs vars.query, which this example does not set
    assert faithfulness.status == "error" and "needs vars.query" in faithfulness.reason
    assert (recall.status, recall.score) == ("pass", 1.0)
    (request,) = openai_env.requests_to("/v1/chat/completions")
    assert "Its capital city is Paris" in request.json["messages"][-1]["content"]
    assert row["metadata"]["ciGrade"]["status"] == "error"


def test_seed_context_transform_example(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Returns accepted within 30 days", "Returns are accepted within 30 days.")
    openai_env.on_chat("1. Returns are accepted within 30 days.", "Statement 1: stated. Verdict: Yes\nFinal verdict for each statement in order: Yes.")
    openai_env.on_chat("What is the return policy?", "Returns are accepted for 30 days from purchase.\n30-day money-back guarantee")
    (row,) = run_seed(tmp_path, SEED_CONTEXT_TRANSFORM)
    faithfulness, relevance = components(row)
    assert (faithfulness.status, faithfulness.score) == ("pass", 1.0)
    assert faithfulness.raw["metadata"]["context"] == "Returns are accepted for 30 days from purchase. 30-day money-back guarantee"
    assert (relevance.status, relevance.score) == ("pass", 1.0)
    assert relevance.raw["metadata"]["totalContextUnits"] == 2
    assert row["success"] is True
    (statements_call,) = [m for m in user_messages(openai_env) if "\nAnswer:\n" in m]
    assert "Returns accepted within 30 days" in statements_call and "sources" not in statements_call


def test_seed_output_context_example_with_a_text_model_explains_the_error(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("internal corporate chatbot", '{"answer": "$500", "context": "Purchases over $500 need approval."}')
    (row,) = run_seed(tmp_path, SEED_OUTPUT_CONTEXT)
    results = components(row)
    assert len(results) == 3
    for result in results:
        assert result.status == "error"
        assert "contextTransform 'output.context' returned no value" in result.reason
        assert "JSON.parse(output).context" in result.reason
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1  # only the model under test


SEED_STATIC = """
prompts:
  - |
    You are an internal corporate chatbot.
    Respond to this query: {{query}}
    Here is some context that you can use to write your response: {{context}}
providers:
  - openai:gpt-5
tests:
  - vars:
      query: What is the max purchase that doesn't require approval?
      context: file://docs/reimbursement.md
    assert:
      - type: contains
        value: '$500'
      - type: factuality
        value: the employee's manager is responsible for approvals
      - type: answer-relevance
        threshold: 0.9
      - type: context-recall
        threshold: 0.9
        value: max purchase price without approval is $500. Talk to Fred before submitting anything.
      - type: context-relevance
        threshold: 0.9
      - type: context-faithfulness
        threshold: 0.9
  - vars:
      query: How many weeks is maternity leave?
      context: file://docs/maternity.md
    assert:
      - type: factuality
        value: maternity leave is 4 months
      - type: answer-relevance
        threshold: 0.9
      - type: context-recall
        threshold: 0.9
        value: The company offers 4 months of maternity leave, unless you are an elephant, in which case you get 22 months of maternity leave.
      - type: context-relevance
        threshold: 0.9
      - type: context-faithfulness
        threshold: 0.9
"""


def test_seed_static_context_example(tmp_path: Path, openai_env: LLMServer) -> None:
    shutil.copytree(COMPAT / "eval-rag" / "docs", tmp_path / "docs")
    rag_script.install(openai_env)
    reimbursement, maternity = sorted(run_seed(tmp_path, SEED_STATIC), key=lambda r: r["testIdx"])
    models = [r.json["model"] for r in openai_env.requests_to("/v1/chat/completions")]
    assert models.count("gpt-5") == 2 and set(models) == {"gpt-5", "gpt-5.6-sol"}  # the chatbot, then the default grader
    for row in (reimbursement, maternity):
        by_type = {c.raw["assertion"]["type"]: c for c in components(row)}
        for name, (status, score) in rag_script.EXPECTED[row["testIdx"]].items():
            assert (by_type[name].status, by_type[name].score) == (status, pytest.approx(score)), (name, by_type[name].reason)
        relevance = by_type["context-relevance"]
        units = relevance.raw["metadata"]["totalContextUnits"]
        assert (relevance.status, relevance.score) == ("fail", pytest.approx(1 / units)) and units > 5
        assert row["success"] is False and row["metadata"]["ciGrade"]["status"] == "fail"
