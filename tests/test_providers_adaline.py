"""Adaline Gateway ids (`adaline:<vendor>:<kind>:<model>`) served by each vendor's own family, against
loopback stand-ins of OpenAI's, Anthropic's and Gemini's APIs reached through their real clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade.providers.registry import id_problem
from tests.conftest import run_cli, write
from tests.model_graded_helpers import grader_calls
from tests.provider_helpers import eval_rows
from tests.servers import anthropic_server, google_server
from tests.servers.llm_server import LLMServer

GEMINI_KEY = "AIza-adaline-test-4242"

# promptfoo's adaline-chat-history prompt: the gateway's message format, built with Nunjucks.
GATEWAY_PROMPT = """[
  {"role": "system", "content": [{"modality": "text", "value": {{ system | dump }}}]},
  {% for message in previous %}{% for role, content in message %}
  {"role": "{{ role }}", "content": [{"modality": "text", "value": {{ content | dump }}}]},
  {% endfor %}{% endfor %}
  {"role": "user", "content": [{"modality": "text", "value": {{ question | dump }}}]}
]"""

WEATHER_TOOL = {"type": "function", "definition": {"schema": {
    "name": "get_weather", "description": "Weather of a place", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}}


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-adaline-openai-1234")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-adaline-5678")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.url)
    for name in ("GOOGLE_API_KEY", "PALM_API_KEY", "GOOGLE_API_HOST", "PALM_API_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("GOOGLE_API_BASE_URL", llm_server.url)
    anthropic_server.install(llm_server, lambda body: "Claude says Zuckerberg")
    google_server.install_gemini(llm_server, GEMINI_KEY, "gemini-2.5-flash", lambda body: "Gemini says Zuckerberg")
    yield llm_server


def test_gateway_messages_reach_each_vendor_in_its_own_shape(server: LLMServer, tmp_path: Path) -> None:
    server.on_chat(None, "GPT says Zuckerberg")
    write(tmp_path / "prompt.json", GATEWAY_PROMPT)
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: [file://prompt.json]
        providers:
          - id: adaline:openai:chat:gpt-4.1-mini
            config: {temperature: 0.99, maxTokens: 120, topP: 0.5}
          - id: adaline:anthropic:chat:claude-3-5-sonnet-20240620
            config: {temperature: 0.5, maxTokens: 100, stop: [END]}
          - id: adaline:google:chat:gemini-2.5-flash
            config: {maxTokens: 80, topK: 3}
        defaultTest:
          vars:
            system: Be brief.
            previous: [{user: Who founded Facebook?}, {assistant: Mark Zuckerberg}]
        tests:
          - vars: {question: What is his role?}
            assert: [{type: icontains, value: zuckerberg}]
        """,
    )
    assert code == 0
    assert [row["provider"]["id"] for row in rows] == [
        "adaline:openai:chat:gpt-4.1-mini", "adaline:anthropic:chat:claude-3-5-sonnet-20240620", "adaline:google:chat:gemini-2.5-flash"]
    assert [row["response"]["output"] for row in rows] == ["GPT says Zuckerberg", "Claude says Zuckerberg", "Gemini says Zuckerberg"]
    assert all(row["response"]["tokenUsage"]["total"] > 0 for row in rows)
    (openai,) = grader_calls(server)
    assert openai["model"] == "gpt-4.1-mini" and (openai["temperature"], openai["max_tokens"], openai["top_p"]) == (0.99, 120, 0.5)
    assert [m["role"] for m in openai["messages"]] == ["system", "user", "assistant", "user"]
    assert openai["messages"][-1]["content"] == [{"type": "text", "text": "What is his role?"}]
    (claude,) = grader_calls(server, "/v1/messages")
    assert (claude["model"], claude["max_tokens"], claude["temperature"], claude["stop_sequences"]) == ("claude-3-5-sonnet-20240620", 100, 0.5, ["END"])
    assert claude["system"] == [{"type": "text", "text": "Be brief."}]
    assert claude["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "Who founded Facebook?"}]}
    (gemini,) = grader_calls(server, "/v1beta/models/gemini-2.5-flash:generateContent")
    assert gemini["generationConfig"]["maxOutputTokens"] == 80 and gemini["generationConfig"]["topK"] == 3
    assert [c["role"] for c in gemini["contents"]] == ["user", "model", "user"]
    assert gemini["contents"][-1]["parts"] == [{"text": "What is his role?"}]
    assert gemini["systemInstruction"]["parts"] == [{"text": "Be brief."}]


def test_gateway_tools_structured_output_embeddings_and_grading(server: LLMServer, tmp_path: Path) -> None:
    """promptfoo's adaline tool-call, structured-output, embedding-similarity and eval-factuality examples."""
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location": "Boston"}'}}
    server.on_chat("weather", "", tool_calls=[call])
    server.on_chat("customer", {"category": "billing", "urgency": "4"})
    server.on_chat("Submission", {"reason": "matches", "pass": True, "score": 1})
    tools = json.dumps([WEATHER_TOOL])
    schema = json.dumps({"name": "analysis", "strict": True, "schema": {"type": "object", "properties": {"category": {"type": "string"}}}})
    code, tool_rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['What is the weather like in {{{{city}}}}?']
        providers:
          - id: adaline:openai:chat:gpt-4.1-mini
            config: {{tools: {tools}}}
        tests:
          - vars: {{city: Boston}}
            assert:
              - {{type: javascript, value: "output[0].modality === 'tool-call' && output[0].name === 'get_weather'"}}
              - {{type: javascript, value: "JSON.parse(output[0].arguments).location === 'Boston'"}}
        """,
    )
    assert code == 0, tool_rows[0]["response"]
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['A customer was charged twice']
        providers:
          - id: adaline:openai:chat:gpt-4.1-mini
            config: {{seed: 3, responseFormat: json_schema, responseSchema: {schema}}}
        tests:
          - assert:
              - {{type: javascript, value: "output.category === 'billing'"}}
              - type: similar
                value: billing
                threshold: 0.1
                transform: output.category
                provider: adaline:openai:embedding:text-embedding-3-small
              - type: llm-rubric
                value: Submission names a category
                provider: {{id: 'adaline:openai:chat:gpt-4.1-mini'}}
        """,
    )
    assert code == 0, [row["gradingResult"] for row in rows]
    tool_body = next(b for b in grader_calls(server) if b.get("tools"))
    assert tool_body["tools"] == [{"type": "function", "function": WEATHER_TOOL["definition"]["schema"]}]
    schema_body = next(b for b in grader_calls(server) if b.get("seed") == 3)
    assert schema_body["response_format"] == {"type": "json_schema", "json_schema": json.loads(schema)}
    embeddings = [r.json for r in server.requests_to("/v1/embeddings")]
    assert [(e["model"], e["input"]) for e in embeddings] == [("text-embedding-3-small", "billing")] * 2
    graders = {c["metadata"]["ciGrade"].get("grader") for r in rows for c in r["gradingResult"]["componentResults"]}
    assert graders == {None, "adaline:openai:embedding:text-embedding-3-small", "adaline:openai:chat:gpt-4.1-mini"}


def test_openai_format_config_passes_through_and_tool_calls_stay_openais(server: LLMServer, tmp_path: Path) -> None:
    """A config in OpenAI's shape (function tools, snake_case keys) is the vendor family's config as written."""
    call = {"id": "call_9", "type": "function", "function": {"name": "get_current_weather", "arguments": '{"location": "Boston, MA"}'}}
    server.on_chat("weather", "", tool_calls=[call])
    tool = {"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object"}}}
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['What is the weather like in {{{{city}}}}?']
        providers:
          - id: adaline:openai:chat:gpt-4o
            config: {{tools: {json.dumps([tool])}, max_tokens: 50}}
        tests:
          - vars: {{city: Boston}}
            assert:
              - {{type: is-valid-openai-tools-call}}
              - {{type: javascript, value: "output[0].function.name === 'get_current_weather'"}}
        """,
    )
    assert code == 0, rows[0]["gradingResult"]
    (body,) = grader_calls(server)
    assert body["tools"] == [tool] and body["max_tokens"] == 50


def test_images_in_gateway_format(server: LLMServer, tmp_path: Path) -> None:
    """promptfoo's adaline-vision examples: a base64 image to Claude, an image URL to OpenAI."""
    image = '[{"role": "user", "content": [{"modality": "text", "value": "What is it?"}, {"modality": "image", "detail": "auto", "value": %s}]}]'
    write(tmp_path / "base64.json", image % '{"type": "base64", "media_type": "jpeg", "base64": "{{b64}}"}')
    write(tmp_path / "url.json", image % '{"type": "url", "url": "{{url}}"}')
    server.on_chat(None, "a shoe")
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: [{id: file://base64.json, label: b64}, {id: file://url.json, label: url}]
        providers:
          - id: adaline:anthropic:chat:claude-3-opus-20240229
            prompts: [b64]
          - id: adaline:openai:chat:gpt-4o
            prompts: [url]
        tests:
          - vars: {b64: /9j/AAAA, url: 'https://example.com/shoe.jpg'}
        """,
    )
    assert code == 0 and len(rows) == 2
    (claude,) = grader_calls(server, "/v1/messages")
    assert claude["messages"][0]["content"][1] == {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/AAAA"}}
    (openai,) = grader_calls(server)
    assert openai["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": "https://example.com/shoe.jpg", "detail": "auto"}}


@pytest.mark.parametrize(("provider_id", "message"), [
    ("adaline:openai:gpt-4o", "write adaline:<vendor>:<chat|embedding>:<model>"),
    ("adaline:mistral:chat:mistral-large", "vendor 'mistral' is not one ci-grade serves"),
    ("adaline:anthropic:embedding:claude-3", "anthropic offers chat models only"),
    ("adaline:voyage:chat:voyage-3", "voyage offers embedding models only"),
])
def test_ids_the_gateway_cannot_serve_exit_2_before_any_call(server: LLMServer, tmp_path: Path, provider_id: str, message: str) -> None:
    assert message in (id_problem(provider_id) or "")
    write(tmp_path / "promptfooconfig.yaml", f"prompts: [hi]\nproviders: ['{provider_id}']\ntests: [{{vars: {{}}}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and message in result.err and "docs/providers.md" in result.err
    assert server.requests == []


def test_a_broken_gateway_prompt_is_an_error_row(server: LLMServer, tmp_path: Path) -> None:
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['[{"role": "user", "content": [{"modality": "text", "value": "hi"}]']
        providers:
          - id: adaline:openai:chat:gpt-4o
            config: {maxTokens: 10}
        tests: [{vars: {}}]
        """,
    )
    assert code == 1 and "not a valid JSON string" in rows[0]["error"]
    assert server.requests == []
