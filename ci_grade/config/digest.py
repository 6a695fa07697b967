"""A config's digest: sha256 of its canonical JSON, computed without building the whole text."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_digest(raw: dict[str, Any]) -> str:
    """sha256 of `json.dumps(raw, sort_keys=True, default=str, ensure_ascii=False)`, encoded a
    top-level value (or a top-level list's item) at a time: a config of 100,000 tests is never one
    string in memory."""
    digest = hashlib.sha256()

    def encode(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)

    if not all(isinstance(key, str) for key in raw):  # keys json turns into text: sorted as they are
        digest.update(encode(raw).encode())
        return digest.hexdigest()
    digest.update(b"{")
    for n, (key, value) in enumerate(sorted(raw.items())):
        digest.update(f"{', ' if n else ''}{encode(key)}: ".encode())
        if isinstance(value, list):
            digest.update(b"[")
            for i, item in enumerate(value):
                digest.update(f"{', ' if i else ''}{encode(item)}".encode())
            digest.update(b"]")
        else:
            digest.update(encode(value).encode())
    digest.update(b"}")
    return digest.hexdigest()
