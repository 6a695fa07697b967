"""Structured-output assertions: is-/contains- json, xml, html and sql, one module each.

Every check is local (no model call). A value that cannot be used (a broken schema, an unknown SQL
dialect) is a grader error, never a failure or a pass.
"""

from __future__ import annotations

import re


def first_line(exc: BaseException) -> str:
    """An exception's first line, without terminal colour codes, clipped to 200 characters."""
    text = str(exc).strip()
    return clip(re.sub(r"\x1b\[[0-9;]*m", "", text.splitlines()[0] if text else type(exc).__name__), 200)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
