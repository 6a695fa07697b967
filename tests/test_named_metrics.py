"""Named metrics aggregate per assertion, weighted, as promptfoo does: per row (namedScores and
namedScoreWeights), per prompt (namedScores, namedScoresCount, namedScoreWeights), and in the gate's
metric deltas and the report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ci_grade.gate.baseline import BaselineTest
from ci_grade.gate.models import GatePolicy
from ci_grade.gate.statistics import paired
from ci_grade.gate.suite import Pair, measures
from tests.conftest import run_cli, write

CONFIG = """
prompts: ['{{q}}']
providers: [echo]
tests:
  - description: three accuracy checks
    vars: {q: FIRST}
    assert:
      - {type: contains, value: alpha, metric: accuracy}
      - {type: contains, value: gamma, metric: accuracy}
      - {type: contains, value: beta, metric: accuracy, weight: 2}
  - description: one accuracy check
    vars: {q: alpha}
    assert:
      - {type: contains, value: alpha, metric: accuracy}
  - description: a weighted set and a script metric
    vars: {q: zeta}
    assert:
      - type: assert-set
        weight: 2
        threshold: 0.5
        assert:
          - {type: contains, value: zeta, metric: accuracy, weight: 3}
          - {type: contains, value: omega, metric: accuracy}
      - type: javascript
        value: "({pass: true, score: 1, reason: 'styled', namedScores: {style: 0.5}})"
  - description: informational metric
    vars: {q: X}
    assert:
      - {type: contains, value: X, metric: info, weight: 0}
      - {type: contains, value: Y, metric: info, weight: 0}
      - {type: icontains, value: x, metric: accuracy}
  - description: errored row
    vars: {q: alpha}
    assert:
      - {type: contains, value: alpha, metric: accuracy}
      - {type: python, value: "__import__('os')._exit(3)"}
"""


def run(folder: Path, first: str, *args: str) -> dict:
    write(folder / "promptfooconfig.yaml", CONFIG.replace("FIRST", first))
    result = run_cli("eval", "--no-progress", "-o", "out.json", *args, cwd=folder)
    assert result.code in (0, 1), result.err
    return json.loads((folder / "out.json").read_text())


def test_rows_and_prompts_carry_promptfoos_weighted_named_metrics(tmp_path: Path) -> None:
    data = run(tmp_path, "alpha beta")
    rows = {r["description"]: r for r in data["results"]["results"]}
    three = rows["three accuracy checks"]
    assert three["namedScores"] == {"accuracy": 0.75}  # (1 + 0 + 2 x 1) / 4
    assert three["gradingResult"]["namedScoreWeights"] == {"accuracy": 4.0}
    mixed = rows["a weighted set and a script metric"]
    # The set's own weights (3 and 1) times the set's weight (2): promptfoo's namedScoreWeights.
    assert mixed["namedScores"] == {"accuracy": 0.75, "style": 0.5}
    assert mixed["gradingResult"]["namedScoreWeights"] == {"accuracy": 8.0, "style": 1.0}
    info = rows["informational metric"]
    assert info["namedScores"] == {"info": 0.5, "accuracy": 1.0}  # weight 0: the plain mean (promptfoo: 0)
    assert info["gradingResult"]["namedScoreWeights"] == {"info": 0.0, "accuracy": 1.0}
    (prompt,) = data["results"]["prompts"]
    metrics = prompt["metrics"]
    # The errored row is left out: 0.75 x 4 + 1 x 1 + 0.75 x 8 + 1 x 1 over weights 4 + 1 + 8 + 1.
    assert metrics["namedScores"] == {"accuracy": pytest.approx(11.0), "style": 0.5, "info": 0.0}
    assert metrics["namedScoreWeights"] == {"accuracy": 14.0, "style": 1.0, "info": 0.0}
    assert metrics["namedScoresCount"] == {"accuracy": 7, "style": 1, "info": 2}
    # What promptfoo's viewer shows: namedScores / namedScoreWeights, 78.6% (the mean of the rows' values is 87.5%).
    assert metrics["namedScores"]["accuracy"] / metrics["namedScoreWeights"]["accuracy"] == pytest.approx(11 / 14)


def test_gate_and_report_compare_metrics_per_assertion(tmp_path: Path) -> None:
    run(tmp_path, "alpha beta gamma", "--save-baseline", "baseline.json")
    baseline = json.loads((tmp_path / "baseline.json").read_text())
    assert {t["name"]: t["named_weights"] for t in baseline["tests"].values()}["three accuracy checks"] == {"accuracy": 4.0}
    run(tmp_path, "alpha beta", "--baseline", "baseline.json", "-o", "summary.md")
    md = (tmp_path / "summary.md").read_text()
    # 12/14 -> 11/14 per assertion (the means of the tests' values were 0.94 -> 0.88).
    # Every grading is reproducible (echo, deterministic assertions): the drop is exact.
    assert "| metric accuracy | 0.86 | 0.79 | ▼ −0.07 | – | reproducible: exact · **regression** |" in md
    assert "| metric info | 0.50 | 0.50 | ＝ 0.00 | – | reproducible: exact · no drop |" in md
    assert "| metric style | 0.50 | 0.50 | ＝ 0.00 | – | reproducible: exact · no drop |" in md


def _pair(index: int, base: float, head: float, weight: float) -> Pair:
    def side(value: float) -> BaselineTest:
        return BaselineTest(test_id=f"t{index}", score=value, passes=1, passed=True, status="pass",
                            named_scores={"accuracy": value}, named_weights={"accuracy": weight})
    return Pair(base=side(base), head=side(head), reproducible=False, cluster=f"t{index}")


def test_a_sampled_metric_is_tested_on_its_weighted_mean() -> None:
    """The paired test of a weighted metric uses the weighted mean's delta and its linearised
    standard error: a test with weight 3 moves the metric three times as much as one with weight 1."""
    deltas = [(-0.5, 3.0), (0.1, 1.0), (0.0, 1.0), (-0.2, 1.0), (0.1, 2.0), (0.0, 1.0)]
    pairs = [_pair(i, 0.8, 0.8 + d, w) for i, (d, w) in enumerate(deltas)]
    _, _, _, (accuracy,) = measures(pairs, GatePolicy())
    weights = [w for _, w in deltas]
    centre = sum(d * w for d, w in deltas) / sum(weights)
    assert accuracy.base == pytest.approx(0.8)
    assert accuracy.head == pytest.approx(0.8 + centre)  # not the plain mean of the deltas
    assert centre != pytest.approx(sum(d for d, _ in deltas) / len(deltas))
    n = len(deltas)
    se = math.sqrt(n / (n - 1) * sum((w / sum(weights) * (d - centre)) ** 2 for d, w in deltas))
    expected = paired([centre + n * w / sum(weights) * (d - centre) for d, w in deltas], alpha=0.1)  # a 90% interval: 1 - 2 alpha
    assert expected is not None and expected.se == pytest.approx(se)
    assert accuracy.method == "paired t"
    assert accuracy.p_value == pytest.approx(expected.p_drop)
    assert (accuracy.ci_low, accuracy.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
