"""Python prompt functions and prompt scripts, called per row as promptfoo calls them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import write
from tests.servers.llm_server import LLMServer
from tests.test_config_loader import chat_requests, eval_config, outputs

PROMPTS_PY = """
import json
import sys


def plain(context):
    return f"Tell me about {context['vars']['topic']} ({context['provider']['id']})"


def templated(context):
    return "Summarise {{ topic | upper }}"


class Prompt:
    @staticmethod
    def chat(context):
        return [{"role": "system", "content": "be brief"}, {"role": "user", "content": context["vars"]["topic"]}]


def with_config(context):
    return {"prompt": [{"role": "user", "content": "hi " + context["vars"]["topic"]}], "config": {"temperature": 0.25, "max_tokens": 7}}


def broken(context):
    raise KeyError("nope")


if __name__ == "__main__":
    context = json.loads(sys.argv[1])
    print("Script says " + context["vars"]["topic"])
"""


def test_prompt_functions_scripts_and_labels(tmp_path: Path) -> None:
    write(tmp_path / "prompts.py", PROMPTS_PY)
    result, rows = eval_config(
        tmp_path,
        """
        prompts:
          - file://prompts.py:plain
          - file://prompts.py:templated
          - {id: file://prompts.py:Prompt.chat, label: chat}
          - file://prompts.py
        providers: [echo]
        tests: [{vars: {topic: tides}}]
        """,
    )
    assert result.code == 0, result.err
    assert outputs(rows)[:3] == ["Tell me about tides (echo)", "Summarise TIDES", json.dumps(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "tides"}], indent=2)]
    assert outputs(rows)[3] == "Script says tides"
    labels = [row["prompt"]["label"] for row in rows]
    assert labels[:3] == ["prompts.py:plain", "prompts.py:templated", "chat"]
    assert labels[3].startswith("prompts.py: import json\nimport sys")


def test_a_prompt_function_config_reaches_the_provider(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "prompts.py", PROMPTS_PY)
    result, _ = eval_config(
        tmp_path,
        """
        prompts: [file://prompts.py:with_config]
        providers: [{id: openai:chat:gpt-4.1-mini, config: {temperature: 0.9, seed: 3}}]
        tests: [{vars: {topic: moon}}]
        """,
    )
    assert result.code == 0, result.err
    (body,) = chat_requests(openai_env)
    assert body["messages"] == [{"role": "user", "content": "hi moon"}]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.25, 7, 3)


def test_a_failing_prompt_function_is_an_error_row_and_bad_syntax_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "prompts.py", PROMPTS_PY)
    result, rows = eval_config(tmp_path, "prompts: [file://prompts.py:broken, file://prompts.py:plain]\nproviders: [echo]\ntests: [{vars: {topic: x}}]\n")
    assert result.code == 1
    assert rows[0]["error"] == "prompt 'prompts.py:broken': KeyError: 'nope' (prompts.py:24 in broken)"
    assert rows[1]["success"] is True
    write(tmp_path / "bad.py", "def fn(context):\n    return 'x' +\n")
    result, _ = eval_config(tmp_path, "prompts: [file://bad.py:fn]\nproviders: [echo]\n")
    assert result.code == 2 and "promptfooconfig.yaml:1 prompts[0]: SyntaxError: invalid syntax (bad.py:2)" in result.err
