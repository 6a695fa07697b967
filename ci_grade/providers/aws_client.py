"""AWS SDK (boto3) plumbing shared by the Bedrock and SageMaker providers.

boto3 is imported on first use (`pip install 'ci-grade[aws]'`; the Docker image has it). Its
calls are synchronous: each runs on the provider's own thread pool (as many threads as its
concurrency ceiling), so the event loop never blocks and the limiter, not a shared default pool,
bounds the calls in flight.

Credentials, in promptfoo's order: `config.accessKeyId` + `config.secretAccessKey` (+
`sessionToken`); else a Bedrock API key (`config.apiKey`, else AWS_BEARER_TOKEN_BEDROCK), sent
as a bearer token; else `config.profile`; else AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
AWS_SESSION_TOKEN) as the provider sees them (a provider's own `env:` block included); else the
AWS SDK's default chain: web identity (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, as
aws-actions/configure-aws-credentials sets up in GitHub Actions), AWS_PROFILE and the shared
config files, SSO, container and instance roles.

botocore's own retries are off (one attempt per call): ci-grade's retry policy retries
throttling (ThrottlingException, 429), 5xx and timeouts, honouring `Retry-After`, and each attempt
reports to the provider's adaptive limiter, so throttling cuts the concurrency.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.base import Provider
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    Liveness,
    RetryPolicy,
    call_timeout,
    retry_after_seconds,
    with_retries,
)

MISSING_SDK = "the AWS SDK is not installed: pip install 'ci-grade[aws]' (the ci-grade Docker image has it)"
# Error codes that mean "slow down" or "try again" whatever status carried them.
THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException", "ModelNotReadyException"})
TRANSIENT_CODES = frozenset({"ServiceUnavailableException", "ServiceUnavailable", "InternalServerException", "InternalFailure", "ModelTimeoutException"})
BEARER_VARIABLE = "AWS_BEARER_TOKEN_BEDROCK"


class AwsProvider(Provider):
    """A provider that calls one AWS service through a boto3 client made on first use."""

    cacheable = True
    adaptive = True
    service: ClassVar[str]
    """The boto3 service name (`bedrock-runtime`, `sagemaker-runtime`)."""
    bearer_auth: ClassVar[bool] = False
    """Whether the service takes a Bedrock API key as a bearer token."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._timeout = call_timeout(spec.config)
        self.liveness = Liveness()
        self._client: Any = None
        self._client_lock = asyncio.Lock()
        self._threads: ThreadPoolExecutor | None = None

    def region(self) -> str:
        return str(self.spec.config.get("region") or self.env_value("AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1")

    def endpoint_url(self) -> str | None:
        """A custom endpoint: AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL, as the SDK reads them."""
        return self.env_value(f"AWS_ENDPOINT_URL_{self.service.upper().replace('-', '_')}", "AWS_ENDPOINT_URL")

    def bearer_token(self) -> str | None:
        if not self.bearer_auth:
            return None
        return str(self.spec.config.get("apiKey") or "") or self.env_value(BEARER_VARIABLE)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "region": self.region(), "endpoint": self.endpoint_url()}

    def _make_client(self) -> Any:
        """The boto3 client (runs on a worker thread: boto3 reads its model files and config)."""
        try:
            import boto3
            import botocore.config
            import botocore.session
            import botocore.tokens
        except ImportError:
            raise ProviderError(MISSING_SDK) from None
        config = self.spec.config
        options: dict[str, Any] = {
            "region_name": self.region(),
            "retries": {"total_max_attempts": 1},
            "connect_timeout": min(self._timeout, 60.0),
            "read_timeout": self._timeout,
            "max_pool_connections": self.limiter.ceiling,
            "user_agent_extra": "ci-grade",
            "signature_version": "v4",  # set, so that botocore does not prefer a bearer token these credentials outrank
        }
        keys: dict[str, Any] = {}
        if config.get("accessKeyId") and config.get("secretAccessKey"):
            keys = {"aws_access_key_id": str(config["accessKeyId"]), "aws_secret_access_key": str(config["secretAccessKey"])}
            keys["aws_session_token"] = str(config["sessionToken"]) if config.get("sessionToken") else None
            session = boto3.Session()
        elif token := self.bearer_token():
            core = botocore.session.Session()
            source = botocore.tokens.ScopedEnvTokenProvider(core, environ={BEARER_VARIABLE: token})
            core.register_component("token_provider", botocore.tokens.TokenProviderChain(providers=[source]))
            session = boto3.Session(botocore_session=core)
            options["signature_version"] = "bearer"
        elif config.get("profile"):
            session = boto3.Session(profile_name=str(config["profile"]))
        elif self.env_value("AWS_ACCESS_KEY_ID") and self.env_value("AWS_SECRET_ACCESS_KEY"):
            keys = {
                "aws_access_key_id": self.env_value("AWS_ACCESS_KEY_ID"),
                "aws_secret_access_key": self.env_value("AWS_SECRET_ACCESS_KEY"),
                "aws_session_token": self.env_value("AWS_SESSION_TOKEN"),
            }
            session = boto3.Session()
        else:
            session = boto3.Session()
        verify = self.env_value("AWS_CA_BUNDLE", "SSL_CERT_FILE")  # a private CA, as for ci-grade's other HTTPS calls
        return session.client(self.service, endpoint_url=self.endpoint_url(), verify=verify, config=botocore.config.Config(**options), **keys)

    async def _run(self, function: Any, /, **kwargs: Any) -> Any:
        """`function(**kwargs)` on the provider's threads."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=self.limiter.ceiling, thread_name_prefix=f"ci-grade-{self.service}")
        return await asyncio.get_running_loop().run_in_executor(self._threads, functools.partial(function, **kwargs))

    async def client(self) -> Any:
        async with self._client_lock:
            if self._client is None:
                try:
                    self._client = await self._run(self._make_client)
                except Exception as exc:  # no SDK, an unknown profile, a bad endpoint URL
                    raise self._failure(exc) from None
        return self._client

    async def request(self, operation: str, consume: Callable[[dict[str, Any]], dict[str, Any]] | None = None, **params: Any) -> dict[str, Any]:
        """One SDK operation with ci-grade's retries (a streamed `body` is returned as bytes; an
        event stream is read by `consume`, on the same thread); a failure for good is a ProviderError."""
        client = await self.client()
        policy = RetryPolicy.from_env()

        def send() -> dict[str, Any]:
            reply: dict[str, Any] = getattr(client, operation)(**params)
            for key in ("body", "Body"):  # a streamed payload is read here too, off the event loop
                if hasattr(reply.get(key), "read"):
                    reply[key] = reply[key].read()
            return consume(reply) if consume is not None else reply

        async def attempt() -> dict[str, Any]:
            try:
                reply: dict[str, Any] = await self._run(send)
            except Exception as exc:
                raise self._failure(exc) from None
            self.liveness.answered()
            return reply

        try:
            return await with_retries(attempt, policy, self._timeout, liveness=self.liveness, limiter=self.limiter)
        except TransientError as exc:
            attempts = "attempt" if policy.attempts == 1 else "attempts"
            raise ProviderError(f"{exc} (gave up after {policy.attempts} {attempts})") from None

    def _failure(self, exc: Exception) -> ProviderError:
        """An SDK exception as ci-grade's error: transient (retried) or for good."""
        if isinstance(exc, ProviderError):
            return exc
        from botocore import exceptions as aws

        if isinstance(exc, aws.ClientError):
            self.liveness.answered()
            error = exc.response.get("Error") or {}
            meta = exc.response.get("ResponseMetadata") or {}
            code, message = str(error.get("Code") or "Error"), str(error.get("Message") or exc)
            status = int(meta.get("HTTPStatusCode") or 0)
            text = f"{code} ({status}): {message}"
            if code in THROTTLING_CODES:
                return TransientError(text, retry_after_seconds(meta.get("HTTPHeaders")), status=429)
            if status in RETRYABLE_STATUS or code in TRANSIENT_CODES:
                return TransientError(text, retry_after_seconds(meta.get("HTTPHeaders")), status=status or 500)
            return ProviderError(text)
        if isinstance(exc, aws.ReadTimeoutError | aws.ConnectTimeoutError):
            return TransientError(f"request timed out after {self._timeout:g}s", timeout=True)
        if isinstance(exc, aws.EndpointConnectionError | aws.ConnectionClosedError | aws.ProxyConnectionError):
            return TransientError(f"connection failed: {exc}")
        if isinstance(exc, aws.NoCredentialsError | aws.PartialCredentialsError | aws.NoAuthTokenError):
            return ProviderError(f"no AWS credentials for {self.id}: {exc} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a web identity, a profile or config.accessKeyId)")
        return ProviderError(f"{type(exc).__name__}: {exc}")

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
