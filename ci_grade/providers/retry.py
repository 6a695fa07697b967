"""Retries and time limits for provider and grader calls.

Transient failures (429, 408, 5xx, timeouts, dropped or reset connections, 200 replies whose
body is malformed, empty or lacks what was asked for) are retried: backoff is exponential with
jitter and honours `Retry-After` / `retry-after-ms`, capped so one call can never stall a run
for long; a reply asking for more than `LONGEST_WAIT` is not retried at all. What still fails
after the last attempt is returned to the caller as an error value with the reason.

Each attempt may take `call_timeout` seconds (a provider's `timeout`, else
CI_GRADE_CALL_TIMEOUT_SECONDS, else 120). A timed-out call is retried once; it is retried again
(up to the usual attempts) only while the endpoint is answering other calls, as its `Liveness`
records. An endpoint that never answers costs two timeouts per call, not one per attempt, while
a busy endpoint that drops the odd request does not turn a second unlucky timeout into an error.
Attempts that get no answer at all also count towards declaring the endpoint down (`health`):
from then on its calls fail at once, before any attempt and instead of any further retry.

With the provider's `Limiter`, each attempt holds a slot while it is sent and answered (none
while it waits to retry) and reports what it found: a success grows the limit, an overloaded
reply (429, 529, or `Retry-After`) cuts it. An overloaded reply that the cut explains (the
request went out under a larger limit) is tried again without using up an attempt, a few times
at most: a run that starts above the provider's rate limit converges instead of erroring.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ci_grade import settings
from ci_grade.errors import ProviderError, TransientError
from ci_grade.providers.health import Liveness as Liveness
from ci_grade.providers.limiter import Limiter

T = TypeVar("T")


class Reply(Protocol):
    """What `again_if_empty` reads of a provider's reply."""

    output: Any
    error: str | None
    finish_reason: str | None
    is_refusal: bool


R = TypeVar("R", bound=Reply)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
OVERLOAD_STATUS = frozenset({429, 529})
FREE_RETRIES = 8
"""Overloaded replies per call that a limit cut explains, and that do not use up an attempt."""
LONGEST_WAIT = 120.0
"""A reply asking to wait longer than this (a daily quota's `Retry-After: 86400`) is not retried:
the call fails at once, naming the wait (as the OpenAI SDK, which retries up to 2 minutes)."""
DEFAULT_CALL_TIMEOUT_SECONDS = 120.0


def call_timeout(config: Mapping[str, Any]) -> float:
    """Seconds one attempt of a call may take: `config.timeout`, else CI_GRADE_CALL_TIMEOUT_SECONDS, else 120."""
    configured = config.get("timeout")
    if configured is not None:
        return float(configured)
    return settings.number("CI_GRADE_CALL_TIMEOUT_SECONDS", DEFAULT_CALL_TIMEOUT_SECONDS)


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
            attempts=int(settings.number("CI_GRADE_MAX_RETRIES", 3)) + 1,
            base_delay=settings.number("CI_GRADE_RETRY_BASE_SECONDS", 0.5),
            max_delay=settings.number("CI_GRADE_RETRY_MAX_SECONDS", 30),
        )

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff = self.base_delay * (2 ** (attempt - 1))
        return float(min(backoff * (0.5 + random.random()), self.max_delay))


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None
    when neither is there or readable as a time (`nan`, `abc`): the usual backoff applies."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = _seconds(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = (lowered.get("retry-after") or "").strip()
    seconds = _seconds(value)
    if seconds is not None or not value:
        return seconds
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _seconds(text: str | None) -> float | None:
    """A number of seconds (or milliseconds) as written, if it is one; never NaN."""
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return None if math.isnan(value) else value


async def with_retries(
    operation: Callable[[], Awaitable[T]],
    policy: RetryPolicy | None = None,
    timeout: float | None = None,
    what: str = "request",
    liveness: Liveness | None = None,
    limiter: Limiter | None = None,
) -> T:
    """Run `operation`, retrying on TransientError; the last TransientError propagates.

    With `timeout`, an attempt that takes longer is cancelled and counts as a timed-out attempt
    ("`what` timed out after N s"). After `policy.timeouts` timed-out attempts the call gives up,
    unless `liveness` shows the endpoint answered since the last of them began. With `limiter`,
    each attempt holds one of its slots (see the module's docstring).
    """
    policy = policy or RetryPolicy.from_env()
    attempt, timeouts, tries, free = 1, 0, 1, 0
    while True:
        if liveness is not None:
            liveness.check()
        began = time.monotonic()
        ticket = await limiter.acquire() if limiter is not None else (0, 0)
        try:
            if timeout is None:
                result = await operation()
            else:
                async with asyncio.timeout(timeout):
                    result = await operation()
        except TimeoutError:
            failure = TransientError(f"{what} timed out after {timeout:g}s", timeout=True)
        except TransientError as exc:
            failure = exc
        except BaseException:
            if limiter is not None:
                limiter.release(ticket)
            raise
        else:
            if limiter is not None:
                limiter.release(ticket, succeeded=True)
            return result
        if failure.retry_after is not None and failure.retry_after > LONGEST_WAIT:
            if limiter is not None:
                limiter.release(ticket)
            raise ProviderError(f"{failure} (asked to wait {failure.retry_after:.0f} s, more than the {LONGEST_WAIT:.0f} s ci-grade waits: not retried)")
        wait = policy.delay(tries, failure.retry_after)
        tries += 1
        if limiter is not None:
            asked = None if failure.retry_after is None else min(failure.retry_after, policy.max_delay)
            overloaded = failure.status in OVERLOAD_STATUS or (asked is not None and failure.status is not None)
            if limiter.release(ticket, overloaded=overloaded, retry_after=asked) and free < FREE_RETRIES:
                free += 1
                await asyncio.sleep(wait)
                continue
        timeouts += failure.timeout
        dead = failure.timeout and (liveness is None or liveness.last_answer < began)
        if liveness is not None and (failure.timeout or failure.status is None):
            liveness.failed(failure, began)
            liveness.check()
        if attempt >= policy.attempts or (timeouts >= policy.timeouts and dead):
            raise failure
        await asyncio.sleep(wait)
        attempt += 1


NOT_RETRIED_WHEN_EMPTY = frozenset({"length", "content_filter"})
"""Finish reasons that explain an empty reply (the token limit spent on reasoning, a filter): asking again gives the same."""


def is_empty(reply: Reply) -> bool:
    """A reply that came back without error, refusal or anything in it (`""`, nothing, blanks)."""
    output = reply.output
    blank = output is None or (isinstance(output, str) and not output.strip())
    return blank and reply.error is None and not reply.is_refusal and reply.finish_reason not in NOT_RETRIED_WHEN_EMPTY


async def again_if_empty(call: Callable[[], Awaitable[R]], policy: RetryPolicy | None = None) -> R:
    """`call()`, asked again (with the usual backoff and attempts) while its reply is empty: a
    200 completion with empty content is a transient fault like an empty body. A reply still
    empty after the last attempt is returned as it is: what the model said."""
    policy = policy or RetryPolicy.from_env()
    reply = await call()
    for attempt in range(1, policy.attempts):
        if not is_empty(reply):
            break
        await asyncio.sleep(policy.delay(attempt, None))
        reply = await call()
    return reply
