"""Suite-level measures, paired by test: the mean score, the pass rate and every named metric.

Per paired test, d = head - base (repeats averaged within the test first; errored tests left out of
both sides). When every paired test is reproducible, the deltas are exact and any drop is real.
Measures that are the same quantity, found from the data (each paired test has the same value and
weight in both: the mean score and the pass rate when every score is the test's pass rate, a
suite's only metric on its only assertion), are one measure, tested once. When every test ran once
per side, the pass rate (and the mean score when it is the pass rate) gets a McNemar test (mid-p)
on the tests that flipped; otherwise a measure gets a paired t test from the paired standard error,
clustered when `cluster_key` groups tests. The base, head and delta shown are the means of the
very values tested. A named metric's means weigh each test by the weight of its assertions
carrying the metric (a metric counts per assertion, as promptfoo aggregates it); its paired test
uses the linearised deltas of that weighted mean. Derived metrics (`derivedMetrics`) are computed
from the metrics' sums and judged on their linearised per-test contributions (`derived`). Holm's correction runs across the measures
tested; a measure regresses when it is significantly worse (one-sided, alpha) and its estimated
drop exceeds the practical margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ci_grade.gate import derived
from ci_grade.gate.baseline import BaselineTest
from ci_grade.gate.models import GatePolicy, MetricDelta
from ci_grade.gate.statistics import PairedResult, holm, holm_adjusted, mcnemar, mde, paired, units_needed

EPS = 1e-9
_JUDGEMENT = ("method", "p_value", "p_adjusted", "significant", "ci_low", "ci_high", "mde", "tests_needed", "discordant", "clusters", "regressed", "inconclusive")
"""What a repeated measure takes from the measure it repeats (its means are its own, and equal)."""


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


def metric_weight(name: str, test: BaselineTest, other: BaselineTest | None = None) -> float:
    """The weight of a test's `name` metric; a baseline written before weights were recorded
    borrows the other side's, so both sides weigh alike."""
    if name in test.named_weights:
        return test.named_weights[name]
    return other.named_weights.get(name, 1.0) if other is not None else 1.0


def weighted_mean(values: list[float], weights: list[float]) -> float | None:
    """Mean by weight; the plain mean when every weight is 0 (informational metrics)."""
    if not values:
        return None
    total = math.fsum(weights)
    if total <= 0:
        return math.fsum(values) / len(values)
    return math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total


def _side_mean(name: str, tests: list[BaselineTest]) -> float | None:
    having = [t for t in tests if name in t.named_scores]
    return weighted_mean([t.named_scores[name] for t in having], [metric_weight(name, t) for t in having])


def _linearised(d: list[float], weights: list[float]) -> list[float]:
    """Values whose plain mean and standard error are those of the weighted mean of `d`
    (the ratio estimator's linearisation: mean + n * share * (d - mean))."""
    total = math.fsum(weights)
    if total <= 0 or len(set(weights)) == 1:
        return d
    centre = math.fsum(x * w for x, w in zip(d, weights, strict=True)) / total
    return [centre + len(d) * w / total * (x - centre) for x, w in zip(d, weights, strict=True)]


def measures(
    pairs: list[Pair], policy: GatePolicy, derived_metrics: Sequence[Mapping[str, Any]] = ()
) -> tuple[MetricDelta, MetricDelta, bool, list[MetricDelta]]:
    """(mean score, pass rate, whether they are one measure, named then derived metrics), judged
    with Holm; `derived_metrics` are the run's `derivedMetrics` definitions.

    Measures that are the same quantity (every paired test has the same value on each side in
    both, weighed alike: the mean score and the pass rate of a suite whose tests have one pass/fail
    assertion, and its only metric) are tested once: the first stands for the others, which carry
    its judgement and name it in `same_as`.
    """
    exact = bool(pairs) and all(p.reproducible for p in pairs)
    binary = bool(pairs) and all(p.base.scored == 1 and p.head.scored == 1 for p in pairs) and policy.cluster_key is None
    score: Callable[[BaselineTest], float] = lambda t: t.score  # noqa: E731
    signatures = [_signature(pairs, score), _signature(pairs, _outcome)]
    same = bool(pairs) and signatures[0] == signatures[1]
    mean = _measure("mean score", pairs, score, policy, exact, mcnemar_ok=binary and same)
    rate = _measure("pass rate", pairs, _outcome, policy, exact, mcnemar_ok=binary)
    names = sorted({m for p in pairs for m in p.head.named_scores} | {m for p in pairs for m in p.base.named_scores})
    metrics = []
    for name in names:
        with_metric = [p for p in pairs if name in p.base.named_scores and name in p.head.named_scores]
        weights = [(metric_weight(name, p.base, p.head), metric_weight(name, p.head, p.base)) for p in with_metric]
        result = _measure(name, with_metric, _metric(name), policy, exact and bool(with_metric), weights=weights)
        if not with_metric:  # a metric on one side only: show it, judge nothing
            result.base, result.head = (_side_mean(name, [getattr(p, side) for p in pairs]) for side in ("base", "head"))
        metrics.append(result)
        signatures.append(_signature(with_metric, _metric(name), weights))
    bases = [{m: v * metric_weight(m, p.base, p.head) for m, v in p.base.named_scores.items()} for p in pairs]
    heads = [{m: v * metric_weight(m, p.head, p.base) for m, v in p.head.named_scores.items()} for p in pairs]
    for item in derived.paired(bases, heads, derived_metrics):
        finite = [v if math.isfinite(v) else None for v in (item.base, item.head)]  # a division by zero: shown as none
        result = MetricDelta(name=item.name, base=finite[0], head=finite[1], tests=len(pairs), derived=True)
        if item.d is not None:
            _judge(result, item.d, pairs, policy, exact)
        metrics.append(result)
        signatures.append(())  # a derived metric is its own quantity
    judged, repeats = _once([mean, rate, *metrics], signatures)
    _holm(judged, policy)
    for m, first in repeats:
        m.same_as = "mean score" if m is rate else _label(first, mean, rate, same)
        for field in _JUDGEMENT:
            setattr(m, field, getattr(first, field))
    return mean, rate, same, metrics


def _label(m: MetricDelta, mean: MetricDelta, rate: MetricDelta, same: bool) -> str:
    """How a report names the measure (as `Comparison.label`)."""
    if m is mean:
        return "pass rate" if same else "mean score"
    return "pass rate" if m is rate else f"metric {m.name!r}"


def _signature(pairs: list[Pair], value: Callable[[BaselineTest], float], weights: list[tuple[float, float]] | None = None) -> tuple[object, ...]:
    """What makes two measures the same quantity: each paired test's value on both sides (rounded to
    12 digits, so sums in another order still match) and, unless every test weighs alike on a side,
    its share of that side's weight."""
    values = tuple((p.head.test_id, round(value(p.base), 12), round(value(p.head), 12)) for p in pairs)
    if not weights or all(len({w[side] for w in weights}) == 1 for side in (0, 1)):
        return values
    totals = [math.fsum(w[side] for w in weights) or 1.0 for side in (0, 1)]
    return values + tuple((round(b / totals[0], 12), round(h / totals[1], 12)) for b, h in weights)


def _once(candidates: list[MetricDelta], signatures: list[tuple[object, ...]]) -> tuple[list[MetricDelta], list[tuple[MetricDelta, MetricDelta]]]:
    """The measures to test, one per quantity, and each repeat with the earlier measure it repeats."""
    first: dict[tuple[object, ...], MetricDelta] = {}
    tested, repeats = [], []
    for m, signature in zip(candidates, signatures, strict=True):
        if signature and signature in first:
            repeats.append((m, first[signature]))
            continue
        if signature:
            first[signature] = m
        tested.append(m)
    return tested, repeats


def _measure(
    name: str, pairs: list[Pair], value: Callable[[BaselineTest], float], policy: GatePolicy, exact: bool,
    *, mcnemar_ok: bool = False, weights: list[tuple[float, float]] | None = None,
) -> MetricDelta:
    """One measure over the paired tests; `weights` (base, head) per pair weigh the means."""
    if not pairs:
        return MetricDelta(name=name)
    weights = weights or [(1.0, 1.0)] * len(pairs)
    d = [value(p.head) - value(p.base) for p in pairs]
    result = MetricDelta(
        name=name,
        base=weighted_mean([value(p.base) for p in pairs], [w[0] for w in weights]),
        head=weighted_mean([value(p.head) for p in pairs], [w[1] for w in weights]),
        tests=len(pairs),
    )
    return _judge(result, _linearised(d, [(b + h) / 2 for b, h in weights]), pairs, policy, exact, mcnemar_ok=mcnemar_ok)


def _judge(result: MetricDelta, d: list[float], pairs: list[Pair], policy: GatePolicy, exact: bool, *, mcnemar_ok: bool = False) -> MetricDelta:
    """`result` with the paired test of its per-test differences `d` (one per pair)."""
    clusters = [p.cluster for p in pairs] if policy.cluster_key else None
    stats = paired(d, 1.0 - policy.confidence, clusters)
    if exact:
        result.method, result.p_value = "exact", 0.0 if result.delta is not None and result.delta < -EPS else 1.0
        result.ci_low = result.ci_high = result.delta
        return result
    if mcnemar_ok:
        n01 = sum(1 for x in d if x < 0)
        n10 = sum(1 for x in d if x > 0)
        result.method, result.p_value, result.discordant = "McNemar mid-p", mcnemar(n01, n10).p_drop_mid, (n01, n10)
    elif stats is not None:
        result.method, result.p_value = "paired t", stats.p_drop
    _describe(result, stats, policy)
    return result


def _describe(result: MetricDelta, stats: PairedResult | None, policy: GatePolicy) -> None:
    """The interval, the minimum detectable effect and, for a drop, the tests needed to tell the drop
    observed from noise (the standard error scaled back to one test, so clustering counts)."""
    if stats is None:
        return
    result.ci_low, result.ci_high = stats.ci_low, stats.ci_high
    result.clusters = stats.n_clusters if stats.clustered else None
    if stats.se:
        result.mde = mde(stats.se, policy.alpha, df=stats.df)
        drop = -(result.delta or 0.0)
        if drop > EPS:
            result.tests_needed = units_needed(stats.se * math.sqrt(stats.n), drop, policy.alpha)


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
