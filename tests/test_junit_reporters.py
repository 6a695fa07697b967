"""JUnit for the reporters users run: valid against the JUnit 10 schema plus the testcase `file` and
`line` attributes, the file and line of each test from the repository root (attributes and the case's output), times, classnames without prompt
text, and the parsing rules of mikepenz/action-junit-report, dorny/test-reporter and xunit-viewer
applied to what ci-grade writes."""

from __future__ import annotations

import json
import math
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from ci_grade.report.junit import render_junit, render_junit_sections
from tests.conftest import run_cli, write
from tests.results_factory import row, run_of
from tests.servers.llm_server import LLMServer

JUNIT_XSD = Path(__file__).resolve().parent / "fixtures" / "junit-10-file-line.xsd"

CONFIG = """
description: support bot
prompts:
  - 'You are helpful. Answer briefly: {{q}}'
providers:
  - id: openai:chat:gpt-4.1-mini
    label: bot.v2
tests:
  - file://tests.yaml
  - description: inline test
    vars: {q: inline}
    assert: [{type: contains, value: inline}]
"""

TESTS = """
# support questions
- description: refund policy
  vars: {q: refund}
  assert: [{type: contains, value: days}]

- description: shipping time
  vars: {q: shipping}
  assert: [{type: contains, value: never-said}]
"""


@pytest.fixture
def repo(tmp_path: Path, openai_env: LLMServer) -> Path:
    """A git repository whose evals live in `evals/`, answered with some latency."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    openai_env.on_chat("refund", "Refunds within 30 days.", latency=0.05)
    openai_env.on_chat("shipping", "Two to five days.", latency=0.05)
    openai_env.on_chat("inline", "An inline answer.", latency=0.05)
    write(tmp_path / "evals" / "promptfooconfig.yaml", CONFIG)
    write(tmp_path / "evals" / "tests.yaml", TESTS)
    return tmp_path


def _cases(path: Path) -> tuple[ET.Element, dict[str, ET.Element]]:
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    return root, {case.get("name") or "": case for case in root.iter("testcase")}


def _where(case: ET.Element) -> tuple[str, int | None]:
    """The file (from the repository root) and line the case's output names as defining it."""
    out = case.find("system-out")
    (place,) = [line.removeprefix("defined at: ") for line in (out.text or "").splitlines() if line.startswith("defined at: ")] if out is not None else [""]
    file, _, line = place.partition(":")
    return file, int(line) if line else None


def _line(repo: Path, case: ET.Element) -> str:
    """The text at the case's file and line, read from the repository root."""
    file, line = _where(case)
    return (repo / file).read_text(encoding="utf-8").splitlines()[(line or 0) - 1]


@pytest.mark.parametrize("where", ["root", "subfolder"])
def test_cases_point_at_the_defining_line_from_the_repository_root(repo: Path, where: str) -> None:
    if where == "root":
        result = run_cli("eval", "-c", "evals/promptfooconfig.yaml", "-o", "out/r.junit.xml", "--no-progress", cwd=repo)
        report = repo / "out" / "r.junit.xml"
    else:
        result = run_cli("eval", "-o", "r.junit.xml", "--no-progress", cwd=repo / "evals")
        report = repo / "evals" / "r.junit.xml"
    assert result.code == 1, result.err
    _, cases = _cases(report)
    assert set(cases) == {"refund policy", "shipping time", "inline test"}
    assert _where(cases["refund policy"])[0] == "evals/tests.yaml"
    assert _line(repo, cases["refund policy"]) == "- description: refund policy"
    assert _line(repo, cases["shipping time"]) == "- description: shipping time"
    assert _where(cases["inline test"])[0] == "evals/promptfooconfig.yaml"
    assert _line(repo, cases["inline test"]) == "  - description: inline test"


def test_the_actions_workspace_is_the_root_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "ws" / "evals" / "promptfooconfig.yaml", """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello}
            assert: [{type: contains, value: hello}]
        """)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "ws"))
    assert run_cli("eval", "-o", "r.junit.xml", "--no-progress", cwd=tmp_path / "ws" / "evals").code == 0
    _, cases = _cases(tmp_path / "ws" / "evals" / "r.junit.xml")
    assert [_where(c) for c in cases.values()] == [("evals/promptfooconfig.yaml", 4)]


def test_a_test_without_a_line_names_the_config(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['hello']
        providers: [echo]
        defaultTest:
          assert: [{type: contains, value: hello}]
        """)
    assert run_cli("eval", "-o", "r.junit.xml", "--no-progress", cwd=tmp_path).code == 0
    _, cases = _cases(tmp_path / "r.junit.xml")
    assert [(*_where(c), c.get("classname")) for c in cases.values()] == [("promptfooconfig.yaml", None, "promptfooconfig_yaml.echo")]


def test_times_classnames_and_the_schema(repo: Path) -> None:
    assert run_cli("eval", "-c", "evals/promptfooconfig.yaml", "-o", "r.junit.xml", "-o", "r.json", "--no-progress", cwd=repo).code == 1
    text = (repo / "r.junit.xml").read_text(encoding="utf-8")
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(text)  # JUnit 10 plus exactly the optional testcase file and line

    root, cases = _cases(repo / "r.junit.xml")
    assert {c.get("classname") for c in cases.values()} == {"evals/tests_yaml.bot_v2", "evals/promptfooconfig_yaml.bot_v2"}
    times = {name: float(case.get("time") or "nan") for name, case in cases.items()}
    assert len(times) == 3 and all(t >= 0.05 for t in times.values()), times  # each answer took 50 ms or more
    # Seconds, and the same measure as the results file: no clock bound that a loaded machine could break.
    latency = {row["description"]: row["latencyMs"] / 1000 for row in json.loads((repo / "r.json").read_text())["results"]["results"]}
    assert times == {name: pytest.approx(latency[name], abs=0.0015) for name in latency}
    suite = root.find("testsuite")
    assert suite is not None
    assert math.isclose(float(suite.get("time") or "nan"), sum(times.values()), abs_tol=0.002)
    assert float(root.get("time") or "nan") >= max(times.values())
    assert root.get("name") == "support bot"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("3", "1", "0", "0")


def _mikepenz_position(case: ET.Element, suite: ET.Element) -> tuple[str, int]:
    """mikepenz/action-junit-report's resolveFileAndLine: file/line attributes of the testcase (then
    the failure, then the suite) win; without them the last dot-separated part of the classname is
    taken as a file name."""
    failure = case.find("failure")
    file = case.get("file") or (failure.get("file") if failure is not None else None) or suite.get("file")
    line = case.get("line") or (failure.get("line") if failure is not None else None) or suite.get("line")
    name = file or (case.get("classname") or case.get("name") or "").split(".")[-1]
    return name, int(line) if line else 1


def test_reporters_read_it_as_intended(repo: Path) -> None:
    assert run_cli("eval", "-c", "evals/promptfooconfig.yaml", "-o", "r.junit.xml", "--no-progress", cwd=repo).code == 1
    root, cases = _cases(repo / "r.junit.xml")
    suite = root.find("testsuite")
    assert suite is not None
    # mikepenz (and GitLab, dorny): the failing test is placed by its file and line attributes, from
    # the repository root, at the line that defines it.
    failing = [c for c in cases.values() if c.find("failure") is not None]
    assert [c.get("name") for c in failing] == ["shipping time"]
    file, line = _mikepenz_position(failing[0], suite)
    assert (file, line) == _where(failing[0]) == ("evals/tests.yaml", 6)
    assert (repo / file).read_text(encoding="utf-8").splitlines()[line - 1] == "- description: shipping time"
    assert all((c.get("file"), int(c.get("line") or 0)) == _where(c) for c in cases.values())
    # Classnames (what it splits into a file name when there is no file attribute) hold no prompt text.
    assert len(cases) == 3 and all("helpful" not in (c.get("classname") or "") for c in cases.values())
    # dorny/test-reporter: suite and case times parse as numbers; classnames group the cases.
    assert not math.isnan(float(suite.get("time") or "nan"))
    assert all(not math.isnan(float(c.get("time") or "nan")) for c in cases.values())
    # xunit-viewer (older releases): a case's status is its first child element.
    assert [child.tag for child in failing[0]] == ["failure", "system-out"]
    assert all([child.tag for child in c] == ["system-out"] for c in cases.values() if c not in failing)


def test_same_named_tests_stay_apart_and_bad_characters_are_replaced(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - description: same name
            vars: {q: "one \\x01 two"}
            assert: [{type: contains, value: one}]
          - description: same name
            vars: {q: three}
            assert: [{type: contains, value: three}]
        """)
    assert run_cli("eval", "-o", "r.junit.xml", "--no-progress", cwd=tmp_path).code == 0
    text = (tmp_path / "r.junit.xml").read_text(encoding="utf-8")
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(text)
    root, cases = _cases(tmp_path / "r.junit.xml")
    assert len(cases) == 2 and all(name.startswith("same name [") for name in cases)
    outputs = [c.findtext("system-out") or "" for c in root.iter("testcase")]
    assert any("one \ufffd two" in out for out in outputs)


def test_suite_scores_leave_errored_rows_out_and_repeats_are_numbered_from_one(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - description: good
            vars: {q: hello}
            assert: [{type: contains, value: hello, metric: m}]
          - description: half
            vars: {q: hello}
            assert: [{type: contains, value: hello, metric: m}, {type: contains, value: zzz}]
          - description: broken
            vars: {q: hello}
            assert: [{type: python, value: "__import__('os')._exit(3)"}]
        """)
    assert run_cli("eval", "--repeat", "2", "-o", "r.junit.xml", "--no-progress", cwd=tmp_path).code == 1
    root, cases = _cases(tmp_path / "r.junit.xml")
    assert sorted(cases) == ["broken", "broken (repeat 2)", "good", "good (repeat 2)", "half", "half (repeat 2)"]
    (suite,) = root.iter("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "2", "2")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["mean_score"] == "0.7500"  # (1 + 0.5) x 2 over the 4 scored rows: errors are not zeros
    assert properties["pass_rate"] == "0.3333"  # 2 of the 6 rows
    assert properties["metric:m"] == "1.0000"
    assert properties["score:good (repeat 2)"] == "1.0000" and properties["score:half"] == "0.5000"


def test_document_level_attributes_for_no_sections_and_long_names() -> None:
    empty = ET.fromstring(render_junit_sections([]).split("\n", 1)[1])
    assert (empty.get("name"), empty.get("tests"), empty.get("failures"), empty.get("errors"), empty.get("skipped"), empty.get("time")) == ("ci-grade", "0", "0", "0", "0", "0.000")
    long_name = "suite " * 100
    run = run_of(row("a", 1.0), row("b", 0.0), row("c", 0.0, "error", error="boom"), description=long_name)
    root = ET.fromstring(render_junit(run).split("\n", 1)[1])
    name = root.get("name") or ""
    assert name == "suite " * 30 + "… [420 more chars]"  # cut to 200 characters with its note
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("time")) == ("3", "1", "1", "1.500")
    second = run_of(row("d", 1.0))
    second.stats.duration_ms = 2500
    both = ET.fromstring(render_junit_sections([("one", run, {}), ("two", second, {})]).split("\n", 1)[1])
    assert both.get("time") == "2.500" and both.get("tests") == "4"  # the longest run's duration: configs run side by side
    assert [s.get("name") for s in both] == ["one: [bot] prompt", "two: [bot] prompt"]
