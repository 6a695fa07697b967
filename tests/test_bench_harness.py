"""The benchmark harness measures what it claims: its suites grade as it expects, its memory
figure is the child's, and a miscounted run is caught. (No timing is asserted here.)"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO, run_cli
from tests.servers.llm_server import LLMServer


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    """The harness's `suites` and `runner` modules (bench/ scripts import each other by name)."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    return importlib.import_module("suites"), importlib.import_module("runner")


def stats_of(path: Path) -> tuple[int, int, int]:
    stats = json.loads(path.read_text())["results"]["stats"]
    return stats["successes"], stats["failures"], stats["errors"]


def test_deterministic_suite_grades_as_expected(bench: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    suites, runner = bench
    suite = suites.write_deterministic(tmp_path, 20)
    out = tmp_path / "results.json"
    result = run_cli("eval", "-c", str(suite.path), "-o", str(out), "--no-progress")
    assert result.code == 1, result.err  # two failing tests fail the gate
    assert (suite.passes, suite.failures) == (18, 2)
    assert stats_of(out) == (18, 2, 0)
    assert runner.check_results(suite, out) is None
    rows = json.loads(out.read_text())["results"]["results"]
    failed = [row for row in rows if not row["success"]]
    assert len(failed) == 2 and all(row["vars"]["question"].startswith("why was my shipping") for row in failed)
    assert all(len(row["gradingResult"]["componentResults"]) == 3 for row in rows)


def test_grader_suite_calls_the_grader_once_per_test(bench: tuple[ModuleType, ModuleType], tmp_path: Path, openai_env: LLMServer) -> None:
    suites, runner = bench
    openai_env.on_chat(None, suites.GRADER_VERDICT)
    suite = suites.write_grader(tmp_path, 3)
    out = tmp_path / "results.json"
    result = run_cli("eval", "-c", str(suite.path), "-o", str(out), "--no-progress")
    assert result.code == 0, result.err
    assert stats_of(out) == (3, 0, 0)
    assert len(openai_env.requests_to("/v1/chat/completions")) == 3
    assert runner.check_results(suite, out) is None


def test_check_rejects_a_miscounted_or_missing_result(bench: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    suites, runner = bench
    suite = suites.write_deterministic(tmp_path, 10)
    out = tmp_path / "results.json"
    assert runner.check_results(suite, out) == "no results file written"
    out.write_text(json.dumps({"results": {"stats": {"successes": 10, "failures": 0, "errors": 0}}}))
    assert "expected 9 passes, 1 failures" in str(runner.check_results(suite, out))


def test_measure_reports_the_childs_peak_memory_and_exit_code(bench: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    _, runner = bench
    code = "import sys; block = bytearray(96 * 2**20); block[::4096] = b'x' * len(block[::4096]); print('done'); sys.exit(3)"
    big = runner.measure([sys.executable, "-c", code], {}, tmp_path)
    small = runner.measure([sys.executable, "-c", "print('done')"], {}, tmp_path)
    assert big.returncode == 3 and small.returncode == 0
    assert big.log.strip() == "done"
    assert big.peak_rss_mb >= 96 > small.peak_rss_mb
    assert big.cpu > 0
