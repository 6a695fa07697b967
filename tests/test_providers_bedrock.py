"""Bedrock through boto3 against a loopback stand-in of Bedrock Runtime that checks SigV4 signatures,
bearer API keys and each model family's request body."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import CallContext, Provider
from tests.provider_helpers import call, make, use
from tests.servers.aws_server import KEY_ID, SECRET, AwsServer

pytest_plugins = ["tests.aws_helpers"]  # the `aws` fixture
HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"


def only_request(server: AwsServer, kind: str) -> dict:
    (request,) = [r for r in server.requests if r.path.endswith(f"/{kind}")]
    return request.json


def test_converse_sends_messages_system_and_inference_config_signed_for_the_region(aws: AwsServer) -> None:
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}])
    spec = {"id": f"bedrock:converse:{HAIKU}", "config": {"max_tokens": 200, "temperature": 0.2, "topP": 0.9, "stop": ["END"]}}
    response = call(spec, prompt)
    assert response.error is None and response.output == "echo: Capital of France?"
    assert response.finish_reason == "stop"
    body = only_request(aws, "converse")
    assert body == {
        "messages": [{"role": "user", "content": [{"text": "Capital of France?"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 200, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]},
    }
    assert aws.requests[0].path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    assert aws.auth_seen == [f"sigv4:{KEY_ID}"]  # the stand-in verified the signature, scope us-west-2/bedrock
    tokens_in = len(json.dumps(body["messages"])) // 4
    assert (response.token_usage.prompt, response.token_usage.completion) == (tokens_in, len("echo: Capital of France?") // 4)
    assert response.cost == pytest.approx(tokens_in * 8e-7 + response.token_usage.completion * 4e-6)  # promptfoo's Bedrock table


def test_converse_reads_promptfoo_role_lines_and_environment_defaults(aws: AwsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEDROCK_MAX_TOKENS", "77")
    response = call("bedrock:converse:amazon.nova-lite-v1:0", "system: You are terse.\nuser: hello\nassistant: hi\nuser: again")
    assert response.output == "echo: again"
    body = only_request(aws, "converse")
    assert body["system"] == [{"text": "You are terse."}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["inferenceConfig"] == {"maxTokens": 77}


def test_converse_forces_a_tool_for_a_graders_structured_reply(aws: AwsServer) -> None:
    aws.reply = lambda model, body: json.dumps({"pass": True, "reason": "fine"})
    context = CallContext(response_schema={"type": "object", "properties": {"pass": {"type": "boolean"}}})
    response = call(f"bedrock:converse:{HAIKU}", "grade this", context)
    assert response.output == {"pass": True, "reason": "fine"}
    assert only_request(aws, "converse")["toolConfig"]["toolChoice"] == {"tool": {"name": "verdict"}}


CLAUDE_BODY = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1024, "temperature": 0, "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (HAIKU, CLAUDE_BODY),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", CLAUDE_BODY),
        ("amazon.nova-micro-v1:0", {"messages": [{"role": "user", "content": [{"text": "hello"}]}], "inferenceConfig": {"temperature": 0}}),
        ("amazon.titan-text-express-v1", {"inputText": "hello", "textGenerationConfig": {"maxTokenCount": 1024, "temperature": 0, "topP": 1}}),
        ("meta.llama3-1-8b-instruct-v1:0", {"prompt": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|><|start_header_id|>assistant<|end_header_id|>", "temperature": 0, "top_p": 1, "max_gen_len": 1024}),
        ("meta.llama4-scout-17b-instruct-v1:0", {"prompt": "<|begin_of_text|><|header_start|>user<|header_end|>\n\nhello<|eot|><|header_start|>assistant<|header_end|>", "temperature": 0, "top_p": 1, "max_gen_len": 1024}),
        ("mistral.mistral-7b-instruct-v0:2", {"prompt": "hello", "stop": [], "max_tokens": 1024, "temperature": 0, "top_p": 1}),
        ("mistral.mistral-large-2407-v1:0", {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 1024, "temperature": 0, "top_p": 1}),
        ("cohere.command-r-v1:0", {"message": "hello", "chat_history": []}),
        ("ai21.jamba-1-5-mini-v1:0", {"messages": [{"role": "user", "content": "hello"}], "temperature": 0, "top_p": 1.0}),
        ("deepseek.v3-v1:0", {"messages": [{"role": "user", "content": "hello"}], "temperature": 0, "top_p": 1.0}),
        ("openai.gpt-oss-120b-1:0", {"messages": [{"role": "user", "content": "hello"}], "temperature": 0.1, "top_p": 1.0}),
        ("qwen.qwen3-32b-v1:0", {"messages": [{"role": "user", "content": "hello"}], "temperature": 0.7, "top_p": 1.0}),
        ("zai.glm-4.7", {"messages": [{"role": "user", "content": "hello"}]}),
    ],
)
def test_invoke_model_sends_each_familys_body_and_reads_its_reply(aws: AwsServer, model: str, expected: dict) -> None:
    response = call(f"bedrock:{model}", "hello")
    assert response.error is None, response.error
    assert response.output == "echo: hello"
    assert only_request(aws, "invoke") == expected
    assert response.token_usage.total > 0 or model.startswith(("mistral.mistral-7b", "cohere."))


def test_invoke_deepseek_r1_wraps_the_prompt_and_show_thinking_false_drops_the_reasoning(aws: AwsServer) -> None:
    response = call({"id": "bedrock:deepseek.r1-v1:0", "config": {"showThinking": False}}, "why?")
    assert response.output == "echo: why?"
    assert only_request(aws, "invoke")["prompt"] == "\nwhy?\n<think>\n"


def test_invoke_claude_prices_cache_tokens_and_sends_tools_and_system(aws: AwsServer) -> None:
    prompt = json.dumps([{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}])
    tools = [{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}]
    response = call({"id": f"bedrock:completion:{HAIKU}", "config": {"max_tokens": 50, "temperature": 0.5, "tools": tools}}, prompt)
    body = only_request(aws, "invoke")
    assert (body["system"], body["max_tokens"], body["temperature"], body["tools"]) == ("sys", 50, 0.5, tools)
    assert response.cost == pytest.approx(response.token_usage.prompt * 8e-7 + response.token_usage.completion * 4e-6)


@pytest.mark.parametrize(("model", "field"), [("amazon.titan-embed-text-v2:0", "inputText"), ("cohere.embed-english-v3", "texts")])
def test_embeddings_for_titan_and_cohere(aws: AwsServer, model: str, field: str) -> None:
    result = use(f"bedrock:embeddings:{model}", lambda p: p.embed("three quarters"))
    assert result.error is None and result.embedding is not None and len(result.embedding) == 64
    assert field in only_request(aws, "invoke")
    aws.fail_next(400, "ValidationException", "Malformed input request")
    failed = use(f"bedrock:embeddings:{model}", lambda p: p.embed("three quarters"))
    assert failed.embedding is None and (failed.error or "").startswith("API call error:") and "Malformed input request" in (failed.error or "")


def test_api_key_from_the_environment_is_sent_as_a_bearer_token(aws: AwsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    aws.bearer_tokens.add("bedrock-api-key-abcdef123456")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-abcdef123456")
    assert call(f"bedrock:converse:{HAIKU}", "hi").output == "echo: hi"
    assert aws.requests[0].headers["Authorization"] == "Bearer bedrock-api-key-abcdef123456"
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK")
    assert call({"id": f"bedrock:{HAIKU}", "config": {"apiKey": "bedrock-api-key-abcdef123456"}}, "hi").output == "echo: hi"
    assert aws.auth_seen == ["bearer", "bearer"]


def test_keys_in_config_with_a_session_token_take_precedence(aws: AwsServer) -> None:
    aws.keys["ASIACONFIGKEY"] = ("config-secret-key-abcdef-0123", "config-session-token-0123456789")
    config = {"accessKeyId": "ASIACONFIGKEY", "secretAccessKey": "config-secret-key-abcdef-0123", "sessionToken": "config-session-token-0123456789"}
    assert call({"id": f"bedrock:converse:{HAIKU}", "config": config}, "hi").output == "echo: hi"
    assert aws.auth_seen == ["sigv4:ASIACONFIGKEY"]
    assert aws.requests[0].headers["X-Amz-Security-Token"] == "config-session-token-0123456789"


def test_web_identity_as_configure_aws_credentials_sets_it_up(aws: AwsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "web-identity-token"
    token_file.write_text("eyJhbGciOiJSUzI1NiJ9.github-oidc.signature")
    aws.web_identity = ("arn:aws:iam::123456789012:role/ci", "eyJhbGciOiJSUzI1NiJ9.github-oidc.signature")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token_file))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci")
    assert call(f"bedrock:converse:{HAIKU}", "hi").output == "echo: hi"
    assert aws.auth_seen == ["sigv4:ASIAWEBIDENTITY"]  # signed with the temporary keys STS issued


def test_a_wrong_secret_is_an_error_at_once_not_retried(aws: AwsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-right-secret-key-000")
    response = call(f"bedrock:converse:{HAIKU}", "hi")
    assert response.error is not None and "InvalidSignatureException (403)" in response.error
    assert len(aws.requests) == 1


def test_throttling_is_retried_after_retry_after_and_cuts_the_concurrency(aws: AwsServer) -> None:
    aws.fail_next(429, "ThrottlingException", "Too many requests, please wait before trying again.", retry_after="0.4")

    async def go(provider: Provider) -> tuple[float, Provider, object]:
        started = time.monotonic()
        response = await provider.call("hi")
        return time.monotonic() - started, provider, response

    elapsed, provider, response = use(f"bedrock:converse:{HAIKU}", go)
    assert getattr(response, "output", None) == "echo: hi"
    assert len(aws.requests) == 2 and elapsed >= 0.4
    assert provider.limiter.cuts == 1  # the throttling reached the adaptive limiter


def test_throttling_under_load_cuts_the_adaptive_limit(aws: AwsServer) -> None:
    aws.fail_next(429, "ThrottlingException", "Too many requests", retry_after="0", times=3)

    async def burst(provider: Provider) -> tuple[int, list[object]]:
        responses = await asyncio.gather(*(provider.call(f"q{i}") for i in range(12)))
        return provider.limiter.cuts, list(responses)

    provider = make(f"bedrock:converse:{HAIKU}", dict(os.environ), max_concurrency=0)
    cuts, responses = asyncio.run(_with(provider, burst))
    assert all(getattr(r, "error", "x") is None for r in responses)
    assert cuts >= 1


async def _with(provider: Provider, action: object) -> object:
    try:
        return await action(provider)  # type: ignore[operator]
    finally:
        await provider.aclose()


@pytest.mark.parametrize(("status", "code", "retried"), [(503, "ServiceUnavailableException", True), (500, "InternalServerException", True), (400, "ValidationException", False), (403, "AccessDeniedException", False)])
def test_server_errors_are_retried_and_client_errors_are_not(aws: AwsServer, status: int, code: str, retried: bool) -> None:
    aws.fail_next(status, code, f"{code} from the stand-in")
    response = call(f"bedrock:{HAIKU}", "hi")
    if retried:
        assert response.output == "echo: hi" and len(aws.requests) == 2
    else:
        assert response.error == f"Bedrock API invoke model error: {code} ({status}): {code} from the stand-in"
        assert len(aws.requests) == 1


def test_the_response_cache_serves_a_repeat_and_stores_no_secret(aws: AwsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ci_grade.providers.cache import ResponseCache

    config = {"accessKeyId": KEY_ID, "secretAccessKey": SECRET, "sessionToken": "never-stored-session-token-12345"}
    aws.keys[KEY_ID] = (SECRET, "never-stored-session-token-12345")
    aws.reply = lambda model, body: f"the key is {SECRET}"

    async def twice(provider: Provider) -> list[object]:
        provider.cache = ResponseCache(tmp_path / "cache")
        return [await provider.call("hi"), await provider.call("hi")]

    first, second = use({"id": f"bedrock:converse:{HAIKU}", "config": config}, twice)
    assert getattr(first, "output", None) == f"the key is {SECRET}"
    assert len(aws.requests) == 1 and getattr(second, "cached", False)
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert stored and SECRET not in stored and "never-stored-session-token-12345" not in stored


@pytest.mark.parametrize(
    "provider_id",
    ["bedrock:mantle:gpt-oss-120b", "bedrock:nova-sonic:amazon.nova-sonic-v1:0", "bedrock:openai.gpt-5.5", "bedrock:anthropic.claude-v2", "bedrock:foo.bar-v1", "bedrock:"],
)
def test_ids_it_cannot_serve_are_refused_when_the_provider_is_made(provider_id: str) -> None:
    with pytest.raises(UnknownProviderError, match="bedrock"):
        make(provider_id, {})


def test_without_the_sdk_the_error_says_how_to_install_it(aws: AwsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_boto(name: str, *args: object, **kwargs: object) -> object:
        if name == "boto3":
            raise ImportError("No module named 'boto3'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_boto)
    response = call(f"bedrock:converse:{HAIKU}", "hi")
    assert response.error is not None and "pip install 'ci-grade[aws]'" in response.error


def test_the_redactor_learns_aws_secrets_from_the_environment_and_config() -> None:
    from ci_grade.redact import Redactor

    env = {"AWS_SECRET_ACCESS_KEY": "env-secret-key-0123456789", "AWS_SESSION_TOKEN": "env-session-token-0123", "AWS_BEARER_TOKEN_BEDROCK": "env-bearer-token-0123"}
    redactor = Redactor.from_env(env)
    redactor.collect({"providers": [{"id": "bedrock:converse:x", "config": {"accessKeyId": "AKIACONFIG0123", "secretAccessKey": "config-secret-0123", "sessionToken": "config-token-0123"}}]})
    text = " ".join([*env.values(), "AKIACONFIG0123", "config-secret-0123", "config-token-0123"])
    assert redactor.text(text) == " ".join(["***"] * 6)


def test_converse_passes_its_own_document_blocks_through(aws: AwsServer) -> None:
    document = {"document": {"format": "txt", "name": "notes", "source": {"bytes": "Paris is the capital."}}}
    prompt = json.dumps([{"role": "user", "content": [document, {"type": "text", "text": "Capital of France?"}]}])
    response = call(f"bedrock:converse:{HAIKU}", prompt)
    assert response.error is None, response.error
    (message,) = only_request(aws, "converse")["messages"]
    assert message["content"][0]["document"]["name"] == "notes" and message["content"][1] == {"text": "Capital of France?"}


def test_no_aws_credentials_is_an_error_row_that_says_how_to_give_them(aws: AwsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    response = call(f"bedrock:converse:{HAIKU}", "hello")
    assert response.error is not None and f"API error: no AWS credentials for bedrock:converse:{HAIKU}: " in response.error
    assert "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in response.error
    assert aws.requests == []  # nothing unsigned was sent


def test_converse_sends_the_performance_configuration(aws: AwsServer) -> None:
    response = call({"id": f"bedrock:converse:{HAIKU}", "config": {"performanceConfig": {"latency": "optimized"}}}, "hello")
    assert response.error is None, response.error
    assert only_request(aws, "converse")["performanceConfig"] == {"latency": "optimized"}


def test_invoke_applies_a_guardrail_at_its_draft_version_unless_one_is_named(aws: AwsServer) -> None:
    assert call({"id": f"bedrock:{HAIKU}", "config": {"guardrailIdentifier": "gr-1"}}, "hello").error is None
    assert call({"id": f"bedrock:{HAIKU}", "config": {"guardrailIdentifier": "gr-1", "guardrailVersion": 3}}, "hello").error is None
    sent = [{k.lower(): v for k, v in r.headers.items()} for r in aws.requests if r.path.endswith("/invoke")]
    assert [(h.get("x-amzn-bedrock-guardrailidentifier"), h.get("x-amzn-bedrock-guardrailversion")) for h in sent] == [("gr-1", "DRAFT"), ("gr-1", "3")]


def test_invoke_reports_whether_the_guardrail_intervened(aws: AwsServer) -> None:
    aws.guardrail_blocks = {"weapon"}
    spec = {"id": f"bedrock:{HAIKU}", "config": {"guardrailIdentifier": "gr-1"}}
    blocked, allowed = call(spec, "how to build a weapon"), call(spec, "hello")
    assert blocked.output == "Sorry, the model cannot answer this question."
    assert blocked.metadata == {"guardrails": {"flagged": True}}
    assert allowed.output == "echo: hello"
    assert allowed.metadata == {"guardrails": {"flagged": False}}
    assert call(f"bedrock:{HAIKU}", "weapon").metadata == {}


NOVA_2 = "amazon.nova-2-lite-v1:0"


@pytest.mark.parametrize(("effort", "capped"), [("high", False), ("medium", True)])
def test_converse_nova_2_reasoning_drops_sampling_and_the_token_cap_only_at_high_effort(aws: AwsServer, effort: str, capped: bool) -> None:
    config = {"maxTokens": 300, "temperature": 0.5, "topP": 0.9, "reasoningConfig": {"type": "enabled", "maxReasoningEffort": effort}}
    response = call({"id": f"bedrock:converse:{NOVA_2}", "config": config}, "hello")
    assert response.error is None, response.error
    assert response.output == "<thinking>\nLet me think it through.\n</thinking>\n\necho: hello"
    assert only_request(aws, "converse").get("inferenceConfig") == ({"maxTokens": 300} if capped else None)


@pytest.mark.parametrize(("effort", "capped"), [("high", False), ("low", True)])
def test_invoke_nova_2_reasoning_drops_the_token_cap_only_at_high_effort(aws: AwsServer, effort: str, capped: bool) -> None:
    config = {"interfaceConfig": {"max_new_tokens": 300, "temperature": 0.5}, "reasoningConfig": {"type": "enabled", "maxReasoningEffort": effort}}
    response = call({"id": f"bedrock:{NOVA_2}", "config": config}, "hello")
    assert response.error is None, response.error
    assert response.output == "<thinking>\nLet me think it through.\n</thinking>\n\necho: hello"
    assert only_request(aws, "invoke")["inferenceConfig"] == ({"max_new_tokens": 300} if capped else {})


def test_invoke_nova_show_thinking_false_keeps_only_the_answer(aws: AwsServer) -> None:
    config = {"showThinking": False, "reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}}
    assert call({"id": f"bedrock:{NOVA_2}", "config": config}, "hello").output == "echo: hello"
