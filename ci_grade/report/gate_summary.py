"""The gate's verdict for the terminal: one verdict line, then what changed against the baseline."""

from __future__ import annotations

from ci_grade import redact
from ci_grade.gate.models import CaseDelta, Comparison, MetricDelta
from ci_grade.report.wording import plural
from ci_grade.safe_text import terminal

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
        if case.confirmation is not None:
            note += f"{'; ' if note else ''}{case.confirmation.verdict}: passed {case.confirmation.passes} of {case.confirmation.runs} reruns"
        if case.change == "renamed":
            note = f"was {_one_line(case.base_name or case.base_id or '', 80)}"
        lines.append(f"    - {_test(case)}" + (f": {note}" if note else ""))
    if len(cases) > _MAX_LISTED:
        lines.append(f"    ... and {plural(len(cases) - _MAX_LISTED, 'more test')} (see the Markdown report)")


def _judgement(m: MetricDelta, confidence: float, share: bool = False) -> str:
    """The measure's evidence in words: exact, or the test, p, interval and MDE; a `share`'s
    interval (the pass rate) is kept within ±1, as the report shows it."""
    if m.method is None:
        return "not judged (too few tests to test)"
    if m.method == "exact":
        evidence = "reproducible, exact"
    else:
        p = m.p_adjusted if m.p_adjusted is not None else m.p_value
        low, high = (max(-1.0, m.ci_low), min(1.0, m.ci_high)) if share and m.ci_low is not None and m.ci_high is not None else (m.ci_low, m.ci_high)
        interval = f", {confidence:.0%} CI [{low:+.2f}, {high:+.2f}]" if low is not None and high is not None else ""
        evidence = f"{m.method}, p={p if p is not None else 1.0:.2g}{interval}"
    if m.regressed:
        return f"regressed ({evidence})"
    if m.inconclusive:
        return f"inconclusive ({evidence}; could detect drops of {m.mde:.2f} or more)" if m.mde else f"inconclusive ({evidence})"
    return f"no significant change ({evidence})" if m.method != "exact" else f"{'dropped within the margin' if (m.delta or 0) < 0 else 'no drop'} ({evidence})"


def _label(m: MetricDelta) -> str:
    return f"{'derived metric' if m.derived else 'metric'} {_one_line(m.name, 60)}"


def terminal_summary(comparison: Comparison) -> str:
    c = comparison
    gate = "gate failed" if c.gate_failed else "gate passed"
    lines = [f"verdict: {c.verdict.upper()} ({gate}): {c.reason}"]
    if c.base_measured:
        lines.append(f"  baseline measured in this job at {c.base_measured}")
    if c.has_baseline:
        for measure in c.measures:
            if measure.delta is not None and (measure is c.mean_score or measure.derived or measure.regressed or measure.inconclusive or measure.significant):
                label = "pass rate" if measure is c.mean_score and c.same_measure else measure.name if measure in (c.mean_score, c.pass_rate) else _label(measure)
                lines.append(f"  {label} {measure.base:.2f} -> {measure.head:.2f} ({measure.delta:+.2f}) over {measure.tests} tests in both runs: {_judgement(measure, c.policy.confidence, label == 'pass rate')}")
        _listing(lines, "regressions and new failures", c.regressions)
        _listing(lines, "newly failing, not significant (sampled)", c.flaky_flips)
        _listing(lines, "inconclusive drops", [t for t in c.inconclusive if not t.new_failure])
        _listing(lines, "fixes", c.fixes, detail=False)
        _listing(lines, "renamed", c.changed("renamed"))
        _listing(lines, "added", c.changed("added"), detail=False)
        _listing(lines, "removed", c.changed("removed"), detail=False)
    else:
        if c.baseline_missing:
            lines.append(f"  baseline not found: {c.baseline_missing}; the gate judged thresholds only")
        elif not c.baseline_mismatch:  # a mismatched baseline is named in the verdict's reason
            lines.append("  no baseline: the gate judged thresholds only")
        lines += [f"  {_label(m)} {m.head:.2f} over {m.tests} tests" for m in c.metrics if m.derived and m.head is not None]
    lines += [f"warning: {w}" for w in c.warnings]
    return terminal(redact.text("\n".join(lines)))
