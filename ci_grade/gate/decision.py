"""The gate's verdict: what failed, what regressed, and whether that fails the check under the policy."""

from __future__ import annotations

from ci_grade.gate.models import Comparison
from ci_grade.gate.noise import EPS
from ci_grade.results.models import RunInfo


def provenance_warnings(head: RunInfo, base: RunInfo) -> list[str]:
    warnings = []
    if head.graders and base.graders and sorted(head.graders) != sorted(base.graders):
        warnings.append(f"graders differ from the baseline's ({', '.join(base.graders)} → {', '.join(head.graders)}): score changes may come from the grader")
    changed = sorted(name for name, digest in head.grader_templates.items() if base.grader_templates.get(name) not in (None, digest))
    if changed:
        warnings.append(f"grader templates changed since the baseline: {', '.join(changed)}")
    return warnings


def _name(name: str, limit: int = 40) -> str:
    name = " ".join(name.split())
    return repr(name if len(name) <= limit else name[: limit - 1] + "…")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def decide(c: Comparison) -> None:
    """Fill verdict, reason, problems and gate_failed from the comparison and the policy."""
    policy = c.policy
    failures: list[str] = []
    regressions: list[str] = []
    rate = c.pass_rate_head
    failing = len(c.failures)
    if rate.total == 0:
        failures.append("no tests ran")
    if policy.min_pass_rate is None:
        if failing:
            failures.append(f"{_plural(failing, 'test')} failed")
    elif rate.total and rate.value < policy.min_pass_rate - EPS:
        failures.append(f"pass rate {rate.value:.1%} below the minimum {policy.min_pass_rate:.1%}")
    allowed = policy.max_errors or 0
    if c.error_rows > allowed:
        failures.append(f"{_plural(c.error_rows, 'error')} (max {allowed})")
    regressed = [t for t in c.tests if t.regressed]
    if regressed:
        regressions.append(f"{_plural(len(regressed), 'test')} regressed beyond tolerance (max drop {policy.max_score_drop:.2f})")
    newly = [t for t in c.new_failures if not t.regressed]
    if newly:
        regressions.append(f"{_plural(len(newly), 'test')} newly failing")
    dropped = [m for m in [c.mean_score, *c.metrics] if m.regressed and m.delta is not None]
    if len(dropped) <= 2:
        for metric in dropped:
            label = "mean score" if metric is c.mean_score else f"metric {_name(metric.name)}"
            regressions.append(f"{label} dropped {metric.base:.2f} → {metric.head:.2f} ({metric.delta:+.2f}, max drop {policy.max_metric_drop:.2f})")
    else:
        names = ", ".join("mean score" if m is c.mean_score else _name(m.name) for m in dropped[:3])
        more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
        regressions.append(f"{len(dropped)} metrics dropped beyond tolerance (max drop {policy.max_metric_drop:.2f}): {names}{more}")
    c.problems = failures + regressions
    c.verdict = "failed" if failures else "regressed" if regressions else "passed"
    gating = {"never": [], "failures": failures, "regressions": failures + regressions}[policy.fail_on]
    c.gate_failed = bool(gating)
    if c.problems:
        c.reason = "; ".join(c.problems)
        if not c.gate_failed:
            c.reason += f" (fail-on {policy.fail_on}: reported, not gating)"
        elif len(gating) < len(c.problems):
            c.reason += f" (fail-on {policy.fail_on}: regressions reported, not gating)"
        return
    c.reason = _passed_reason(c, failing)


def _passed_reason(c: Comparison, failing: int) -> str:
    rate = c.pass_rate_head
    head = f"all {_plural(rate.total, 'test')} passed" if rate.passed == rate.total else f"{rate.passed} of {_plural(rate.total, 'test')} passed"
    if failing and c.policy.min_pass_rate is not None:
        head += f" (pass rate {rate.value:.1%}, minimum {c.policy.min_pass_rate:.1%})"
    parts = [head]
    if c.error_rows:
        parts.append(f"{_plural(c.error_rows, 'error')} tolerated (max {c.policy.max_errors})")
    parts.append("no regressions against the baseline" if c.has_baseline else "no baseline, thresholds only")
    if c.inconclusive:
        parts.append(f"{_plural(len(c.inconclusive), 'drop')} within noise (inconclusive)")
    return "; ".join(parts)
