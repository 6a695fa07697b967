"""A content-addressed disk cache of provider responses (text and embeddings).

Keys hash what determines a reply: the provider's identity (id, model, endpoint, non-secret
config), the prompt or text, and any structured-output request. Errors and empty replies are
never cached, and what is stored is redacted. Entries expire after a TTL (default 14 days,
CI_GRADE_CACHE_TTL). On by default, as in promptfoo, in `--cache-dir` (the action's `cache-dir`
input), else CI_GRADE_CACHE_DIR, else `$XDG_CACHE_HOME/ci-grade` (`~/.cache/ci-grade`); the
run turns it off for `--no-cache`, `cache: false` in the config, PROMPTFOO_CACHE_ENABLED=false
and `--repeat` above 1 (repeats exist to sample the model again).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ci_grade import redact, settings
from ci_grade.redact import is_auth_key, is_secret_name
from ci_grade.safe_text import json_dumps

M = TypeVar("M", bound=BaseModel)

DEFAULT_TTL_SECONDS = 14 * 24 * 3600
_PROMPTFOO_TRUE = ("1", "true", "yes", "yup", "yeppers")  # promptfoo's getEnvBool


def cache_folder(given: str | None, env: Mapping[str, str]) -> Path:
    """Where the cache lives: `given`, else CI_GRADE_CACHE_DIR, else the user's XDG cache folder."""
    if given or env.get("CI_GRADE_CACHE_DIR"):
        return Path(given or env["CI_GRADE_CACHE_DIR"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or ""
    return (Path(base) if Path(base).is_absolute() else Path.home() / ".cache") / "ci-grade"


def cache_enabled_by(env: Mapping[str, str]) -> bool:
    """False when PROMPTFOO_CACHE_ENABLED is set to something promptfoo reads as false."""
    value = env.get("PROMPTFOO_CACHE_ENABLED", "").strip()
    return not value or value.lower() in _PROMPTFOO_TRUE


def _public(value: Any) -> Any:
    """`value` without credentials (keys never enter cache keys); settings such as `max_tokens`,
    whose names only look secret, stay in (a number is never a credential)."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not (isinstance(v, str) and (is_secret_name(str(k)) or is_auth_key(str(k))))}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


class ResponseCache:
    """One JSON file per entry under `folder`, sharded by the first two hex digits of the key."""

    def __init__(self, folder: Path, ttl_seconds: float | None = None):
        self.folder = folder
        self.ttl = settings.number("CI_GRADE_CACHE_TTL", ttl_seconds or DEFAULT_TTL_SECONDS)

    @staticmethod
    def key(identity: dict[str, Any], request: Any) -> str:
        blob = json_dumps({"provider": _public(identity), "request": request}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str, model: type[M]) -> M | None:
        """The stored reply as `model`; None (a miss) when absent, expired or unreadable, e.g.
        written by another version with other fields."""
        path = self._path(key)
        try:
            if time.time() - path.stat().st_mtime > self.ttl:
                return None
            return model.model_validate_json(path.read_bytes())
        except (OSError, ValueError):  # a pydantic ValidationError is a ValueError
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store atomically, secrets masked; a full disk or read-only folder only costs the cache, never the run."""
        value = redact.data(value)
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json_dumps(value, default=str))
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
