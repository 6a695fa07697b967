"""SageMaker InvokeEndpoint through boto3 against a loopback SageMaker Runtime that checks SigV4 signatures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ci_grade.errors import UnknownProviderError
from tests.provider_helpers import call, make, use
from tests.servers.aws_server import KEY_ID, AwsServer

pytest_plugins = ["tests.aws_helpers"]  # the `aws` fixture


def endpoint(server: AwsServer, name: str, reply: Any) -> list[Any]:
    """Serve `name` with `reply` (a value, or a function of the request body); returns the bodies received."""
    seen: list[Any] = []

    def handle(body: Any) -> Any:
        seen.append(body)
        return reply(body) if callable(reply) else reply

    server.endpoints[name] = handle
    return seen


@pytest.mark.parametrize(
    ("provider_id", "config", "payload", "reply"),
    [
        ("sagemaker:openai:chat-ep", {}, {"prompt": "hello", "max_tokens": 1024, "temperature": 0.7, "top_p": 1.0}, {"choices": [{"message": {"content": "hi!"}}]}),
        ("sagemaker:llama:llama-ep", {"maxTokens": 64, "temperature": 0.1}, {"inputs": "hello", "parameters": {"max_new_tokens": 64, "temperature": 0.1, "top_p": 1.0}}, {"generation": "hi!"}),
        ("sagemaker:huggingface:hf-ep", {"temperature": 0}, {"inputs": "hello", "parameters": {"max_new_tokens": 1024, "temperature": 0, "top_p": 1.0, "do_sample": False, "return_full_text": False}}, [{"generated_text": "hi!"}]),
        ("sagemaker:my-jumpstart-ep", {"modelType": "custom"}, {"prompt": "hello"}, {"generated_text": "hi!"}),  # no type in the id: config.modelType
        ("sagemaker:custom:custom-ep", {}, {"prompt": "hello"}, {"output": "hi!"}),
    ],
)
def test_payload_per_model_type_and_output_read_from_the_reply(aws: AwsServer, provider_id: str, config: dict, payload: dict, reply: Any) -> None:
    seen = endpoint(aws, provider_id.rsplit(":", 1)[-1], reply)
    response = call({"id": provider_id, "config": config}, "hello")
    assert response.error is None and response.output == "hi!"
    assert seen == [payload]
    assert aws.auth_seen == [f"sigv4:{KEY_ID}"]  # scope us-west-2/sagemaker, signature verified
    assert response.token_usage.prompt == -(-len(json.dumps(payload)) // 4)  # promptfoo's estimate, 4 characters a token


def test_jumpstart_endpoint_name_chat_messages_and_stop_sequences(aws: AwsServer) -> None:
    seen = endpoint(aws, "meta-jumpstart-ep", {"generated_text": "ok"})
    prompt = json.dumps([{"role": "user", "content": "hey"}])
    assert call({"id": "sagemaker:llama:meta-jumpstart-ep", "config": {"temperature": 0.5}}, prompt).output == "ok"
    assert seen[0]["parameters"]["do_sample"] is True and seen[0]["inputs"] == prompt  # jumpstart sends the text as is
    seen = endpoint(aws, "oa", {"choices": [{"text": "done"}]})
    assert call({"id": "sagemaker:openai:oa", "config": {"stopSequences": ["\n"]}}, prompt).output == "done"
    assert seen[0]["messages"] == [{"role": "user", "content": "hey"}] and seen[0]["stop"] == ["\n"]


def test_response_path_and_prompt_transform_run_as_javascript(aws: AwsServer) -> None:
    seen = endpoint(aws, "ep", {"result": {"answers": ["first", "second"]}})
    config = {"transform": "prompt => JSON.stringify({text: prompt.toUpperCase()})", "responseFormat": {"path": "json.result.answers[1]"}}
    response = call({"id": "sagemaker:custom:ep", "config": config}, "shout")
    assert response.output == "second"
    assert seen == [{"text": "SHOUT"}]


def test_response_path_from_a_python_file(aws: AwsServer, tmp_path: Path) -> None:
    (tmp_path / "pick.py").write_text("def pick(json):\n    return json['out'][::-1]\n")
    endpoint(aws, "ep", {"out": "olleh"})
    response = call({"id": "sagemaker:custom:ep", "config": {"responseFormat": {"path": "file://pick.py:pick"}}}, "x", base_dir=tmp_path)
    assert response.output == "hello"


def test_embedding_endpoint(aws: AwsServer) -> None:
    seen = endpoint(aws, "embed-ep", {"embedding": [0.1, 0.2, 0.3]})
    result = use({"id": "sagemaker:embedding:embed-ep", "config": {"modelType": "huggingface"}}, lambda p: p.embed("some text"))
    assert result.embedding == [0.1, 0.2, 0.3]
    assert seen == [{"inputs": "some text"}]


@pytest.mark.parametrize(
    ("status", "code", "attempts"),
    [(424, "ModelError", 1), (400, "ValidationError", 1), (429, "ModelNotReadyException", 2), (503, "ServiceUnavailable", 2)],
)
def test_errors_in_sagemakers_format(aws: AwsServer, status: int, code: str, attempts: int) -> None:
    endpoint(aws, "ep", {"output": "recovered"})
    aws.fail_next(status, code, f"{code} from the stand-in")
    response = call("sagemaker:custom:ep", "x")
    if attempts == 1:
        assert response.error == f"SageMaker API error: {code} ({status}): {code} from the stand-in"
    else:
        assert response.output == "recovered"
    assert len(aws.requests) == attempts


def test_region_from_aws_region_and_an_unknown_endpoint(aws: AwsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")  # the stand-in serves us-west-2: a scope it refuses
    endpoint(aws, "ep", {"output": "x"})
    response = call("sagemaker:custom:ep", "x")
    assert response.error is not None and "eu-west-1/sagemaker" in response.error
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    response = call("sagemaker:custom:missing", "x")
    assert response.error is not None and "Endpoint missing of account" in response.error


@pytest.mark.parametrize("provider_id", ["sagemaker:bogus:ep", "sagemaker:ep-without-type"])
def test_a_model_type_it_does_not_know_is_refused_when_the_provider_is_made(provider_id: str) -> None:
    with pytest.raises(UnknownProviderError, match=r"model type|modelType"):
        make(provider_id, {})


def test_a_model_error_in_the_reply_body_is_the_rows_error(aws: AwsServer) -> None:
    """A container answers 200 with `{"code": 424, ...}` when its model failed: promptfoo's error, not an output."""
    endpoint(aws, "custom-ep", {"code": 424, "message": "model container failed"})
    response = call("sagemaker:custom:custom-ep", "hello")
    assert response.output is None and (response.error or "").startswith("API Error: 424 model container failed")
