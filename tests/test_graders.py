"""Which provider grades an assertion: precedence, provider forms, defaults from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import GraderError
from ci_grade.grading.graders import GraderResolver, has_web_search
from ci_grade.providers.registry import ProviderPool
from tests.conftest import run_cli, write
from tests.model_graded_helpers import grader_calls, run_eval, status
from tests.servers import anthropic_server, ollama_server
from tests.servers.llm_server import LLMServer

PASS = {"reason": "fine", "pass": True, "score": 1}

PRECEDENCE = """
prompts: ['{{out}}']
providers: [echo]
defaultTest:
  options:
    provider: openai:chat:model-default
tests:
  - description: inherits
    vars: {out: from-defaultTest}
    assert:
      - {type: llm-rubric, value: rubric-inherits}
  - description: test options
    vars: {out: from-test}
    options:
      provider: openai:chat:model-test
    assert:
      - {type: llm-rubric, value: rubric-test}
  - description: assertion
    vars: {out: from-assertion}
    options:
      provider: openai:chat:model-test
    assert:
      - {type: llm-rubric, value: rubric-assertion, provider: openai:chat:model-assertion}
"""


def models_by_rubric(server: LLMServer) -> dict[str, str]:
    out = {}
    for body in grader_calls(server):
        user = body["messages"][-1]["content"]
        rubric = next(word for word in user.split() if word.startswith("rubric-"))
        out[rubric] = body["model"]
    return out


def test_assertion_beats_test_beats_defaultTest(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, PASS)
    result = run_eval(tmp_path, PRECEDENCE)
    assert result.stats["successes"] == 3
    assert models_by_rubric(openai_env) == {
        "rubric-inherits": "model-default",
        "rubric-test": "model-test",
        "rubric-assertion": "model-assertion",
    }
    graders = {c["metadata"]["ciGrade"]["grader"] for r in result.rows for c in r["gradingResult"]["componentResults"]}
    assert graders == {"openai:chat:model-default", "openai:chat:model-test", "openai:chat:model-assertion"}
    assert sorted(result.data["ciGrade"]["info"]["graders"]) == sorted(graders)


def test_cli_grader_replaces_defaultTest_only(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, PASS)
    run_eval(tmp_path, PRECEDENCE, "--grader", "openai:chat:model-cli")
    assert models_by_rubric(openai_env) == {
        "rubric-inherits": "model-cli",
        "rubric-test": "model-test",
        "rubric-assertion": "model-assertion",
    }


def test_provider_object_with_config_reaches_its_own_server(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, PASS)
    with LLMServer() as other:
        other.on_chat(None, {"reason": "from the second server", "pass": False, "score": 0})
        result = run_eval(
            tmp_path,
            f"""
prompts: ['{{{{out}}}}']
providers: [echo]
tests:
  - vars: {{out: x}}
    assert:
      - {{type: llm-rubric, value: on the default server}}
      - type: llm-rubric
        value: on the second server
        provider:
          id: openai:chat:judge-two
          config: {{apiBaseUrl: '{other.openai_base_url}', temperature: 0}}
""",
        )
        (second,) = grader_calls(other)
    first, remote = result.rows[0]["gradingResult"]["componentResults"]
    assert first["pass"] is True
    assert remote["pass"] is False and remote["reason"] == "from the second server"
    assert second["model"] == "judge-two" and second["temperature"] == 0
    assert [b["model"] for b in grader_calls(openai_env)] == ["gpt-5.6-sol"]


def test_kind_map_uses_the_text_entry(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, PASS)
    result = run_eval(
        tmp_path,
        """
prompts: ['{{out}}']
providers: [echo]
defaultTest:
  options:
    provider:
      text: {id: 'openai:chat:text-judge'}
      embedding: openai:embedding:text-embedding-3-small
tests:
  - vars: {out: x}
    assert:
      - {type: llm-rubric, value: is x}
""",
    )
    assert result.component()["pass"] is True
    assert [b["model"] for b in grader_calls(openai_env)] == ["text-judge"]


def test_settings_without_an_id_configure_the_default_grader(tmp_path: Path, openai_env: LLMServer) -> None:
    """`options.provider: {config: ...}` (promptfoo's TrueFoundry example): the default grader with those settings."""
    openai_env.on_chat(None, PASS)
    result = run_eval(
        tmp_path,
        """
prompts: ['{{out}}']
providers: [echo]
defaultTest:
  options:
    provider:
      config: {temperature: 0.7, seed: 7, reasoning_effort: low}
tests:
  - vars: {out: x}
    assert:
      - {type: llm-rubric, value: is x}
""",
    )
    assert result.component()["pass"] is True
    (body,) = grader_calls(openai_env)
    assert (body["model"], body["seed"], body["reasoning_effort"]) == ("gpt-5.6-sol", 7, "low")
    assert result.component()["metadata"]["ciGrade"]["grader"] == "openai:chat:gpt-5.6-sol"


def test_settings_without_an_id_and_no_default_grader_exit_2(tmp_path: Path, llm_server: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['x']\nproviders: [echo]\ndefaultTest:\n  options:\n    provider: {config: {temperature: 1}}\n"
          "tests:\n  - assert:\n      - {type: llm-rubric, value: fine}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "no text grader available for llm-rubric" in result.err
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['x']\nproviders: [echo]\ndefaultTest:\n  options:\n    provider: {config: 5}\n"
          "tests:\n  - assert:\n      - {type: llm-rubric, value: fine}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "defaultTest.options.provider.config" in result.err
    assert llm_server.requests == []


@pytest.mark.parametrize(("provider", "message"), [("openai:embedding:text-embedding-3-small", "cannot serve text calls")])
def test_unusable_grader_is_an_error(tmp_path: Path, openai_env: LLMServer, provider: str, message: str) -> None:
    result = run_eval(
        tmp_path,
        f"""
prompts: ['{{{{out}}}}']
providers: [echo]
tests:
  - vars: {{out: x}}
    assert:
      - {{type: llm-rubric, value: is x, provider: {provider}}}
      - {{type: contains, value: x}}
""",
    )
    component = result.component()
    assert status(component) == "error" and message in component["reason"]
    assert result.rows[0]["failureReason"] == 2
    assert result.rows[0]["gradingResult"]["componentResults"][1]["pass"] is True
    assert grader_calls(openai_env) == []


def test_a_grader_that_is_not_a_provider_reference_is_refused(tmp_path: Path, openai_env: LLMServer) -> None:
    """At load (exit 2, before any call) for a config; by the resolver for anything that gets past."""
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['{{out}}']
        providers: [echo]
        tests:
          - vars: {out: x}
            assert:
              - {type: llm-rubric, value: is x, provider: [openai:chat:a, openai:chat:b]}
        """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "tests[0].assert[0].provider: expected a provider id" in result.err
    assert openai_env.requests == [] and not (tmp_path / "out.json").exists()
    resolver = GraderResolver(ProviderPool({}), {})
    with pytest.raises(GraderError, match="invalid grader provider"):
        resolver.resolve("text", ["openai:chat:a", "openai:chat:b"], "llm-rubric")


@pytest.mark.parametrize(
    ("where", "yaml"),
    [
        ("tests[0].assert[0].provider", "    assert: [{type: llm-rubric, value: is x, provider: nosuch:provider}]"),
        ("tests[0].options.provider.text", "    options: {provider: {text: {id: nosuch:provider}}}\n    assert: [{type: llm-rubric, value: is x}]"),
        ("tests[0].provider", "    provider: nosuch:provider"),
    ],
)
def test_an_unknown_provider_anywhere_exits_2_before_any_call(tmp_path: Path, openai_env: LLMServer, where: str, yaml: str) -> None:
    # promptfoo refuses a test's unknown provider at load; an unknown grader it finds only after
    # calling the provider under test. ci-grade refuses both before any model is called.
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{out}}']\nproviders: [openai:chat:gpt-4.1-mini]\ntests:\n  - vars: {out: x}\n" + yaml + "\n")
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and f"{where}: unknown provider 'nosuch:provider'" in result.err, result.err
    assert openai_env.requests == [] and not (tmp_path / "out.json").exists()


MODEL_GRADED = """
prompts: ['{{out}}']
providers: [echo]
tests:
  - vars: {out: Paris is the capital}
    assert:
      - {type: llm-rubric, value: names a capital}
      - {type: model-graded-closedqa, value: names a capital}
      - {type: factuality, value: Paris is the capital of France}
"""


def test_only_anthropic_key_grades_with_claude(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def reply(request: dict) -> object:
        tool = (request.get("tool_choice") or {}).get("name")
        text = str(request.get("messages"))
        if tool and "Expert answer" in text:
            return {"content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"category": "C", "reason": "same facts"}}]}
        if tool:
            return {"content": [{"type": "tool_use", "id": "t2", "name": tool, "input": {"reason": "names Paris", "pass": True, "score": 1}}]}
        return "It names Paris as a capital.\nY"

    anthropic_server.install(llm_server, reply)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.url)
    result = run_eval(tmp_path, MODEL_GRADED)
    assert result.stats["successes"] == 1, result.rows[0]["gradingResult"]
    components = result.rows[0]["gradingResult"]["componentResults"]
    assert {c["metadata"]["ciGrade"]["grader"] for c in components} == {"anthropic:messages:claude-sonnet-4-6"}
    bodies = [r.json for r in llm_server.requests_to("/v1/messages")]
    assert len(bodies) == 3 and {b["model"] for b in bodies} == {"claude-sonnet-4-6"}
    forced = [b for b in bodies if b.get("tool_choice")]
    assert len(forced) == 2 and all(b["tool_choice"]["type"] == "tool" for b in forced)
    assert llm_server.requests_to("/v1/chat/completions") == []
    assert all(c["tokensUsed"]["total"] > 0 for c in components)


def test_only_ollama_grades_locally(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def reply(request: dict) -> str:
        text = str(request.get("messages"))
        if "Expert answer" in text:
            return '{"category": "A", "reason": "subset"}'
        if "Criterion" in text:
            return "Names Paris.\nY"
        return '{"reason": "names Paris", "pass": true, "score": 1}'

    ollama_server.install(llm_server, reply)
    monkeypatch.setenv("OLLAMA_BASE_URL", llm_server.url)
    result = run_eval(tmp_path, MODEL_GRADED)
    assert result.stats["successes"] == 1, result.rows[0]["gradingResult"]
    bodies = [r.json for r in llm_server.requests_to("/api/chat")]
    assert len(bodies) == 3 and {b["model"] for b in bodies} == {"llama3.1"}
    assert {c["metadata"]["ciGrade"]["grader"] for c in result.rows[0]["gradingResult"]["componentResults"]} == {"ollama:chat:llama3.1"}


def test_no_grader_anywhere_exits_2_before_any_call_naming_what_to_set(tmp_path: Path, llm_server: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", MODEL_GRADED + "      - {type: search-rubric, value: is current}\n")
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and not (tmp_path / "out.json").exists()
    assert "promptfooconfig.yaml:6 tests[0].assert[0].type: no text grader available for llm-rubric: set OPENAI_API_KEY (or ANTHROPIC_API_KEY" in result.err
    assert "defaultTest.options.provider" in result.err
    assert llm_server.requests == []
    write(tmp_path / "promptfooconfig.yaml", MODEL_GRADED.split("      - {type: llm-rubric")[0] + "      - {type: search-rubric, value: is current}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "tests[0].assert[0].type: no web-search grader available for search-rubric: set OPENAI_API_KEY" in result.err


def test_openai_key_wins_over_other_credentials() -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "a", "OLLAMA_BASE_URL": "http://127.0.0.1:1"}
    resolver = GraderResolver(ProviderPool(env), env)
    assert resolver.default_id("text") == "openai:chat:gpt-5.6-sol"
    assert resolver.default_id("embedding") == "openai:embedding:text-embedding-3-large"
    assert resolver.default_id("moderation") == "openai:moderation:omni-moderation-latest"
    assert resolver.default_id("classification") is None
    azure = {"AZURE_OPENAI_API_KEY": "k", "AZURE_OPENAI_DEPLOYMENT_NAME": "judge", "ANTHROPIC_API_KEY": "a"}
    assert GraderResolver(ProviderPool(azure), azure).default_id("text") == "azureopenai:chat:judge"
    anthropic = {"ANTHROPIC_API_KEY": "a", "OLLAMA_BASE_URL": "http://127.0.0.1:1"}
    assert GraderResolver(ProviderPool(anthropic), anthropic).default_id("text") == "anthropic:messages:claude-sonnet-4-6"
    assert GraderResolver(ProviderPool(anthropic), anthropic).default_id("embedding") is None


@pytest.mark.parametrize(
    ("env", "text", "embedding"),
    [  # promptfoo 0.123.1's order and default models (src/providers/defaults.ts)
        ({"AZURE_OPENAI_API_KEY": "k", "AZURE_DEPLOYMENT_NAME": "judge", "MISTRAL_API_KEY": "m"}, "azureopenai:chat:judge", "mistral:embedding:mistral-embed"),
        ({"AZURE_API_KEY": "k", "AZURE_OPENAI_DEPLOYMENT_NAME": "judge", "GEMINI_API_KEY": "g"}, "azureopenai:chat:judge", "google:embedding:gemini-embedding-001"),
        ({"AZURE_API_KEY": "k", "AZURE_OPENAI_DEPLOYMENT_NAME": "judge", "VOYAGE_API_KEY": "v"}, "azureopenai:chat:judge", "voyage:voyage-3.5"),
        ({"ANTHROPIC_API_KEY": "a", "GEMINI_API_KEY": "g", "MISTRAL_API_KEY": "m"}, "anthropic:messages:claude-sonnet-4-6", None),
        ({"GOOGLE_API_KEY": "g", "MISTRAL_API_KEY": "m", "XAI_API_KEY": "x"}, "google:gemini-3.8-flash", "vertex:embedding:gemini-embedding-001"),
        ({"GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "MISTRAL_API_KEY": "m"}, "vertex:gemini-3.8-flash", "vertex:embedding:gemini-embedding-001"),
        ({"MISTRAL_API_KEY": "m", "XAI_API_KEY": "x", "OLLAMA_BASE_URL": "http://127.0.0.1:1"}, "mistral:mistral-large-latest", "mistral:embedding:mistral-embed"),
        ({"XAI_API_KEY": "x", "OLLAMA_BASE_URL": "http://127.0.0.1:1"}, "xai:grok-4.3", None),
        ({"OLLAMA_BASE_URL": "http://127.0.0.1:1"}, "ollama:chat:llama3.1", "ollama:embedding:nomic-embed-text"),
        ({}, None, None),
    ],
)
def test_default_graders_follow_promptfoos_key_order_and_models(env: dict[str, str], text: str | None, embedding: str | None) -> None:
    resolver = GraderResolver(ProviderPool(env), env)
    assert (resolver.default_id("text"), resolver.default_id("embedding"), resolver.default_id("moderation")) == (text, embedding, None)


def test_mistral_key_alone_grades_with_mistral_end_to_end(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-key-0123456789")
    monkeypatch.setenv("MISTRAL_API_BASE_URL", llm_server.openai_base_url)
    llm_server.on_chat("is polite", {"reason": "Polite.", "pass": True, "score": 1})
    result = run_eval(tmp_path, "prompts: ['{{out}}']\nproviders: [echo]\ntests:\n  - vars: {out: Thanks}\n    assert:\n      - {type: llm-rubric, value: is polite}\n      - {type: similar, value: Thanks, threshold: 0.9}\n")
    rubric, similar = result.rows[0]["gradingResult"]["componentResults"]
    assert (rubric["pass"], rubric["metadata"]["ciGrade"]["grader"]) == (True, "mistral:mistral-large-latest")
    assert (similar["pass"], similar["metadata"]["ciGrade"]["grader"]) == (True, "mistral:embedding:mistral-embed")
    assert {r.headers.get("authorization") or r.headers.get("Authorization") for r in llm_server.requests} == {"Bearer mistral-key-0123456789"}


def test_a_missing_embedding_or_moderation_grader_names_what_can_serve_it() -> None:
    anthropic = {"ANTHROPIC_API_KEY": "a"}  # Anthropic has no embeddings: its key cannot help
    resolver = GraderResolver(ProviderPool(anthropic), anthropic)
    with pytest.raises(GraderError) as embedding:
        resolver.default("embedding", "similar")
    assert "ANTHROPIC_API_KEY" not in embedding.value.reason and "AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME" in embedding.value.reason
    with pytest.raises(GraderError) as moderation:
        resolver.default("moderation", "moderation")
    assert "OLLAMA_BASE_URL" not in moderation.value.reason and "give a moderation provider" in moderation.value.reason


def test_settings_without_an_id_configure_the_default_of_each_kind() -> None:
    env = {"ANTHROPIC_API_KEY": "a"}
    resolver = GraderResolver(ProviderPool(env), env)
    text = resolver.resolve("text", {"config": {"temperature": 0.3}}, "llm-rubric")
    assert (text.spec.id, text.spec.config) == ("anthropic:messages:claude-sonnet-4-6", {"temperature": 0.3})
    search, searching = resolver.resolve_search({"config": {"max_tokens": 99}}, "search-rubric")
    assert searching and search.spec.id == "anthropic:messages:claude-sonnet-4-6"
    assert search.spec.config["max_tokens"] == 99 and search.spec.config["tools"][0]["type"] == "web_search_20250305"
    with pytest.raises(GraderError, match="no embedding grader available for similar"):
        resolver.resolve("embedding", {"config": {"temperature": 0.3}}, "similar")


@pytest.mark.parametrize(
    ("spec", "searching"),
    [
        ({"id": "openai:responses:gpt-5.6-terra", "config": {"tools": [{"type": "web_search_preview"}]}}, True),
        ({"id": "openai:responses:gpt-5.6-terra", "config": {"tools": [{"type": "web_search"}]}}, True),
        ({"id": "openai:responses:gpt-5.6-terra"}, False),
        ({"id": "openai:chat:gpt-4o-search-preview"}, True),
        ({"id": "openai:chat:gpt-5.6-sol"}, False),
        ({"id": "anthropic:messages:claude-sonnet-4-6", "config": {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}}, True),
        ({"id": "anthropic:messages:claude-sonnet-4-6"}, False),
        ({"id": "perplexity:sonar"}, True),
        ({"id": "google:gemini-2.5-pro", "config": {"tools": [{"googleSearch": {}}]}}, True),
        ({"id": "xai:grok-4", "config": {"search_parameters": {"mode": "on"}}}, True),
    ],
)
def test_web_search_capability(spec: dict, searching: bool) -> None:
    assert has_web_search(ProviderSpec.model_validate(spec)) is searching


def test_responses_api_grader_gets_json_mode(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("is x", PASS)
    result = run_eval(
        tmp_path,
        """
prompts: ['{{out}}']
providers: [echo]
tests:
  - vars: {out: x}
    assert:
      - {type: llm-rubric, value: is x, provider: 'openai:responses:gpt-4.1-mini'}
""",
    )
    assert result.component()["pass"] is True
    assert result.component()["metadata"]["ciGrade"]["grader"] == "openai:responses:gpt-4.1-mini"
    (body,) = grader_calls(openai_env, "/v1/responses")
    assert body["text"] == {"format": {"type": "json_object"}}
    assert [m["role"] for m in body["input"]] == ["system", "user"]
