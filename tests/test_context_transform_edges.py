"""`contextTransform` edges: a Python file without a function name calls `get_context`, an
expression of exactly 80 characters is quoted whole in the reason (longer ones are cut), and a
Python function that raises is named with its error."""

from __future__ import annotations

from pathlib import Path

from tests.assertion_runs import evaluate, outcome
from tests.conftest import write
from tests.servers.llm_server import LLMServer


def test_a_python_file_without_a_function_name_calls_get_context(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "ctx.py", "def get_context(output, context):\n    return [c.strip() for c in output.split('|')]\n")
    openai_env.on_chat("alpha", "1. alpha [Attributed]")
    config = {
        "prompts": ["alpha | beta"],
        "providers": ["echo"],
        "tests": [{"assert": [{"type": "context-recall", "value": "alpha", "contextTransform": "file://ctx.py"}]}],
    }
    (row,) = evaluate(tmp_path, config)
    (result,) = (outcome(c) for c in row["gradingResult"]["componentResults"])
    assert result.status == "pass", result.reason
    assert result.raw["metadata"]["context"] == "alpha\n\nbeta"


def test_an_expression_of_eighty_characters_is_quoted_whole(tmp_path: Path, openai_env: LLMServer) -> None:
    code = "output.missing /* " + "x" * 59 + " */"
    assert len(code) == 80
    longer = code[:-3] + "y */"
    tests = [{"description": c, "vars": {"query": "q"}, "assert": [{"type": "context-relevance", "contextTransform": c}]} for c in (code, longer)]
    rows = evaluate(tmp_path, {"prompts": ["not json"], "providers": ["echo"], "tests": tests})
    reasons = {row["description"]: outcome(row["gradingResult"]["componentResults"][0]).reason for row in rows}
    assert reasons[code].startswith(f"contextTransform {code!r} returned no value")
    assert reasons[longer].startswith(f"contextTransform {longer[:77] + '...'!r} returned no value")


def test_a_python_context_transform_that_raises_names_its_error(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "ctx.py", "def get_context(output, context):\n    raise ValueError('no context here')\n")
    config = {"prompts": ["p"], "providers": ["echo"], "tests": [{"vars": {"query": "q"}, "assert": [{"type": "context-relevance", "contextTransform": "file://ctx.py"}]}]}
    (row,) = evaluate(tmp_path, config)
    result = outcome(row["gradingResult"]["componentResults"][0])
    assert result.status == "error"
    assert "contextTransform 'file://ctx.py' failed: ValueError: no context here" in result.reason
