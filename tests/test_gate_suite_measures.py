"""Measures of the gate, in process: clusters from test metadata, McNemar's discordant pairs, when
the pass rate is a McNemar measure, how weights enter each side's mean, when a test's reply counts
as unchanged, evidence from repeats, removed tests, the MDE and tests needed, exact means of
identical differences, pass counts, and the tolerance's rounding slack."""

from __future__ import annotations

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import CaseDelta, Comparison, GatePolicy
from ci_grade.gate.per_test import classify
from ci_grade.gate.suite import _linearised
from ci_grade.results.models import EvalRun
from ci_grade.results.models import TestResult as Row
from tests.results_factory import row, run_of


def _sampled(scores: dict[str, float], *, topic: dict[str, str] | None = None) -> list[Row]:
    rows = [row(name, score, sampled=True) for name, score in scores.items()]
    for r in rows:
        if topic:
            r.metadata["topic"] = topic[r.description or ""]
    return rows


def _judge(base: list[Row] | EvalRun, head: list[Row] | EvalRun, **policy: object) -> Comparison:
    base_run = base if isinstance(base, EvalRun) else run_of(*base)
    head_run = head if isinstance(head, EvalRun) else run_of(*head)
    return compare(head_run, baseline_from_run(base_run), GatePolicy(**policy))


def test_tests_sharing_a_metadata_value_form_one_cluster() -> None:
    names = "abcdefgh"
    topic = dict(zip(names, "xxyyzzww", strict=True))
    base = _sampled(dict.fromkeys(names, 1.0), topic=topic)
    head = _sampled(dict(zip(names, [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0], strict=True)), topic=topic)
    clustered = _judge(base, head, cluster_key="topic")
    assert clustered.mean_score.method == "paired t"
    assert clustered.mean_score.clusters == 4
    untagged = _judge(_sampled(dict.fromkeys(names, 1.0)), _sampled(dict(zip(names, [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0], strict=True))), cluster_key="topic")
    assert untagged.mean_score.clusters is None  # no metadata: every test is its own cluster, as without a key


def test_mcnemar_counts_only_discordant_pairs() -> None:
    base = _sampled({"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0, "e": 0.0})
    head = _sampled({"a": 0.0, "b": 1.0, "c": 1.0, "d": 0.0, "e": 0.0})
    c = _judge(base, head)
    assert c.mean_score.method == "McNemar mid-p"
    assert c.mean_score.discordant == (2, 1)  # two drops, one rise; the unchanged b and e are not counted


def test_the_pass_rate_is_a_mcnemar_measure_only_when_both_sides_ran_once() -> None:
    base = run_of(*_sampled({"a": 1.0, "b": 1.0, "c": 1.0}))
    head_rows = [row(n, s, sampled=True, repeat=i) for n in "abc" for i, s in enumerate((1.0, 0.5, 0.0))]
    head = run_of(*head_rows, repeat=3)
    c = _judge(base, head)
    assert c.pass_rate.method == "paired t"
    once = _judge(base, run_of(*_sampled({"a": 1.0, "b": 0.5, "c": 0.0})))
    assert once.pass_rate.method == "McNemar mid-p"


def _weighted(scores: tuple[float, float], weights: tuple[float, float]) -> EvalRun:
    run = run_of(row("a", 1.0, metrics={"m": scores[0]}), row("b", 1.0, metrics={"m": scores[1]}))
    for r, weight in zip(run.results, weights, strict=True):
        assert isinstance(r, Row)
        r.named_score_weights["m"] = weight
    return run


def test_each_side_of_a_metric_is_weighted_by_its_own_weights() -> None:
    c = compare(_weighted((1.0, 0.0), (1.0, 3.0)), baseline_from_run(_weighted((1.0, 0.0), (3.0, 1.0))), GatePolicy())
    (m,) = c.metrics
    assert (m.base, m.head) == (0.75, 0.25)


def test_a_baseline_without_weights_borrows_the_heads() -> None:
    baseline = baseline_from_run(_weighted((1.0, 0.0), (1.0, 1.0)))
    for test in baseline.tests.values():
        test.named_weights.clear()  # written before weights were recorded
    (m,) = compare(_weighted((1.0, 0.5), (3.0, 1.0)), baseline, GatePolicy()).metrics
    assert (m.base, m.head) == (0.75, (3.0 + 0.5) / 4)


def test_linearised_values_have_the_weighted_mean_as_their_plain_mean() -> None:
    d, weights = [0.0, 1.0, 1.0], [1.0, 3.0, 3.0]
    values = _linearised(d, weights)
    assert abs(sum(values) / 3 - 6 / 7) < 1e-12  # (0 x 1 + 1 x 3 + 1 x 3) / 7
    assert _linearised(d, [2.0, 2.0, 2.0]) == d


def test_an_unknown_reply_on_both_sides_is_not_an_unchanged_reply() -> None:
    base = baseline_from_run(run_of(row("a", 1.0, repeat=0, output="x"), row("a", 1.0, repeat=1, output="y"), repeat=2))
    head = baseline_from_run(run_of(row("a", 0.0, repeat=0, output="x"), row("a", 0.0, repeat=1, output="z"), repeat=2))
    (before,), (after,) = base.tests.values(), head.tests.values()
    before.fixed_reply = after.fixed_reply = False
    assert before.reply_digest is None and after.reply_digest is None and after.reproducible_grading
    case = CaseDelta(test_id=after.test_id, name=after.name)
    classify(case, before, after)
    assert case.reproducible is False and case.flip == "newly failing"


def test_a_drop_at_the_tolerance_plus_its_rounding_slack_is_tolerated() -> None:
    base = run_of(row("a", 0.5, "pass"))
    at_slack = run_of(row("a", 0.399999999, "pass"))  # 0.5 - (0.1 + 1e-9), exactly
    assert 0.5 - 0.399999999 == 0.1 + 1e-9
    (case,) = compare(at_slack, baseline_from_run(base), GatePolicy(max_score_drop=0.1)).tests
    assert case.reproducible and not case.regressed
    (beyond,) = compare(run_of(row("a", 0.3999999, "pass")), baseline_from_run(base), GatePolicy(max_score_drop=0.1)).tests
    assert beyond.regressed


def test_two_head_repeats_against_one_base_run_are_evidence() -> None:
    base = run_of(row("a", 1.0, sampled=True))
    head = run_of(row("a", 0.0, sampled=True, repeat=0), row("a", 0.0, sampled=True, repeat=1), repeat=2)
    (case,) = compare(head, baseline_from_run(base), GatePolicy()).tests
    assert case.p_value is not None and 0.0 < case.p_value < 1.0


def test_a_removed_test_keeps_its_baseline_id_and_spread() -> None:
    base = run_of(row("kept", 1.0), row("gone", 1.0, repeat=0), row("gone", 0.5, repeat=1), repeat=2)
    c = compare(run_of(row("kept", 1.0)), baseline_from_run(base), GatePolicy())
    (gone,) = [t for t in c.tests if t.change == "removed"]
    assert gone.base_id == gone.test_id == base.results[1].test_id
    assert (gone.base_score, gone.base_repeats) == (0.75, 2) and abs(gone.base_spread - 0.125 ** 0.5) < 1e-12


def test_the_mde_and_tests_needed_use_t_quantiles_the_policys_alpha_and_the_drop_observed() -> None:
    from ci_grade.gate.statistics import mde, paired, units_needed

    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    base = _sampled(dict.fromkeys("abcdefgh", 1.0))
    head = _sampled(dict(zip("abcdefgh", [0.5 + s / 4 for s in scores], strict=True)))
    c = _judge(base, head, alpha=0.1)
    stats = paired([0.5 + s / 4 - 1.0 for s in scores], 0.1)
    assert stats is not None and stats.se and stats.sd and c.mean_score.method == "paired t"
    assert c.mean_score.mde == mde(stats.se, 0.1, df=7) != mde(stats.se, 0.1)
    # the tests needed to tell the drop observed (-0.34) from noise, not a drop of the margin (0.02)
    assert c.mean_score.tests_needed == units_needed(stats.sd, 0.34375, 0.1)
    assert c.mean_score.tests_needed != units_needed(stats.sd, 0.02, 0.1)


def test_identical_differences_keep_their_exact_mean() -> None:
    from ci_grade.gate.statistics import paired

    value = 0.4453871940548014  # 48 copies summed and divided by 48 would round to another double
    stats = paired([value] * 48)
    assert stats is not None and stats.mean == value


def test_sampled_tests_dropping_alike_are_judged_by_the_sign_test() -> None:
    # Each sampled test passed 3/3 and now 2/3: every difference is -1/3, with no spread. Two
    # tests so is no evidence (sign test p = 1/4; a t test would say p = 0); six are (1/64).
    def runs(names: str, head: bool) -> EvalRun:
        return run_of(*(row(n, 0.0 if head and i == 2 else 1.0, sampled=True, repeat=i) for n in names for i in range(3)), repeat=3)

    two = _judge(runs("ab", False), runs("ab", True))
    assert two.mean_score.method == "paired t" and two.mean_score.p_value == 0.25
    assert not two.gate_failed and two.verdict == "passed"
    six = _judge(runs("abcdef", False), runs("abcdef", True))
    assert six.mean_score.p_value == 1 / 64 and six.gate_failed and six.verdict == "regressed"


def test_a_failing_test_counts_zero_in_the_pass_rate_and_shows_its_passes() -> None:
    base = _sampled({"a": 0.8, "b": 0.8})
    head = _sampled({"a": 0.2, "b": 0.8})
    c = _judge(base, head)
    assert not c.same_measure and (c.pass_rate.base, c.pass_rate.head) == (1.0, 0.5)
    cases = {t.name: t for t in c.tests}
    assert [(cases[n].base_passes, cases[n].head_passes) for n in "ab"] == [(1, 0), (1, 1)]


def test_a_listed_test_without_output_shows_none() -> None:
    (case,) = compare(run_of(row("a", 0.0, output=None)), None, GatePolicy()).tests
    assert case.output == ""


def test_a_pass_rate_drop_at_the_tolerance_plus_its_slack_is_tolerated_for_sampled_tests() -> None:
    base = run_of(*[row("a", 1.0, sampled=True, repeat=i) for i in range(20)], repeat=20)
    head = run_of(*[row("a", 1.0 if i < 10 else 0.0, sampled=True, repeat=i) for i in range(20)], repeat=20)
    at_slack = GatePolicy(max_score_drop=0.5 - 1e-9)  # + 1e-9 of slack is 0.5 again, the drop
    (case,) = compare(head, baseline_from_run(base), at_slack).tests
    assert case.significant and not case.regressed
    (beyond,) = compare(head, baseline_from_run(base), GatePolicy(max_score_drop=0.4)).tests
    assert beyond.regressed
