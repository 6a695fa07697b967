"""Where a report links to on GitHub: the head commit, the workflow run, its artifact and the line
a failing test is written at (a blob URL at the head commit, `#L<line>`).

Built from the runner's variables (`GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`, `GITHUB_RUN_ID`,
`GITHUB_RUN_ATTEMPT`, `GITHUB_SHA`); the action passes the pull request's head commit (GitHub's
`GITHUB_SHA` of a pull request is a merge commit nobody reviews). Artifacts are linked as the run
page's list of them: the workflow uploads its results after the step that reports. Outside Actions there is nothing to link to and a report names things plainly.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_grade.report.source_paths import SourcePaths

_SHA = re.compile(r"[0-9a-fA-F]{7,64}")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_LOCATION = re.compile(r"(.+):(\d+)")


@dataclass(frozen=True)
class Links:
    server: str = ""
    repository: str = ""
    sha: str = ""
    run_id: str = ""
    run_attempt: str = ""
    paths: SourcePaths | None = None
    """Turns a test's recorded path into the repository's (the folder the run started in)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, head_sha: str | None = None, cwd: Path | None = None) -> Links:
        """The links a run in GitHub Actions has; empty ones elsewhere."""
        server = (env.get("GITHUB_SERVER_URL") or "").rstrip("/")
        repository = env.get("GITHUB_REPOSITORY") or ""
        if not server.startswith(("https://", "http://")) or not _REPOSITORY.fullmatch(repository):
            return cls()
        sha = head_sha or env.get("GITHUB_SHA") or ""
        run_id = env.get("GITHUB_RUN_ID") or ""
        attempt = env.get("GITHUB_RUN_ATTEMPT") or ""
        return cls(
            server=server,
            repository=repository,
            sha=sha if _SHA.fullmatch(sha) else "",
            run_id=run_id if run_id.isdigit() else "",
            run_attempt=attempt if attempt.isdigit() and attempt != "1" else "",
            paths=SourcePaths(cwd, env),
        )

    @property
    def _base(self) -> str:
        return f"{self.server}/{self.repository}"

    @property
    def commit(self) -> str | None:
        return f"{self._base}/commit/{self.sha}" if self.server and self.sha else None

    @property
    def run(self) -> str | None:
        if not self.server or not self.run_id:
            return None
        return f"{self._base}/actions/runs/{self.run_id}" + (f"/attempts/{self.run_attempt}" if self.run_attempt else "")

    @property
    def artifacts(self) -> str | None:
        """The run page's list of artifacts (the results the workflow uploads are listed there)."""
        return f"{self.run}#artifacts" if self.run else None

    def source(self, location: str | None) -> str | None:
        """The blob URL of `location` (`file:line`, as a test's is recorded) at the head commit."""
        if not location or not self.server or not self.sha or self.paths is None:
            return None
        found = _LOCATION.fullmatch(location)
        file, line = (found[1], found[2]) if found else (location, "")
        path = self.paths.of(file)
        if path.startswith(("/", "../")) or Path(path).is_absolute():
            return None  # not in the repository
        url = f"{self._base}/blob/{self.sha}/{urllib.parse.quote(path, safe='/')}"
        return f"{url}#L{line}" if line else url
