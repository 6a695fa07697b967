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

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ci_grade import redact
from ci_grade.github.client import connect, github_errors, rate_limited

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
    author: str | None = None
    """The login GitHub wrote our comment as, when it is not the one we assumed (set `comment-author` to it)."""


def own_login(client: Github) -> str:
    """The login our comments are written by, as far as the token tells."""
    from github import GithubException

    try:
        return client.get_user().login
    except GithubException as exc:
        if exc.status in (403, 404) and not rate_limited(exc):
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
    text = comment_body(redact.text(body), marker)
    with github_errors(api_url):
        client = connect(api_url, token)
        issue = client.get_repo(repository).get_issue(number)
        posted = _converge(issue, marker, text, author or own_login(client))
    return posted


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
        if exc.status in (403, 404) and not rate_limited(exc):
            return False
        raise
    return True


def _delete(comments: list[IssueComment]) -> None:
    """Delete `comments`; one already deleted (by a racing run) is fine."""
    from github import GithubException

    for comment in comments:
        try:
            comment.delete()
        except GithubException as exc:
            if exc.status != 404:
                raise
