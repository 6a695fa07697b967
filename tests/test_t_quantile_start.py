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
