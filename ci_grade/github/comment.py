"""The sticky pull-request comment, through PyGithub: one per PR per title, updated in place.

Our comment is the first one that carries the title's hidden marker AND was written by the
token's own account. `GET /user` names that account for a personal token; the Actions
`GITHUB_TOKEN` (an app installation token) may not call it (403) and writes as
`github-actions[bot]`, which is then assumed. Look-alike comments by anyone else are ignored.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ci_grade import redact
from ci_grade.errors import GitHubError

if TYPE_CHECKING:
    from github import Github
    from github.Issue import Issue
    from github.IssueComment import IssueComment

BOT_LOGIN = "github-actions[bot]"
COMMENT_LIMIT = 65_536
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


def connect(api_url: str, token: str) -> Github:
    """A PyGithub client for `api_url` (github.com, GitHub Enterprise Server or a stand-in).

    Only idempotent requests (GET, PATCH) are retried: retrying a POST after a 5xx could post
    a second comment. Pacing between requests is off: this client makes a handful of them.
    """
    import logging

    from github import Auth, Github
    from github.GithubRetry import GithubRetry

    logging.getLogger("github").setLevel(logging.WARNING)  # its INFO lines duplicate our warnings
    retry = GithubRetry(
        total=3,
        backoff_factor=float(os.environ.get("CI_GRADE_RETRY_BASE_SECONDS", "0.5")),
        allowed_methods=frozenset({"GET", "PATCH"}),
        max_rate_limit_wait=60,
    )
    return Github(
        base_url=api_url,
        auth=Auth.Token(token),
        per_page=100,
        timeout=30,
        retry=retry,
        seconds_between_requests=None,
        seconds_between_writes=None,
        lazy=True,
    )


def own_login(client: Github) -> str:
    """The login our comments are written by."""
    from github import GithubException

    try:
        return client.get_user().login
    except GithubException as exc:
        if exc.status in (403, 404):
            return BOT_LOGIN
        raise


def find_comment(issue: Issue, marker: str, author: str) -> IssueComment | None:
    """Our earlier comment on `issue`, searching every page of its comments."""
    for comment in issue.get_comments():
        login = comment.user.login if comment.user else ""
        if login.lower() == author.lower() and marker in (comment.body or ""):
            return comment
    return None


def upsert_comment(*, api_url: str, token: str, repository: str, number: int, marker: str, body: str) -> PostedComment:
    """Update our comment on PR `number` or create it; never a second one."""
    import requests
    from github import GithubException

    text = comment_body(redact.text(body), marker)
    try:
        client = connect(api_url, token)
        issue = client.get_repo(repository).get_issue(number)
        existing = find_comment(issue, marker, own_login(client))
        if existing is not None:
            existing.edit(text)
            return PostedComment(existing.id, existing.html_url, created=False)
        created = issue.create_comment(text)
        return PostedComment(created.id, created.html_url, created=True)
    except GithubException as exc:
        message = exc.message or (exc.data.get("message") if isinstance(exc.data, dict) else None) or "request failed"
        raise GitHubError(f"GitHub answered {exc.status}: {message}", exc.status) from None
    except requests.RequestException as exc:
        raise GitHubError(f"cannot reach GitHub at {api_url}: {type(exc).__name__}") from None
    except Exception as exc:  # e.g. a malformed API reply: still GitHub's side, never the gate's
        raise GitHubError(f"unexpected reply from GitHub: {type(exc).__name__}: {exc}") from None
