"""`derivedMetrics`: expressions over the named scores per prompt column, as promptfoo computes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ci_grade.results.derived_metrics import ExpressionError, check, derive, evaluate
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
