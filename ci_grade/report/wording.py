"""Counts in words: "1 error", "2 errors", never "1 errors"."""

from __future__ import annotations

_IRREGULAR = {"match": "matches", "this": "these", "was": "were", "is": "are", "failure": "failures"}


def plural(count: int, word: str, many: str | None = None) -> str:
    """`count` and `word` agreeing: `plural(1, "error")` is "1 error", `plural(2, "run")` "2 runs"."""
    return f"{count:,} {word if count == 1 else many or _IRREGULAR.get(word) or word + 's'}"
