"""Judging one test against its baseline: reproducible changes are facts, sampled ones need evidence.

A test is *reproducible* when its output cannot vary between runs (a recorded `providerOutput`, the
`echo` provider, or an output identical to the baseline's) and it is graded without a model. Such a
test that newly fails, or whose score drops by more than `max_score_drop`, has regressed: no noise
can explain it. A *sampled* test's flip is listed; it is a regression only when the evidence is
significant: an exact (Fisher) test on its pass counts, which needs repeats on either side, a
baseline of several runs, or confirmation reruns, with Holm's correction across the tests judged.
"""

from __future__ import annotations

from ci_grade.gate.baseline import BaselineTest
from ci_grade.gate.models import CaseDelta, Confirmation, GatePolicy
from ci_grade.gate.statistics import fisher_drop, holm

EPS = 1e-9


def classify(case: CaseDelta, base: BaselineTest, head: BaselineTest) -> None:
    """Fill the case's pass counts, flip and reproducibility (nothing is judged yet)."""
    case.base_passes, case.head_passes = base.passes, head.passes
    if "error" in (base.status, head.status):
        return
    unchanged_reply = head.reply_digest is not None and head.reply_digest == base.reply_digest
    case.reproducible = head.reproducible_grading and (head.fixed_reply or unchanged_reply)
    if base.passed and not head.passed:
        case.flip = "newly failing"
    elif head.passed and not base.passed:
        case.flip = "newly passing"


def judge_reproducible(case: CaseDelta, policy: GatePolicy) -> None:
    """A reproducible test's change is a fact: a new failure, or a score drop beyond tolerance, regresses."""
    case.evident = True
    case.regressed = -(case.delta or 0.0) > policy.max_score_drop + EPS


def evidence(case: CaseDelta, base: BaselineTest, head: BaselineTest) -> float | None:
    """The one-sided p that a sampled test now passes less often, or None when nothing can show it.

    Confirmation reruns, when there are any, are the head's evidence: they were drawn after the
    test was seen failing, so the run that selected it does not bias the test.
    """
    if base.pass_rate is None:
        return None
    if case.confirmation is not None:
        reruns = case.confirmation
        return reruns.p_value if reruns.runs and reruns.passes / reruns.runs < base.pass_rate else None
    if base.scored < 2 and head.scored < 2:
        return None
    if head.pass_rate is None or head.pass_rate >= base.pass_rate:
        return None
    return fisher_drop(base.passes, base.scored, head.passes, head.scored)


def judge_sampled(cases: list[tuple[CaseDelta, BaselineTest, BaselineTest]], policy: GatePolicy) -> None:
    """Holm across the sampled tests with evidence; significant drops beyond tolerance regress."""
    judged = []
    for case, base, head in cases:
        if case.reproducible or "error" in (base.status, head.status):
            continue
        case.p_value = evidence(case, base, head)
        if case.p_value is not None:
            judged.append(case)
        elif case.new_failure or -(case.delta or 0.0) > policy.max_score_drop + EPS:
            case.inconclusive = True
    for case, significant in zip(judged, holm([1.0 if c.p_value is None else c.p_value for c in judged], policy.alpha), strict=True):
        case.significant = case.evident = significant
        beyond = _pass_rate_drop(case) > policy.max_score_drop + EPS
        case.regressed = significant and beyond
        case.inconclusive = not significant and (case.new_failure or beyond)


def confirmation(base: BaselineTest, passes: int, runs: int) -> Confirmation:
    """The verdict of `runs` fresh reruns (`passes` of them passed) against the baseline's runs."""
    return Confirmation(runs=runs, passes=passes, p_value=fisher_drop(base.passes, max(base.scored, 1), passes, runs) if runs else 1.0)


def _pass_rate_drop(case: CaseDelta) -> float:
    base = case.base_passes / case.base_repeats if case.base_repeats else 0.0
    if case.confirmation is not None:
        head = case.confirmation.passes / case.confirmation.runs if case.confirmation.runs else 0.0
    else:
        head = case.head_passes / case.head_repeats if case.head_repeats else 0.0
    return base - head
