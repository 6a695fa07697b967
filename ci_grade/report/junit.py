"""JUnit XML for test reporters: one testsuite per prompt x provider, one testcase per test.

Unlike promptfoo's writer, failures carry the failing assertions with the grader's reasons,
errors carry their cause, scores are properties of each suite, and the output is in
system-out, which also names the file and line that define the test (relative to the repository
root). Each testcase's `time` is its provider latency; its classname is the defining file and the
provider (dots replaced), never prompt text, because reporters split classnames on dots to guess
a file. Suites and cases are built by junit-xml; times keep millisecond precision. Testcases carry
the `file` and `line` attributes pytest's xunit1 family writes (GitLab, action-junit-report and
test-reporter read them); the document validates against the Jenkins JUnit 10 schema extended by
exactly those two optional attributes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Mapping

from junit_xml import TestCase as JUnitCase
from junit_xml import TestSuite as JUnitSuite

from ci_grade import redact
from ci_grade.gate.models import GateNote
from ci_grade.report.source_paths import SourcePaths
from ci_grade.results.models import EvalRun, TestResult
from ci_grade.results.named_metrics import run_totals

_MAX_TEXT = 4000
_MAX_NAME = 200
# Characters XML 1.0 cannot carry (control characters, surrogates, U+FFFE/U+FFFF), and DEL and the
# C1 controls it discourages (U+009B starts a terminal escape sequence where reporters print it).
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    """`text` with secrets masked, then cut to `limit` characters (masking first: no half secrets)."""
    text = _xml_text(redact.text(text))
    return text if len(text) <= limit else text[: limit - 20] + f"… [{len(text) - limit + 20} more chars]"


def _seconds(ms: float) -> str:
    return f"{max(ms, 0.0) / 1000:.3f}"


def suite_name(row: TestResult, config: str = "") -> str:
    label = " ".join(row.prompt.label.split())
    return _clip(f"{config + ': ' if config else ''}[{row.provider.display}] {label}", _MAX_NAME)


def case_name(row: TestResult) -> str:
    name = " ".join(row.name.split())
    if row.repeat_index:
        name += f" (repeat {row.repeat_index + 1})"
    return _clip(name, _MAX_NAME)


def class_name(file: str | None, row: TestResult) -> str:
    """`<defining file>.<provider>` with the dots inside each part replaced: no prompt text."""
    parts = [file or "ci-grade", " ".join(row.provider.display.split())]
    return _clip(".".join(part.replace(".", "_") for part in parts), _MAX_NAME)


def render_junit(run: EvalRun, regressions: Mapping[str, GateNote] | None = None, paths: SourcePaths | None = None) -> str:
    """The run as a JUnit XML document. `regressions` maps test ids to a regression note;
    `paths` places test files relative to the repository root (default: from the working folder)."""
    return render_junit_sections([("", run, regressions or {})], paths, name=run.info.description or "ci-grade", duration_ms=run.stats.duration_ms)


def render_junit_sections(
    sections: list[tuple[str, EvalRun, Mapping[str, GateNote]]], paths: SourcePaths | None = None, *, name: str = "ci-grade", duration_ms: float | None = None,
) -> str:
    """Several configs' runs in one document: (config name, run, regression notes) each; a
    config's name prefixes its suites."""
    paths = paths or SourcePaths()
    root = ET.Element("testsuites", {"name": _clip(name, _MAX_NAME)})
    for config, run, regressions in sections:
        fallback = paths.of(run.info.config_files[0]) if run.info.config_files else None
        suites: dict[str, list[TestResult]] = defaultdict(list)
        for row in run.results:
            suites[suite_name(row, config)].append(row)
        for suite, rows in suites.items():
            root.append(_suite(suite, rows, regressions, paths, fallback))
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(suite.get(key) or 0) for suite in root)))
    total_ms = duration_ms if duration_ms is not None else max((run.stats.duration_ms for _, run, _ in sections), default=0.0)
    root.set("time", _seconds(total_ms))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(name: str, rows: list[TestResult], regressions: Mapping[str, GateNote], paths: SourcePaths, fallback: str | None) -> ET.Element:
    names = _unique_names(rows)
    cases = [
        _case(row, case_label, paths.of(row.location.file) if row.location else fallback, regressions.get(row.test_id))
        for row, case_label in zip(rows, names, strict=True)
    ]
    properties = {_xml_text(redact.text(key)): value for key, value in _properties(rows, names).items()}
    suite: ET.Element = JUnitSuite(name, cases, properties=properties).build_xml_doc()
    suite.set("time", _seconds(sum(row.latency_ms for row in rows)))
    for element, row in zip(suite.iter("testcase"), rows, strict=True):
        element.set("time", _seconds(row.latency_ms))  # junit-xml leaves out zero times and writes microseconds
    return suite


def _unique_names(rows: list[TestResult]) -> list[str]:
    """Case names, with the test id added where two tests of a suite would share one (viewers merge them)."""
    names = [case_name(row) for row in rows]
    counts = Counter(names)
    return [f"{name} [{row.test_id}]" if counts[name] > 1 else name for name, row in zip(names, rows, strict=True)]


def _properties(rows: list[TestResult], names: list[str]) -> dict[str, str]:
    scores = [row.score for row in rows if row.status != "error"]
    properties = {
        "mean_score": f"{sum(scores) / len(scores):.4f}" if scores else "n/a",
        "pass_rate": f"{sum(r.status == 'pass' for r in rows) / len(rows):.4f}",
    }
    for metric, total in sorted(run_totals(rows).items()):  # per assertion, as the report and the gate count it
        properties[f"metric:{metric}"] = f"{total.value:.4f}"
    for row, name in zip(rows, names, strict=True):
        properties[f"score:{name}"] = f"{row.score:.4f}"
    return properties


def _status(row: TestResult, note: GateNote | None) -> str:
    if row.status == "error":
        return "error"
    return "failure" if row.status == "fail" or (note is not None and note.gating) else "pass"


def _case(row: TestResult, name: str, file: str | None, regression: GateNote | None) -> JUnitCase:
    """A testcase with `file` and `line` where the test is defined; its failure or error comes
    before system-out (some viewers read the first child as the status)."""
    line = row.location.line if row.location and file else None
    case = JUnitCase(name, classname=class_name(file, row), stdout=_xml_text(redact.text(_details(row, file))), file=file, line=line)
    status = _status(row, regression)
    if status == "error":
        case.add_error_info(message=_clip(row.error or row.reason, 500), output=_clip(row.error or row.reason), error_type="error")
    elif status == "failure":
        lines = [f"Score: {row.score:.3f}"]
        if regression:
            lines.append(f"{regression.kind.capitalize()}: {regression.text}")
        for assertion in row.failed_assertions():
            lines.append(f"- {assertion.type}: {assertion.reason}")
        prefix = f"{regression.kind.upper()}: {regression.text}; " if regression else ""
        message = prefix + (row.reason if row.status == "fail" else f"score {row.score:.3f}")
        kind = regression.kind.replace(" ", "-") if regression else "assertion"
        case.add_failure_info(message=_clip(message, 500), output=_clip("\n".join(lines)), failure_type=kind)
    return case


def _details(row: TestResult, file: str | None) -> str:
    lines = [f"test id: {row.test_id}", f"status: {row.status}", f"score: {row.score:.3f}"]
    if file or row.location:
        line = row.location.line if row.location else None
        lines.append(f"defined at: {file or row.location.file}" + (f":{line}" if line else ""))  # type: ignore[union-attr]
    for assertion in row.assertions:
        for item in assertion.flat():
            lines.append(f"[{item.status}] {item.type} score={item.score:.3f} {item.reason}".rstrip())
    output = row.output if isinstance(row.output, str) else str(row.output)
    lines += ["output:", _clip(output)]
    return "\n".join(lines)
