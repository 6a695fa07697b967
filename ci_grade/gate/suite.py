"""Suite-level measures, paired by test: the mean score, the pass rate and every named metric.

Per paired test, d = head - base (repeats averaged within the test first; errored tests left out of
both sides). When every paired test is reproducible, the deltas are exact and any drop is real. When
every test's score is its 0/1 outcome, the mean score and the pass rate are one measure, judged once
by an exact McNemar test on the tests that flipped. Otherwise the mean score (and metrics) get a
paired t test from the paired standard error, clustered when `cluster_key` groups tests, and the
pass rate an exact McNemar test (a paired t test when tests ran several times or are clustered).
Holm's correction runs across the measures judged; a measure regresses when it is significantly
worse (one-sided, alpha) and its estimated drop exceeds the practical margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ci_grade.gate.baseline import BaselineTest
from ci_grade.gate.models import GatePolicy, MetricDelta
from ci_grade.gate.statistics import PairedResult, holm, holm_adjusted, mcnemar, mde, paired, units_needed

EPS = 1e-9


@dataclass(frozen=True)
class Pair:
    """One test present (and scored) in both runs."""

    base: BaselineTest
    head: BaselineTest
    reproducible: bool
    cluster: str


def _outcome(test: BaselineTest) -> float:
    return test.pass_rate or 0.0


def _is_single_binary(test: BaselineTest) -> bool:
    return test.scored == 1 and test.score in (0.0, 1.0) and (test.score == 1.0) == test.passed


def _metric(name: str) -> Callable[[BaselineTest], float]:
    return lambda test: test.named_scores[name]


def measures(pairs: list[Pair], policy: GatePolicy) -> tuple[MetricDelta, MetricDelta, bool, list[MetricDelta]]:
    """(mean score, pass rate, whether they are one measure, named metrics), judged with Holm."""
    exact = bool(pairs) and all(p.reproducible for p in pairs)
    same = bool(pairs) and all(_is_single_binary(p.base) and _is_single_binary(p.head) for p in pairs)
    binary = bool(pairs) and all(p.base.scored == 1 and p.head.scored == 1 for p in pairs) and policy.cluster_key is None
    mean = _measure("mean score", pairs, lambda t: t.score, policy, exact, mcnemar_ok=same and policy.cluster_key is None)
    rate = _measure("pass rate", pairs, _outcome, policy, exact, mcnemar_ok=binary)
    names = sorted({m for p in pairs for m in p.head.named_scores} | {m for p in pairs for m in p.base.named_scores})
    metrics = []
    for name in names:
        with_metric = [p for p in pairs if name in p.base.named_scores and name in p.head.named_scores]
        metrics.append(_measure(name, with_metric, _metric(name), policy, exact and bool(with_metric)))
    judged = [mean, *([] if same else [rate]), *metrics]
    _holm(judged, policy)
    if same:
        rate = rate.model_copy(update={f: getattr(mean, f) for f in ("p_adjusted", "significant", "regressed", "inconclusive")})
    return mean, rate, same, metrics


def _measure(name: str, pairs: list[Pair], value: Callable[[BaselineTest], float], policy: GatePolicy, exact: bool, *, mcnemar_ok: bool = False) -> MetricDelta:
    if not pairs:
        return MetricDelta(name=name)
    d = [value(p.head) - value(p.base) for p in pairs]
    result = MetricDelta(
        name=name,
        base=math.fsum(value(p.base) for p in pairs) / len(pairs),
        head=math.fsum(value(p.head) for p in pairs) / len(pairs),
        tests=len(pairs),
    )
    clusters = [p.cluster for p in pairs] if policy.cluster_key else None
    stats = paired(d, policy.alpha, clusters)
    if exact:
        result.method, result.p_value = "exact", 0.0 if result.delta is not None and result.delta < -EPS else 1.0
        result.ci_low = result.ci_high = result.delta
        return result
    if mcnemar_ok:
        n01 = sum(1 for x in d if x < 0)
        n10 = sum(1 for x in d if x > 0)
        result.method, result.p_value, result.discordant = "exact McNemar", mcnemar(n01, n10).p_drop, (n01, n10)
    elif stats is not None:
        result.method, result.p_value = "paired t", stats.p_drop
    _describe(result, stats, policy)
    return result


def _describe(result: MetricDelta, stats: PairedResult | None, policy: GatePolicy) -> None:
    """The interval, the minimum detectable effect and the tests needed, from the paired statistics."""
    if stats is None:
        return
    result.ci_low, result.ci_high = stats.ci_low, stats.ci_high
    result.clusters = stats.n_clusters if stats.clustered else None
    if stats.se:
        result.mde = mde(stats.se, policy.alpha, df=stats.df)
    if stats.sd and policy.max_metric_drop > 0:
        result.tests_needed = units_needed(stats.sd, policy.max_metric_drop, policy.alpha)


def _holm(judged: list[MetricDelta], policy: GatePolicy) -> None:
    """Holm across the measures with a p-value; regression = significant and beyond the margin."""
    tested = [m for m in judged if m.p_value is not None]
    p_values = [1.0 if m.p_value is None else m.p_value for m in tested]
    for m, significant, adjusted in zip(tested, holm(p_values, policy.alpha), holm_adjusted(p_values), strict=True):
        m.significant, m.p_adjusted = significant, adjusted
        drop = -(m.delta or 0.0)
        beyond = drop > policy.max_metric_drop + EPS
        m.regressed = significant and beyond
        m.inconclusive = beyond and not significant
