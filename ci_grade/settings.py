"""Tuning settings from the environment (`CI_GRADE_*` numbers): read in one place, checked before anything runs.

A value that is not a number in its range exits 2 naming the variable, instead of failing
wherever it is first read (an internal error at start-up, or every row an ERROR).
"""

from __future__ import annotations

import math
import os

from ci_grade.errors import UsageError

# name: (whole number?, smallest allowed value)
NUMBERS: dict[str, tuple[bool, float]] = {
    "CI_GRADE_MAX_ROWS": (True, 1),
    "CI_GRADE_MAX_RETRIES": (True, 0),
    "CI_GRADE_RETRY_BASE_SECONDS": (False, 0),
    "CI_GRADE_RETRY_MAX_SECONDS": (False, 0),
    "CI_GRADE_CALL_TIMEOUT_SECONDS": (False, 0.001),
    "CI_GRADE_ENDPOINT_DOWN_AFTER": (True, 0),
    "CI_GRADE_CACHE_TTL": (False, 0),
    "CI_GRADE_JS_TIMEOUT_MS": (True, 1),
    "CI_GRADE_JS_MAX_MEMORY_MB": (True, 1),
    "CI_GRADE_PYTHON_WORKERS": (True, 1),
    "CI_GRADE_PYTHON_MAX_MEMORY_MB": (True, 0),
    "CI_GRADE_MAX_FILE_MB": (True, 1),
    "CI_GRADE_TRACE_WAIT_MS": (True, 0),
    "CI_GRADE_TRACE_QUIET_MS": (True, 0),
}


def number(name: str, default: float) -> float:
    """The variable `name` as a number (`default` when unset or empty); UsageError when it is not one."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    whole, smallest = NUMBERS[name]
    try:
        value = float(int(text)) if whole else float(text)
    except ValueError:
        raise UsageError(f"{name} must be {'a whole number' if whole else 'a number'}, got {text!r}") from None
    if not math.isfinite(value) or value < smallest:
        raise UsageError(f"{name} must be a finite number of at least {smallest:g}, got {text!r}")
    return value


def check() -> None:
    """Read every setting once, so a bad one exits 2 before any model is called."""
    for name in NUMBERS:
        number(name, 0)
