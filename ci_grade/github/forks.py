"""Fork safety: a run that would execute a fork's config with this repository's secrets is named."""

from __future__ import annotations

from ci_grade.errors import GitHubError
from ci_grade.github.event import ActionEvent
from ci_grade.github.pulls import head_repository

UNSAFE_TITLE = "ci-grade: unsafe trigger"


def unsafe_trigger(event: ActionEvent, token: str | None) -> str | None:
    """The warning for a fork's pull request run under `pull_request_target` or an
    `issue_comment` (whose job holds this repository's secrets and write token), else None."""
    if (event.name == "pull_request_target" and event.from_fork) or comment_on_a_fork(event, token):
        return (
            f"running under {event.name} on a fork's pull request: its config can run code with this repository's secrets "
            "and write token. Use pull_request (see the docs)."
        )
    return None


def comment_on_a_fork(event: ActionEvent, token: str | None) -> bool:
    """An `issue_comment` on a fork's pull request (the payload cannot say; the API is asked).
    The job has this repository's secrets and write token: if it checked out the pull request's
    head, the fork's config runs with them, as under `pull_request_target`."""
    number = event.pull_request_number
    if event.name != "issue_comment" or number is None or not token or not event.repository:
        return False
    try:
        head = head_repository(event.api_url, token, event.repository, number)
    except GitHubError:
        return False  # the comment step reports GitHub's problems
    return head is not None and head != event.repository
