"""`derivedMetrics`: expressions over the named scores per prompt column, as promptfoo computes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.results.derived_metrics import ExpressionError, check, derive, evaluate
from ci_grade.results.models import EvalRun
from tests.results_factory import row, run_of
from tests.test_config_loader import eval_config


def test_expressions_as_mathjs_reads_them() -> None:
    scope = {"tp": 3.0, "fp": 1.0, "fn": 0.0}
    assert evaluate("tp / (tp + fp)", scope) == 0.75
    assert evaluate("2 ^ 3 + tp % 2", scope) == 9.0
    assert evaluate("max(tp, fp) - sqrt(4)", scope) == 1.0
    assert evaluate("fn > 0 ? 1 : tp", scope) == 3.0
    assert evaluate("tp / fn", scope) == math.inf and math.isnan(evaluate("fn / fn", scope))
    with pytest.raises(ExpressionError):
        evaluate("__import__('os')", scope)
    with pytest.raises(ExpressionError):
        evaluate("tp.real", scope)
    assert derive({"a": 2.0}, 4, [{"name": "avg", "value": "a / __count"}, {"name": "twice", "value": "avg * 2"}, {"name": "bad", "value": "nope + 1"}]) == {
        "avg": 0.5, "twice": 1.0, "bad": 0.0,
    }
    assert check([{"name": "x", "value": "a +* b"}]) is not None
    assert check([{"name": "x", "value": "(a + b) / max(c, 1)"}]) is None


def test_derived_metrics_in_the_results_file_and_bad_ones_exit_2(tmp_path: Path) -> None:
    config = """
        prompts: ['{{word}}']
        providers: [echo]
        derivedMetrics:
          - {name: precision, value: 'tp / (tp + fp)'}
          - {name: share, value: 'precision * 100 / __count'}
        tests:
          - vars: {word: yes}
            assert: [{type: contains, value: yes, metric: tp}, {type: contains, value: no, metric: fp}]
          - vars: {word: yes}
            assert: [{type: contains, value: yes, metric: tp}]
        """
    result, _ = eval_config(tmp_path, config)
    assert result.code == 1, result.err
    (prompt,) = json.loads((tmp_path / "out.json").read_text())["results"]["prompts"]
    named = prompt["metrics"]["namedScores"]
    assert (named["tp"], named["fp"]) == (2.0, 0.0)
    assert named["precision"] == 1.0 and named["share"] == 50.0
    result, _ = eval_config(tmp_path, "prompts: [x]\nproviders: [echo]\nderivedMetrics: [{name: p, value: 'a +* b'}]\n")
    assert result.code == 2 and "promptfooconfig.yaml:3 derivedMetrics: derivedMetrics 'p': cannot read" in result.err


GATED = """
prompts: ['{prompt}']
providers: [echo]
derivedMetrics:
  - {{name: quality, value: 'tp * clean / (__count * __count)'}}
  - {{name: bad_share, value: '1 - clean / __count'}}
tests:
""" + "".join(f"  - vars: {{{{n: {n}}}}}\n    assert: [{{{{type: contains, value: good, metric: tp}}}}, {{{{type: not-contains, value: bad, metric: clean}}}}]\n" for n in range(1, 5))


def test_derived_metrics_are_stored_in_the_baseline_shown_and_judged_by_the_gate(tmp_path: Path) -> None:
    result, _ = eval_config(tmp_path, GATED.format(prompt="good {{n}}"), "--save-baseline", "baseline.json")
    assert result.code == 0, result.err
    assert "derived metric quality 1.00 over 4 tests" in result.out and "derived metric bad_share 0.00 over 4 tests" in result.out
    stored = json.loads((tmp_path / "baseline.json").read_text())
    assert stored["derived"] == {"quality": 1.0, "bad_share": 0.0}
    assert [m["name"] for m in stored["info"]["derived_metrics"]] == ["quality", "bad_share"]

    worse = GATED.format(prompt="good {{n}}{% if n > 2 %} bad{% endif %}")  # the same tests; two replies now say "bad"
    result, _ = eval_config(tmp_path, worse, "--baseline", "baseline.json", "--fail-on", "regressions", "-o", "report.md")
    assert result.code == 1, result.err
    # echo replies are reproducible: the change is exact. quality = 4 * 2 / 16 = 0.5.
    assert "derived metric quality 1.00 -> 0.50 (-0.50) over 4 tests in both runs: regressed (reproducible, exact)" in result.out
    assert "derived metric bad_share 0.00 -> 0.50 (+0.50) over 4 tests in both runs: no drop (reproducible, exact)" in result.out
    report = (tmp_path / "report.md").read_text()
    assert "| derived metric quality | 1.00 | 0.50 | ▼ −0.50 |" in report
    assert "| derived metric bad\\_share | 0.00 | 0.50 | ▲ +0.50 |" in report
    (prompt,) = json.loads((tmp_path / "out.json").read_text())["results"]["prompts"]
    assert prompt["metrics"]["namedScores"]["quality"] == 0.5  # the results file agrees with the gate on one column


def _sampled_runs(base_scores: list[float], head_scores: list[float], derived_metrics: list[dict[str, str]]) -> tuple[EvalRun, EvalRun]:
    def run(scores: list[float]) -> EvalRun:
        return run_of(*(row(f"t{i}", s, metrics={"acc": s}, sampled=True) for i, s in enumerate(scores)), derived_metrics=derived_metrics)

    return run(base_scores), run(head_scores)


def test_a_linear_derived_metric_is_judged_exactly_as_its_named_metric() -> None:
    base_scores = [1.0, 0.9, 0.8, 1.0, 0.7, 0.9, 1.0, 0.8, 0.9, 1.0, 0.6, 0.9]
    head_scores = [0.8, 0.9, 0.5, 0.9, 0.6, 0.7, 1.0, 0.6, 0.8, 0.9, 0.5, 0.8]
    base, head = _sampled_runs(base_scores, head_scores, [{"name": "mean_acc", "value": "acc / __count"}])
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    named = next(m for m in comparison.metrics if m.name == "acc")
    derived_acc = next(m for m in comparison.metrics if m.name == "mean_acc")
    assert derived_acc.derived and not named.derived
    assert derived_acc.method == named.method == "paired t"
    for field in ("base", "head", "p_value", "ci_low", "ci_high", "mde"):
        assert getattr(derived_acc, field) == pytest.approx(getattr(named, field), rel=1e-6), field


def test_a_ratio_is_judged_on_its_linearised_contributions() -> None:
    # ratio = hits / misses: its delta-method standard error against a direct computation.
    base_scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    head_scores = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    base, head = _sampled_runs(base_scores, head_scores, [{"name": "ratio", "value": "acc / (__count - acc)"}])
    (metric,) = [m for m in compare(head, baseline_from_run(base), GatePolicy()).metrics if m.derived]
    assert (metric.base, metric.head) == (pytest.approx(7 / 3), pytest.approx(5 / 5))
    n = len(base_scores)
    d = []
    for b, h in zip(base_scores, head_scores, strict=True):
        # n x gradient x deviation, gradient of a / (n - a) in a being n / (n - a)^2
        sb, sh = sum(base_scores), sum(head_scores)
        d.append((sh / (n - sh) - sb / (n - sb)) + n * n / (n - sh) ** 2 * (h - sh / n) - n * n / (n - sb) ** 2 * (b - sb / n))
    mean = sum(d) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n)
    assert mean == pytest.approx(metric.delta)
    assert metric.method == "paired t" and metric.ci_low is not None and metric.ci_high is not None
    # the interval that matches the one-sided test at alpha 0.05 (the gate's `confidence`, 90%): t(0.95, 9 df) x SE
    assert (metric.ci_high - metric.ci_low) / 2 == pytest.approx(1.8331129327 * se, rel=1e-4)


def test_a_derived_metric_that_divides_by_zero_is_shown_as_none_and_not_judged() -> None:
    base, head = _sampled_runs([0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [{"name": "inv", "value": "1 / acc"}])
    (metric,) = [m for m in compare(head, baseline_from_run(base), GatePolicy()).metrics if m.derived]
    assert (metric.base, metric.head, metric.method, metric.regressed) == (None, 1.0, None, False)


def test_a_derived_metric_redefined_since_the_baseline_is_pointed_out_and_an_unchanged_one_is_not() -> None:
    base_scores, head_scores = [1.0, 0.5, 1.0], [1.0, 1.0, 0.5]
    base, _ = _sampled_runs(base_scores, head_scores, [{"name": "kept", "value": "acc / __count"}, {"name": "share", "value": "acc / __count"}])
    _, head = _sampled_runs(base_scores, head_scores, [{"name": "kept", "value": "acc / __count"}, {"name": "share", "value": "acc"}])
    warnings = compare(head, baseline_from_run(base), GatePolicy()).warnings
    assert "derived metric 'share' is now 'acc' (the baseline's run had 'acc / __count'): both sides are computed with this run's" in warnings
    assert not any("'kept'" in warning for warning in warnings)
