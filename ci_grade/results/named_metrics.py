"""Named metrics (`metric:` on assertions) as promptfoo aggregates them.

Per test: the weighted mean of the test's assertions that carry the metric (an assertion's own
metric at its weight; names a script or an `assert-set` reports at the reporting assertion's weight,
times the set's own weights). Across a run (per prompt and provider, or overall): per assertion, the
sum of score x weight over the sum of weights; not the mean of per-test means, which gives a test
with one such assertion as much say as a test with five. promptfoo writes the parts as
`namedScores` (the weighted sums), `namedScoresCount` and `namedScoreWeights`.

Errored assertions are left out. A metric whose assertions all have weight 0 (informational
metrics) is the plain mean of their scores, where promptfoo reports 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ci_grade.results.models import AssertionResult, TestResult


@dataclass
class MetricTotal:
    """One named metric summed over assertions."""

    weighted: float = 0.0
    """Sum of score x weight (promptfoo's `namedScores` at run level)."""
    weight: float = 0.0
    """Sum of weights (`namedScoreWeights`)."""
    count: int = 0
    """Contributing assertions (`namedScoresCount`)."""
    plain: float = 0.0
    """Sum of scores, for a metric whose weights are all 0."""

    @property
    def value(self) -> float:
        if self.weight > 0:
            return self.weighted / self.weight
        return self.plain / self.count if self.count else 0.0

    def add(self, other: MetricTotal, scale: float = 1.0) -> None:
        self.weighted += other.weighted * scale
        self.weight += other.weight * scale
        self.count += other.count
        self.plain += other.plain


def assertion_totals(results: Iterable[AssertionResult], scale: float = 1.0) -> dict[str, MetricTotal]:
    """One test's named metrics from its graded (top-level) assertions."""
    totals: dict[str, MetricTotal] = {}
    for result in results:
        if result.status == "error":
            continue
        weight = result.weight * scale
        if result.metric:
            totals.setdefault(result.metric, MetricTotal()).add(MetricTotal(result.score, 1.0, 1, result.score), weight)
        if result.type == "assert-set":
            reported = assertion_totals(result.children)
        else:  # a script's own namedScores (its componentResults are shown, not aggregated)
            reported = {name: MetricTotal(value, 1.0, 1, value) for name, value in result.named_scores.items()}
        for name, total in reported.items():
            if name != result.metric:
                totals.setdefault(name, MetricTotal()).add(total, weight)
    return totals


MetricPart = tuple[str, float, float, int]
"""What one row adds to a named metric across a run: (name, value, weight, assertions)."""


def metric_parts(row: TestResult) -> tuple[MetricPart, ...]:
    """The row's contribution to each named metric across a run (none for an ERROR row).

    A row without recorded weights for a metric (a results file from an older promptfoo) weighs
    its value by the number of its assertions carrying the metric (promptfoo adds such a value
    once but counts its weight that many times, which pulls the metric down)."""
    if row.status == "error":
        return ()
    parts = []
    for name, value in row.named_scores.items():
        count = sum(1 for top in row.assertions for item in top.flat() if item.metric == name) or 1
        weight = row.named_score_weights.get(name)
        parts.append((name, value, count if weight is None else weight, count))
    return tuple(parts)


def add_parts(totals: dict[str, MetricTotal], parts: Iterable[MetricPart]) -> None:
    """Add rows' parts into `totals` (in place)."""
    for name, value, weight, count in parts:
        total = totals.setdefault(name, MetricTotal())
        total.weighted += value * weight
        total.weight += weight
        total.count += count
        total.plain += value * count


def run_totals(rows: Iterable[TestResult]) -> dict[str, MetricTotal]:
    """Named metrics across rows, per assertion (promptfoo's `accumulateNamedMetric`); ERROR rows
    are left out, as everywhere a run is scored (see `metric_parts`)."""
    totals: dict[str, MetricTotal] = {}
    for row in rows:
        add_parts(totals, metric_parts(row))
    return totals
