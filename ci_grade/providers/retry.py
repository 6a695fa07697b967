"""Retries and time limits for provider and grader calls.

Transient failures (429, 408, 5xx, timeouts, dropped or reset connections, 200 replies whose
body is malformed, empty or lacks what was asked for) are retried: backoff is exponential with
jitter and honours `Retry-After` / `retry-after-ms`, capped so one call can never stall a run
for long. What still fails after the last attempt is returned to the caller as an error value
with the reason.

Each attempt may take `call_timeout` seconds (a provider's `timeout`, else
CI_GRADE_CALL_TIMEOUT_SECONDS, else 120). A timed-out call is retried once; it is retried again
(up to the usual attempts) only while the endpoint is answering other calls, as its `Liveness`
records. An endpoint that never answers costs two timeouts per call, not one per attempt, while
a busy endpoint that drops the odd request does not turn a second unlucky timeout into an error.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ci_grade.errors import TransientError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
DEFAULT_CALL_TIMEOUT_SECONDS = 120.0


def call_timeout(config: Mapping[str, Any]) -> float:
    """Seconds one attempt of a call may take: `config.timeout`, else CI_GRADE_CALL_TIMEOUT_SECONDS, else 120."""
    configured = config.get("timeout")
    if configured is not None:
        return float(configured)
    return float(os.environ.get("CI_GRADE_CALL_TIMEOUT_SECONDS") or DEFAULT_CALL_TIMEOUT_SECONDS)


class Liveness:
    """When an endpoint last answered anything (any HTTP status): proof that it is not dead."""

    def __init__(self) -> None:
        self.last_answer = float("-inf")

    def answered(self) -> None:
        self.last_answer = time.monotonic()


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    timeouts: int = 2
    """Attempts that may time out before the call gives up, unless the endpoint answered others meanwhile."""

    @classmethod
    def from_env(cls) -> RetryPolicy:
        return cls(
            attempts=max(1, int(os.environ.get("CI_GRADE_MAX_RETRIES", "3")) + 1),
            base_delay=float(os.environ.get("CI_GRADE_RETRY_BASE_SECONDS", "0.5")),
            max_delay=float(os.environ.get("CI_GRADE_RETRY_MAX_SECONDS", "30")),
        )

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff = self.base_delay * (2 ** (attempt - 1))
        return float(min(backoff * (0.5 + random.random()), self.max_delay))


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return float(lowered["retry-after-ms"]) / 1000
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


async def with_retries(
    operation: Callable[[], Awaitable[T]],
    policy: RetryPolicy | None = None,
    timeout: float | None = None,
    what: str = "request",
    liveness: Liveness | None = None,
) -> T:
    """Run `operation`, retrying on TransientError; the last TransientError propagates.

    With `timeout`, an attempt that takes longer is cancelled and counts as a timed-out attempt
    ("`what` timed out after N s"). After `policy.timeouts` timed-out attempts the call gives up,
    unless `liveness` shows the endpoint answered since the last of them began.
    """
    policy = policy or RetryPolicy.from_env()
    attempt, timeouts = 1, 0
    while True:
        began = time.monotonic()
        try:
            if timeout is None:
                return await operation()
            async with asyncio.timeout(timeout):
                return await operation()
        except TimeoutError:
            failure = TransientError(f"{what} timed out after {timeout:g}s", timeout=True)
        except TransientError as exc:
            failure = exc
        timeouts += failure.timeout
        dead = failure.timeout and (liveness is None or liveness.last_answer < began)
        if attempt >= policy.attempts or (timeouts >= policy.timeouts and dead):
            raise failure
        await asyncio.sleep(policy.delay(attempt, failure.retry_after))
        attempt += 1
