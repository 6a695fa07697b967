"""Derived metrics (`derivedMetrics`) in the gate: computed as promptfoo computes them, from the
sums of the named metrics (score x weight) and `__count`, over the tests the gate measures.

A test counts once (its repeats averaged), so `__count` is the number of tests. With a baseline,
both sides use the run's definitions over the tests scored in both runs; the paired test runs on
each test's linearised contribution (the delta method: the metric's gradient, found numerically,
times the test's deviation from the mean), whose mean is the metric's change. A metric that is not
finite on either side (a division by zero) is shown and not judged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ci_grade.results.derived_metrics import derive

Sums = dict[str, float]
"""One test's named metrics as promptfoo sums them: score x weight per metric."""


@dataclass(frozen=True)
class PairedDerived:
    """One derived metric over the paired tests: both values and, when both are finite, the
    per-test differences whose mean is `head - base`."""

    name: str
    base: float
    head: float
    d: list[float] | None


def sums(named_scores: Mapping[str, float], weights: Mapping[str, float]) -> Sums:
    """A test's named metrics as promptfoo sums them (a metric's weight 1 when not recorded)."""
    return {name: value * weights.get(name, 1.0) for name, value in named_scores.items()}


def values(tests: Sequence[Sums], definitions: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each derived metric over `tests`."""
    return derive(_total(tests), len(tests), definitions)


def paired(bases: Sequence[Sums], heads: Sequence[Sums], definitions: Sequence[Mapping[str, Any]]) -> list[PairedDerived]:
    """Each derived metric on both sides of the paired tests (`bases[i]` and `heads[i]` are one test)."""
    if not bases or not definitions:
        return []
    base_values, head_values = values(bases, definitions), values(heads, definitions)
    base_parts, head_parts = _contributions(bases, definitions), _contributions(heads, definitions)
    out = []
    for name in base_values:
        base, head = base_values[name], head_values[name]
        d = None
        if math.isfinite(base) and math.isfinite(head) and name in base_parts and name in head_parts:
            d = [head - base + h - b for b, h in zip(base_parts[name], head_parts[name], strict=True)]
        out.append(PairedDerived(name, base, head, d))
    return out


def _total(tests: Sequence[Sums]) -> Sums:
    total: Sums = {}
    for test in tests:
        for name, value in test.items():
            total[name] = total.get(name, 0.0) + value
    return total


def _contributions(tests: Sequence[Sums], definitions: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per derived metric, each test's linearised contribution n * gradient . (x_i - mean x), which
    sums to zero; metrics whose gradient is not finite are left out."""
    n = len(tests)
    total = _total(tests)
    gradients: dict[str, Sums] = {}
    for metric in total:
        step = 1e-6 * max(1.0, abs(total[metric]))
        up = derive({**total, metric: total[metric] + step}, n, definitions)
        down = derive({**total, metric: total[metric] - step}, n, definitions)
        for name in up:
            gradients.setdefault(name, {})[metric] = (up[name] - down[name]) / (2 * step)
    out: dict[str, list[float]] = {}
    for name, gradient in gradients.items():
        if not all(math.isfinite(g) for g in gradient.values()):
            continue
        means = {metric: total[metric] / n for metric in total}
        out[name] = [n * math.fsum(g * (test.get(metric, 0.0) - means[metric]) for metric, g in gradient.items()) for test in tests]
    for name in derive(total, n, definitions):
        if name not in gradients:  # no named metric at all: a constant per side
            out[name] = [0.0] * n
    return out
