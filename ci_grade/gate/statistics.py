"""The gate's significance tests: paired mean difference, McNemar, Fisher, Wilson, Holm, power.

Differences are head minus base, so a regression is a negative mean; every one-sided p-value here is the
p-value for a drop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ci_grade.gate.distributions import binomial_sf, normal_ppf, t_cdf, t_ppf


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test on pass/fail flips: n01 = pass->fail, n10 = fail->pass."""

    n01: int
    n10: int
    p_drop: float
    p_two_sided: float

    @property
    def p_drop_mid(self) -> float:
        """The one-sided mid-p: P(X > n01) + P(X = n01) / 2. The exact p counts the observed count
        whole, which makes the test conservative (its false-alarm rate sits well below alpha, and
        power is lost with it); the mid-p keeps the rate close to alpha (Fagerland, Lydersen and
        Laake 2013 recommend it over the exact conditional test)."""
        n = self.n01 + self.n10
        return max(0.0, self.p_drop - math.comb(n, self.n01) / 2**n / 2) if n else 1.0


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of per-unit differences d_i = head_i - base_i.

    A single unit carries no estimate of noise: sd, se, df, t and the interval are None and p_drop is 1
    (one unit can never show a significant drop; the decision may still weigh its size). When se is 0
    the mean is known exactly: p_drop is 0 for a negative mean and 1 otherwise, t is None and the
    interval is the mean itself.
    """

    n: int
    mean: float
    sd: float | None
    se: float | None
    df: int | None
    t: float | None
    p_drop: float
    ci_low: float | None
    ci_high: float | None
    clustered: bool
    n_clusters: int


def mcnemar(n01: int, n10: int) -> McNemarResult:
    """Exact McNemar test; p_drop = P(X >= n01) for X ~ Binomial(n01 + n10, 1/2); no flips give p = 1."""
    if n01 < 0 or n10 < 0:
        raise ValueError("flip counts must be >= 0")
    n = n01 + n10
    p_drop = binomial_sf(n01, n)
    p_rise = binomial_sf(n10, n)
    return McNemarResult(n01, n10, p_drop, min(1.0, 2.0 * min(p_drop, p_rise)))


def fisher_drop(k_base: int, n_base: int, k_head: int, n_head: int) -> float:
    """One-sided Fisher exact p-value that the head's pass rate (k_head/n_head) is below the base's.

    Given both margins, the head's passes are hypergeometric; the p-value is P(X <= k_head), exact
    up to one final rounding.
    """
    for k, n in ((k_base, n_base), (k_head, n_head)):
        if not 0 <= k <= n:
            raise ValueError(f"passes must lie in [0, runs], got {k} of {n}")
    passes = k_base + k_head
    low = max(0, passes - n_base)
    favourable = sum(math.comb(n_head, x) * math.comb(n_base, passes - x) for x in range(low, k_head + 1))
    return favourable / math.comb(n_base + n_head, passes)


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k passes in n runs; (0, 1) when n = 0."""
    if not 0 <= k <= n:
        raise ValueError(f"passes must lie in [0, runs], got {k} of {n}")
    _check_level("confidence", confidence)
    if n == 0:
        return 0.0, 1.0
    z = normal_ppf(0.5 + confidence / 2.0)
    rate, z2 = k / n, z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise level alpha, in input order.

    With p(1) <= ... <= p(m), p(j) is rejected while p(j) <= alpha / (m - j + 1); testing stops at the
    first that is not.
    """
    _check_level("alpha", alpha)
    m = len(p_values)
    rejected = [False] * m
    for rank, index in enumerate(_ascending(p_values)):
        if p_values[index] > alpha / (m - rank):
            break
        rejected[index] = True
    return rejected


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values in input order: running maximum of (m - j + 1) p(j), capped at 1."""
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(_ascending(p_values)):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def paired(d: Sequence[float], alpha: float = 0.05, clusters: Sequence[str] | None = None) -> PairedResult | None:
    """Paired test of the mean difference: one-sided t test for a drop and a two-sided 1 - alpha t interval.

    With cluster keys, the standard error is the clustered one,
    SE = (1/n) sqrt(C/(C-1) sum_c (sum_{i in c} (d_i - mean))^2) on C - 1 degrees of freedom; the plain
    s/sqrt(n) on n - 1 is kept when there are fewer than two clusters, when every cluster holds one unit
    (the two coincide), and when the clustered SE is 0 although the units differ (every cluster has the
    same mean: a degenerate estimate that would claim certainty). When every unit (test, or cluster)
    has the same difference there is no spread to test with: a drop gets the exact sign test's
    p = 0.5^units and no interval. None when d is empty.
    """
    _check_level("alpha", alpha)
    values = [float(x) for x in d]
    if not all(math.isfinite(x) for x in values):
        raise ValueError("differences must be finite numbers")
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"{len(clusters)} cluster keys for {len(values)} differences")
    n = len(values)
    if n == 0:
        return None
    n_clusters = n if clusters is None else len(set(clusters))
    constant = min(values) == max(values)
    mean = values[0] if constant else math.fsum(values) / n
    if n == 1:
        return PairedResult(n=1, mean=mean, sd=None, se=None, df=None, t=None, p_drop=1.0, ci_low=None,
                            ci_high=None, clustered=False, n_clusters=n_clusters)
    deviations = [0.0 if constant else x - mean for x in values]
    sd = math.sqrt(math.fsum(e * e for e in deviations) / (n - 1))
    se, df, clustered = sd / math.sqrt(n), n - 1, False
    if clusters is not None and 2 <= n_clusters < n:
        groups: dict[str, list[float]] = {}
        for key, e in zip(clusters, deviations, strict=True):
            groups.setdefault(key, []).append(e)
        total = math.fsum(math.fsum(group) ** 2 for group in groups.values())
        clustered_se = math.sqrt(n_clusters / (n_clusters - 1) * total) / n
        if clustered_se > 0.0 or se == 0.0:
            se, df, clustered = clustered_se, n_clusters - 1, True
    if se == 0.0:  # every unit moved by the same amount: no spread to build a t test or an interval on
        units = n_clusters if clustered else n
        t, p_drop = None, 0.5**units if mean < 0 else 1.0  # the exact sign test: every unit dropped
        ci_low = ci_high = None if mean != 0 else 0.0
    else:
        t = mean / se
        p_drop, margin = t_cdf(t, df), -t_ppf(alpha / 2.0, df) * se
        ci_low, ci_high = mean - margin, mean + margin
    return PairedResult(n=n, mean=mean, sd=sd, se=se, df=df, t=t, p_drop=p_drop, ci_low=ci_low,
                        ci_high=ci_high, clustered=clustered, n_clusters=n_clusters)


def mde(se: float, alpha: float = 0.05, power: float = 0.8, df: float | None = None) -> float:
    """Minimum detectable drop of a one-sided test at level alpha with the given power.

    (q(1 - alpha) + q(power)) * se with q the t quantile on df degrees of freedom, or the normal one
    when df is None.
    """
    _check_power(alpha, power)
    if not se >= 0.0:
        raise ValueError("the standard error must be >= 0")
    if df is None:
        return (-normal_ppf(alpha) + normal_ppf(power)) * se
    return (-t_ppf(alpha, df) + t_ppf(power, df)) * se


def units_needed(sd: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Paired units needed to detect a drop of delta: the smallest n >= 2 with mde(sd/sqrt(n), df=n-1) <= delta.

    The normal approximation n = (z(1-alpha) + z(power))^2 sd^2 / delta^2 is a lower bound (t quantiles
    exceed normal ones), so the search starts there.
    """
    _check_power(alpha, power)
    if not sd >= 0.0:
        raise ValueError("the standard deviation must be >= 0")
    if not delta > 0.0:
        raise ValueError("the drop to detect must be > 0")
    n = max(2, math.ceil(((-normal_ppf(alpha) + normal_ppf(power)) * sd / delta) ** 2))
    while mde(sd / math.sqrt(n), alpha, power, df=n - 1) > delta:
        n += 1
    return n


def _ascending(p_values: Sequence[float]) -> list[int]:
    """Indices of the p-values from smallest to largest (ties in input order)."""
    if not all(0.0 <= p <= 1.0 for p in p_values):
        raise ValueError("p-values must lie in [0, 1]")
    return sorted(range(len(p_values)), key=lambda i: p_values[i])


def _check_level(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")


def _check_power(alpha: float, power: float) -> None:
    if not 0.0 < alpha <= 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5], got {alpha!r}")
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power must lie in [0.5, 1), got {power!r}")
