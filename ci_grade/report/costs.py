"""Cost and latency against the baseline, as a small Markdown table for the report.

Cost per test is the mean cost (provider and graders) of the rows graded with a reply not served
from the cache (`Totals.cost_per_test`, what `--max-cost-increase` judges); cost per run is the
whole run's. Latency is each provider's median and 95th percentile over the same rows.
"""

from __future__ import annotations

from ci_grade.gate.baseline import ProviderTotals, Totals
from ci_grade.gate.decision import cost_rise
from ci_grade.gate.models import Comparison
from ci_grade.providers.budget import usd
from ci_grade.report.markdown_escape import Escaper, Md

MAX_PROVIDERS = 10


def _money(value: float | None) -> str:
    return "–" if value is None else usd(value)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def _change(head: float | None, base: float | None) -> str:
    if head is None or base is None or base <= 0:
        return "–"
    return f"{head / base - 1:+.0%}"


def _pair(p50: float | None, p95: float | None) -> str:
    return f"{_ms(p50)} / {_ms(p95)}"


def _row(label: str, head: str, base: str | None, change: str) -> str:
    return f"| {label} | {head} |" if base is None else f"| {label} | {base} | {head} | {change} |"


def cost_table(c: Comparison, escaper: Escaper) -> Md:
    """Cost per test, cost per run and each provider's latency, against the baseline when there is
    one (empty for a run that spent nothing, as a run of recorded outputs)."""
    head = c.head_totals
    base: Totals | None = c.base_totals if c.has_baseline and c.base_totals and c.base_totals.rows else None
    if not head.cost and not (base and base.cost):
        return Md("")
    limit = c.policy.max_cost_increase
    judged = f" (max +{limit:.0%})" if limit is not None and cost_rise(c) is not None else ""
    lines = ["| Cost and latency | Base | Head | Δ |", "| :-- | --: | --: | --: |"] if base else ["| Cost and latency | This run |", "| :-- | --: |"]
    lines.append(_row(f"Cost per test{judged}", _money(head.cost_per_test), _money(base.cost_per_test) if base else None, _change(head.cost_per_test, base.cost_per_test if base else None)))
    lines.append(_row("Cost per run", _money(head.cost), _money(base.cost) if base else None, _change(head.cost, base.cost if base else None)))
    names = list(dict.fromkeys([*head.providers, *(base.providers if base else {})]))
    empty = ProviderTotals()
    for name in names[:MAX_PROVIDERS]:
        now, before = head.providers.get(name, empty), base.providers.get(name, empty) if base else None
        change = f"{_change(now.latency_p50_ms, before.latency_p50_ms)} / {_change(now.latency_p95_ms, before.latency_p95_ms)}" if before else ""
        lines.append(_row(f"{escaper.inline(name, 60)} latency p50 / p95", _pair(now.latency_p50_ms, now.latency_p95_ms), _pair(before.latency_p50_ms, before.latency_p95_ms) if before else None, change))
    if len(names) > MAX_PROVIDERS:
        lines.append(f"| … {len(names) - MAX_PROVIDERS} more providers in the results file |" + (" | | |" if base else " |"))
    return Md("\n".join(lines))
