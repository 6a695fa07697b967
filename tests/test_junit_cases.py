"""The failure and error elements of a JUnit testcase (their type, message and text, for a failing
assertion, a gating regression and an errored row), the document's default name, the scores of a
suite of errors, structured output, and file paths relative to the repository root."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from ci_grade.gate.models import GateNote
from ci_grade.report.junit import render_junit
from ci_grade.report.source_paths import SourcePaths
from ci_grade.results.models import SourceRef
from tests.results_factory import row, run_of


def _case(xml: str, name: str) -> ET.Element:
    root = ET.fromstring(xml.split("\n", 1)[1])
    return next(case for case in root.iter("testcase") if case.get("name") == name)


def test_an_errored_row_carries_its_cause_as_type_error() -> None:
    broken = row("broken", 0.0, "error", error="provider said 500: try later")
    case = _case(render_junit(run_of(broken)), "broken")
    (error,) = case.findall("error")
    assert error.get("type") == "error"
    assert error.get("message") == "provider said 500: try later"
    assert error.text == "provider said 500: try later"
    assert case.find("failure") is None


def test_a_failing_assertion_is_a_failure_of_type_assertion() -> None:
    failing = row("shipping", 0.0, reason="Expected output to contain 'days'")
    case = _case(render_junit(run_of(failing)), "shipping")
    (failure,) = case.findall("failure")
    assert failure.get("type") == "assertion"
    assert failure.get("message") == "Expected output to contain 'days'"
    assert failure.text == "Score: 0.000\n- contains: Expected output to contain 'days'"


def test_a_gating_regression_names_itself_first_in_the_message_and_type() -> None:
    passing = row("refund", 0.6, reason="")
    note = GateNote(kind="regression", text="score fell from 0.90 to 0.60")
    case = _case(render_junit(run_of(passing), {passing.test_id: note}), "refund")
    (failure,) = case.findall("failure")
    assert failure.get("type") == "regression"
    assert failure.get("message") == "REGRESSION: score fell from 0.90 to 0.60; score 0.600"
    assert (failure.text or "").splitlines()[:2] == ["Score: 0.600", "Regression: score fell from 0.90 to 0.60"]


def test_a_non_gating_note_leaves_a_passing_case_passing() -> None:
    passing = row("refund", 0.9)
    note = GateNote(kind="not significant", text="within noise")
    xml = render_junit(run_of(passing), {passing.test_id: note})
    case = _case(xml, "refund")
    assert case.find("failure") is None and case.find("error") is None
    assert [child.tag for child in case] == ["system-out"]


def test_document_name_scores_of_an_all_errored_suite_and_structured_output() -> None:
    broken = row("broken", 0.0, "error", error="boom")
    structured = row("json", 1.0, output={"answer": 42})
    root = ET.fromstring(render_junit(run_of(broken, structured)).split("\n", 1)[1])
    assert root.get("name") == "ci-grade"  # a run without a description
    (suite,) = root.iter("testsuite")
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["mean_score"] == "1.0000"
    only_errors = ET.fromstring(render_junit(run_of(broken)).split("\n", 1)[1])
    assert {p.get("name"): p.get("value") for p in only_errors.iter("property")}["mean_score"] == "n/a"
    out = _case(render_junit(run_of(structured)), "json").findtext("system-out") or ""
    assert out.endswith("output:\n{'answer': 42}")


def test_file_paths_are_relative_to_the_given_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "evals").mkdir()
    located = row("located", 1.0)
    located.location = SourceRef(file=str(tmp_path / "evals" / "tests.yaml"), line=3)
    case = _case(render_junit(run_of(located), paths=SourcePaths(tmp_path / "evals", env={})), "located")
    assert (case.get("file"), case.get("line")) == ("evals/tests.yaml", "3")  # from the repository root
    out = case.find("system-out")
    assert out is not None and "defined at: evals/tests.yaml:3" in (out.text or "")


def test_metric_properties_are_counted_per_assertion_as_the_report_counts_them(tmp_path: Path) -> None:
    import json
    import shutil
    import xml.etree.ElementTree as ET

    from tests.conftest import REPO, run_cli

    shutil.copytree(REPO / "examples" / "quickstart", tmp_path / "q")
    assert run_cli("eval", "--no-progress", "-o", "r.json", "-o", "r.junit.xml", cwd=tmp_path / "q").code == 1
    prompt = json.loads((tmp_path / "q" / "r.json").read_text())["results"]["prompts"][0]["metrics"]
    expected = {name: prompt["namedScores"][name] / prompt["namedScoreWeights"][name] for name in prompt["namedScores"]}
    assert expected, "the example has named metrics"
    suite = ET.fromstring((tmp_path / "q" / "r.junit.xml").read_text()).find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert {name: float(properties[f"metric:{name}"]) for name in expected} == {name: round(value, 4) for name, value in expected.items()}
