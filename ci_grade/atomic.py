"""Files written whole or not at all: a temporary file beside the target, renamed into place.

The temporary file is created as a plain `open` creates a file (mode 0666 less the umask, applied
by the system), so a result file is readable by whoever the umask lets read it, as with any tool
that writes files (mkstemp's 0600 would hide a JUnit file from a reporter running as another user).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from ci_grade.errors import InfrastructureError

_ATTEMPTS = 100


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (or its parts, in order) to a temporary file beside `path`, then rename it into place."""
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_beside(path)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise InfrastructureError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:  # a part that could not be made: no half-written file is left
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new file with a name no one else holds, in `path`'s folder, open for writing."""
    for _ in range(_ATTEMPTS):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")
