"""One-line reasons of the gate and of the verdict reader: long names quoted in them are cut, with a
mark, so the reason stays one line a person can read (a metric's name in the gate's reason, a
grader's reply in a verdict error); the passed reason counts inconclusive drops; a test that drops
and newly fails is counted once; three or more regressed measures are named in one line; a test
failing where the baseline errored is a failure; a regressed measure quotes its Holm-adjusted p."""

from __future__ import annotations

import pytest

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.grading.verdicts import VerdictError, extract
from tests.results_factory import row, run_of


def test_a_long_metric_name_is_cut_to_forty_characters_in_the_gate_reason() -> None:
    name = "answers   stay\nwithin the refund policy of the store at all times"
    base = run_of(row("a", 1.0, metrics={name: 0.9}), row("b", 1.0, metrics={name: 0.9}))
    head = run_of(row("a", 1.0, metrics={name: 0.5}), row("b", 1.0, metrics={name: 0.5}))
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    flat = "answers stay within the refund policy of the store at all times"
    assert f"metric {flat[:39]!r}"[:-1] + "…'" in comparison.reason
    assert flat not in comparison.reason


def test_a_short_metric_name_is_quoted_whole() -> None:
    base = run_of(row("a", 1.0, metrics={"tone": 0.9}))
    head = run_of(row("a", 1.0, metrics={"tone": 0.5}))
    assert "metric 'tone' dropped 0.90 → 0.50" in compare(head, baseline_from_run(base), GatePolicy()).reason


def test_a_long_reply_without_a_verdict_is_quoted_as_an_excerpt() -> None:
    reply = "I think   the answer\nis fine. " * 40
    with pytest.raises(VerdictError) as info:
        extract(reply, "pass")
    flat = " ".join(reply.split())
    assert str(info.value).endswith(repr(flat[:197] + "..."))


def test_a_short_reply_is_quoted_whole() -> None:
    with pytest.raises(VerdictError) as info:
        extract("no verdict here", "pass")
    assert str(info.value).endswith("'no verdict here'")


def test_inconclusive_drops_are_counted_in_the_passed_reason() -> None:
    base = run_of(*[row(n, 1.0, sampled=True) for n in "abcd"])
    head = run_of(*[row(n, 0.0 if n == "a" else 1.0, sampled=True) for n in "abcd"])
    reason = compare(head, baseline_from_run(base), GatePolicy()).reason
    assert reason == ("3 of 4 tests passed; no significant change against the baseline; 1 sampled test newly failing, not significant; "
                      "1 drop beyond the margin not significant (inconclusive)")


def test_a_test_that_drops_and_newly_fails_is_counted_once() -> None:
    base = run_of(row("a", 1.0), row("b", 1.0))
    head = run_of(row("a", 0.0), row("b", 1.0))
    reason = compare(head, baseline_from_run(base), GatePolicy()).reason
    assert reason == "1 test regressed beyond tolerance (max drop 0.10); pass rate dropped 1.00 → 0.50 (-0.50, max drop 0.02)"


def test_three_regressed_measures_are_named_in_one_line() -> None:
    base = run_of(*[row(n, 0.9, metrics={"m1": 0.9, "m2": 0.9}) for n in "ab"])
    head = run_of(*[row(n, 0.6, metrics={"m1": 0.5, "m2": 0.4}) for n in "ab"])  # three distinct measures
    reason = compare(head, baseline_from_run(base), GatePolicy()).reason
    assert reason == "2 tests regressed beyond tolerance (max drop 0.10); 3 measures dropped beyond tolerance (max drop 0.02): mean score, 'm1', 'm2'"


def test_a_test_failing_where_the_baseline_errored_is_a_failure() -> None:
    base = run_of(row("a", 1.0), row("b", 0.0, "error", error="x"))
    head = run_of(row("a", 1.0), row("b", 0.0, "fail"))
    assert compare(head, baseline_from_run(base), GatePolicy()).reason == "1 test failed"


def test_a_regressed_measure_quotes_its_holm_adjusted_p() -> None:
    base = run_of(*[row(f"t{i}", 0.9, "pass", sampled=True) for i in range(12)])
    head = run_of(*[row(f"t{i}", 0.9 if i % 3 else 0.6, "pass", sampled=True) for i in range(12)])
    c = compare(head, baseline_from_run(base), GatePolicy())
    assert c.mean_score.p_adjusted is not None and c.mean_score.p_value is not None
    assert f"{c.mean_score.p_adjusted:.2g}" != f"{c.mean_score.p_value:.2g}"
    assert c.reason == f"mean score dropped 0.90 → 0.80 (-0.10, max drop 0.02, p={c.mean_score.p_adjusted:.2g})"
