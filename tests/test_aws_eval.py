"""`ci-grade eval` end to end with Bedrock and SageMaker providers over the loopback AWS stand-in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.provider_helpers import eval_rows
from tests.servers.aws_server import SECRET, AwsServer, last_text

pytest_plugins = ["tests.aws_helpers"]  # the `aws` fixture


def reply(model: str, body: dict[str, Any]) -> str:
    text = last_text(body)
    if "boom" in text:
        raise ValueError("The provided model identifier is invalid.")
    return f"echo: {text}"


def test_eval_bedrock_converse_invoke_embeddings_and_sagemaker_with_an_error_row(aws: AwsServer, tmp_path: Path) -> None:
    aws.reply = reply
    aws.endpoints["support-bot"] = lambda body: {"generated_text": f"echo: {body['inputs']}"}
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers:
          - bedrock:converse:anthropic.claude-3-5-haiku-20241022-v1:0
          - bedrock:meta.llama3-1-8b-instruct-v1:0
          - id: sagemaker:jumpstart:support-bot
        defaultTest:
          options:
            provider:
              embedding: bedrock:embeddings:amazon.titan-embed-text-v2:0
        tests:
          - vars: {q: hello world}
            assert:
              - {type: contains, value: hello}
              - {type: similar, value: 'echo: hello world', threshold: 0.9}
          - vars: {q: boom}
            assert: [{type: contains, value: boom}]
        """,
    )
    assert code == 1
    assert [r["provider"]["id"] for r in rows[:3]] == ["bedrock:converse:anthropic.claude-3-5-haiku-20241022-v1:0", "bedrock:meta.llama3-1-8b-instruct-v1:0", "sagemaker:jumpstart:support-bot"]
    assert [r["success"] for r in rows] == [True, True, True, False, False, True]
    assert all(r["response"]["output"] == "echo: hello world" for r in rows[:3])
    assert rows[0]["response"]["tokenUsage"]["total"] > 0 and rows[0]["cost"] > 0
    similar = [c for c in rows[0]["gradingResult"]["componentResults"] if c["assertion"]["type"] == "similar"]
    assert similar[0]["pass"] and similar[0]["score"] == pytest.approx(1.0)
    assert rows[3]["failureReason"] == 2  # ERROR: the API refused the call
    assert rows[3]["error"] == "Bedrock Converse API error: ValidationException (400): The provided model identifier is invalid."
    assert rows[4]["error"].startswith("Bedrock API invoke model error: ValidationException (400)")
    embeddings = [r for r in aws.requests if "titan-embed" in r.path]
    assert len(embeddings) >= 2  # the output and the expected value, through the Titan embeddings model


def test_eval_masks_aws_secrets_everywhere(aws: AwsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    aws.keys["ASIACONFIGKEY99"] = ("config-secret-key-abcdef-0123", "config-session-token-0123456789")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-never-shown-42")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-session-token-never-shown-42")
    aws.reply = lambda model, body: f"leak: {SECRET} config-secret-key-abcdef-0123 config-session-token-0123456789 bedrock-api-key-never-shown-42 env-session-token-never-shown-42"
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers:
          - id: bedrock:converse:amazon.nova-lite-v1:0
            config: {accessKeyId: ASIACONFIGKEY99, secretAccessKey: config-secret-key-abcdef-0123, sessionToken: config-session-token-0123456789}
        tests:
          - vars: {q: hi}
            assert: [{type: contains, value: leak}]
        """,
    )
    assert code == 0 and rows[0]["success"]
    written = (tmp_path / "out.json").read_text()
    for secret in (SECRET, "config-secret-key-abcdef-0123", "config-session-token-0123456789", "bedrock-api-key-never-shown-42", "env-session-token-never-shown-42"):
        assert secret not in written
    assert json.loads(written)["results"]["results"][0]["response"]["output"].count("***") == 5
