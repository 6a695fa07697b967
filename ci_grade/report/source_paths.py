"""Paths of test definitions as CI tools want them: relative to the repository root.

Results record where a test was written relative to the folder the run started in. Test
reporters (JUnit `file` attributes) resolve paths from the repository root, so a run started in
a subfolder must name `evals/promptfooconfig.yaml`, not `promptfooconfig.yaml`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def repository_root(cwd: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The Actions workspace when `cwd` is inside it, else the git work tree around `cwd`, else None."""
    env = os.environ if env is None else env
    here = cwd.resolve()
    workspace = env.get("GITHUB_WORKSPACE")
    if workspace and here.is_relative_to(Path(workspace).resolve()):
        return Path(workspace).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


class SourcePaths:
    """Turns recorded paths (relative to `cwd`, or absolute) into repository-relative ones."""

    def __init__(self, cwd: Path | None = None, env: Mapping[str, str] | None = None):
        self.cwd = (cwd or Path.cwd()).resolve()
        self.root = repository_root(self.cwd, env)

    def of(self, file: str) -> str:
        """`file` relative to the repository root (else to `cwd`), POSIX separators; as given when outside it."""
        base = self.root or self.cwd
        path = (self.cwd / file).resolve()
        return path.relative_to(base).as_posix() if path.is_relative_to(base) else Path(file).as_posix()
