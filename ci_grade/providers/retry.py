"""Retries for transient failures (429, 408, 5xx, timeouts, dropped connections).

Backoff is exponential with jitter and honours `Retry-After` / `retry-after-ms`, capped so one
call can never stall a run for long. What still fails after the last attempt is returned to the
caller as an error value with the reason.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ci_grade.errors import TransientError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

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


async def with_retries(operation: Callable[[], Awaitable[T]], policy: RetryPolicy | None = None) -> T:
    """Run `operation`, retrying on TransientError; the last TransientError propagates."""
    policy = policy or RetryPolicy.from_env()
    attempt = 1
    while True:
        try:
            return await operation()
        except TransientError as exc:
            if attempt >= policy.attempts:
                raise
            await asyncio.sleep(policy.delay(attempt, exc.retry_after))
            attempt += 1
