"""Whether an endpoint answers: the evidence retries weigh, and the breaker for a dead endpoint.

`Liveness` records when an endpoint last answered anything (any HTTP status, even an error) and
how many attempts in a row got no answer at all (timed out, refused, reset or dropped). An
attempt counts only when nothing else was answered while it ran, so concurrent calls to a busy
endpoint that drops the odd request never add up, and any answer sets the count back to zero.

After `CI_GRADE_ENDPOINT_DOWN_AFTER` such attempts in a row (3 by default; 0 never declares an
endpoint down) the endpoint is declared down: every later call to it, and every call waiting to
retry, fails at once with "endpoint declared down after N consecutive failures: <last error>".
A dead endpoint then costs a run a few call timeouts, not one or two per row.
"""

from __future__ import annotations

import time

from ci_grade import settings
from ci_grade.errors import EndpointDown, TransientError

DEFAULT_DOWN_AFTER = 3
"""Attempts in a row without any answer that declare an endpoint down."""


class Liveness:
    """One endpoint's answers and unanswered attempts (shared by all its calls)."""

    def __init__(self, down_after: int | None = None) -> None:
        self.last_answer = float("-inf")
        self.failures = 0
        self.down_after = int(settings.number("CI_GRADE_ENDPOINT_DOWN_AFTER", DEFAULT_DOWN_AFTER)) if down_after is None else down_after
        self.down: str | None = None
        """Why the endpoint was declared down, once it is."""

    def answered(self) -> None:
        """The endpoint answered (any status): it is alive, and the count starts again."""
        self.last_answer = time.monotonic()
        self.failures = 0

    def failed(self, failure: TransientError, began: float) -> None:
        """An attempt begun at `began` got no answer (`failure` says how); counted unless the
        endpoint answered another call meanwhile or has answered this one (a bad reply)."""
        if self.last_answer >= began or self.down is not None:
            return
        self.failures += 1
        if self.down_after and self.failures >= self.down_after:
            self.down = f"endpoint declared down after {self.failures} consecutive failures: {failure}"

    def check(self) -> None:
        """Raise EndpointDown once the endpoint has been declared down."""
        if self.down is not None:
            raise EndpointDown(self.down)
