"""Threshold checks and `not-` for the score-based model-graded types (similarity, RAG, classifier).

promptfoo compares these scores with `score >= threshold - Number.EPSILON`; the inverse form is
the exact complement of that check, so a score exactly at the threshold passes the positive form
and fails the `not-` form.
"""

from __future__ import annotations

import sys

EPSILON = sys.float_info.epsilon
RAG_THRESHOLD = 0.5


def reaches(score: float, threshold: float) -> bool:
    """`score >= threshold`, tolerant of floating-point noise at the boundary."""
    return score >= threshold - EPSILON


def inverted(passed: bool, score: float, inverse: bool) -> tuple[bool, float]:
    """`not-` for 0..1 scores: flip the verdict and use `1 - score`."""
    return (not passed, 1.0 - score) if inverse else (passed, score)


def shown(number: float) -> str:
    """A threshold as written in the config: `0.75`, `1`, `0.8000001` (never rounded away)."""
    short = f"{number:g}"
    return short if float(short) == number else repr(number)
