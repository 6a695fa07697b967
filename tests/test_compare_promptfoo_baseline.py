"""A results file written by promptfoo itself (no ci-grade ids) works as a baseline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, write

CONFIG = """
prompts: ['Reply: {{answer}}']
providers: [echo]
tests:
  - description: greets politely
    vars: {answer: 'Hello and welcome'}
    threshold: 0.5
    assert:
      - {type: contains, value: Hello}
      - {type: contains, value: welcome}
  - vars: {answer: 'Goodbye'}
    assert: [{type: contains, value: Goodbye}]
"""


def _as_promptfoo_wrote_it(path: Path, score_for_first: float) -> Path:
    """Strip everything ci-grade adds, as in a file from `promptfoo eval -o`."""
    data = json.loads(path.read_text())
    data.pop("ciGrade")
    for row in data["results"]["results"]:
        row.pop("testId")
        row.pop("repeatIndex")
        row["metadata"].pop("ciGrade")
        for component in row["gradingResult"]["componentResults"]:
            component["metadata"].pop("ciGrade")
    first = data["results"]["results"][0]
    first["score"] = first["gradingResult"]["score"] = score_for_first
    out = path.with_name("promptfoo-results.json")
    out.write_text(json.dumps(data))
    return out


def test_promptfoo_results_match_by_name_prompt_and_provider(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert run_cli("eval", "-o", "head.json", "--no-progress", cwd=tmp_path).code == 0
    baseline = _as_promptfoo_wrote_it(tmp_path / "head.json", 1.0)
    write(tmp_path / "promptfooconfig.yaml", CONFIG.replace("Hello and welcome", "Hello"))

    result = run_cli("eval", "-o", "now.json", "-o", "report.md", "--no-progress", "--baseline", str(baseline), cwd=tmp_path)

    assert result.code == 1, result.out + result.err
    report = (tmp_path / "report.md").read_text()
    assert "greets politely" in report
    assert "added" not in report.lower() and "removed" not in report.lower()


def test_unchanged_promptfoo_baseline_passes(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    assert run_cli("eval", "-o", "head.json", "--no-progress", cwd=tmp_path).code == 0
    baseline = _as_promptfoo_wrote_it(tmp_path / "head.json", 1.0)
    result = run_cli("compare", "--baseline", str(baseline), "head.json", cwd=tmp_path)
    assert result.code == 0, result.out + result.err


def test_tests_sharing_a_description_in_promptfoos_file_stay_apart(tmp_path: Path) -> None:
    # The file promptfoo 0.123.1 wrote, with two tests given one description: "passes" (n=1,
    # passing) and "passes" (n=3, failing in both runs, a known failure). They are two tests of
    # two prompts each, not one test run twice, and the unchanged suite passes against them.
    fixtures = Path(__file__).parent / "fixtures" / "promptfoo-results"
    config = (fixtures / "promptfooconfig.yaml").read_text().replace("description: fails on both", "description: passes")
    write(tmp_path / "promptfooconfig.yaml", config)
    data = json.loads((fixtures / "promptfoo-results.json").read_text())
    for row in data["results"]["results"]:
        if row["testCase"].get("description") == "fails on both":
            row["testCase"]["description"] = "passes"
    (tmp_path / "promptfoo.json").write_text(json.dumps(data))
    result = run_cli("eval", "--no-progress", "--baseline", "promptfoo.json", "-o", "r.md", cwd=tmp_path)
    assert result.code == 0, result.out  # the failing tests fail in both runs: known failures
    report = (tmp_path / "r.md").read_text()
    assert "Added tests" not in report and "Removed tests" not in report
    assert "Known failures (failing in the baseline too)" in report
    saved = run_cli("baseline", "save", "promptfoo.json", "-o", "b.json", cwd=tmp_path)
    assert saved.code == 0, saved.err
    tests = json.loads((tmp_path / "b.json").read_text())["tests"]
    assert len(tests) == 8 and {t["repeats"] for t in tests.values()} == {1}
