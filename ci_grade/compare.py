"""Compare a run with a baseline and decide the gate.

Tests are matched by their stable id; a baseline test whose id is gone is matched to a new one
by fingerprint (vars + prompt + provider) and reported as renamed. Added, removed and renamed
tests are reported as such and never judged as regressions; errored tests are errors, never
regressions (a grader outage is not a quality drop).

The noise rule: a drop (per test, per named metric, or in the mean score over matched tests) is
a regression only when it is larger than its tolerance (`max_score_drop` per test,
`max_metric_drop` for metrics and the mean) AND larger than NOISE_K standard errors of the
difference of the two means. A test's standard error is its spread over repeats divided by the
square root of its scored repeats; a side without repeats borrows the other side's spread; the
two sides' errors add in quadrature (and, for metrics and the mean, average over the tests).
A drop beyond the tolerance but within the noise is "inconclusive". Without repeats the
standard error is zero, so the tolerances alone decide.
"""

from __future__ import annotations

import json
import math
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from ci_grade.baseline import Baseline, BaselineAssertion, BaselineTest, Totals, fold_test, group_rows
from ci_grade.results.models import EvalRun, RunInfo, Status, TestResult

NOISE_K = 2.0
_EPS = 1e-9
_OUTPUT_CLIP = 2000
_REASON_CLIP = 4000

FailOn = Literal["failures", "regressions", "never"]


class GatePolicy(BaseModel):
    """What fails the gate. `max_errors` None means no errored row is tolerated."""

    fail_on: FailOn = "regressions"
    max_score_drop: float = 0.1
    max_metric_drop: float = 0.02
    min_pass_rate: float | None = None
    max_errors: int | None = None


class AssertionDelta(BaseModel):
    """One assertion of a test, base vs head (matched by type, metric and occurrence)."""

    type: str
    metric: str | None = None
    base: float | None = None
    head: float | None = None
    base_passed: bool | None = None
    head_passed: bool | None = None
    reason: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base


class CaseDelta(BaseModel):
    """One test x prompt x provider: what the baseline and the run say, and the judgement."""

    test_id: str
    base_id: str | None = None
    change: Literal["same", "renamed", "added", "removed"] = "same"
    name: str = ""
    base_name: str | None = None
    prompt_label: str = ""
    provider: str = ""
    base_status: Status | None = None
    head_status: Status | None = None
    base_score: float | None = None
    head_score: float | None = None
    base_spread: float = 0.0
    head_spread: float = 0.0
    base_repeats: int = 0
    head_repeats: int = 0
    head_errors: int = 0
    noise: float = 0.0
    regressed: bool = False
    inconclusive: bool = False
    new_failure: bool = False
    fixed: bool = False
    reason: str = ""
    error: str | None = None
    output: str = ""
    location: str | None = None
    assertions: list[AssertionDelta] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        if self.base_score is None or self.head_score is None or "error" in (self.base_status, self.head_status):
            return None
        return self.head_score - self.base_score

    def note(self) -> str:
        """A short note such as "score 0.90 -> 0.60 (-0.30)"."""
        parts = []
        if self.delta is not None:
            parts.append(f"score {self.base_score:.2f} -> {self.head_score:.2f} ({self.delta:+.2f})")
        if self.new_failure:
            parts.append("newly failing (passed in the baseline)")
        return "; ".join(parts)


class MetricDelta(BaseModel):
    """A named metric (or the mean score) over the tests matched in both runs."""

    name: str
    base: float | None = None
    head: float | None = None
    tests: int = 0
    noise: float = 0.0
    regressed: bool = False
    inconclusive: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base


class Rate(BaseModel):
    passed: int = 0
    total: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def value(self) -> float:
        return self.passed / self.total if self.total else 0.0


class Comparison(BaseModel):
    verdict: Literal["passed", "regressed", "failed"]
    reason: str
    gate_failed: bool
    has_baseline: bool
    policy: GatePolicy = Field(default_factory=GatePolicy)
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    head_info: RunInfo = Field(default_factory=RunInfo)
    base_info: RunInfo | None = None
    tests: list[CaseDelta] = Field(default_factory=list)
    mean_score: MetricDelta = Field(default_factory=lambda: MetricDelta(name="mean score"))
    metrics: list[MetricDelta] = Field(default_factory=list)
    pass_rate_head: Rate = Field(default_factory=Rate)
    pass_rate_base: Rate | None = None
    error_rows: int = 0
    head_totals: Totals = Field(default_factory=Totals)
    base_totals: Totals | None = None

    def _select(self, flag: str) -> list[CaseDelta]:
        return [t for t in self.tests if getattr(t, flag)]

    @property
    def regressions(self) -> list[CaseDelta]:
        """Tests whose score dropped beyond tolerance and noise, or that newly fail."""
        return [t for t in self.tests if t.regressed or t.new_failure]

    @property
    def new_failures(self) -> list[CaseDelta]:
        return self._select("new_failure")

    @property
    def fixes(self) -> list[CaseDelta]:
        return self._select("fixed")

    @property
    def inconclusive(self) -> list[CaseDelta]:
        return self._select("inconclusive")

    @property
    def failures(self) -> list[CaseDelta]:
        """Every test failing now (including new failures)."""
        return [t for t in self.tests if t.head_status == "fail"]

    @property
    def errors(self) -> list[CaseDelta]:
        """Tests with at least one errored row."""
        return [t for t in self.tests if t.head_errors]

    def changed(self, kind: Literal["renamed", "added", "removed"]) -> list[CaseDelta]:
        return [t for t in self.tests if t.change == kind]

    def regression_notes(self) -> dict[str, str]:
        """test_id -> short note, for JUnit failure messages."""
        return {t.test_id: t.note() for t in self.regressions}


def compare(run: EvalRun, baseline: Baseline | None, policy: GatePolicy) -> Comparison:
    """Per-test, per-assertion and per-metric deltas, and the gate's verdict."""
    groups = group_rows(run.results)
    head = {test_id: fold_test(rows) for test_id, rows in groups.items()}
    base = dict(baseline.tests) if baseline else {}
    same = {test_id: test_id for test_id in head if test_id in base}
    same.update(_portable_matches(head, base, same))
    renamed = _renames({k: v for k, v in head.items() if k not in same}, {k: v for k, v in base.items() if k not in same.values()})
    cases: list[CaseDelta] = []
    for test_id, test in head.items():
        rows = groups[test_id]
        if test_id in same:
            cases.append(_judge(_case(test, rows, base[same[test_id]], "same"), policy))
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
        mean_score=_metric("mean score", [(b.score, b.score_spread, b.scored, h.score, h.score_spread, h.scored) for b, h in pairs], list(head.values()), None, policy, baseline is not None),
        metrics=_named_metrics(pairs, head, policy, baseline is not None),
        pass_rate_head=Rate(passed=sum(t.status == "pass" for t in head.values()), total=len(head)),
        pass_rate_base=Rate(passed=sum(t.status == "pass" for t in base.values()), total=len(base)) if baseline else None,
        error_rows=sum(t.errors for t in head.values()),
        head_totals=Totals.of(run),
        base_totals=baseline.totals if baseline else None,
        warnings=_provenance_warnings(run.info, baseline.info) if baseline else [],
    )
    _decide(comparison)
    return comparison


def _portable_matches(head: dict[str, BaselineTest], base: dict[str, BaselineTest], same: dict[str, str]) -> dict[str, str]:
    """head id -> base id by what both tools record (test name, prompt label, provider).

    Ids differ between ci-grade and promptfoo's own results files (promptfoo keys prompts by
    label, ci-grade by position or file), so a baseline written by promptfoo still matches.
    """
    def portable(test: BaselineTest) -> tuple[str, str, str]:
        return (" ".join(test.name.split()), " ".join(test.prompt_label.split()), test.provider)

    def unique(tests: dict[str, BaselineTest], taken: set[str]) -> dict[tuple[str, str, str], str]:
        seen: dict[tuple[str, str, str], list[str]] = {}
        for test_id, test in tests.items():
            if test_id not in taken:
                seen.setdefault(portable(test), []).append(test_id)
        return {key: ids[0] for key, ids in seen.items() if len(ids) == 1}

    heads, bases = unique(head, set(same)), unique(base, set(same.values()))
    return {head_id: bases[key] for key, head_id in heads.items() if key in bases}


def _renames(head: dict[str, BaselineTest], base: dict[str, BaselineTest]) -> dict[str, str]:
    """head id -> base id, for unmatched tests whose fingerprint is unique on both sides."""
    def by_fingerprint(tests: dict[str, BaselineTest], others: dict[str, BaselineTest]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for test_id, test in tests.items():
            if test_id not in others and test.fingerprint:
                found.setdefault(test.fingerprint, []).append(test_id)
        return found

    heads, bases = by_fingerprint(head, base), by_fingerprint(base, head)
    return {ids[0]: bases[fp][0] for fp, ids in heads.items() if len(ids) == 1 and len(bases.get(fp, [])) == 1}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


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
        reason=_clip(shown.reason, _REASON_CLIP),
        error=_clip(shown.error, _REASON_CLIP) if shown.error else None,
        output=_clip(_output_text(shown.output), _OUTPUT_CLIP),
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
                    reasons[(key, seen[key])] = _clip(item.reason, _REASON_CLIP)
    return reasons


def _removed(test: BaselineTest) -> CaseDelta:
    return CaseDelta(
        test_id=test.test_id, base_id=test.test_id, change="removed", name=test.name, base_name=test.name,
        prompt_label=test.prompt_label, provider=test.provider, base_status=test.status,
        base_score=test.score if test.status != "error" else None, base_spread=test.score_spread, base_repeats=test.scored,
    )


def _stderr(spread: float, n: int, other_spread: float, other_n: int) -> float:
    """Standard error of one side's mean; a side without repeats borrows the other's spread."""
    if n < 1:
        return 0.0
    sd = spread if n >= 2 else other_spread if other_n >= 2 else 0.0
    return sd / math.sqrt(n)


def _noise(b_spread: float, b_n: int, h_spread: float, h_n: int) -> float:
    """NOISE_K standard errors of (head mean - base mean) for one test."""
    return NOISE_K * math.hypot(_stderr(b_spread, b_n, h_spread, h_n), _stderr(h_spread, h_n, b_spread, b_n))


def _judge(case: CaseDelta, policy: GatePolicy) -> CaseDelta:
    if "error" in (case.base_status, case.head_status) or case.base_score is None or case.head_score is None:
        return case
    case.new_failure = case.base_status == "pass" and case.head_status == "fail"
    case.fixed = case.base_status == "fail" and case.head_status == "pass"
    case.noise = _noise(case.base_spread, case.base_repeats, case.head_spread, case.head_repeats)
    drop = case.base_score - case.head_score
    if drop > policy.max_score_drop + _EPS:
        case.regressed = drop > case.noise + _EPS
        case.inconclusive = not case.regressed
    return case


_Pair = tuple[float, float, int, float, float, int]  # base mean, spread, n; head mean, spread, n


def _head_values(heads: list[BaselineTest], metric: str | None) -> list[float]:
    scored = [t for t in heads if t.status != "error"]
    return [t.score for t in scored] if metric is None else [t.named_scores[metric] for t in scored if metric in t.named_scores]


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _metric(name: str, pairs: list[_Pair], heads: list[BaselineTest], metric: str | None, policy: GatePolicy, has_baseline: bool) -> MetricDelta:
    """Mean over matched tests (with a baseline), else over every scored head test."""
    if not has_baseline:
        values = _head_values(heads, metric)
        return MetricDelta(name=name, head=_mean(values), tests=len(values))
    if not pairs:
        return MetricDelta(name=name)
    n = len(pairs)
    base_mean = math.fsum(p[0] for p in pairs) / n
    head_mean = math.fsum(p[3] for p in pairs) / n
    variance = math.fsum(_stderr(p[1], p[2], p[4], p[5]) ** 2 + _stderr(p[4], p[5], p[1], p[2]) ** 2 for p in pairs)
    noise = NOISE_K * math.sqrt(variance) / n
    result = MetricDelta(name=name, base=base_mean, head=head_mean, tests=n, noise=noise)
    drop = base_mean - head_mean
    if drop > policy.max_metric_drop + _EPS:
        result.regressed = drop > noise + _EPS
        result.inconclusive = not result.regressed
    return result


def _named_metrics(pairs: list[tuple[BaselineTest, BaselineTest]], head: dict[str, BaselineTest], policy: GatePolicy, has_baseline: bool) -> list[MetricDelta]:
    names = sorted({m for t in head.values() for m in t.named_scores} | {m for b, _ in pairs for m in b.named_scores})
    out = []
    for name in names:
        matched = [
            (b.named_scores[name], b.named_spreads.get(name, 0.0), b.scored, h.named_scores[name], h.named_spreads.get(name, 0.0), h.scored)
            for b, h in pairs if name in b.named_scores and name in h.named_scores
        ]
        metric = _metric(name, matched, list(head.values()), name, policy, has_baseline)
        if has_baseline and not matched:  # a metric on one side only: show it, judge nothing
            metric.head = _mean(_head_values(list(head.values()), name))
            metric.base = _mean([b.named_scores[name] for b, _ in pairs if name in b.named_scores])
        out.append(metric)
    return out


def _provenance_warnings(head: RunInfo, base: RunInfo) -> list[str]:
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


def _decide(c: Comparison) -> None:
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
    elif rate.total and rate.value < policy.min_pass_rate - _EPS:
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
