"""Compare a run with a baseline: per-test, per-assertion and per-metric deltas, and the verdict.

Tests are matched by their stable id; a baseline test whose id is gone is matched to a new one
by fingerprint (vars + prompt + provider), reported as renamed and judged against it as any
matched test is. Added and removed tests are reported as such and never judged as regressions
(an added test that fails is a failure); errored tests are errors, never regressions (a grader
outage is not a quality drop).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

from ci_grade.gate.baseline import Baseline, BaselineAssertion, BaselineTest, Totals, fold_test, group_rows
from ci_grade.gate.decision import decide, provenance_warnings
from ci_grade.gate.matching import portable_matches, renames
from ci_grade.gate.models import AssertionDelta, CaseDelta, Comparison, GatePolicy, MetricDelta, Rate
from ci_grade.gate.per_test import classify, confirmation, judge_reproducible, judge_sampled
from ci_grade.gate.suite import Pair, measures, weighted_mean
from ci_grade.results.models import EvalRun, TestResult
from ci_grade.results.summary import RowSummary, summaries_of
from ci_grade.results.traces import trajectory_steps

MIN_SHARED = 0.5
"""A baseline must share at least this share of the tests of the smaller side (the run or the
baseline) with the run, and at least one test; else it is taken for another config's baseline and
the gate judges thresholds only. A suite that grew or shrank still matches its own baseline."""


def compare(run: EvalRun, baseline: Baseline | None, policy: GatePolicy, *, every_test: bool = True) -> Comparison:
    """Per-test, per-assertion and suite-level deltas, judged, and the gate's verdict.

    Confirmation reruns (`run.confirmations`) are evidence for the tests they rerun only; the
    suite-level measures use the run's own rows, so selecting tests to rerun cannot bias them.
    Tests are folded from the rows' summaries; a test's rows are read whole only for the cases
    kept. `every_test=False` keeps only the cases a report lists (failing, errored, changed,
    judged or flipped tests), so a large run's comparison stays small; the measures, counts
    and `head_scores` still cover every test.
    """
    summaries = summaries_of(run.results)
    groups = group_rows(_Positioned(position, row) for position, row in enumerate(summaries))
    if baseline is None:
        return _without_baseline(run, groups, policy, every_test)
    head = {test_id: fold_test([p.row for p in rows]) for test_id, rows in groups.items()}
    base = dict(baseline.tests)
    same = {test_id: test_id for test_id in head if test_id in base}
    same.update(portable_matches(head, base, same))
    renamed = renames({k: v for k, v in head.items() if k not in same}, {k: v for k, v in base.items() if k not in same.values()})
    same.update(portable_matches(head, base, {**same, **renamed}, in_order=True))
    shared = len(same) + len(renamed)
    if head and (not shared or shared < MIN_SHARED * min(len(head), len(base))):
        note = (f"the baseline is not this config's: it shares {shared} of this run's {len(head)} tests "
                f"({len(base)} in the baseline), so the gate judged thresholds only")
        return _without_baseline(run, groups, policy, every_test, note)
    confirmations = group_rows(run.confirmations)
    cases: list[CaseDelta] = []
    judged: list[tuple[CaseDelta, BaselineTest, BaselineTest]] = []
    pairs: list[Pair] = []
    for test_id, test in head.items():
        base_id = same.get(test_id) or renamed.get(test_id)
        if base_id is None:
            cases.append(_case(test, None, "added"))
            continue
        before = base[base_id]
        case = _case(test, before, "same" if test_id in same else "renamed")
        classify(case, before, test)
        if case.reproducible:
            judge_reproducible(case, policy)
        elif test_id in confirmations:
            reruns = [r for r in confirmations[test_id] if r.status != "error"]
            case.confirmation = confirmation(before, sum(r.status == "pass" for r in reruns), len(reruns))
        judged.append((case, before, test))
        if "error" not in (before.status, test.status):
            pairs.append(Pair(before, test, case.reproducible, _cluster(groups[test_id][0].row, policy.cluster_key)))
        cases.append(case)
    judge_sampled(judged, policy)
    cases = [_detailed(case, run, groups[case.test_id]) for case in cases if every_test or _listed(case)]
    matched = set(same.values()) | set(renamed.values())
    cases += [_removed(test) for test_id, test in base.items() if test_id not in matched]
    mean, rate, same_measure, metrics = measures(pairs, policy)
    comparison = Comparison(
        verdict="passed",
        reason="",
        gate_failed=False,
        has_baseline=True,
        policy=policy,
        head_info=run.info,
        base_info=baseline.info,
        base_measured=baseline.measured,
        tests=cases,
        mean_score=mean,
        pass_rate=rate,
        same_measure=same_measure,
        metrics=metrics,
        pass_rate_head=Rate(passed=sum(t.status == "pass" for t in head.values()), total=len(head)),
        pass_rate_base=Rate(passed=sum(t.status == "pass" for t in base.values()), total=len(base)),
        error_rows=sum(t.errors for t in head.values()),
        head_totals=Totals.of(run),
        base_totals=baseline.totals,
        base_runs=baseline.runs,
        warnings=provenance_warnings(run.info, baseline.info),
        head_scores=[t.score for t in head.values() if t.status != "error"],
    )
    decide(comparison)
    return comparison


def _without_baseline(run: EvalRun, groups: dict[str, list[_Positioned]], policy: GatePolicy, every_test: bool, mismatch: str | None = None) -> Comparison:
    """Thresholds only: each test folded, counted and (when listed) kept, one test at a time;
    `mismatch` says why a baseline that was given was set aside."""
    cases: list[CaseDelta] = []
    heads: list[_Head] = []
    passed = errors = 0
    for rows in groups.values():
        quick = None if every_test else _passing(rows)
        if quick is not None:
            heads.append(quick)
            passed += 1
            continue
        test = fold_test([p.row for p in rows])
        passed += test.status == "pass"
        errors += test.errors
        heads.append(_Head(test.status, test.score, test.pass_rate, test.named_scores, test.named_weights))
        case = _case(test, None, "same")
        if every_test or _listed(case):
            cases.append(_detailed(case, run, rows))
    mean, rate, same_measure, metrics = _head_only(heads)
    comparison = Comparison(
        verdict="passed",
        reason="",
        gate_failed=False,
        has_baseline=False,
        baseline_mismatch=mismatch,
        policy=policy,
        head_info=run.info,
        tests=cases,
        mean_score=mean,
        pass_rate=rate,
        same_measure=same_measure,
        metrics=metrics,
        pass_rate_head=Rate(passed=passed, total=len(heads)),
        error_rows=errors,
        head_totals=Totals.of(run),
        head_scores=[h.score for h in heads if h.status != "error"],
    )
    decide(comparison)
    return comparison


@dataclass(frozen=True, slots=True)
class _Positioned:
    """A row's summary and its place in the run (to read the row whole when needed)."""

    position: int
    row: RowSummary

    @property
    def test_id(self) -> str:
        return self.row.test_id


@dataclass(frozen=True, slots=True)
class _Head:
    """What the head-only measures need of a test."""

    status: str
    score: float
    pass_rate: float | None
    named_scores: dict[str, float]
    named_weights: dict[str, float]


def _passing(rows: list[_Positioned]) -> _Head | None:
    """A test whose every row passed without named metrics, measured without folding it (no
    report lists it); None for any other test."""
    if any(p.row.status != "pass" or p.row.named_scores for p in rows):
        return None
    return _Head("pass", math.fsum(p.row.score for p in rows) / len(rows), 1.0, {}, {})


def _listed(case: CaseDelta) -> bool:
    """Whether any report lists the case: every case but an unchanged, passing, unjudged test."""
    quiet = case.change == "same" and case.head_status == "pass" and not case.head_errors
    return not (quiet and case.flip is None and not case.regressed and not case.inconclusive and case.confirmation is None)


def _cluster(row: RowSummary, key: str | None) -> str:
    """The test's cluster: its `metadata[key]`, else the test itself."""
    value = row.metadata.get(key) if key else None
    return f"{key}={value}" if value is not None else f"test:{row.test_id}"


def _head_only(heads: list[_Head]) -> tuple[MetricDelta, MetricDelta, bool, list[MetricDelta]]:
    """Without a baseline: the head's means over its scored tests, nothing judged."""
    scored = [t for t in heads if t.status != "error"]

    def mean_of(name: str, values: list[float], weights: list[float] | None = None) -> MetricDelta:
        return MetricDelta(name=name, head=weighted_mean(values, weights or [1.0] * len(values)), tests=len(values))

    def metric(name: str) -> MetricDelta:
        tests = [t for t in scored if name in t.named_scores]
        return mean_of(name, [t.named_scores[name] for t in tests], [t.named_weights.get(name, 1.0) for t in tests])

    metrics = [metric(name) for name in sorted({m for t in scored for m in t.named_scores})]
    return mean_of("mean score", [t.score for t in scored]), mean_of("pass rate", [t.pass_rate or 0.0 for t in scored]), False, metrics


def _output_text(output: object) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _case(test: BaselineTest, before: BaselineTest | None, change: Literal["same", "renamed", "added"]) -> CaseDelta:
    """The test's case from its folded results (the text a report shows is added by `_detailed`)."""
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
        head_passes=test.passes,
        head_errors=test.errors,
    )
    before_assertions: dict[tuple[str, int], BaselineAssertion] = {}
    if before is not None:
        case.base_id = before.test_id
        case.base_name = before.name
        case.base_status = before.status
        case.base_score = before.score if before.status != "error" else None
        case.base_spread = before.score_spread
        case.base_repeats = before.scored
        case.base_passes = before.passes
        before_assertions = _keyed(before)
    for key, item in _keyed(test).items():
        old = before_assertions.pop(key, None)
        case.assertions.append(
            AssertionDelta(
                type=item.type, metric=item.metric, base=old.score if old else None, head=item.score,
                base_passed=old.passed if old else None, head_passed=item.passed,
            )
        )
    for item in before_assertions.values():
        case.assertions.append(AssertionDelta(type=item.type, metric=item.metric, base=item.score, base_passed=item.passed))
    return case


def _detailed(case: CaseDelta, run: EvalRun, rows: list[_Positioned]) -> CaseDelta:
    """The case with the text a report shows, from the test's rows read whole: the reason, error
    and output of its first errored (else failing, else first) row, where it is defined, and the
    grader's reason for each failing assertion."""
    whole = [run.results[p.position] for p in rows]
    shown = next((r for r in whole if r.status == "error"), None) or next((r for r in whole if r.status == "fail"), whole[0])
    location = whole[0].location
    case.reason = shown.reason
    case.error = shown.error
    case.output = _output_text(shown.output)
    case.location = f"{location.file}:{location.line}" if location and location.line else location.file if location else None
    reasons = _failure_reasons(whole)
    for key, delta in zip(_keys(case), case.assertions, strict=False):
        delta.reason, delta.steps = reasons.get(key, ("", []))
    return case


def _keys(case: CaseDelta) -> list[tuple[str, int]]:
    """The (type and metric, occurrence) key of each of the case's head assertions, in order."""
    keys: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for delta in case.assertions:
        if delta.head is None:
            break
        key = f"{delta.type}\x1f{delta.metric or ''}"
        seen[key] = seen.get(key, -1) + 1
        keys.append((key, seen[key]))
    return keys


def _keyed(test: BaselineTest) -> dict[tuple[str, int], BaselineAssertion]:
    keyed: dict[tuple[str, int], BaselineAssertion] = {}
    seen: dict[str, int] = {}
    for item in test.assertions:
        seen[item.key] = seen.get(item.key, -1) + 1
        keyed[(item.key, seen[item.key])] = item
    return keyed


def _failure_reasons(rows: list[TestResult]) -> dict[tuple[str, int], tuple[str, list[str]]]:
    """The grader's reason for each failing flattened assertion, from the first row it fails in,
    with the agent's steps when it is a trajectory check."""
    reasons: dict[tuple[str, int], tuple[str, list[str]]] = {}
    for row in rows:
        if row.status == "error":
            continue
        seen: dict[str, int] = {}
        for top in row.assertions:
            for item in top.flat():
                key = f"{item.type}\x1f{item.metric or ''}"
                seen[key] = seen.get(key, -1) + 1
                if item.status != "pass" and (key, seen[key]) not in reasons:
                    reasons[(key, seen[key])] = (item.reason, trajectory_steps(item.metadata))
    return reasons


def _removed(test: BaselineTest) -> CaseDelta:
    return CaseDelta(
        test_id=test.test_id, base_id=test.test_id, change="removed", name=test.name, base_name=test.name,
        prompt_label=test.prompt_label, provider=test.provider, base_status=test.status,
        base_score=test.score if test.status != "error" else None, base_spread=test.score_spread, base_repeats=test.scored,
        base_passes=test.passes,
    )
