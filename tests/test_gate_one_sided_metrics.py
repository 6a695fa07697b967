"""A named metric that only one side of the comparison has is shown with its weighted mean and
judged as nothing."""

from __future__ import annotations

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from tests.results_factory import row, run_of


def test_a_metric_only_the_baseline_has_keeps_its_weighted_mean() -> None:
    baseline = baseline_from_run(run_of(row("a", 1.0), row("b", 1.0)))
    weighted = {"a": (1.0, 3.0), "b": (0.0, 1.0)}
    for test in baseline.tests.values():
        value, weight = weighted[test.name]
        test.named_scores["tone"] = value
        test.named_weights["tone"] = weight
    comparison = compare(run_of(row("a", 1.0), row("b", 1.0)), baseline, GatePolicy())
    (tone,) = comparison.metrics
    assert tone.name == "tone"
    assert (tone.base, tone.head) == (0.75, None)  # (1 x 3 + 0 x 1) / 4, not the plain mean 0.5
    assert tone.tests == 0 and not tone.regressed
