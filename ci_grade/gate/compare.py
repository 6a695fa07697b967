"""Compare a run with a baseline: per-test, per-assertion and per-metric deltas, and the verdict.

Tests are matched by their stable id; a baseline test whose id is gone is matched to a new one
by fingerprint (vars + prompt + provider) and reported as renamed. Added, removed and renamed
tests are reported as such and never judged as regressions; errored tests are errors, never
regressions (a grader outage is not a quality drop).
"""

from __future__ import annotations

import json
from typing import Literal

from ci_grade.gate.baseline import Baseline, BaselineAssertion, BaselineTest, Totals, fold_test, group_rows
from ci_grade.gate.decision import decide, provenance_warnings
from ci_grade.gate.matching import portable_matches, renames
from ci_grade.gate.models import AssertionDelta, CaseDelta, Comparison, GatePolicy, Rate
from ci_grade.gate.noise import judge, metric_delta, named_metrics
from ci_grade.results.models import EvalRun, TestResult


def compare(run: EvalRun, baseline: Baseline | None, policy: GatePolicy) -> Comparison:
    """Per-test, per-assertion and per-metric deltas, and the gate's verdict."""
    groups = group_rows(run.results)
    head = {test_id: fold_test(rows) for test_id, rows in groups.items()}
    base = dict(baseline.tests) if baseline else {}
    same = {test_id: test_id for test_id in head if test_id in base}
    same.update(portable_matches(head, base, same))
    renamed = renames({k: v for k, v in head.items() if k not in same}, {k: v for k, v in base.items() if k not in same.values()})
    cases: list[CaseDelta] = []
    for test_id, test in head.items():
        rows = groups[test_id]
        if test_id in same:
            cases.append(judge(_case(test, rows, base[same[test_id]], "same"), policy))
        elif test_id in renamed:
            cases.append(_case(test, rows, base[renamed[test_id]], "renamed"))
        else:
            cases.append(_case(test, rows, None, "added" if baseline else "same"))
    matched = set(same.values()) | set(renamed.values())
    cases += [_removed(test) for test_id, test in base.items() if test_id not in matched]
    pairs = [(base[b], head[h]) for h, b in same.items() if "error" not in (base[b].status, head[h].status)]
    comparison = Comparison(
        verdict="passed",
        reason="",
        gate_failed=False,
        has_baseline=baseline is not None,
        policy=policy,
        head_info=run.info,
        base_info=baseline.info if baseline else None,
        tests=cases,
        mean_score=metric_delta("mean score", [(b.score, b.score_spread, b.scored, h.score, h.score_spread, h.scored) for b, h in pairs], list(head.values()), None, policy, baseline is not None),
        metrics=named_metrics(pairs, head, policy, baseline is not None),
        pass_rate_head=Rate(passed=sum(t.status == "pass" for t in head.values()), total=len(head)),
        pass_rate_base=Rate(passed=sum(t.status == "pass" for t in base.values()), total=len(base)) if baseline else None,
        error_rows=sum(t.errors for t in head.values()),
        head_totals=Totals.of(run),
        base_totals=baseline.totals if baseline else None,
        warnings=provenance_warnings(run.info, baseline.info) if baseline else [],
    )
    decide(comparison)
    return comparison


def _output_text(output: object) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _case(test: BaselineTest, rows: list[TestResult], before: BaselineTest | None, change: Literal["same", "renamed", "added"]) -> CaseDelta:
    shown = next((r for r in rows if r.status == "error"), None) or next((r for r in rows if r.status == "fail"), rows[0])
    location = rows[0].location
    case = CaseDelta(
        test_id=test.test_id,
        change=change,
        name=test.name,
        prompt_label=test.prompt_label,
        provider=test.provider,
        head_status=test.status,
        head_score=test.score if test.status != "error" else None,
        head_spread=test.score_spread,
        head_repeats=test.scored,
        head_errors=test.errors,
        reason=shown.reason,
        error=shown.error,
        output=_output_text(shown.output),
        location=f"{location.file}:{location.line}" if location and location.line else location.file if location else None,
    )
    reasons = _failure_reasons(rows)
    before_assertions: dict[tuple[str, int], BaselineAssertion] = {}
    if before is not None:
        case.base_id = before.test_id
        case.base_name = before.name
        case.base_status = before.status
        case.base_score = before.score if before.status != "error" else None
        case.base_spread = before.score_spread
        case.base_repeats = before.scored
        before_assertions = _keyed(before)
    for key, item in _keyed(test).items():
        old = before_assertions.pop(key, None)
        case.assertions.append(
            AssertionDelta(
                type=item.type, metric=item.metric, base=old.score if old else None, head=item.score,
                base_passed=old.passed if old else None, head_passed=item.passed, reason=reasons.get(key, ""),
            )
        )
    for item in before_assertions.values():
        case.assertions.append(AssertionDelta(type=item.type, metric=item.metric, base=item.score, base_passed=item.passed))
    return case


def _keyed(test: BaselineTest) -> dict[tuple[str, int], BaselineAssertion]:
    keyed: dict[tuple[str, int], BaselineAssertion] = {}
    seen: dict[str, int] = {}
    for item in test.assertions:
        seen[item.key] = seen.get(item.key, -1) + 1
        keyed[(item.key, seen[item.key])] = item
    return keyed


def _failure_reasons(rows: list[TestResult]) -> dict[tuple[str, int], str]:
    """The grader's reason for each failing flattened assertion, from the first row it fails in."""
    reasons: dict[tuple[str, int], str] = {}
    for row in rows:
        if row.status == "error":
            continue
        seen: dict[str, int] = {}
        for top in row.assertions:
            for item in top.flat():
                key = f"{item.type}\x1f{item.metric or ''}"
                seen[key] = seen.get(key, -1) + 1
                if item.status != "pass" and (key, seen[key]) not in reasons:
                    reasons[(key, seen[key])] = item.reason
    return reasons


def _removed(test: BaselineTest) -> CaseDelta:
    return CaseDelta(
        test_id=test.test_id, base_id=test.test_id, change="removed", name=test.name, base_name=test.name,
        prompt_label=test.prompt_label, provider=test.provider, base_status=test.status,
        base_score=test.score if test.status != "error" else None, base_spread=test.score_spread, base_repeats=test.scored,
    )
