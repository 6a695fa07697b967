"""The numbers shown are the numbers tested, in process: measures with the same values per test are
tested once, the Pass rate row shows the share it tests, tests to settle follow the drop observed."""

from __future__ import annotations

from ci_grade.gate.baseline import baseline_from_runs
from ci_grade.gate.compare import compare
from ci_grade.gate.models import Comparison, GatePolicy, MetricDelta
from ci_grade.gate.statistics import holm_adjusted, mcnemar
from ci_grade.report.gate_summary import terminal_summary
from ci_grade.report.markdown import _ci_pct, render_markdown
from ci_grade.results.models import EvalRun
from tests.results_factory import row, run_of

TESTS = 40


def _run(passing: set[int], metric: str | None = "accuracy") -> EvalRun:
    """One run of a 40-test suite whose every test has one pass/fail assertion (its metric `metric`)."""
    rows = []
    for i in range(TESTS):
        score = 1.0 if i in passing else 0.0
        rows.append(row(f"case {i}", score, sampled=True, metrics={metric: score} if metric else None, output="yes" if score else "no"))
    return run_of(*rows)


def _three_run_baseline_and_a_drop(metric: str | None = "accuracy") -> tuple[EvalRun, Comparison]:
    """Baseline: three runs, tests 0-29 pass every time, 30-38 in 2 runs of 3, 39 never (share 90% by
    runs, 97.5% by majority). Head: tests 0-19 and 30-39 pass (75%): a drop of 15 points, p = 0.042."""
    runs = [_run(set(range(30)) | {30 + j for j in range(9) if (j + k) % 3}, metric) for k in range(3)]
    head = _run(set(range(20)) | set(range(30, 40)), metric)
    return head, compare(head, baseline_from_runs(runs), GatePolicy())


def test_the_mean_score_the_pass_rate_and_the_only_metric_are_tested_once() -> None:
    _, c = _three_run_baseline_and_a_drop()
    (metric,) = c.metrics
    assert c.same_measure and c.pass_rate.same_as == "mean score" and metric.same_as == "pass rate"
    assert c.measures == [c.mean_score]  # one hypothesis in Holm's family, not three
    m = c.mean_score
    assert m.method == "paired t" and m.p_adjusted == m.p_value < 0.05
    assert abs(m.base - 0.9) < 1e-12 and abs(m.head - 0.75) < 1e-12  # the share of passing runs, paired
    assert m.regressed and c.gate_failed and c.verdict == "regressed"
    # the repeats carry the judgement of the measure they repeat, nothing of their own
    for repeat in (c.pass_rate, metric):
        assert (repeat.base, repeat.head, repeat.p_value, repeat.p_adjusted, repeat.ci_low, repeat.regressed) == (m.base, m.head, m.p_value, m.p_adjusted, m.ci_low, True)
    assert c.reason.startswith(f"pass rate dropped 0.90 → 0.75 (-0.15, max drop 0.02, p={m.p_value:.2g}; the same values as metric 'accuracy')")
    assert "metric 'accuracy' dropped" not in c.reason
    # Holm over three copies of one measure would have tripled p past alpha, and passed the drop
    assert holm_adjusted([m.p_value] * 3)[0] == 3 * m.p_value > 0.05


def test_the_pass_rate_row_shows_the_share_its_test_measures() -> None:
    head, c = _three_run_baseline_and_a_drop()
    md = render_markdown(head, c)
    row_line = next(line for line in md.splitlines() if line.startswith("| Pass rate "))
    # majority vote would say 97.5% -> 75.0% (-22.5 pts); the test measures 90.0% -> 75.0% (-15.0 pts)
    assert row_line.startswith("| Pass rate | 90.0% | 75.0% | ▼ −15.0 pts | [")
    low, high = (float(x.replace("−", "-")) for x in row_line.split("| [")[1].split("] pts")[0].split(", "))
    assert (low, high) == (round(c.mean_score.ci_low * 100, 1), round(c.mean_score.ci_high * 100, 1)) and high < 0
    assert f"paired t p={c.mean_score.p_value:.2g} · **regression**" in row_line
    assert "(Holm" not in row_line  # one measure: nothing to correct
    assert "**Mean score**" not in md  # the same quantity as the pass rate: one row
    metric_line = next(line for line in md.splitlines() if line.startswith("| metric accuracy "))
    assert metric_line.startswith("| metric accuracy | 0.90 | 0.75 | ▼ −0.15 | [")
    assert metric_line.endswith("| same values as the pass rate: tested once, with it |")
    assert "against a baseline of 3 runs (a test's pass rate is its share of passing runs)" in md
    assert "pass rate 0.90 -> 0.75 (-0.15) over 40 tests in both runs: regressed (paired t" in terminal_summary(c)


def test_measures_with_different_values_are_each_tested() -> None:
    runs = [_run(set(range(30)), "accuracy") for _ in range(3)]
    head = _run(set(range(24)), "accuracy")
    for r in head.results[:5]:  # the metric differs from the verdict on five tests
        r.named_scores["accuracy"] = 0.5
    c = compare(head, baseline_from_runs(runs), GatePolicy())
    assert c.same_measure and c.metrics[0].same_as is None
    assert c.measures == [c.mean_score, c.metrics[0]]
    mean, metric = c.measures
    assert mean.p_value is not None and metric.p_value is not None
    assert [mean.p_adjusted, metric.p_adjusted] == holm_adjusted([mean.p_value, metric.p_value])  # Holm over two
    lines = terminal_summary(c).splitlines()
    assert any(line.startswith("  pass rate 0.75 -> 0.60 ") for line in lines)
    assert any(line.startswith("  metric accuracy 0.75 -> ") for line in lines)  # a named metric is called one


def test_a_metric_weighed_alike_on_every_test_is_the_same_quantity() -> None:
    runs = [_run(set(range(30))) for _ in range(3)]
    head = _run(set(range(24)))
    for r in [*head.results, *(x for run in runs for x in run.results)]:
        r.named_score_weights["accuracy"] = 2.0  # the same weight everywhere: the same mean
    c = compare(head, baseline_from_runs(runs), GatePolicy())
    assert c.metrics[0].same_as == "pass rate"
    head.results[0].named_score_weights["accuracy"] = 5.0  # one test weighs more: another quantity
    c = compare(head, baseline_from_runs(runs), GatePolicy())
    assert c.metrics[0].same_as is None


def test_tests_to_settle_are_for_the_drop_observed() -> None:
    """Two inconclusive drops on 10 tests: the larger needs fewer tests to tell from noise."""
    def judged(failing: int) -> Comparison:
        base = run_of(*(row(f"t{i}", 1.0, sampled=True) for i in range(10)))
        head = run_of(*(row(f"t{i}", 0.0 if i < failing else 1.0, sampled=True) for i in range(10)))
        return compare(head, baseline_from_runs([base]), GatePolicy(alpha=0.01))

    small, large = judged(1).mean_score, judged(3).mean_score
    assert small.inconclusive and large.inconclusive
    assert small.tests_needed is not None and large.tests_needed is not None
    assert large.tests_needed < small.tests_needed
    passed = judged(0).mean_score
    assert passed.tests_needed is None  # no drop: nothing to settle


def test_a_zero_one_suite_run_once_a_side_gets_mcnemars_mid_p() -> None:
    base = run_of(*(row(f"t{i}", 1.0 if i < 11 else 0.0, sampled=True) for i in range(20)))
    flips = {i: 0.0 for i in range(9)} | {11: 1.0, 12: 1.0}
    head = run_of(*(row(f"t{i}", flips.get(i, 1.0 if i < 11 else 0.0), sampled=True) for i in range(20)))
    c = compare(head, baseline_from_runs([base]), GatePolicy())
    assert c.mean_score.method == "McNemar mid-p" and c.mean_score.discordant == (9, 2)
    assert c.mean_score.p_value == mcnemar(9, 2).p_drop_mid == (67 - 55 / 2) / 2048


def test_a_pass_rate_interval_stays_within_100_points() -> None:
    m = MetricDelta(name="pass rate", base=1.0, head=0.5, method="paired t", ci_low=-1.3, ci_high=0.2)
    assert _ci_pct(m) == "[−100.0, +20.0] pts"


def test_a_metric_with_the_pass_rates_values_is_named_as_the_pass_rate_when_the_mean_score_differs() -> None:
    """Passing tests score 0.8 and failing ones 0.2, so the mean score is its own quantity; the metric
    `accuracy` (1 or 0 per test) repeats the pass rate and says so."""

    def run(passing: set[int]) -> EvalRun:
        return run_of(*(row(f"case {i}", 0.8 if i in passing else 0.2, sampled=True, metrics={"accuracy": 1.0 if i in passing else 0.0}) for i in range(TESTS)))

    base, head = run(set(range(36))), run(set(range(24)))
    c = compare(head, baseline_from_runs([base]), GatePolicy())
    (metric,) = c.metrics
    assert not c.same_measure and c.mean_score.same_as is None and c.pass_rate.same_as is None
    assert metric.same_as == "pass rate"
    assert c.pass_rate in c.measures and metric not in c.measures
