"""The gate without a baseline: thresholds only, the head's own measures (weighted metrics, pass
and error counts), and what each listed test shows."""

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


def test_a_passing_test_with_metrics_counts_in_the_pass_rate() -> None:
    c = compare(run_of(row("a", 1.0, metrics={"m": 1.0}), row("b", 0.0, "fail")), None, GatePolicy())
    assert c.pass_rate.head == 0.5 and c.metrics[0].head == 1.0


def test_a_listed_test_shows_its_first_errored_repeat() -> None:
    run = run_of(row("a", 0.0, "fail", repeat=0, reason="wrong answer"), row("a", 0.0, "error", repeat=1, error="HTTP 500"), repeat=2)
    (case,) = compare(run, None, GatePolicy()).tests
    assert (case.error, case.reason) == ("HTTP 500", "a failed")


def test_a_structured_output_is_shown_as_json_with_its_own_characters() -> None:
    (case,) = compare(run_of(row("a", 0.0, output={"city": "Zürich", "n": 1})), None, GatePolicy()).tests
    assert case.output == '{"city": "Zürich", "n": 1}'


def test_counts_without_a_baseline() -> None:
    run = run_of(row("a", 1.0), row("b", 1.0), row("c", 0.0, "error", error="x"), row("d", 0.0, "error", error="y"))
    for every_test in (True, False):  # False: passing tests take a shortcut (nothing to list)
        c = compare(run, None, GatePolicy(max_errors=5), every_test=every_test)
        assert (c.pass_rate_head.passed, c.pass_rate_head.total, c.error_rows) == (2, 4, 2)
        assert c.mean_score.head == 1.0 and c.reason == "2 of 4 tests passed; 2 errors tolerated (max 5); no baseline, thresholds only"


def test_head_metrics_are_weighted_and_repeats_counted_without_a_baseline() -> None:
    rows = [row("a", 1.0, metrics={"m": 1.0}), row("b", 0.0, "fail", metrics={"m": 0.0})]
    rows[0].named_score_weights["m"] = 3.0
    rows[1].named_score_weights["m"] = 1.0
    assert compare(run_of(*rows), None, GatePolicy()).metrics[0].head == 0.75
    repeats = run_of(row("r", 1.0, "pass", repeat=0), row("r", 0.0, "fail", repeat=1), row("r", 0.0, "fail", repeat=2), repeat=3)
    (case,) = compare(repeats, None, GatePolicy()).tests
    assert (case.head_passes, case.head_repeats) == (1, 3)
