"""Scores into verdicts: the pass rules, thresholds and `not-` every scored assertion shares.

promptfoo compares scores with `score >= threshold - Number.EPSILON`; the inverse form is the exact
complement of that check, so a score exactly at the threshold passes the positive form and fails the
`not-` form. A grader prompt names its rule in its `scoring:` section; the engine applies it.
"""

from __future__ import annotations

import sys
from enum import Enum

EPSILON = sys.float_info.epsilon


class PassRule(Enum):
    """How a score (and, for some graders, their own pass/fail) becomes a verdict."""

    VERDICT = "verdict"
    """The grader's own pass/fail decides; a threshold, when set, must also be reached."""
    ABOVE_ZERO = "above_zero"
    """A score above 0 passes; a threshold, when set, must also be reached."""
    AT_LEAST = "at_least"
    """The score must reach the threshold (the type's default when none is set)."""
    ABOVE = "above"
    """The score must be strictly above the threshold (the type's default when none is set)."""

    def passes(self, score: float, threshold: float | None, verdict: bool | None = None) -> bool:
        """The positive form's verdict (`not-` is applied by `invert`)."""
        if self is PassRule.VERDICT:
            return bool(verdict) and (threshold is None or score >= threshold)
        if self is PassRule.ABOVE_ZERO:
            return score > 0 and (threshold is None or score >= threshold)
        if threshold is None:
            raise ValueError(f"pass rule {self.value} needs a threshold")
        return reaches(score, threshold) if self is PassRule.AT_LEAST else score > threshold


def reaches(score: float, threshold: float) -> bool:
    """`score >= threshold`, tolerant of floating-point noise at the boundary."""
    return score >= threshold - EPSILON


def invert(passed: bool, score: float) -> tuple[bool, float]:
    """`not-` for a 0..1 score: the opposite verdict and `1 - score` (kept within 0..1)."""
    return not passed, min(1.0, max(0.0, 1.0 - score))


def inverted(passed: bool, score: float, inverse: bool) -> tuple[bool, float]:
    """`invert` when `inverse`, else the verdict as it is."""
    return invert(passed, score) if inverse else (passed, score)


def shown(number: float) -> str:
    """A threshold as written in the config: `0.75`, `1`, `0.8000001` (never rounded away)."""
    short = f"{number:g}"
    return short if float(short) == number else repr(number)
