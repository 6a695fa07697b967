"""OpenAI-compatible families (one table row each) through the real `openai` SDK against the
loopback OpenAI-compatible server: the path, the family's own key variable, its base URL override,
body fields and headers as promptfoo sends them, cost from promptfoo's tables, and refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ci_grade.providers.compatible import parse_id
from ci_grade.providers.compatible_families import FAMILIES, Family
from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows, use
from tests.servers.llm_server import LLMServer


def sample_id(family: Family) -> str:
    model = "org/some-model" if family.parse == "rest" else "some-model"
    return f"{family.prefixes[0]}:{model}"


def redirect(family: Family, server: LLMServer) -> tuple[dict[str, str], dict[str, str], str]:
    """(env, config, expected path): the family pointed at the server the way its users would
    (its URL variable, else the variable its endpoint template reads, else config.apiBaseUrl)."""
    template_path = urlsplit(re.sub(r"\{\w+\}", "x", family.base_url)).path if "://" in family.base_url else ""
    if family.url_vars:
        base = server.url if family.url_suffix else server.url + template_path
        return {family.url_vars[0]: base}, {}, (family.url_suffix or template_path) + "/chat/completions"
    lead = re.match(r"\{(\w+)\}", family.base_url)
    param = next((p for p in family.params if lead and p.name == lead.group(1)), None)
    if param is not None and param.env:
        rest = family.base_url[lead.end() :] if lead else ""
        path = (rest or family.ensure_suffix).replace("{model}", "some-model")
        return {param.env[0]: server.url}, {}, path + "/chat/completions"
    if not family.config_url:  # F5: apiBaseUrl is the gateway, the model its route
        return {}, {"apiBaseUrl": f"{server.url}/v1"}, "/v1/org/some-model/chat/completions"
    return {}, {"apiBaseUrl": f"{server.url}/v1"}, "/v1/chat/completions"


@pytest.mark.parametrize("family", [f for f in FAMILIES if not f.retired], ids=lambda f: f.prefixes[0])
def test_every_family_calls_its_endpoint_with_its_own_key(family: Family, llm_server: LLMServer) -> None:
    provider_id = sample_id(family)
    env, config, path = redirect(family, llm_server)
    key_var = family.keys[0] if family.keys else None
    if key_var:
        env[key_var] = f"key-for-{family.prefixes[0]}"
    env["OPENAI_API_KEY"] = env.get("OPENAI_API_KEY", "sk-openai-must-not-leak")
    response = call({"id": provider_id, "config": config}, "hello there", env=env)
    assert response.error is None, response.error
    assert response.output == "echo: hello there"
    (request,) = llm_server.requests
    assert request.path == path
    auth = {k.lower(): v for k, v in request.headers.items()}.get("authorization")
    assert auth == f"Bearer {env[key_var]}" if key_var else auth == "Bearer no-key"
    assert request.json["model"] == parse_id(provider_id, config).model


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.embeddings], ids=lambda f: f.prefixes[0])
def test_families_with_embeddings_serve_them(family: Family, llm_server: LLMServer) -> None:
    prefix = family.prefixes[0]
    provider_id = f"{prefix}:text-embedding-x" if prefix == "truefoundry" else f"{prefix}:embedding:text-embedding-x"
    env = {k: "k" for k in family.keys}
    vector = use({"id": provider_id, "config": {"apiBaseUrl": llm_server.openai_base_url, "apiKey": "k"}}, lambda p: p.embed("some text"), env)
    assert vector.error is None and vector.embedding
    (request,) = llm_server.requests_to("/v1/embeddings")
    assert request.json["model"] == "text-embedding-x" and request.json["input"] == "some text"


def test_openai_key_is_never_sent_to_another_vendor(llm_server: LLMServer) -> None:
    env = {"OPENAI_API_KEY": "sk-openai-secret", "XAI_API_BASE_URL": llm_server.openai_base_url}
    response = call("xai:grok-3", "hi", env=env)
    assert response.error == "API key is not set: set XAI_API_KEY or config.apiKey for provider xai:grok-3"
    assert llm_server.requests == []


def test_ids_parse_as_promptfoo_parses_them() -> None:
    cases = {
        "xai:grok-3": ("chat", "grok-3"),
        "xai:chat:grok-3": ("chat", "chat:grok-3"),  # promptfoo's xai takes everything after the prefix
        "mistral:mistral-large-latest": ("chat", "mistral-large-latest"),
        "mistral:chat:mistral-small": ("chat", "mistral-small"),
        "mistral:embedding:mistral-embed": ("embedding", "mistral-embed"),
        "mistral:embeddings": ("embedding", "mistral-embed"),
        "openrouter:openai/gpt-4o": ("chat", "openai/gpt-4o"),
        "togetherai:embedding:BAAI/bge-base": ("embedding", "BAAI/bge-base"),
        "togetherai:meta-llama/Llama-3-8b": ("chat", "meta-llama/Llama-3-8b"),
        "huggingface:chat:meta-llama/Llama-3.1-8B-Instruct": ("chat", "meta-llama/Llama-3.1-8B-Instruct"),
        "hf:chat:org/model:provider": ("chat", "org/model:provider"),
        "dashscope:qwen-max": ("chat", "qwen-max"),
        "deepseek:": ("chat", "deepseek-chat"),
        "cloudera:my-model:extra": ("chat", "my-model"),
        "truefoundry:openai-main/text-embedding-3-small": ("embedding", "openai-main/text-embedding-3-small"),
    }
    assert {i: (parse_id(i, {}).kind, parse_id(i, {}).model) for i in cases} == cases


def test_github_models_is_refused_as_retired_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['hi']\nproviders: ['github:openai/gpt-4.1']\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "GitHub Models was retired on July 30, 2026" in result.err


def test_databricks_endpoint_comes_from_the_workspace_and_is_named_when_missing(llm_server: LLMServer) -> None:
    missing = call("databricks:my-endpoint", "hi", env={"DATABRICKS_TOKEN": "dapi-1"})
    assert missing.error is not None and "DATABRICKS_WORKSPACE_URL" in missing.error and "config.workspaceUrl" in missing.error
    config = {"workspaceUrl": llm_server.url + "/", "usageContext": {"team": "qa"}}
    assert call({"id": "databricks:my-endpoint", "config": config}, "hi", env={"DATABRICKS_TOKEN": "dapi-1"}).error is None
    (request,) = llm_server.requests
    assert request.path == "/serving-endpoints/chat/completions"
    assert request.json["usage_context"] == {"team": "qa"}


def test_family_body_fields_and_headers_go_out_as_promptfoo_sends_them(llm_server: LLMServer) -> None:
    config = {"apiBaseUrl": llm_server.openai_base_url, "transforms": ["middle-out"], "provider": {"order": ["x"]}, "temperature": 0.3}
    assert call({"id": "openrouter:openai/gpt-4o", "config": config}, "hi", env={"OPENROUTER_API_KEY": "or-1"}).error is None
    portkey = {"portkeyVirtualKey": "vk-1", "portkeyMetadata": {"user": "u"}, "headers": {"X-Mine": "1"}}
    env = {"PORTKEY_API_KEY": "pk-1", "PORTKEY_API_BASE_URL": llm_server.openai_base_url}
    assert call({"id": "portkey:gpt-4o", "config": portkey}, "hi", env=env).error is None
    nscale = {"apiBaseUrl": llm_server.openai_base_url, "top_k": 5, "apiKey": "ns-1"}
    assert call({"id": "nscale:chat:llama", "config": nscale}, "hi", env={}).error is None
    first, second, third = llm_server.requests
    assert (first.json["transforms"], first.json["provider"], first.json["temperature"]) == (["middle-out"], {"order": ["x"]}, 0.3)
    headers = {k.lower(): v for k, v in second.headers.items()}
    assert (headers["x-portkey-virtual-key"], headers["x-portkey-metadata"], headers["x-mine"]) == ("vk-1", '{"user": "u"}', "1")
    assert "portkeyVirtualKey" not in second.json
    assert third.json["top_k"] == 5 and "apiKey" not in third.json


def test_cost_comes_from_the_family_table(llm_server: LLMServer) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    llm_server.on_chat(None, "ok", usage=usage)
    env = {"XAI_API_KEY": "xai-1", "MISTRAL_API_KEY": "m-1", "OPENROUTER_API_KEY": "or-1"}
    grok = call({"id": "xai:grok-3-mini", "config": {"apiBaseUrl": llm_server.openai_base_url}}, "hi", env=env)
    mistral = call({"id": "mistral:mistral-large-2407", "config": {"apiBaseUrl": llm_server.openai_base_url}}, "hi", env=env)
    routed = call({"id": "openrouter:openai/gpt-4o-mini", "config": {"apiBaseUrl": llm_server.openai_base_url}}, "hi", env=env)
    groq = call({"id": "groq:llama-3.3-70b-versatile", "config": {"apiBaseUrl": llm_server.openai_base_url, "apiKey": "g"}}, "hi", env=env)
    assert grok.cost == pytest.approx(1000 * 0.3e-6 + 500 * 0.5e-6)
    assert mistral.cost == pytest.approx(1000 * 3e-6 + 500 * 9e-6)
    assert routed.cost == pytest.approx(1000 * 0.15e-6 + 500 * 0.6e-6)
    assert groq.cost is None  # promptfoo has no price for it: unknown, not made up


@pytest.mark.parametrize(
    ("provider_id", "says"),
    [
        ("azure:assistant:", "name the assistant"),
        ("azure:foundry-agent:", "name the agent"),
        ("huggingface:summarization:facebook/bart-large-cnn", "huggingface:chat:<model>"),
        ("xai:video:grok-imagine-video", "xai:video is not supported"),
        ("togetherai:completion:some-model", "togetherai:completion is not supported"),
        ("xai:", "name a model"),
        ("nosuchvendor:model", "docs/providers.md"),
    ],
)
def test_ids_that_cannot_run_are_refused_before_any_call(tmp_path: Path, llm_server: LLMServer, provider_id: str, says: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['hi']\nproviders: ['{provider_id}']\ntests: [{{vars: {{}}}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert says in result.err and "promptfooconfig.yaml:2" in result.err
    assert llm_server.requests == []


def test_eval_runs_families_end_to_end_with_secrets_masked(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"XAI_API_KEY": "xai-secret-123456789", "MISTRAL_API_KEY": "mistral-secret-123456789", "GROQ_API_KEY": "groq-secret-123456789"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XAI_API_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("MISTRAL_API_BASE_URL", llm_server.openai_base_url)
    llm_server.on_chat("Paris", "Paris is the capital.")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['Capital of France? Answer about Paris.']
        providers:
          - xai:grok-3
          - mistral:mistral-large-latest
          - id: groq:llama-3.3-70b-versatile
            config: {{apiBaseUrl: {llm_server.openai_base_url}}}
        defaultTest:
          options: {{provider: mistral:mistral-large-latest}}
        tests:
          - assert:
              - type: contains
                value: Paris
              - type: similar
                value: Paris is the capital.
        """,
    )
    assert code == 0
    assert [row["provider"]["id"] for row in rows] == ["xai:grok-3", "mistral:mistral-large-latest", "groq:llama-3.3-70b-versatile"]
    assert all(row["success"] for row in rows), [row.get("error") or row["gradingResult"] for row in rows]
    assert {r.json["model"] for r in llm_server.requests_to("/v1/embeddings")} == {"mistral-embed"}  # the grader's own family serves `similar`
    auths = {r.headers.get("Authorization") or r.headers.get("authorization") for r in llm_server.requests}
    assert auths == {f"Bearer {v}" for v in secrets.values()}
    written = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert not any(value in written for value in secrets.values())
    assert json.loads((tmp_path / "out.json").read_text())["results"]["results"]


# The request-body options each family passes through under the names its API reads (promptfoo's lists).
BODY_OPTIONS = {
    "xai": ("search_parameters",),
    "mistral": ("safe_prompt", "random_seed", "prompt_mode", "prediction", "guardrails", "prompt_cache_key"),
    "groq": ("reasoning_format", "include_reasoning", "compound_custom", "search_settings"),
    "openrouter": ("transforms", "models", "route", "provider"),
    "orcarouter": ("models", "route"),
    "perplexity": ("search_domain_filter", "search_recency_filter", "return_related_questions", "return_images",
                   "search_after_date_filter", "search_before_date_filter", "web_search_options"),
    "truefoundry": ("mcp_servers", "iteration_limit"),
    "abliteration": ("reasoning_effort",),
}


@pytest.mark.parametrize(("prefix", "options"), BODY_OPTIONS.items())
def test_every_family_body_option_goes_out_under_its_api_name(prefix: str, options: tuple[str, ...], llm_server: LLMServer) -> None:
    config = {name: {"set": name} for name in options}
    spec = {"id": f"{prefix}:some-model", "config": {"apiBaseUrl": llm_server.openai_base_url, "apiKey": "k-1", **config}}
    response = call(spec, "hi", env={})
    assert response.error is None, response.error
    (request,) = llm_server.requests
    assert {name: request.json.get(name) for name in options} == config


def test_a_base_url_variable_with_a_trailing_slash_reaches_the_same_path(llm_server: LLMServer) -> None:
    env = {"MISTRAL_API_KEY": "m-1", "MISTRAL_API_BASE_URL": llm_server.openai_base_url + "/"}
    assert call("mistral:mistral-large-latest", "hi", env=env).error is None
    (request,) = llm_server.requests
    assert request.path == "/v1/chat/completions"
