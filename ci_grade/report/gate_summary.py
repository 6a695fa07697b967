"""The gate's verdict for the terminal: one verdict line, then what changed against the baseline."""

from __future__ import annotations

from ci_grade import redact
from ci_grade.gate.models import CaseDelta, Comparison

_MAX_LISTED = 8


def _one_line(text: str, limit: int = 120) -> str:
    """`text` masked, on one line, then cut to `limit` characters."""
    text = " ".join(redact.text(str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _test(case: CaseDelta) -> str:
    return f"[{_one_line(case.provider, 40)} | {_one_line(case.prompt_label, 48)}] {_one_line(case.name, 80)}"


def _listing(lines: list[str], heading: str, cases: list[CaseDelta], detail: bool = True) -> None:
    if not cases:
        return
    lines.append(f"  {heading} ({len(cases)}):")
    for case in cases[:_MAX_LISTED]:
        note = case.note() if detail else ""
        if case.inconclusive:
            note = f"score {case.base_score:.2f} -> {case.head_score:.2f}, within noise (±{case.noise:.2f})"
        if case.change == "renamed":
            note = f"was {_one_line(case.base_name or case.base_id or '', 80)}"
        lines.append(f"    - {_test(case)}" + (f": {note}" if note else ""))
    if len(cases) > _MAX_LISTED:
        lines.append(f"    ... and {len(cases) - _MAX_LISTED} more (see the Markdown report)")


def terminal_summary(comparison: Comparison) -> str:
    c = comparison
    gate = "gate failed" if c.gate_failed else "gate passed"
    lines = [f"verdict: {c.verdict.upper()} ({gate}): {c.reason}"]
    if c.has_baseline:
        mean = c.mean_score
        if mean.delta is not None:
            lines.append(f"  mean score {mean.base:.2f} -> {mean.head:.2f} ({mean.delta:+.2f}) over {mean.tests} tests in both runs")
        for metric in c.metrics:
            if metric.delta is not None and (metric.regressed or metric.inconclusive):
                state = "regressed" if metric.regressed else "within noise"
                lines.append(f"  metric {metric.name}: {metric.base:.2f} -> {metric.head:.2f} ({metric.delta:+.2f}, {state})")
        _listing(lines, "regressions and new failures", c.regressions)
        _listing(lines, "inconclusive drops", c.inconclusive)
        _listing(lines, "fixes", c.fixes, detail=False)
        _listing(lines, "renamed", c.changed("renamed"))
        _listing(lines, "added", c.changed("added"), detail=False)
        _listing(lines, "removed", c.changed("removed"), detail=False)
    else:
        lines.append("  no baseline: the gate judged thresholds only")
    lines += [f"warning: {w}" for w in c.warnings]
    return redact.text("\n".join(lines))
