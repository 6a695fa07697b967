"""The action's step outputs (documented in action.yml), from the finished, compared run."""

from __future__ import annotations

from pathlib import Path

from ci_grade.gate.models import Comparison
from ci_grade.github.annotations import workspace_path
from ci_grade.github.graded import Graded
from ci_grade.report.sections import verdict


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def step_outputs(graded: Graded, workspace: Path, comment_url: str) -> dict[str, str]:
    """Every output's value; paths relative to the workspace where they lie in it."""

    def shown(path: Path) -> str:
        return workspace_path(str(path), workspace, workspace) or str(path)

    comparisons = [s.comparison for s in graded.sections]
    scores = [score for c in comparisons for score in c.head_scores]
    passed, total = sum(c.pass_rate_head.passed for c in comparisons), sum(c.pass_rate_head.total for c in comparisons)
    p_values = [p for c in comparisons if (p := c.mean_score.p_adjusted if c.mean_score.p_adjusted is not None else c.mean_score.p_value) is not None]
    return {
        "passed": "false" if graded.gate_failed else "true",
        "verdict": verdict(graded.sections),
        "pass-rate": _number(passed / total if total else 0.0),
        "score": _number(sum(scores) / len(scores) if scores else None),
        "score-delta": _number(_pooled_delta(comparisons)),
        "p-value": _number(min(p_values) if p_values else None),
        "regressions": str(sum(len(c.regressions) for c in comparisons)),
        "failures": str(sum(len(c.failures) for c in comparisons)),
        "known-failures": str(sum(len(c.known_failures) for c in comparisons)),
        "not-significant": str(sum(len(c.flaky_flips) for c in comparisons)),
        "errors": str(sum(c.error_rows for c in comparisons)),
        "baseline": "mismatched" if any(c.baseline_mismatch for c in comparisons) else "compared" if any(c.has_baseline for c in comparisons) else "none",
        "results-path": "\n".join(shown(path) for path in graded.results_paths),
        "junit-path": shown(graded.junit_path),
        "html-path": shown(graded.html_path),
        "comment-url": comment_url,
    }


def _pooled_delta(comparisons: list[Comparison]) -> float | None:
    """The mean score's change over the tests scored in both runs, pooled over configs."""
    deltas = [(c.mean_score.delta, c.mean_score.tests) for c in comparisons if c.mean_score.delta is not None]
    if len(deltas) == 1:
        return deltas[0][0]
    weight = sum(n for _, n in deltas)
    return sum(d * n for d, n in deltas) / weight if weight else None
