"""One report for several configs (a monorepo's merged results): one verdict, a section each.

With one config the report is exactly `render_markdown`'s. With several, a table of every
config's verdict, pass rate and mean score comes first, then each config's own report (its
baseline, failures, regressions), each given an equal share of the size budget. The gate fails
when any config's gate fails; the verdict is the worst of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_grade.gate.models import Comparison
from ci_grade.report.links import Links
from ci_grade.report.markdown import VERDICTS, render_markdown
from ci_grade.report.markdown_escape import Escaper
from ci_grade.results.models import EvalRun

_ORDER = ("passed", "regressed", "failed", "cancelled")


@dataclass
class Section:
    """One config's results and their comparison with its baseline."""

    name: str
    run: EvalRun
    comparison: Comparison


def gate_failed(sections: list[Section]) -> bool:
    return any(s.comparison.gate_failed for s in sections)


def verdict(sections: list[Section]) -> str:
    """The worst verdict: cancelled, else failed, else regressed, else passed."""
    return max((s.comparison.verdict for s in sections), key=_ORDER.index, default="failed")


def mean_score(c: Comparison) -> float | None:
    """The mean score of the tests in the run (removed ones excluded)."""
    scores = c.head_scores
    return sum(scores) / len(scores) if scores else None


def render_report(sections: list[Section], *, title: str, max_chars: int = 65_536, marker: str | None = None, max_bytes: int | None = None, links: Links | None = None) -> str:
    """The report of every section within `max_chars` (and `max_bytes`), `marker` at the end."""
    if len(sections) == 1:
        only = sections[0]
        return render_markdown(only.run, only.comparison, title=title, max_chars=max_chars, marker=marker, max_bytes=max_bytes, links=links)
    escaper = Escaper()
    head = _summary(sections, title, escaper)
    tail = f"\n{Escaper.marker(marker)}\n" if marker else ""
    count = len(sections)
    chars = (max_chars - len(head) - len(tail) - 2 * count) // count
    room = (max_bytes - len(head.encode()) - len(tail.encode()) - 2 * count) // count if max_bytes is not None else None
    parts = [render_markdown(s.run, s.comparison, title=s.name, max_chars=chars, max_bytes=room, links=links) for s in sections]
    return head + "".join(f"\n\n{part.rstrip()}" for part in parts) + "\n" + tail


def _summary(sections: list[Section], title: str, escaper: Escaper) -> str:
    failing = [s for s in sections if s.comparison.verdict != "passed"]
    if failing:
        reason = "; ".join(f"{escaper.inline(s.name, 120)}: {escaper.inline(s.comparison.reason, 300)}" for s in failing)
    else:
        reason = f"all {len(sections)} configs passed"
    lines = [
        f"## {escaper.inline(title, 120)}",
        "",
        f"{VERDICTS[verdict(sections)]}: {reason}",
        "",
        "| Config | Verdict | Pass rate | Mean score | Δ score |",
        "| :-- | :-- | --: | --: | --: |",
    ]
    for s in sections:
        c = s.comparison
        score, delta = mean_score(c), c.mean_score.delta
        lines.append(
            f"| {escaper.inline(s.name, 120)} | {VERDICTS[c.verdict]} "
            f"| {c.pass_rate_head.value:.1%} ({c.pass_rate_head.passed}/{c.pass_rate_head.total}) "
            f"| {'–' if score is None else f'{score:.2f}'} | {'–' if delta is None else f'{delta:+.2f}'} |"
        )
    return "\n".join(lines)
