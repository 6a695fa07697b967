"""How an OpenAI-compatible API's 429s are waited out, or not: the wait a 429 asks for wherever it
says it, a daily quota's day-long `Retry-After`, and an exhausted quota, against the loopback server."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ci_grade.providers.openai_replies import duration_seconds, rate_limit_wait
from tests.provider_helpers import call, use
from tests.servers.llm_server import LLMServer

RATE_LIMITED = {"error": {"message": "Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3. Please try again in 1.2s.", "type": "requests", "code": "rate_limit_exceeded"}}


def test_durations_and_waits_are_read_where_openai_and_azure_put_them() -> None:
    assert [duration_seconds(text) for text in ("6m0s", "1s", "120ms", "1h2m3.5s", "0.5s", "soon", "")] == [360.0, 1.0, 0.12, 3723.5, 0.5, None, None]
    assert rate_limit_wait({"Retry-After": "7"}, "Please try again in 1s.") == 7.0  # the header wins
    assert rate_limit_wait({}, "Please try again in 20ms.") == pytest.approx(0.02)
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m30s", "x-ratelimit-remaining-tokens": "9000", "x-ratelimit-reset-tokens": "6m0s"}
    assert rate_limit_wait(headers, "Rate limit reached") == 90.0  # the limit that ran out, not the other
    assert rate_limit_wait({"x-rate-limit-reset-tokens": "55"}, "Rate limit is exceeded.") == 55.0  # Azure
    assert rate_limit_wait({"x-ratelimit-reset-requests": "1s"}, "Rate limit reached") is None  # nothing ran out


@pytest.mark.parametrize("where", ["message", "headers"])
def test_a_429_without_retry_after_waits_as_long_as_it_says(openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """OpenAI's 429s often carry no Retry-After: the wait is in the message or the reset headers.
    The retry comes after it, not after the 0.01 s backoff the tests otherwise use."""
    monkeypatch.setenv("CI_GRADE_RETRY_MAX_SECONDS", "5")
    if where == "message":
        openai_env.on_chat(reply=RATE_LIMITED, status=429, times=1)
    else:
        limited = {"error": {"message": "Rate limit reached", "type": "requests"}}
        openai_env.on_chat(reply=limited, status=429, times=1, headers={"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.2s"})
    started = time.monotonic()
    response = call("openai:chat:gpt-4.1-mini", "hello")
    assert response.error is None and response.output == "echo: hello"
    assert time.monotonic() - started >= 1.1
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2


def test_a_wait_of_a_day_is_not_retried(openai_env: LLMServer) -> None:
    """Azure's daily quota: 429 with `Retry-After: 86400`. Capping that to 30 s and trying again
    would stall the run for hours and fail anyway: the call fails at once, naming the wait, and
    the provider is not paused for the other calls."""
    quota = {"error": {"message": "Requests to the ChatCompletions_Create Operation have exceeded the daily rate limit. Please retry after 86400 seconds.", "code": "429"}}
    openai_env.on_chat(reply=quota, status=429, headers={"Retry-After": "86400"})

    async def one(provider: Any) -> tuple[Any, Any, float]:
        return await provider.call("one"), provider.limiter, time.monotonic()

    started = time.monotonic()
    response, limiter, ended = use("openai:chat:gpt-4.1-mini", one)
    assert ended - started < 2
    assert response.output is None and "86400 s" in (response.error or "") and "not retried" in (response.error or "")
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1
    assert limiter.cuts == 0 and limiter._resume_at <= time.monotonic()


def test_an_exhausted_quota_is_not_a_rate_limit(openai_env: LLMServer) -> None:
    """`insufficient_quota` (out of credit): retrying cannot help, and it says nothing about
    concurrency: one request, an error that says so, no cut."""
    openai_env.on_chat(reply={"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "code": "insufficient_quota"}}, status=429)
    response = call("openai:chat:gpt-4.1-mini", "hello")
    assert response.output is None and "check your plan and billing details" in (response.error or "") and "quota or billing: not retried" in (response.error or "")
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1
