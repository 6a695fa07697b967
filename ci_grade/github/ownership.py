"""Give files written into the workspace back to the workspace's owner.

A Docker action runs as root (GitHub's documented requirement: a non-root user cannot write to
the mounted workspace), while the workspace belongs to the runner's user. Without this, later
steps could read but not overwrite or delete our results files and folders.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def hand_over(paths: Iterable[Path], workspace: Path) -> list[Path]:
    """Chown `paths` (and folders created for them inside the workspace) to the workspace owner.

    A no-op unless running as root and the workspace belongs to someone else. Returns what changed.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    try:
        owner = workspace.stat()
    except OSError:
        return []
    if owner.st_uid == 0:
        return []
    root = workspace.resolve()
    changed: list[Path] = []
    for path in paths:
        target = path.resolve()
        if root not in target.parents:
            continue
        for item in [target, *target.parents]:
            if item == root:
                break
            if item in changed:
                continue
            try:
                if item.stat().st_uid == 0:
                    os.chown(item, owner.st_uid, owner.st_gid)
                    changed.append(item)
            except OSError:
                continue
    return changed
