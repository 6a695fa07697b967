"""The base branch's trend for the report: its last runs (the baseline's `history`) and this run.

A Mermaid `xychart-beta` chart (GitHub renders it in comments and job summaries): bars for the
pass rate, a line for the mean score, both in percent, one point per run of the base branch,
oldest first, then this run's point ("this run"). Under it, a table with a row per named metric:
the base branch's range and last value, and this run's. Nothing is shown without history.
Labels are commits' short hashes (else dates), so no text from a config enters the chart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_grade.gate import baseline
from ci_grade.gate.history import RunPoint
from ci_grade.report.markdown_escape import Escaper, Md
from ci_grade.report.wording import plural
from ci_grade.results.models import EvalRun

MAX_METRICS = 20
_LABEL = re.compile(r"[^0-9A-Za-z:.-]")


def run_point(run: EvalRun) -> RunPoint:
    """This run's point, defined as the history's are (from the rows' summaries; no row is read)."""
    return baseline.run_point(run, run.stats.cost + run.stats.grading_cost)


def _label(point: RunPoint) -> str:
    text = (point.commit or "")[:7] or point.created_at[5:10] or "run"
    return _LABEL.sub("", text) or "run"


def _percent(value: float | None) -> str:
    return f"{100 * value:.1f}" if value is not None else "0"


def _value(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def trend_markdown(history: Sequence[RunPoint], head: RunPoint, escaper: Escaper) -> Md:
    """The chart and the metric table ("" without history)."""
    if not history:
        return Md("")
    points = [*history, head]
    labels = ", ".join(f'"{_label(p)}"' for p in history) + ', "this run"'
    lines = [
        f"#### Trend: the base branch's last {plural(len(history), 'run') if len(history) > 1 else 'run'}, then this one",
        "",
        "```mermaid",
        "xychart-beta",
        '  title "Pass rate (bars) and mean score (line), %"',
        f"  x-axis [{labels}]",
        '  y-axis "%" 0 --> 100',
        f"  bar [{', '.join(_percent(p.pass_rate) for p in points)}]",
        f"  line [{', '.join(_percent(p.mean_score) for p in points)}]",
        "```",
    ]
    names = sorted({name for p in points for name in p.metrics})
    if names:
        lines += ["", "| Metric | Base branch: lowest – highest | Last run | This run |", "| :-- | --: | --: | --: |"]
        for name in names[:MAX_METRICS]:
            values = [p.metrics[name] for p in history if name in p.metrics]
            spread = f"{min(values):.2f} – {max(values):.2f}" if values else "–"
            lines.append(f"| {escaper.inline(name, 60)} | {spread} | {_value(history[-1].metrics.get(name))} | {_value(head.metrics.get(name))} |")
        if len(names) > MAX_METRICS:
            lines.append(f"| … {plural(len(names) - MAX_METRICS, 'more metric')} in the baseline's history | | | |")
    return Md("\n".join(lines))
