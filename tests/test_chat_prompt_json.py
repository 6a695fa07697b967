"""A rendered chat prompt that looks like a JSON array but does not parse errors its row, as in promptfoo."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade.errors import ProviderError
from ci_grade.providers.base import parse_chat_messages
from tests.provider_helpers import eval_rows
from tests.servers.llm_server import LLMServer

# `{{ sep }}` outside any JSON string: the template is not JSON until rendered.
CONFIG = """
prompts:
  - '[{"role": "system", "content": "Be brief."}{{ sep }} {"role": "user", "content": "{{ q }}"}]'
providers:
  - openai:chat:gpt-4.1-mini
  - openai:responses:gpt-4.1-mini
tests:
  - vars: {sep: ",", q: "valid"}
  - vars: {sep: "", q: "broken"}
"""


def test_invalid_json_chat_prompt_is_an_error_row_for_chat_apis(tmp_path: Path, openai_env: LLMServer) -> None:
    _, rows = eval_rows(tmp_path, CONFIG)
    by_key = {(r["vars"]["q"], r["provider"]["id"]): r for r in rows}
    assert by_key["valid", "openai:chat:gpt-4.1-mini"]["success"] is True
    broken = by_key["broken", "openai:chat:gpt-4.1-mini"]
    assert broken["failureReason"] == 2
    assert broken["error"].startswith("Chat Completion prompt is not a valid JSON string: ")
    assert '"content": "Be brief."} {"role"' in broken["error"]  # the rendered prompt follows the reason
    chats = [r.json["messages"] for r in openai_env.requests_to("/v1/chat/completions")]
    assert chats == [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "valid"}]]  # the broken row never called
    # The Responses API takes a prompt that is not a JSON array as text, as promptfoo's does.
    assert by_key["broken", "openai:responses:gpt-4.1-mini"]["success"] is True
    inputs = [r.json["input"] for r in openai_env.requests_to("/v1/responses")]
    assert [{"role": "user", "content": '[{"role": "system", "content": "Be brief."} {"role": "user", "content": "broken"}]'}] in inputs


@pytest.mark.parametrize(
    "prompt",
    ["[INST] hello [/INST]", "[Draft] fix the [bug]", "[citation needed] text", "Say [1, 2", "[] trailing"],
)
def test_bracketed_text_is_one_user_message(prompt: str) -> None:
    assert parse_chat_messages(prompt) == [{"role": "user", "content": prompt}]


@pytest.mark.parametrize("prompt", ['[{"role": "user", "content": "a"},]', '["a" "b"]', "[1, 2 3]", "[ true false ]", "[-1 -2]"])
def test_json_looking_arrays_that_do_not_parse_raise(prompt: str) -> None:
    with pytest.raises(ProviderError, match="not a valid JSON string"):
        parse_chat_messages(prompt)
    assert parse_chat_messages(prompt, strict=False) == [{"role": "user", "content": prompt}]


def test_yaml_messages_that_do_not_parse_raise() -> None:
    prompt = "- role: user\n  content: : :\n bad"
    with pytest.raises(ProviderError, match="not a valid YAML string"):
        parse_chat_messages(prompt)
    assert parse_chat_messages("- role: user\n  content: hi") == [{"role": "user", "content": "hi"}]
