"""The starting value of the t quantile's Newton iteration: the Cornish-Fisher expansion to the
fourth order in 1/df, whose error shrinks like df^-5."""

from __future__ import annotations

import pytest

from ci_grade.gate.distributions import _cornish_fisher, normal_ppf, t_ppf


@pytest.mark.parametrize("df", [5, 10, 30, 100])
@pytest.mark.parametrize("q", [0.025, 0.1, 0.3])
def test_the_start_is_within_the_expansions_error_of_the_quantile(q: float, df: int) -> None:
    exact = -t_ppf(q, df)
    start = _cornish_fisher(q, df)
    assert abs(start - exact) / exact <= 2e-4 * (5 / df) ** 5
    assert start > -normal_ppf(q)  # t's tails are heavier than the normal's


@pytest.mark.parametrize("df", [1, 3, 10, 100])
@pytest.mark.parametrize("q", [0.01, 0.26, 0.3, 0.45, 0.49])
def test_the_iteration_finds_the_same_quantile_from_the_worst_start(monkeypatch: pytest.MonkeyPatch, q: float, df: int) -> None:
    """Started at the top of its bracket instead of near the root, Newton's steps on the flat part
    of P(0 < T <= t) overshoot far below the root: the lower bracket turns them into bisection, and
    the quantile is the same to 1e-9."""
    from ci_grade.gate import distributions

    exact = -t_ppf(q, df)
    monkeypatch.setattr(distributions, "_cornish_fisher", lambda q, df: 1e300)
    assert -t_ppf(q, df) == pytest.approx(exact, rel=1e-9)
