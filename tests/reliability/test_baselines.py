"""Reliability: a baseline cannot fool the gate.

A baseline holding a NaN or an infinite score is exit 2 naming the test (it crashed the
comparison, exit 3, and no results were written); the run's results are written whatever
becomes of the comparison; and a baseline from another config (it passed the gate silently,
every test "added") is named in the verdict as not this config's, the gate then judging
thresholds only, so a failing test fails it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.github.graded import Graded
from ci_grade.github.step_outputs import step_outputs
from ci_grade.report.sections import Section
from tests.conftest import run_cli, run_cli_process, write
from tests.results_factory import row, run_of
from tests.servers.llm_server import LLMServer

CONFIG = """
prompts: ['{{q}}']
providers: [openai:chat:gpt-4.1-mini]
tests:
  - {description: one, vars: {q: one}, assert: [{type: contains, value: hi}]}
  - {description: two, vars: {q: two}, assert: [{type: contains, value: hi}]}
  - {description: three, vars: {q: three}, assert: [{type: contains, value: hi}]}
"""
OTHER = """
prompts: ['Other {{q}}']
providers: [openai:chat:gpt-4.1-mini]
tests:
  - {description: alpha, vars: {q: a}, assert: [{type: contains, value: hi}]}
  - {description: beta, vars: {q: b}, assert: [{type: contains, value: hi}]}
"""


@pytest.fixture
def model(openai_env: LLMServer) -> LLMServer:
    openai_env.on_chat("", "hi")
    return openai_env


def _baseline(folder: Path, config: str, name: str = "base.json") -> Path:
    write(folder / "promptfooconfig.yaml", config)
    saved = run_cli("eval", "--no-progress", "--save-baseline", name, "-o", "saved.json", cwd=folder)
    assert saved.code == 0, saved.err
    return folder / name


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_score_in_a_baseline_is_exit_2_naming_the_test(value: str, tmp_path: Path, model: LLMServer) -> None:
    path = _baseline(tmp_path, CONFIG)
    data = json.loads(path.read_text())
    test_id = next(k for k, v in data["tests"].items() if v["description"] == "two")
    path.write_text(_with_score(data, test_id, value))
    calls = len(model.requests)
    result = run_cli("eval", "--no-progress", "--baseline", "base.json", "-o", "out.json", cwd=tmp_path)
    shown = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf", "1e999": "inf"}[value]
    assert (result.code, result.err) == (2, f"ci-grade: error: base.json tests.{test_id}.score: test 'two' (id {test_id}) has a score of {shown}: "
                                            "a baseline's scores must be finite numbers\n")
    assert len(model.requests) == calls, "a broken baseline is found before any call"


def _with_score(data: dict, test_id: str, value: str) -> str:
    data["tests"][test_id]["score"] = "SCORE"
    return json.dumps(data).replace('"SCORE"', value)


def test_a_non_finite_score_in_a_results_file_used_as_baseline(tmp_path: Path, model: LLMServer) -> None:
    _baseline(tmp_path, CONFIG)
    data = json.loads((tmp_path / "saved.json").read_text())
    data["results"]["results"][2]["score"] = "SCORE"
    (tmp_path / "results.json").write_text(json.dumps(data).replace('"SCORE"', "NaN"))
    result = run_cli("compare", "results.json", "--baseline", "results.json", cwd=tmp_path)
    assert result.code == 2 and result.err.startswith("ci-grade: error: results.json: test 'three' (id "), result.err
    assert result.err.endswith("has a score of nan: a baseline's scores must be finite numbers\n")


def test_results_are_written_when_the_comparison_fails(tmp_path: Path, model: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever breaks in the comparison, the run's results JSON and JUnit are on disk."""
    _baseline(tmp_path, CONFIG)

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("the comparison broke")

    monkeypatch.setattr("ci_grade.gate.compare.compare", broken)
    result = run_cli("eval", "--no-progress", "--baseline", "base.json", "-o", "out.json", "out.junit.xml", cwd=tmp_path)
    assert result.code == 3 and "the comparison broke" in result.err
    assert len(json.loads((tmp_path / "out.json").read_text())["results"]["results"]) == 3
    assert (tmp_path / "out.junit.xml").read_text().count("<testcase") == 3


def test_another_configs_baseline_is_named_and_the_gate_judges_thresholds_only(tmp_path: Path, model: LLMServer) -> None:
    _baseline(tmp_path / "other", OTHER)
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    mismatch = "the baseline is not this config's: it shares 0 of this run's 3 tests (2 in the baseline), so the gate judged thresholds only"
    passing = run_cli("eval", "--no-progress", "--baseline", "other/base.json", "-o", "report.md", cwd=tmp_path)
    assert passing.code == 0, passing.err
    assert f"verdict: PASSED (gate passed): all 3 tests passed; {mismatch}\n" in passing.out
    report = (tmp_path / "report.md").read_text()
    assert "✓ **Passed**" in report and "\nall 3 tests passed; the baseline is not this config" in report and "it shares 0 of this run" in report
    assert "Not compared: the baseline given is not this config" in report

    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("{q: three}, assert: [{type: contains, value: hi}]", "{q: three}, assert: [{type: contains, value: bye}]"))
    failing = run_cli("eval", "--no-progress", "--baseline", "other/base.json", cwd=tmp_path)
    assert failing.code == 1, "a failing test fails the gate when the baseline is not this config's"
    assert f"verdict: FAILED (gate failed): 1 test failed; {mismatch}\n" in failing.out


def test_the_right_baseline_is_still_compared(tmp_path: Path, model: LLMServer) -> None:
    _baseline(tmp_path, CONFIG)
    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("{q: three}, assert: [{type: contains, value: hi}]", "{q: three}, assert: [{type: contains, value: bye}]"))
    result = run_cli("eval", "--no-progress", "--baseline", "base.json", cwd=tmp_path)
    assert result.code == 1 and "verdict: REGRESSED" in result.out and "not this config's" not in result.out


def test_the_share_of_tests_a_baseline_must_hold() -> None:
    """At least half of the smaller side's tests, and one: a suite that grew still matches its baseline."""
    base = baseline_from_run(run_of(*(row(f"t{i}") for i in range(4))))
    grown = compare(run_of(*(row(f"t{i}") for i in range(4)), *(row(f"new{i}") for i in range(10))), base, GatePolicy())
    assert grown.has_baseline and grown.baseline_mismatch is None
    half = compare(run_of(row("t0"), row("t1"), row("x0"), row("x1")), base, GatePolicy())
    assert half.has_baseline
    under = compare(run_of(row("t0"), row("x0"), row("x1"), row("x2"), row("x3, failing", 0.0)), base, GatePolicy())
    assert not under.has_baseline and under.baseline_mismatch == (
        "the baseline is not this config's: it shares 1 of this run's 5 tests (4 in the baseline), so the gate judged thresholds only")
    assert under.gate_failed and under.verdict == "failed"
    empty = compare(run_of(row("t0")), baseline_from_run(run_of()), GatePolicy())
    assert empty.baseline_mismatch is not None and not empty.has_baseline


def test_the_action_outputs_say_whether_the_baseline_was_compared(tmp_path: Path) -> None:
    base = baseline_from_run(run_of(row("a"), row("b")))
    for run, expected in ((run_of(row("a"), row("b")), "compared"), (run_of(row("x"), row("y")), "mismatched")):
        graded = Graded([Section("c", run, compare(run, base, GatePolicy()))], [tmp_path / "r.json"], tmp_path / "j.xml", tmp_path / "r.html", [])
        assert step_outputs(graded, tmp_path, "")["baseline"] == expected
    alone = run_of(row("a"))
    graded = Graded([Section("c", alone, compare(alone, None, GatePolicy()))], [tmp_path / "r.json"], tmp_path / "j.xml", tmp_path / "r.html", [])
    assert step_outputs(graded, tmp_path, "")["baseline"] == "none"


def test_a_fifo_named_as_baseline_is_refused_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "base.json")
    write(tmp_path / "results.json", json.dumps({"results": {"results": []}}))
    result = run_cli_process("compare", "results.json", "--baseline", "base.json", cwd=tmp_path, timeout=60)
    assert (result.code, result.err) == (2, "ci-grade: error: --baseline: base.json is a FIFO (named pipe), not a regular file\n")
