"""The Markdown report (PR comment and job summary) from jinja2 templates under `templates/`.

Layout: the verdict line, the baseline and gate settings, a table of pass rate, mean score and
named metrics (base, head, delta), then sections: regressions and new failures (with the
grader's reasons), errors, failing tests, inconclusive drops, fixes, renamed, added and removed
tests, each showing ten items and collapsing the rest in `<details>`; then cost per test and per
run and each provider's latency against the baseline (`costs.py`); then tokens, cost and duration. The body always fits `max_chars` (and `max_bytes` of UTF-8 when given): the long
sections are cut, lowest priority first, with a note saying how many items are not shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ci_grade.gate.models import CaseDelta, Comparison, MetricDelta, Rate
from ci_grade.report.console import format_cost, format_duration
from ci_grade.report.costs import cost_table
from ci_grade.report.markdown_escape import Escaper, Md
from ci_grade.results.models import EvalRun

TEMPLATES = Path(__file__).parent / "templates"
EXPANDED = 10
MAX_METRIC_ROWS = 50
_DETAILS_OVERHEAD = 80
VERDICTS = {"passed": "✅ **Passed**", "regressed": "📉 **Regressed**", "failed": "❌ **Failed**", "cancelled": "⏹️ **Cancelled**"}
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass
class _Section:
    title: str
    items: list[Md]
    keep: int = 0
    folded: bool = False
    """Every item in the collapsed part (e.g. known failures)."""

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def expanded(self) -> int:
        return 0 if self.folded else EXPANDED

    @property
    def shown(self) -> list[Md]:
        return self.items[: min(self.keep, self.expanded)]

    @property
    def collapsed(self) -> list[Md]:
        return self.items[self.expanded: self.keep]

    @property
    def omitted(self) -> int:
        return len(self.items) - self.keep


@dataclass
class _Row:
    label: Md
    measure: MetricDelta


@dataclass
class _Budget:
    max_chars: int
    max_bytes: int | None = None
    limit: int = field(init=False)

    def __post_init__(self) -> None:
        self.limit = min(self.max_chars, self.max_bytes) if self.max_bytes is not None else self.max_chars

    def size(self, text: str) -> int:
        return len(text.encode("utf-8")) if self.max_bytes is not None else len(text)


def _number(value: float | None, fmt: str = "{:.2f}") -> Md:
    return Md("–" if value is None else fmt.format(value))


def _delta(value: float | None) -> Md:
    if value is None:
        return Md("–")
    if abs(value) < 0.005:
        return Md("＝ 0.00")
    return Md(f"▲ +{value:.2f}" if value > 0 else f"▼ −{-value:.2f}")


def _delta_pct(value: float | None) -> Md:
    if value is None:
        return Md("–")
    points = value * 100
    if abs(points) < 0.05:
        return Md("＝ 0 pts")
    return Md(f"▲ +{points:.1f} pts" if points > 0 else f"▼ −{-points:.1f} pts")


def _rate(rate: Rate | None) -> Md:
    return Md("–") if rate is None else Md(f"{rate.value:.1%} ({rate.passed}/{rate.total})")


def _interval(value: tuple[float, float] | None) -> Md:
    return Md("–") if value is None else Md(f"[{value[0]:.2f}, {value[1]:.2f}]")


def _ci(m: MetricDelta) -> Md:
    if m.ci_low is None or m.ci_high is None or m.method == "exact":
        return Md("–")
    return Md(f"[{m.ci_low:+.2f}, {m.ci_high:+.2f}]")


def _ci_pct(m: MetricDelta) -> Md:
    """The interval of a pass-rate change, in points as its delta."""
    if m.ci_low is None or m.ci_high is None or m.method == "exact":
        return Md("–")
    low, high = max(-1.0, m.ci_low), min(1.0, m.ci_high)  # a share moves by 100 points at most
    return Md(f"[{low * 100:+.1f}, {high * 100:+.1f}] pts".replace("-", "−"))


def _share(value: float | None) -> Md:
    return Md("–" if value is None else f"{value:.1%}")


def _evidence(m: MetricDelta, points: bool = False) -> Md:
    """How the measure's change was judged, and the judgement (the MDE in points for a pass rate)."""
    if m.method is None or m.delta is None:
        return Md("–")
    if m.same_as is not None:
        return Md(f"same values as the {m.same_as}: tested once, with it")
    if m.method == "exact":
        test = "reproducible: exact"
    else:
        p = m.p_value if m.p_value is not None else 1.0
        test = f"McNemar p={p:.2g} ({m.discordant[0]}↓ {m.discordant[1]}↑)" if m.method == "McNemar mid-p" and m.discordant else f"paired t p={p:.2g}"
        if m.clusters:
            test += f", {m.clusters} clusters"
        if m.p_adjusted is not None and m.p_adjusted != m.p_value:
            test += f" (Holm {m.p_adjusted:.2g})"
    mde = "" if not m.mde else f"MDE {m.mde * 100:.1f} pts" if points else f"MDE {m.mde:.2f}"
    if m.regressed:
        return Md(f"{test} · 🔻 **regression**")
    if m.inconclusive:
        needed = f", ~{m.tests_needed} tests to settle" if m.tests_needed else ""
        return Md(f"{test} · inconclusive ({mde}{needed})" if mde else f"{test} · inconclusive")
    if m.method == "exact":
        return Md(f"{test} · " + ("dropped within the margin" if m.delta < 0 else "no drop"))
    if m.significant and m.delta < 0:
        return Md(f"{test} · significant, within the margin")
    return Md(f"{test} · no significant change" + (f" ({mde})" if mde else ""))


def _p(value: float) -> Md:
    return Md(f"p={value:.2g}")


def _spread(case: CaseDelta, side: str) -> Md:
    spread = case.base_spread if side == "base" else case.head_spread
    repeats = case.base_repeats if side == "base" else case.head_repeats
    return Md(f" ±{spread:.2f} (n={repeats})" if repeats > 1 else "")


def _environment(escaper: Escaper) -> Environment:
    """Templates whose every `{{ }}` is escaped by `escaper` unless it is our own Markdown."""
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        finalize=lambda value: value if hasattr(value, "__html__") else escaper.inline(value),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
    )
    env.filters.update(
        text=lambda value, limit=300: escaper.inline(value, limit), score=_number, pct=lambda v: _number(v, "{:.0%}"),
        delta=_delta, delta_pct=_delta_pct, rate=_rate, spread=_spread, interval=_interval, ci=_ci, ci_pct=_ci_pct, share=_share,
        evidence=_evidence, p=_p,
    )
    return env


def _sections(c: Comparison, items: Any) -> list[_Section]:
    """Sections in priority order (the first ones keep their items when space runs out)."""
    regressions = c.regressions
    flaky = c.flaky_flips
    known = c.known_failures if c.has_baseline else []
    listed = {t.test_id for t in [*regressions, *flaky, *known]}
    failing = [t for t in c.failures if t.test_id not in listed]
    inconclusive = [t for t in c.inconclusive if not t.new_failure]
    candidates = [
        ("Regressions and new failures", regressions, items.failing, False),
        ("Errors", c.errors, items.errored, False),
        ("Newly failing, not significant (sampled)", flaky, items.failing, False),
        ("Other failing tests" if c.has_baseline else "Failing tests", failing, items.failing, False),
        ("Inconclusive drops", inconclusive, items.brief, False),
        ("Known failures (failing in the baseline too)", known, items.brief, True),
        ("Fixes", c.fixes, items.brief, False),
        ("Renamed tests", c.changed("renamed"), items.brief, False),
        ("Added tests", c.changed("added"), items.brief, False),
        ("Removed tests", c.changed("removed"), items.brief, False),
    ]
    return [_Section(title, [_item(render(t)) for t in tests], folded=folded) for title, tests, render, folded in candidates if tests]


def _item(text: str) -> Md:
    """One list item: its lines without blank ones (a blank line would loosen the list)."""
    return Md("\n".join(line for line in text.splitlines() if line.strip()))


def _metric_rows(c: Comparison, escaper: Escaper) -> list[_Row]:
    """The mean score (unless it is the pass rate), then every named metric."""
    rows = [] if c.same_measure else [_Row(Md("**Mean score**"), c.mean_score)]
    rows += [_Row(Md(f"metric {escaper.inline(m.name, 60)}"), m) for m in c.metrics]
    return rows


def c_rate(c: Comparison) -> MetricDelta:
    """The paired pass-rate measure (the mean score's when they are one measure)."""
    return c.mean_score if c.same_measure else c.pass_rate


def _totals(run: EvalRun, c: Comparison, escaper: Escaper) -> Md:
    head, base = c.head_totals, c.base_totals
    tokens = head.tokens + head.grading_tokens

    def change(now: float, before: float | None, fmt: Callable[[float], str]) -> str:
        if before is None or not c.has_baseline or fmt(now) == fmt(before):
            return ""
        return f" ({'▲' if now > before else '▼'} {fmt(abs(now - before))})"

    base_tokens = base.tokens + base.grading_tokens if base and base.rows else None
    parts = [
        f"Tokens {tokens:,} (provider {head.tokens:,}, grading {head.grading_tokens:,}){change(tokens, base_tokens, lambda v: f'{int(v):,}')}",
        f"cost {format_cost(head.cost)}{change(head.cost, base.cost if base and base.rows else None, format_cost)}",
        f"duration {format_duration(head.duration_ms)}{change(head.duration_ms, base.duration_ms if base and base.rows and base.duration_ms else None, format_duration)}",
        f"{head.rows} rows",
    ]
    if run.info.ci_grade_version:
        parts.append(f"ci-grade {escaper.inline(run.info.ci_grade_version, 20)}")
    return Md(" · ".join(parts))


def render_markdown(
    run: EvalRun,
    comparison: Comparison,
    *,
    title: str = "ci-grade",
    max_chars: int = 65_536,
    marker: str | None = None,
    max_bytes: int | None = None,
) -> str:
    """The report as Markdown of at most `max_chars` characters (and `max_bytes` UTF-8 bytes),
    the hidden `marker` comment included when given."""
    escaper = Escaper()
    env = _environment(escaper)
    items = env.get_template("items.md.j2").module
    sections = _sections(comparison, items)
    rows = _metric_rows(comparison, escaper)
    tail = f"\n{Escaper.marker(marker)}\n" if marker else ""
    budget = _Budget(max_chars, max_bytes)
    context = {
        "title": title,
        "c": comparison,
        "verdict": Md(VERDICTS[comparison.verdict]),
        "base_commit": (comparison.base_info.commit or "")[:12] if comparison.base_info else "",
        "metrics": rows[:MAX_METRIC_ROWS],
        "rate": c_rate(comparison),
        "hidden_metrics": max(0, len(rows) - MAX_METRIC_ROWS),
        "totals": _totals(run, comparison, escaper),
        "costs": cost_table(comparison, escaper),
    }
    template = env.get_template("report.md.j2")

    def render() -> str:
        text = template.render(sections=sections, **context)
        return _BLANK_RUNS.sub("\n\n", text).strip("\n") + "\n" + tail

    for section in sections:
        section.keep = section.count
    text = render()
    if budget.size(text) <= budget.limit:
        return text
    return _fit(sections, render, budget, comparison, escaper, tail)


def _fit(sections: list[_Section], render: Callable[[], str], budget: _Budget, c: Comparison, escaper: Escaper, tail: str) -> str:
    """Keep items in priority order while they fit; then trim from the end until the body fits."""
    for section in sections:
        section.keep = 0
    used = budget.size(render())
    if used > budget.limit:
        return _minimal(c, escaper, budget, tail)
    full = False
    for section in sections:
        for index, item in enumerate(section.items):
            cost = budget.size(item) + 1 + (_DETAILS_OVERHEAD if index == section.expanded else 0)
            if full or used + cost > budget.limit:
                full = True
                break
            used += cost
            section.keep += 1
    text = render()
    while budget.size(text) > budget.limit:
        last = next((s for s in reversed(sections) if s.keep), None)
        if last is None:
            return _minimal(c, escaper, budget, tail)
        last.keep -= 1
        text = render()
    return text


def _minimal(c: Comparison, escaper: Escaper, budget: _Budget, tail: str) -> str:
    """The verdict alone, when not even the section headings fit."""
    note = "\n\n_The full report does not fit here; see the job summary or the results file._\n"
    head = f"{VERDICTS[c.verdict]}: "
    room = budget.limit - budget.size(head + note + tail)
    limit = 800
    reason = str(escaper.inline(c.reason, limit))
    while budget.size(reason) > room and limit > 1:
        limit = max(1, min(limit - 1, limit - (budget.size(reason) - room)))
        reason = str(escaper.inline(c.reason, limit))
    if budget.size(reason) <= room:
        return head + reason + note + tail
    text = VERDICTS[c.verdict]
    while text and budget.size(text) > budget.limit:
        text = text[:-1]
    return text
