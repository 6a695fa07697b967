"""The gate without a baseline: thresholds only, the head's own measures, and what each listed
test shows."""

from __future__ import annotations

from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from tests.results_factory import row, run_of


def test_head_measures_without_a_baseline() -> None:
    run = run_of(row("a", 1.0), row("b", 0.5, "fail"), row("c", 0.0, "error", error="boom"))
    c = compare(run, None, GatePolicy())
    assert (c.mean_score.head, c.mean_score.tests) == (0.75, 2)
    assert (c.pass_rate.head, c.pass_rate.tests) == (0.5, 2)
    assert c.head_scores == [1.0, 0.5]
