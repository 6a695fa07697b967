"""JUnit XML for test reporters: one testsuite per prompt x provider, one testcase per test.
Merged results of several configs get each config's suites, their names led by the config's.

Unlike promptfoo's writer, failures carry the failing assertions with the grader's reasons,
errors carry their cause, scores are properties of each suite, and the output is in
system-out. The document validates against the common JUnit 10 schema.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from junit_xml import TestCase, TestSuite, to_xml_report_string

from ci_grade import redact
from ci_grade.results.models import EvalRun, TestResult

_MAX_TEXT = 4000
_MAX_NAME = 200


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    """`text` with secrets masked, then cut to `limit` characters (masking first: no half secrets)."""
    text = redact.text(text)
    return text if len(text) <= limit else text[: limit - 20] + f"… [{len(text) - limit + 20} more chars]"


def suite_name(row: TestResult, config: str = "") -> str:
    label = " ".join(row.prompt.label.split())
    return _clip(f"{config + ': ' if config else ''}[{row.provider.display}] {label}", _MAX_NAME)


def case_name(row: TestResult) -> str:
    name = " ".join(row.name.split())
    if row.repeat_index:
        name += f" (repeat {row.repeat_index + 1})"
    return _clip(name, _MAX_NAME)


def render_junit(run: EvalRun, regressions: Mapping[str, str] | None = None) -> str:
    """The run as a JUnit XML document. `regressions` maps test ids to a regression note."""
    return render_junit_sections([("", run, regressions or {})])


def render_junit_sections(sections: list[tuple[str, EvalRun, Mapping[str, str]]]) -> str:
    """Several configs' runs in one document: (config name, run, regression notes) each."""
    out = [suite for config, run, regressions in sections for suite in _suites(run, regressions, config)]
    return str(to_xml_report_string(out, prettyprint=True, encoding="utf-8"))


def _suites(run: EvalRun, regressions: Mapping[str, str], config: str) -> list[TestSuite]:
    suites: dict[str, list[TestResult]] = defaultdict(list)
    for row in run.results:
        suites[suite_name(row, config)].append(row)
    out = []
    for name, rows in suites.items():
        cases = [_case(row, name, regressions.get(row.test_id)) for row in rows]
        scores = [row.score for row in rows if row.status != "error"]
        properties = {
            "mean_score": f"{sum(scores) / len(scores):.4f}" if scores else "n/a",
            "pass_rate": f"{sum(r.status == 'pass' for r in rows) / len(rows):.4f}",
        }
        metric_values: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            for metric, value in row.named_scores.items():
                metric_values[metric].append(value)
        for metric, values in sorted(metric_values.items()):
            properties[f"metric:{metric}"] = f"{sum(values) / len(values):.4f}"
        for row, case in zip(rows, cases, strict=True):
            properties[f"score:{case.name}"] = f"{row.score:.4f}"
        out.append(TestSuite(name, cases, properties={redact.text(k): v for k, v in properties.items()}))
    return out


def _case(row: TestResult, suite: str, regression: str | None) -> TestCase:
    case = TestCase(
        name=case_name(row),
        classname=suite,
        elapsed_sec=round(row.latency_ms / 1000, 3),
        stdout=redact.text(_details(row)),
    )
    if row.status == "error":
        case.add_error_info(message=_clip(row.error or row.reason, 500), output=_clip(row.error or row.reason), error_type="error")
    elif row.status == "fail" or regression:
        lines = [f"Score: {row.score:.3f}"]
        if regression:
            lines.append(f"Regression: {regression}")
        for assertion in row.failed_assertions():
            lines.append(f"- {assertion.type}: {assertion.reason}")
        message = (f"REGRESSION: {regression}; " if regression else "") + (row.reason if row.status == "fail" else f"score {row.score:.3f}")
        case.add_failure_info(message=_clip(message, 500), output=_clip("\n".join(lines)), failure_type="regression" if regression else "assertion")
    return case


def _details(row: TestResult) -> str:
    lines = [f"test id: {row.test_id}", f"status: {row.status}", f"score: {row.score:.3f}"]
    if row.location:
        lines.append(f"defined at: {row.location.file}" + (f":{row.location.line}" if row.location.line else ""))
    for assertion in row.assertions:
        for item in assertion.flat():
            lines.append(f"[{item.status}] {item.type} score={item.score:.3f} {item.reason}".rstrip())
    output = row.output if isinstance(row.output, str) else str(row.output)
    lines += ["output:", _clip(output)]
    return "\n".join(lines)
