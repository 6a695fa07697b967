"""Folding a test's repeats into one baseline entry: the spread of two repeats, and the reply
digest that tells whether the reply stayed the same."""

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
