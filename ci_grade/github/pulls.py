"""Pull requests the event cannot describe, asked of the API: the one a `workflow_run` belongs
to, and where the head of the one an `issue_comment` is on comes from.

GitHub lists no pull requests in a `workflow_run` event triggered from a fork's pull request, which
is exactly the run the two-workflow pattern comments for. The pull request is the open one whose
head is the triggering run's branch (`owner:branch`) at the triggering run's commit: a pull
request that has moved on since, or another branch's, is not it. Nothing in the triggering run's
artifacts is trusted for this.
"""

from __future__ import annotations

from ci_grade.github.client import connect, github_errors


def pull_request_of(api_url: str, token: str, repository: str, head_label: str, head_sha: str) -> int | None:
    """The number of the open pull request of `repository` whose head is `head_label` at
    `head_sha`, or None; a GitHubError when GitHub cannot be asked."""
    with github_errors(api_url):
        repo = connect(api_url, token).get_repo(repository)
        for pull in repo.get_pulls(state="open", head=head_label):
            if pull.head.sha == head_sha:
                return int(pull.number)
    return None


def head_repository(api_url: str, token: str, repository: str, number: int) -> str | None:
    """The repository (`owner/name`) pull request `number`'s head branch lives in; None when the
    fork is gone. A GitHubError when GitHub cannot be asked."""
    with github_errors(api_url):
        pull = connect(api_url, token).get_repo(repository).get_pull(number)
        repo = pull.head.repo
        name = repo.full_name if repo is not None else None
    return name
