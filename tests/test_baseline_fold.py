"""Folding a test's repeats into one baseline entry: the spread of two repeats, the reply digest
that tells whether the reply stayed the same, an all-errored test, metric weights over repeats,
and the run's total cost."""

from __future__ import annotations

import math

from ci_grade.gate.baseline import baseline_from_run
from tests.results_factory import row, run_of


def test_two_repeats_have_the_sample_spread() -> None:
    baseline = baseline_from_run(run_of(row("a", 1.0, repeat=0), row("a", 0.5, repeat=1), repeat=2))
    (test,) = baseline.tests.values()
    assert test.score == 0.75
    assert math.isclose(test.score_spread, math.sqrt(0.125))  # ((0.25^2 + 0.25^2) / (2 - 1)) ^ 0.5
    (single,) = baseline_from_run(run_of(row("a", 0.5))).tests.values()
    assert single.score_spread == 0.0


def test_the_same_reply_in_every_repeat_has_a_digest_different_replies_none() -> None:
    same = baseline_from_run(run_of(row("a", 1.0, repeat=0, output="x"), row("a", 1.0, repeat=1, output="x"), repeat=2))
    differ = baseline_from_run(run_of(row("a", 1.0, repeat=0, output="x"), row("a", 1.0, repeat=1, output="y"), repeat=2))
    (kept,), (lost,) = same.tests.values(), differ.tests.values()
    assert kept.reply_digest is not None and len(kept.reply_digest) >= 12
    assert lost.reply_digest is None


def test_an_all_errored_test_scores_zero_and_weights_are_averaged_over_repeats() -> None:
    (broken,) = baseline_from_run(run_of(row("a", 0.0, "error", error="boom"))).tests.values()
    assert (broken.status, broken.score, broken.errors) == ("error", 0.0, 1)
    rows = [row("b", 1.0, repeat=i, metrics={"m": 1.0}) for i in range(2)]
    for r in rows:
        r.named_score_weights["m"] = 3.0
    (weighted,) = baseline_from_run(run_of(*rows, repeat=2)).tests.values()
    assert weighted.named_weights == {"m": 3.0}


def test_totals_add_grading_cost_to_provider_cost() -> None:
    run = run_of(row("a", 1.0))
    run.stats.cost, run.stats.grading_cost = 0.5, 0.25
    assert baseline_from_run(run).totals.cost == 0.75
