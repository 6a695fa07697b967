"""The sticky pull-request comment, through PyGithub: one per PR per title, updated in place.

Our comments are the ones that carry the title's hidden marker AND were written by our own
identity; look-alike comments by anyone else are never touched. Our identity is, in order: the
`comment-author` input when set; the login `GET /user` names (personal and fine-grained tokens);
else `github-actions[bot]`, the author of the Actions `GITHUB_TOKEN`'s comments (an installation
token may not call `GET /user`). A comment we create tells who we really are, so a GitHub App's
token (which writes as `<app>[bot]`) converges too, at the cost of creating and deleting a comment
per run while its earlier comment is unknown: set `comment-author: <app>[bot]` to avoid that.

Runs for the same PR and title may post at the same moment (workflows should serialise them with
`concurrency:`, but a re-run or a second workflow may not). Every run converges: when it finds
comments of ours it updates the oldest and deletes the rest; when it creates one it lists again,
keeps the oldest of ours (updating it with its report) and deletes the rest, its own included.
The oldest is never deleted, so exactly one comment remains. Deleting a comment another run has
just deleted is not an error.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ci_grade import redact
from ci_grade.errors import GitHubError

if TYPE_CHECKING:
    from github import Github
    from github.Issue import Issue
    from github.IssueComment import IssueComment

BOT_LOGIN = "github-actions[bot]"
COMMENT_LIMIT = 65_536
MAX_WAIT_SECONDS = 60.0
"""The longest wait before one retry of a GitHub request (rate limits, `Retry-After`)."""
RATE_LIMIT_STATUS = (403, 429)
_TRUNCATED = "\n\n_This comment was cut to fit GitHub's size limit; the job summary has the full report._\n"


def marker_for(title: str) -> str:
    """The hidden marker of the comment titled `title` (a digest, so any title is safe in HTML)."""
    digest = hashlib.sha256(title.encode("utf-8")).hexdigest()[:16]
    return f"<!-- ci-grade:sticky-comment {digest} -->"


def comment_body(markdown: str, marker: str, limit: int = COMMENT_LIMIT) -> str:
    """`markdown` with exactly one marker at its end, within GitHub's comment limit."""
    text = markdown.replace(marker, "").rstrip()
    room = limit - len(marker) - 1
    if len(text) > room:
        text = text[: room - len(_TRUNCATED)].rstrip() + _TRUNCATED
    return f"{text}\n{marker}"


@dataclass(frozen=True)
class PostedComment:
    id: int
    url: str
    created: bool
    author: str | None = None
    """The login GitHub wrote our comment as, when it is not the one we assumed (set `comment-author` to it)."""


def connect(api_url: str, token: str) -> Github:
    """A PyGithub client for `api_url` (github.com, GitHub Enterprise Server or a stand-in).

    Requests are retried 3 times (`_retry_class`): idempotent ones (GET, PATCH, DELETE) on 5xx and
    rate limits, a POST only on a rate limit (GitHub created nothing; after a 5xx it may have, and
    a retry could post a second comment). No wait is longer than `MAX_WAIT_SECONDS`: a rate limit
    or `Retry-After` asking for more gives up at once, so the report still reaches the job summary
    and the outputs. HTTPS trusts what model calls trust: `SSL_CERT_FILE` / `SSL_CERT_DIR` (a GitHub
    Enterprise Server with a private CA), else requests' own (`REQUESTS_CA_BUNDLE`, certifi).
    Pacing between requests is off: this client makes a handful of them.
    """
    import logging

    from github import Auth, Github

    logging.getLogger("github").setLevel(logging.WARNING)  # its INFO lines duplicate our warnings
    retry = _retry_class()(
        total=3,
        backoff_factor=float(os.environ.get("CI_GRADE_RETRY_BASE_SECONDS", "0.5")),
        allowed_methods=frozenset({"GET", "PATCH", "DELETE", "POST"}),
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
    """PyGithub's `GithubRetry` bounded as `connect` says (defined on first use: PyGithub is
    imported only when a comment is posted)."""
    from github.GithubException import RateLimitExceededExceedsMaxWait
    from github.GithubRetry import GithubRetry

    class BoundedRetry(GithubRetry):
        def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
            if method == "POST" and status_code not in RATE_LIMIT_STATUS:
                return False
            return bool(super().is_retry(method, status_code, has_retry_after))

        def increment(self, method: str | None = None, url: str | None = None, response: Any = None, *args: Any, **kwargs: Any) -> Any:
            asked = response.headers.get("Retry-After") if response is not None else None
            if asked:
                try:
                    wait = float(self.parse_retry_after(asked))
                except Exception:  # an unreadable header: urllib3 decides as usual
                    wait = 0.0
                if wait > MAX_WAIT_SECONDS:
                    raise RateLimitExceededExceedsMaxWait(response.status, _reply_json(response), dict(response.headers), wait=wait)
            return super().increment(method, url, response, *args, **kwargs)

    return BoundedRetry


def _reply_json(response: Any) -> Any:
    try:
        return json.loads(response.data or b"null")
    except (ValueError, TypeError):
        return None


def own_login(client: Github) -> str:
    """The login our comments are written by, as far as the token tells."""
    from github import GithubException

    try:
        return client.get_user().login
    except GithubException as exc:
        if exc.status in (403, 404) and not _rate_limited(exc):
            return BOT_LOGIN
        raise


def own_comments(issue: Issue, marker: str, author: str) -> list[IssueComment]:
    """Our comments with `marker` on `issue`, oldest first, searching every page."""
    found = []
    for comment in issue.get_comments():
        login = comment.user.login if comment.user else ""
        if login.lower() == author.lower() and marker in (comment.body or ""):
            found.append(comment)
    return sorted(found, key=lambda c: c.id)


def upsert_comment(*, api_url: str, token: str, repository: str, number: int, marker: str, body: str, author: str | None = None) -> PostedComment:
    """Update our comment on PR `number` or create it; leave exactly one, even when runs race."""
    import requests
    from github import GithubException, RateLimitExceededExceedsMaxWait

    from ci_grade.providers.tls import trust_failure

    text = comment_body(redact.text(body), marker)
    try:
        client = connect(api_url, token)
        issue = client.get_repo(repository).get_issue(number)
        return _converge(issue, marker, text, author or own_login(client))
    except GithubException as exc:
        message = exc.message or (exc.data.get("message") if isinstance(exc.data, dict) else None) or "request failed"
        if isinstance(exc, RateLimitExceededExceedsMaxWait) and exc.wait:
            message = f"{message} (GitHub asked to wait {exc.wait:.0f} s; ci-grade waits at most {MAX_WAIT_SECONDS:.0f} s)"
        raise GitHubError(f"GitHub answered {exc.status}: {message}", exc.status, rate_limited=_rate_limited(exc)) from None
    except requests.exceptions.RetryError as exc:  # an error status until the retries ran out
        found = re.search(r"too many (\d+) error responses", str(exc))
        status = int(found[1]) if found else None
        raise GitHubError(f"GitHub answered {status or 'errors'} until ci-grade stopped retrying", status, rate_limited=status in RATE_LIMIT_STATUS) from None
    except requests.exceptions.SSLError as exc:
        raise GitHubError(f"cannot reach GitHub at {api_url}: {trust_failure(exc) or 'the TLS connection failed'}") from None
    except requests.RequestException as exc:
        raise GitHubError(f"cannot reach GitHub at {api_url}: {type(exc).__name__}") from None
    except Exception as exc:  # e.g. a malformed API reply: still GitHub's side, never the gate's
        raise GitHubError(f"unexpected reply from GitHub: {type(exc).__name__}: {exc}") from None


def _converge(issue: Issue, marker: str, text: str, author: str) -> PostedComment:
    ours = own_comments(issue, marker, author)
    if ours and _edited(ours[0], text):
        _delete(ours[1:])
        return PostedComment(ours[0].id, ours[0].html_url, created=False)
    mine = issue.create_comment(text)
    actual = mine.user.login if mine.user else author  # who GitHub says we are
    ours = own_comments(issue, marker, actual)
    keep = ours[0] if ours and ours[0].id != mine.id and _edited(ours[0], text) else mine
    _delete([c for c in ours if c.id != keep.id])
    return PostedComment(keep.id, keep.html_url, created=keep.id == mine.id, author=actual if actual.lower() != author.lower() else None)


def _edited(comment: IssueComment, text: str) -> bool:
    """Edit `comment`; False when it is gone or not ours to edit (an identity assumed wrongly)."""
    from github import GithubException

    try:
        comment.edit(text)
    except GithubException as exc:
        if exc.status in (403, 404) and not _rate_limited(exc):
            return False
        raise
    return True


def _rate_limited(exc: Any) -> bool:
    """GitHub refused for its rate limit (primary or secondary), not for who we are."""
    from github import RateLimitExceededException

    return isinstance(exc, RateLimitExceededException) or exc.status == 429


def _delete(comments: list[IssueComment]) -> None:
    """Delete `comments`; one already deleted (by a racing run) is fine."""
    from github import GithubException

    for comment in comments:
        try:
            comment.delete()
        except GithubException as exc:
            if exc.status != 404:
                raise
