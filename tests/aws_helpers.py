"""A loopback AWS stand-in over HTTPS (Bedrock's API keys need HTTPS) and an isolated AWS environment."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.servers.aws_server import KEY_ID, REGION, SECRET, AwsServer

AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_BEDROCK_REGION", "AWS_BEARER_TOKEN_BEDROCK", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", "AWS_BEDROCK_MAX_TOKENS", "AWS_BEDROCK_TEMPERATURE", "AWS_BEDROCK_TOP_P", "AWS_BEDROCK_STOP", "AWS_CA_BUNDLE",
)  # fmt: skip


@pytest.fixture(scope="session")
def aws_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def aws(aws_ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsServer]:
    """A stand-in in REGION that accepts KEY_ID/SECRET; the process uses it through the standard
    AWS variables (endpoint URLs, keys) and trusts its certificate; no real AWS file is read."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bundle = tmp_path / "aws-ca.pem"
    aws_ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("AWS_CA_BUNDLE", str(bundle))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    aws_ca.issue_cert("127.0.0.1").configure_cert(context)
    server = AwsServer(region=REGION)
    server.start(tls=context)
    server.keys[KEY_ID] = (SECRET, None)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_BEDROCK_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    for name in ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME"):
        monkeypatch.setenv(name, server.url)
    try:
        yield server
    finally:
        server.stop()
