"""The gate's verdict: what failed, what regressed, and whether that fails the check under the policy."""

from __future__ import annotations

from ci_grade.gate.models import Comparison
from ci_grade.providers.budget import usd
from ci_grade.results.models import RunInfo

EPS = 1e-9


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


def cost_rise(c: Comparison) -> float | None:
    """The relative change of the cost per test against the baseline (0.25: 25% more), if both have one."""
    head = c.head_totals.cost_per_test
    base = c.base_totals.cost_per_test if c.base_totals is not None and c.has_baseline else None
    if head is None or base is None or base <= 0:
        return None
    return head / base - 1


def decide(c: Comparison) -> None:
    """Fill verdict, reason, problems and gate_failed from the comparison and the policy.

    Failures are absolute: no tests, too many errors, a pass rate under `min_pass_rate`, and failing
    tests when there is no baseline (or under `fail_on failures`, or tests the baseline does not
    have). Regressions are relative to the baseline: per-test regressions and significant drops of a
    suite-level measure beyond the practical margin. Tests failing in both runs are known failures.
    """
    policy = c.policy
    failures: list[str] = []
    regressions: list[str] = []
    rate = c.pass_rate_head
    strict = not c.has_baseline or policy.fail_on == "failures"
    failing = [t for t in c.failures if strict or t.change == "added" or t.base_status in (None, "error")]
    if rate.total == 0:
        failures.append("no tests ran")
    if policy.min_pass_rate is None:
        if failing:
            failures.append(f"{_plural(len(failing), 'test')} failed")
    elif rate.total and rate.value < policy.min_pass_rate - EPS:
        failures.append(f"pass rate {rate.value:.1%} below the minimum {policy.min_pass_rate:.1%}")
    not_run = c.head_totals.not_run
    if not_run:
        failures.append(f"the budget (--max-cost) was reached: {_plural(not_run, 'row')} not run")
    allowed = policy.max_errors or 0
    errors = max(0, c.error_rows - not_run)
    if errors > allowed:
        failures.append(f"{_plural(errors, 'error')} (max {allowed})")
    rise = cost_rise(c)
    if rise is not None and policy.max_cost_increase is not None and rise > policy.max_cost_increase + EPS:
        head, base = c.head_totals.cost_per_test, c.base_totals.cost_per_test if c.base_totals else None
        failures.append(f"cost per test rose {rise:+.0%} ({usd(base or 0.0)} → {usd(head or 0.0)}, max +{policy.max_cost_increase:.0%})")
    dropped = [t for t in c.tests if t.regressed]
    if dropped:
        regressions.append(f"{_plural(len(dropped), 'test')} regressed beyond tolerance (max drop {policy.max_score_drop:.2f})")
    newly = [t for t in c.regressions if t.new_failure and not t.regressed]
    if newly:
        regressions.append(f"{_plural(len(newly), 'test')} newly failing")
    measures = [m for m in c.measures if m.regressed and m.delta is not None]
    if len(measures) <= 2:
        for m in measures:
            label = f"metric {_name(m.name)}" if m in c.metrics else c.label(m)
            evidence = "" if m.method == "exact" else f", p={m.p_adjusted if m.p_adjusted is not None else m.p_value:.2g}"
            repeats = [f"metric {_name(r.name)}" for r in c.repeats(m) if r is not c.pass_rate]
            same = f"; the same values as {', '.join(repeats)}" if repeats else ""
            regressions.append(f"{label} dropped {m.base:.2f} → {m.head:.2f} ({m.delta:+.2f}, max drop {policy.max_metric_drop:.2f}{evidence}{same})")
    else:
        names = ", ".join(m.name if m is c.mean_score or m is c.pass_rate else _name(m.name) for m in measures[:3])
        more = f" and {len(measures) - 3} more" if len(measures) > 3 else ""
        kind = "metrics" if all(m in c.metrics for m in measures) else "measures"
        regressions.append(f"{len(measures)} {kind} dropped beyond tolerance (max drop {policy.max_metric_drop:.2f}): {names}{more}")
    c.problems = failures + regressions
    c.verdict = "failed" if failures else "regressed" if regressions else "passed"
    gating = {"never": [], "failures": failures, "regressions": failures + regressions}[policy.fail_on]
    c.gate_failed = bool(gating)
    if c.problems:
        c.reason = "; ".join([*c.problems, *([c.baseline_mismatch] if c.baseline_mismatch else [])])
        if not c.gate_failed:
            c.reason += f" (fail-on {policy.fail_on}: reported, not gating)"
        elif len(gating) < len(c.problems):
            c.reason += f" (fail-on {policy.fail_on}: regressions reported, not gating)"
        return
    c.reason = _passed_reason(c, len(c.failures))


def cancel(c: Comparison, stopped_by: str) -> None:
    """A run stopped by a signal (`stopped_by`: "SIGTERM") says so: verdict "cancelled", gate
    failed, and what its partial results showed after the cause."""
    c.problems = [f"cancelled: stopped by {stopped_by} before the run finished", *c.problems]
    c.verdict = "cancelled"
    c.gate_failed = True
    c.reason = f"stopped by {stopped_by} before the run finished; partial results: {c.reason}"


def _passed_reason(c: Comparison, failing: int) -> str:
    rate = c.pass_rate_head
    head = f"all {_plural(rate.total, 'test')} passed" if rate.passed == rate.total else f"{rate.passed} of {_plural(rate.total, 'test')} passed"
    if failing and c.policy.min_pass_rate is not None:
        head += f" (pass rate {rate.value:.1%}, minimum {c.policy.min_pass_rate:.1%})"
    parts = [head]
    if c.error_rows - c.head_totals.not_run > 0:
        parts.append(f"{_plural(c.error_rows - c.head_totals.not_run, 'error')} tolerated (max {c.policy.max_errors})")
    if c.baseline_mismatch:
        parts.append(c.baseline_mismatch)
    elif not c.has_baseline:
        parts.append("no baseline, thresholds only")
    elif c.mean_score.method in (None, "exact"):
        parts.append("no regressions against the baseline")
    else:
        parts.append("no significant change against the baseline")
    if c.flaky_flips:
        parts.append(f"{_plural(len(c.flaky_flips), 'sampled test')} newly failing, not significant")
    inconclusive = [m for m in c.measures if m.inconclusive]
    if inconclusive:
        parts.append(f"{_plural(len(inconclusive), 'drop')} beyond the margin not significant (inconclusive)")
    return "; ".join(parts)
