"""The Markdown report (PR comment and job summary) from jinja2 templates under `templates/`.

Layout: a first line a reviewer acts on (the verdict, tests passed of all, regressed, fixed,
known failures, errors, the run's cost and the change of its cost per test); the title, the head
commit, the workflow run and its artifact, linked when the run is on GitHub (`links.py`); the
verdict's reason; the baseline and gate settings; the statistics (pass rate, mean score and named
metrics: base, head, delta, interval, evidence) collapsed in `<details>`; then sections:
regressions and new failures (with the grader's reasons and, when the baseline keeps it, the
output before and after as a compact diff), errors, failing tests, inconclusive drops, known
failures (collapsed), fixes, renamed, added and removed tests, each showing ten items and
collapsing the rest in `<details>`, a failing test's `file:line` linked at the head commit; the
base branch's trend (`trend.py`); cost per test and per run and each provider's latency against
the baseline (`costs.py`); then tokens, cost and duration. Plain glyphs only, no emoji. The body
always fits `max_chars` (and `max_bytes` of UTF-8 when given): the long sections are cut, lowest
priority first, with a note saying how many items are not shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ci_grade.gate.decision import cost_rise
from ci_grade.gate.models import CaseDelta, Comparison, MetricDelta, Rate
from ci_grade.providers.budget import usd
from ci_grade.report.console import format_cost, format_duration
from ci_grade.report.costs import cost_table
from ci_grade.report.links import Links
from ci_grade.report.markdown_escape import Escaper, Md
from ci_grade.report.output_diff import output_diff
from ci_grade.report.trend import run_point, trend_markdown
from ci_grade.report.wording import plural
from ci_grade.results.models import EvalRun

TEMPLATES = Path(__file__).parent / "templates"
EXPANDED = 10
MAX_METRIC_ROWS = 50
_DETAILS_OVERHEAD = 80
VERDICTS = {"passed": "✓ **Passed**", "regressed": "✗ **Regressed**", "failed": "✗ **Failed**", "cancelled": "■ **Cancelled**"}
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass
class _Section:
    title: str
    items: list[Md]
    noun: str = "test"
    """What one item is, for counts ("15 more failing tests")."""
    folded: bool = False
    """Every item in the collapsed part (e.g. known failures)."""
    keep: int = field(init=False)
    """How many items the report shows: all, unless trimmed to fit."""

    def __post_init__(self) -> None:
        self.keep = len(self.items)

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
        return Md(f"{test} · **regression**")
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


def _location(escaper: Escaper, links: Links) -> Callable[[str | None], Md]:
    def where(location: str | None) -> Md:
        text = escaper.inline(location, 120)
        url = links.source(location)
        return Md(f"[{text}]({url})") if url else text

    return where


def _diff(escaper: Escaper) -> Callable[[CaseDelta], Md]:
    return lambda case: output_diff(case.base_output or "", case.output, escaper)


def _environment(escaper: Escaper, links: Links) -> Environment:
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
        where=_location(escaper, links), diff=_diff(escaper), plural=lambda n, word, lead="": Md(plural(n, f"{lead} {word}".strip())),
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
        ("Regressions and new failures", "regressed or newly failing test", regressions, items.failing, False),
        ("Errors", "errored test", c.errors, items.errored, False),
        ("Newly failing, not significant (sampled)", "newly failing test", flaky, items.failing, False),
        ("Other failing tests" if c.has_baseline else "Failing tests", "failing test", failing, items.failing, False),
        ("Inconclusive drops", "inconclusive drop", inconclusive, items.brief, False),
        ("Known failures (failing in the baseline too)", "known failure", known, items.brief, True),
        ("Fixes", "fixed test", c.fixes, items.brief, False),
        ("Renamed tests", "renamed test", c.changed("renamed"), items.brief, False),
        ("Added tests", "added test", c.changed("added"), items.brief, False),
        ("Removed tests", "removed test", c.changed("removed"), items.brief, False),
    ]
    return [_Section(title, [_item(render(t)) for t in tests], noun, folded=folded) for title, noun, tests, render, folded in candidates if tests]


def _item(text: str) -> Md:
    """One list item: its lines without blank ones (a blank line would loosen the list)."""
    return Md("\n".join(line for line in text.splitlines() if line.strip()))


def _metric_rows(c: Comparison, escaper: Escaper) -> list[_Row]:
    """The mean score (unless it is the pass rate), then every named metric, then the derived ones."""
    rows = [] if c.same_measure else [_Row(Md("**Mean score**"), c.mean_score)]
    rows += [_Row(Md(f"{'derived metric' if m.derived else 'metric'} {escaper.inline(m.name, 60)}"), m) for m in c.metrics]
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
        plural(head.rows, "row"),
    ]
    if run.info.ci_grade_version:
        parts.append(f"ci-grade {escaper.inline(run.info.ci_grade_version, 20)}")
    return Md(" · ".join(parts))


def _headline(c: Comparison) -> Md:
    """The first line: verdict, counts and cost, e.g. "2/3 passed · 1 regressed · $0.031 (+4% per test)"."""
    rate = c.pass_rate_head
    parts = [VERDICTS[c.verdict], f"{rate.passed}/{rate.total} passed"]
    if c.has_baseline:
        counts = ((len(c.regressions), "regressed"), (len(c.fixes), "fixed"), (len(c.known_failures), "known"))
        parts += [f"{count} {word}" for count, word in counts if count]
    if c.error_rows:
        parts.append(plural(c.error_rows, "error"))
    head = c.head_totals
    if head.cost:
        rise = cost_rise(c)
        parts.append(usd(head.cost) + (f" ({rise:+.0%} per test)" if rise is not None else ""))
    return Md(" · ".join(parts))


def _provenance(c: Comparison, title: str, links: Links, escaper: Escaper) -> Md:
    """The title, the head commit, the workflow run and its artifact (linked when on GitHub)."""
    parts = [f"**{escaper.inline(title, 120)}**" + (f": {escaper.inline(c.head_info.description, 120)}" if c.head_info.description else "")]
    sha = links.sha or c.head_info.commit or ""
    if sha:
        short = escaper.inline(sha[:7], 7)
        parts.append(f"commit [{short}]({links.commit})" if links.commit else f"commit {short}")
    if links.run:
        parts.append(f"[workflow run]({links.run})")
    if links.artifacts:
        parts.append(f"[artifacts]({links.artifacts})")
    return Md(" · ".join(parts))


def render_markdown(
    run: EvalRun,
    comparison: Comparison,
    *,
    title: str = "ci-grade",
    max_chars: int = 65_536,
    marker: str | None = None,
    max_bytes: int | None = None,
    links: Links | None = None,
) -> str:
    """The report as Markdown of at most `max_chars` characters (and `max_bytes` UTF-8 bytes),
    the hidden `marker` comment included when given; `links` to the run on GitHub when known."""
    escaper = Escaper()
    links = links or Links()
    env = _environment(escaper, links)
    items = env.get_template("items.md.j2").module
    sections = _sections(comparison, items)
    rows = _metric_rows(comparison, escaper)
    tail = f"\n{Escaper.marker(marker)}\n" if marker else ""
    budget = _Budget(max_chars, max_bytes)
    context = {
        "title": title,
        "c": comparison,
        "verdict": Md(VERDICTS[comparison.verdict]),
        "headline": _headline(comparison),
        "provenance": _provenance(comparison, title, links, escaper),
        "trend": trend_markdown(comparison.history, run_point(run), escaper) if comparison.history else Md(""),
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
