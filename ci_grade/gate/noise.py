"""Telling a drop from noise: standard errors from the spread over repeats, per test and per metric.

A drop (per test, per named metric, or in the mean score over matched tests) is a regression only
when it is larger than its tolerance AND larger than NOISE_K standard errors of the difference of
the two means. A test's standard error is its spread over repeats divided by the square root of
its scored repeats; a side without repeats borrows the other side's spread; the two sides' errors
add in quadrature (and, for metrics and the mean, average over the tests). A drop beyond the
tolerance but within the noise is "inconclusive". Without repeats the standard error is zero, so
the tolerances alone decide.
"""

from __future__ import annotations

import math

from ci_grade.gate.baseline import BaselineTest
from ci_grade.gate.models import CaseDelta, GatePolicy, MetricDelta

NOISE_K = 2.0
EPS = 1e-9


def _stderr(spread: float, n: int, other_spread: float, other_n: int) -> float:
    """Standard error of one side's mean; a side without repeats borrows the other's spread."""
    if n < 1:
        return 0.0
    sd = spread if n >= 2 else other_spread if other_n >= 2 else 0.0
    return sd / math.sqrt(n)


def _noise(b_spread: float, b_n: int, h_spread: float, h_n: int) -> float:
    """NOISE_K standard errors of (head mean - base mean) for one test."""
    return NOISE_K * math.hypot(_stderr(b_spread, b_n, h_spread, h_n), _stderr(h_spread, h_n, b_spread, b_n))


def judge(case: CaseDelta, policy: GatePolicy) -> CaseDelta:
    if "error" in (case.base_status, case.head_status) or case.base_score is None or case.head_score is None:
        return case
    case.new_failure = case.base_status == "pass" and case.head_status == "fail"
    case.fixed = case.base_status == "fail" and case.head_status == "pass"
    case.noise = _noise(case.base_spread, case.base_repeats, case.head_spread, case.head_repeats)
    drop = case.base_score - case.head_score
    if drop > policy.max_score_drop + EPS:
        case.regressed = drop > case.noise + EPS
        case.inconclusive = not case.regressed
    return case


_Pair = tuple[float, float, int, float, float, int]  # base mean, spread, n; head mean, spread, n


def _head_values(heads: list[BaselineTest], metric: str | None) -> tuple[list[float], list[float]]:
    """The scored head tests' values and their weights (1 for the mean score)."""
    scored = [t for t in heads if t.status != "error" and (metric is None or metric in t.named_scores)]
    if metric is None:
        return [t.score for t in scored], [1.0] * len(scored)
    return [t.named_scores[metric] for t in scored], [t.named_weights.get(metric, 1.0) for t in scored]


def _shares(weights: list[float]) -> list[float]:
    """Each value's share of a mean: by weight (a named metric counts per assertion, as promptfoo
    aggregates it), equal when the weights are all 0."""
    total = math.fsum(weights)
    return [w / total for w in weights] if total > 0 else [1 / len(weights)] * len(weights)


def _mean(values: list[float], weights: list[float] | None = None) -> float | None:
    if not values:
        return None
    return math.fsum(v * s for v, s in zip(values, _shares(weights or [1.0] * len(values)), strict=True))


def metric_delta(
    name: str, pairs: list[_Pair], heads: list[BaselineTest], metric: str | None, policy: GatePolicy, has_baseline: bool,
    weights: list[tuple[float, float]] | None = None,
) -> MetricDelta:
    """Mean over matched tests (with a baseline), else over every scored head test; `weights` (base,
    head) per pair weigh a named metric's tests by the weight of their assertions."""
    if not has_baseline:
        values, head_weights = _head_values(heads, metric)
        return MetricDelta(name=name, head=_mean(values, head_weights), tests=len(values))
    if not pairs:
        return MetricDelta(name=name)
    n = len(pairs)
    base_shares = _shares([w[0] for w in weights] if weights else [1.0] * n)
    head_shares = _shares([w[1] for w in weights] if weights else [1.0] * n)
    base_mean = math.fsum(p[0] * share for p, share in zip(pairs, base_shares, strict=True))
    head_mean = math.fsum(p[3] * share for p, share in zip(pairs, head_shares, strict=True))
    variance = math.fsum(
        (b * _stderr(p[1], p[2], p[4], p[5])) ** 2 + (h * _stderr(p[4], p[5], p[1], p[2])) ** 2
        for p, b, h in zip(pairs, base_shares, head_shares, strict=True)
    )
    noise = NOISE_K * math.sqrt(variance)
    result = MetricDelta(name=name, base=base_mean, head=head_mean, tests=n, noise=noise)
    drop = base_mean - head_mean
    if drop > policy.max_metric_drop + EPS:
        result.regressed = drop > noise + EPS
        result.inconclusive = not result.regressed
    return result


def named_metrics(pairs: list[tuple[BaselineTest, BaselineTest]], head: dict[str, BaselineTest], policy: GatePolicy, has_baseline: bool) -> list[MetricDelta]:
    names = sorted({m for t in head.values() for m in t.named_scores} | {m for b, _ in pairs for m in b.named_scores})
    out = []
    for name in names:
        both = [(b, h) for b, h in pairs if name in b.named_scores and name in h.named_scores]
        matched = [(b.named_scores[name], b.named_spreads.get(name, 0.0), b.scored, h.named_scores[name], h.named_spreads.get(name, 0.0), h.scored) for b, h in both]
        # A baseline written before weights were recorded borrows the head's, so both sides weigh alike.
        weights = [(b.named_weights.get(name, h.named_weights.get(name, 1.0)), h.named_weights.get(name, 1.0)) for b, h in both]
        result = metric_delta(name, matched, list(head.values()), name, policy, has_baseline, weights)
        if has_baseline and not matched:  # a metric on one side only: show it, judge nothing
            result.head = _mean(*_head_values(list(head.values()), name))
            base_side = [b for b, _ in pairs if name in b.named_scores]
            result.base = _mean([b.named_scores[name] for b in base_side], [b.named_weights.get(name, 1.0) for b in base_side])
        out.append(result)
    return out
