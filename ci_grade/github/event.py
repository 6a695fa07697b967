"""What the runner tells the action about the run: event name and payload, repository, API, workspace."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_API_URL = "https://api.github.com"
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment")


@dataclass
class ActionEvent:
    name: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    repository: str | None = None
    api_url: str = DEFAULT_API_URL
    workspace: Path = field(default_factory=Path.cwd)
    problem: str | None = None  # why the payload could not be read, if it could not

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ActionEvent:
        payload: dict[str, Any] = {}
        problem = None
        path = env.get("GITHUB_EVENT_PATH")
        if path:
            try:
                loaded = json.loads(Path(path).read_text(encoding="utf-8"))
                payload = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError) as exc:
                problem = f"cannot read the event payload {path}: {exc}"
        repository = env.get("GITHUB_REPOSITORY") or _get(payload, "repository", "full_name")
        return cls(
            name=env.get("GITHUB_EVENT_NAME", ""),
            payload=payload,
            repository=repository if isinstance(repository, str) and repository else None,
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            workspace=Path(env.get("GITHUB_WORKSPACE") or Path.cwd()),
            problem=problem,
        )

    @property
    def pull_request_number(self) -> int | None:
        """The PR this run belongs to, as far as the payload says: pull_request(_target) and review
        events, a comment on a PR, or a `workflow_run` whose triggering run was for a PR of this
        repository at the same commit (for a fork's PR the payload lists none: see `run_head`)."""
        number: Any = None
        if self.name in PULL_REQUEST_EVENTS:
            number = _get(self.payload, "pull_request", "number") or self.payload.get("number")
        elif self.name == "issue_comment" and _get(self.payload, "issue", "pull_request"):
            number = _get(self.payload, "issue", "number")
        elif self.name == "workflow_run" and (head := self.run_head):
            pulls = _get(self.payload, "workflow_run", "pull_requests")
            number = next((_get(pull, "number") for pull in pulls or [] if _get(pull, "head", "sha") == head[1]), None)
        return number if isinstance(number, int) and number > 0 else None

    @property
    def run_head(self) -> tuple[str, str] | None:
        """For a `workflow_run` event: the triggering run's head as `owner:branch` and its commit,
        which find its pull request (`github.pulls`); None for other events."""
        run = self.payload.get("workflow_run") if self.name == "workflow_run" else None
        owner = _get(run, "head_repository", "owner", "login")
        branch, sha = _get(run, "head_branch"), _get(run, "head_sha")
        if not all(isinstance(value, str) and value for value in (owner, branch, sha)):
            return None
        return f"{owner}:{branch}", sha

    @property
    def head_sha(self) -> str | None:
        """The commit a reviewer sees: the pull request's head (GITHUB_SHA is a merge commit
        there), a `workflow_run`'s triggering commit; None otherwise (GITHUB_SHA serves)."""
        sha = _get(self.payload, "pull_request", "head", "sha") or _get(self.payload, "workflow_run", "head_sha")
        return sha if isinstance(sha, str) and sha else None

    @property
    def from_fork(self) -> bool:
        """A PR from another repository: its token is read-only and it gets no secrets."""
        head = _get(self.payload, "pull_request", "head", "repo", "full_name") or _get(self.payload, "workflow_run", "head_repository", "full_name")
        return bool(head and self.repository and head != self.repository)


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
