"""Files written whole or not at all: a temporary file beside the target, renamed into place."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ci_grade.errors import InfrastructureError


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (or its parts, in order) to a temporary file beside `path`, then rename it into place."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise InfrastructureError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:  # a part that could not be made: no half-written file is left
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
