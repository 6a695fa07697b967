"""The base branch's recent runs, one summary each, kept inside the baseline file (`history`).

Saving a baseline (`ci-grade baseline save`, `eval --save-baseline`, the action's `save-baseline`)
carries the history of the baseline file already at the target path, adds the new run (or each run
folded into it) and keeps the last `DEFAULT_KEEP` (30) by default. A point says what the report says
of a run: its pass rate (tests passing of all tests), its mean score (over scored tests) and each
named metric's mean (weighted as the run's metric). A pull request's report draws them as a trend
with its own point (`report/trend.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

DEFAULT_KEEP = 30


class RunPoint(BaseModel):
    """One run's summary: when, which commit, and its headline numbers."""

    created_at: str = ""
    commit: str | None = None
    tests: int = 0
    passed: int = 0
    mean_score: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    cost: float = 0.0

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.tests if self.tests else None

    @property
    def key(self) -> tuple[str, str | None]:
        return self.created_at, self.commit


def extend(history: list[RunPoint], points: Iterable[RunPoint], keep: int = DEFAULT_KEEP) -> list[RunPoint]:
    """`history` with `points` added (a run already there is not added twice), oldest first, the last `keep`."""
    merged = list(history)
    seen = {point.key for point in merged}
    for point in points:
        if point.key not in seen:
            merged.append(point)
            seen.add(point.key)
    merged.sort(key=lambda point: point.created_at)
    return merged[-keep:] if keep > 0 else []
