"""The PyGithub client ci-grade talks to GitHub with, and GitHub's failures as `GitHubError`s.

Requests are retried 3 times: idempotent ones (GET, PATCH, DELETE) after a 5xx, a rate limit or
a lost reply, a POST only after a rate limit (GitHub created nothing; after a 5xx or a lost reply
it may have, and a retried create could post a second comment). A rate limit is waited out as
GitHub asks: `Retry-After`, else the reset time when no requests remain, else a minute (for 403s
PyGithub reads the same from the body). No wait is longer than `MAX_WAIT_SECONDS`: a rate limit
asking for more gives up at once, so the report still reaches the job summary and the outputs. HTTPS trusts what model calls trust: `SSL_CERT_FILE` / `SSL_CERT_DIR` (a GitHub
Enterprise Server with a private CA), else requests' own (`REQUESTS_CA_BUNDLE`, certifi).
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ci_grade import settings
from ci_grade.errors import GitHubError

if TYPE_CHECKING:
    from github import Github

MAX_WAIT_SECONDS = 60.0
"""The longest wait before one retry of a GitHub request (rate limits, `Retry-After`)."""
RATE_LIMIT_STATUS = (403, 429)
SECONDARY_WAIT_SECONDS = 60.0
"""GitHub's wait for a rate limit that names neither `Retry-After` nor a reset: at least a minute."""


def connect(api_url: str, token: str) -> Github:
    """A PyGithub client for `api_url` (github.com, GitHub Enterprise Server or a stand-in).
    Pacing between requests is off: ci-grade makes a handful of them."""
    import logging

    from github import Auth, Github

    logging.getLogger("github").setLevel(logging.WARNING)  # its INFO lines duplicate our warnings
    retry = _retry_class()(
        total=3,
        backoff_factor=settings.number("CI_GRADE_RETRY_BASE_SECONDS", 0.5),
        allowed_methods=frozenset({"GET", "PATCH", "DELETE"}),  # and POST after a rate limit: `is_retry`
        status_forcelist=[*range(500, 600), 429],  # PyGithub adds 403 and reads its body
        secondary_rate_wait=SECONDARY_WAIT_SECONDS,
        max_rate_limit_wait=MAX_WAIT_SECONDS,
    )
    return Github(
        base_url=api_url,
        auth=Auth.Token(token),
        per_page=100,
        timeout=30,
        retry=retry,
        verify=os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR") or True,
        seconds_between_requests=None,
        seconds_between_writes=None,
        lazy=True,
    )


@functools.cache
def _retry_class() -> type[Any]:
    """PyGithub's `GithubRetry` bounded as the module says (defined on first use: PyGithub is
    imported only when ci-grade talks to GitHub)."""
    from github.GithubException import RateLimitExceededExceedsMaxWait
    from github.GithubRetry import GithubRetry
    from urllib3.exceptions import InvalidHeader

    class BoundedRetry(GithubRetry):
        def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
            if method == "POST":  # not an allowed method, so a lost reply is never sent again
                return status_code in RATE_LIMIT_STATUS and bool(super().is_retry("GET", status_code, has_retry_after))
            return bool(super().is_retry(method, status_code, has_retry_after))

        def increment(self, method: str | None = None, url: str | None = None, response: Any = None, *args: Any, **kwargs: Any) -> Any:
            asked = response.headers.get("Retry-After") if response is not None else None
            if asked:
                try:
                    wait = float(self.parse_retry_after(asked))
                except (InvalidHeader, ValueError, OverflowError):  # an unreadable header: urllib3 decides as usual
                    wait = 0.0
                if wait > MAX_WAIT_SECONDS:
                    raise RateLimitExceededExceedsMaxWait(response.status, _reply_json(response), dict(response.headers), wait=wait)
            elif response is not None and response.status == 429:  # urllib3 would not wait for it
                wait = _rate_limit_wait(response.headers, time.time())
                if wait > MAX_WAIT_SECONDS:
                    raise RateLimitExceededExceedsMaxWait(response.status, _reply_json(response), dict(response.headers), wait=wait)
                retry = super().increment(method, url, response, *args, **kwargs)
                backoff = max(wait, retry.get_backoff_time())
                retry.get_backoff_time = lambda: backoff  # type: ignore[method-assign]  # as GithubRetry does
                return retry
            return super().increment(method, url, response, *args, **kwargs)

    return BoundedRetry


def _rate_limit_wait(headers: Any, now: float) -> float:
    """Seconds a rate-limited reply without `Retry-After` asks for: until `x-ratelimit-reset`
    (plus a second, as PyGithub) when `x-ratelimit-remaining` is 0, else GitHub's minute."""
    reset = headers.get("x-ratelimit-reset")
    if headers.get("x-ratelimit-remaining") == "0" and reset and reset.isdigit():
        return max(0.0, int(reset) - now + 1)
    return SECONDARY_WAIT_SECONDS


def _reply_json(response: Any) -> Any:
    try:
        return json.loads(response.data or b"null")
    except (ValueError, TypeError):
        return None


def rate_limited(exc: Any) -> bool:
    """GitHub refused for its rate limit (primary or secondary), not for who we are."""
    from github import RateLimitExceededException

    return isinstance(exc, RateLimitExceededException) or exc.status == 429


@contextmanager
def github_errors(api_url: str) -> Iterator[None]:
    """Raise whatever goes wrong talking to GitHub inside as a `GitHubError` with a reason fit
    for a warning (the status, the rate limit, the refused certificate), never a traceback."""
    import requests
    from github import GithubException, RateLimitExceededExceedsMaxWait

    from ci_grade.providers.tls import trust_failure

    try:
        yield
    except GithubException as exc:
        message = exc.message or (exc.data.get("message") if isinstance(exc.data, dict) else None) or "request failed"
        if isinstance(exc, RateLimitExceededExceedsMaxWait) and exc.wait:
            message = f"{message} (GitHub asked to wait {exc.wait:.0f} s; ci-grade waits at most {MAX_WAIT_SECONDS:.0f} s)"
        raise GitHubError(f"GitHub answered {exc.status}: {message}", exc.status, rate_limited=rate_limited(exc)) from None
    except requests.exceptions.RetryError as exc:  # an error status until the retries ran out
        found = re.search(r"too many (\d+) error responses", str(exc))
        status = int(found[1]) if found else None
        raise GitHubError(f"GitHub answered {status or 'errors'} until ci-grade stopped retrying", status, rate_limited=status in RATE_LIMIT_STATUS) from None
    except requests.exceptions.SSLError as exc:
        raise GitHubError(f"cannot reach GitHub at {api_url}: {trust_failure(exc) or 'the TLS connection failed'}") from None
    except requests.RequestException as exc:
        raise GitHubError(f"cannot reach GitHub at {api_url}: {type(exc).__name__}") from None
    except GitHubError:
        raise
    except Exception as exc:  # e.g. a malformed API reply: still GitHub's side, never the gate's
        raise GitHubError(f"unexpected reply from GitHub: {type(exc).__name__}: {exc}") from None
