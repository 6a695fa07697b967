"""The gate end to end: `eval --save-baseline/--baseline`, `baseline save`, `compare`, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli, run_cli_process, write

CONFIG = """
prompts: ['{prompt} {{{{q}}}}']
providers: [echo]
tests:
  - description: reset link
    vars: {{q: password}}
    threshold: 0.5
    assert:
      - {{type: contains, value: 'https://acme.example/reset', metric: accuracy}}
      - {{type: contains, value: 30 minutes, metric: accuracy}}
      - {{type: icontains, value: password}}
      - {{type: contains, value: Reset}}
  - description: stays polite
    vars: {{q: thanks}}
    assert:
      - {{type: not-icontains, value: stupid, metric: tone}}
"""
GOOD = "Reset at https://acme.example/reset within 30 minutes."
REGRESSED = "Reset at https://acme.example/reset soon."
BROKEN = "Go away, stupid."


def project(tmp_path: Path, prompt: str) -> Path:
    write(tmp_path / "promptfooconfig.yaml", CONFIG.format(prompt=prompt))
    return tmp_path


def eval_(tmp_path: Path, prompt: str, *args: str):
    project(tmp_path, prompt)
    return run_cli("eval", "--no-progress", *args, cwd=tmp_path)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A project whose good run was saved as `.ci-grade/baseline.json` (and results.json)."""
    result = eval_(tmp_path, GOOD, "-o", "good.json", "--save-baseline", ".ci-grade/baseline.json")
    assert result.code == 0, result.err
    return tmp_path


def test_an_unwritable_save_baseline_exits_3_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("a file, not a folder")
    result = eval_(tmp_path, GOOD, "-o", "out.json", "--save-baseline", "afile/baseline.json")
    assert result.code == 3 and "cannot write afile/baseline.json" in result.err
    assert not (tmp_path / "out.json").exists(), "refused before anything ran"


def test_save_baseline_from_eval(saved: Path) -> None:
    data = json.loads((saved / ".ci-grade" / "baseline.json").read_text())
    assert data["version"] == 1 and data["info"]["config_hash"]
    tests = sorted(data["tests"].values(), key=lambda t: t["name"])
    assert [(t["name"], t["score"], t["status"]) for t in tests] == [("reset link", 1.0, "pass"), ("stays polite", 1.0, "pass")]
    assert [a["type"] for a in tests[0]["assertions"]] == ["contains", "contains", "icontains", "contains"]
    assert [t["output"] for t in tests] == [f"{GOOD} password", f"{GOOD} thanks"]  # each test's reply, for a later report's before and after
    (point,) = data["history"]  # the run's summary, for the trend
    assert (point["tests"], point["passed"], point["mean_score"]) == (2, 2, 1.0)


def test_regression_fails_the_gate_with_reports(saved: Path) -> None:
    result = eval_(saved, REGRESSED, "--baseline", ".ci-grade/baseline.json", "-o", "out/report.md", "-o", "out/results.junit.xml", "-o", "out/results.json")
    assert result.code == 1, result.out + result.err
    assert "2 passed, 0 failed, 0 errors" in result.out  # every test passes its own threshold...
    assert "verdict: REGRESSED (gate failed): 1 test regressed beyond tolerance (max drop 0.10)" in result.out  # ...but one got worse
    assert "] reset link: score 1.00 -> 0.75 (-0.25)" in result.out
    md = (saved / "out" / "report.md").read_text()
    assert md.startswith("### ✗ **Regressed** · 2/2 passed · 1 regressed\n\n**ci-grade**\n\n1 test regressed beyond tolerance (max drop 0.10)")
    assert "- **reset link** · echo" in md and "score 1.00 → 0.75 (▼ −0.25) · **regressed**" in md
    assert '  - ✗ contains (accuracy) 1.00 → 0.00: Expected output to contain "30 minutes"' in md
    assert "| metric accuracy | 1.00 | 0.50 | ▼ −0.50 | – | reproducible: exact · **regression** |" in md
    junit = (saved / "out" / "results.junit.xml").read_text()
    assert 'message="REGRESSION: score 1.00 -&gt; 0.75 (-0.25)' in junit and 'type="regression"' in junit
    assert json.loads((saved / "out" / "results.json").read_text())["results"]["stats"]["successes"] == 2


def test_fail_on_failures_reports_the_regression_but_passes(saved: Path) -> None:
    result = eval_(saved, REGRESSED, "--baseline", ".ci-grade/baseline.json", "--fail-on", "failures")
    assert result.code == 0, result.out + result.err
    assert "verdict: REGRESSED (gate passed): 1 test regressed beyond tolerance (max drop 0.10); " in result.out
    assert "(fail-on failures: reported, not gating)" in result.out


def test_a_wider_tolerance_accepts_the_drop(saved: Path) -> None:
    result = eval_(saved, REGRESSED, "--baseline", ".ci-grade/baseline.json", "--max-score-drop", "0.3", "--max-metric-drop", "0.6")
    assert result.code == 0, result.out
    assert "verdict: PASSED (gate passed): all 2 tests passed; no regressions against the baseline" in result.out


def test_failures_fail_the_gate_unless_fail_on_never(saved: Path) -> None:
    failing = eval_(saved, BROKEN, "--baseline", ".ci-grade/baseline.json")
    assert failing.code == 1
    assert "verdict: REGRESSED (gate failed): 2 tests regressed beyond tolerance" in failing.out
    never = eval_(saved, BROKEN, "--baseline", ".ci-grade/baseline.json", "--fail-on", "never", "-o", "report.md")
    assert never.code == 0
    assert "(fail-on never: reported, not gating)" in never.out
    assert "✗ **Regressed**" in (saved / "report.md").read_text()


def test_min_pass_rate_lets_some_failures_through(saved: Path) -> None:
    config = CONFIG.format(prompt=GOOD) + "  - description: impossible\n    vars: {q: x}\n    assert:\n      - {type: contains, value: never there}\n"
    write(saved / "promptfooconfig.yaml", config)
    strict = run_cli("eval", "--no-progress", "--baseline", ".ci-grade/baseline.json", cwd=saved)
    assert strict.code == 1 and "1 test failed" in strict.out
    lenient = run_cli("eval", "--no-progress", "--baseline", ".ci-grade/baseline.json", "--min-pass-rate", "60%", cwd=saved)
    assert lenient.code == 0, lenient.out
    assert "2 of 3 tests passed (pass rate 66.7%, minimum 60.0%)" in lenient.out
    assert "added (1):" in lenient.out and "] impossible" in lenient.out


def test_missing_baseline_judges_thresholds_only(tmp_path: Path) -> None:
    result = eval_(tmp_path, GOOD, "--baseline", "nowhere/baseline.json", "-o", "report.md")
    assert result.code == 0, result.err
    assert "warning: no baseline at nowhere/baseline.json: nowhere/baseline.json does not exist; the gate judges thresholds only" in result.err
    assert "baseline not found: nowhere/baseline.json does not exist; the gate judged thresholds only" in result.out
    md = (tmp_path / "report.md").read_text()
    assert "### ✓ **Passed** · 2/2 passed\n" in md and "\nall 2 tests passed; no baseline, thresholds only\n" in md
    assert "**Baseline not found**: nowhere/baseline.json does not exist; the gate judged thresholds only" in md


def test_a_mistyped_baseline_path_is_named_in_the_verdict_with_a_near_name(tmp_path: Path) -> None:
    assert eval_(tmp_path, GOOD, "-o", "results.json").code == 0
    result = run_cli("compare", "--baseline", "result.json", "results.json", "-o", "report.md", cwd=tmp_path)
    assert result.code == 0
    verdict = result.out[result.out.index("verdict: "):]  # the console's verdict block names it
    assert "baseline not found: result.json does not exist (did you mean 'results.json'?); the gate judged thresholds only" in verdict
    assert "**Baseline not found**: result.json does not exist (did you mean 'results.json'?)" in (tmp_path / "report.md").read_text()


def test_invalid_baseline_exits_2_before_running(tmp_path: Path) -> None:
    write(tmp_path / "baseline.json", '{"version": 1, "tests": {"x": {"score": "high"}}}')
    result = eval_(tmp_path, GOOD, "--baseline", "baseline.json", "-o", "results.json")
    assert result.code == 2
    assert result.err.startswith("ci-grade: error: baseline.json tests.x.test_id: invalid baseline")
    assert not (tmp_path / "results.json").exists()


def test_plain_markdown_table_without_baseline(tmp_path: Path) -> None:
    result = eval_(tmp_path, GOOD, "-o", "summary.md")
    assert result.code == 0
    assert (tmp_path / "summary.md").read_text().startswith("# ci-grade results")
    assert "verdict: PASSED (gate passed): all 2 tests passed; no baseline, thresholds only" in result.out


def test_baseline_save_and_compare_commands(saved: Path) -> None:
    saved_from_results = run_cli("baseline", "save", "good.json", "-o", "from-results.json", cwd=saved)
    assert saved_from_results.code == 0 and "saved a baseline of 2 tests to from-results.json" in saved_from_results.out
    assert json.loads((saved / "from-results.json").read_text())["tests"] == json.loads((saved / ".ci-grade/baseline.json").read_text())["tests"]
    assert eval_(saved, REGRESSED, "-o", "pr.json").code == 0  # no baseline: every test passes
    result = run_cli("compare", "--baseline", "from-results.json", "pr.json", "-o", "cmp/report.md", "-o", "cmp/junit.xml", "-o", "cmp/comparison.json", "--title", "PR evals", cwd=saved)
    assert result.code == 1, result.out + result.err
    assert result.out.startswith("verdict: REGRESSED (gate failed)")
    assert (saved / "cmp" / "report.md").read_text().startswith("### ✗ **Regressed**")
    assert "REGRESSION: score 1.00 -&gt; 0.75" in (saved / "cmp" / "junit.xml").read_text()
    comparison = json.loads((saved / "cmp" / "comparison.json").read_text())
    assert comparison["verdict"] == "regressed" and comparison["gate_failed"] is True
    assert [t["name"] for t in comparison["tests"] if t["regressed"]] == ["reset link"]
    never = run_cli("compare", "--baseline", "from-results.json", "pr.json", "--fail-on", "never", cwd=saved)
    assert never.code == 0
    # A results JSON works as a baseline directly, and a baseline compared with itself passes.
    same = run_cli("compare", "--baseline", "good.json", "good.json", cwd=saved)
    assert same.code == 0 and "verdict: PASSED" in same.out


def test_compare_against_the_base_branch_in_git(saved: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=saved, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(saved), "PATH": "/usr/bin:/bin"})

    git("init", "-q", "-b", "main")
    git("add", ".ci-grade/baseline.json")
    git("commit", "-q", "-m", "baseline")
    (saved / ".ci-grade" / "baseline.json").unlink()
    result = eval_(saved, REGRESSED, "--baseline", "git:main:.ci-grade/baseline.json")
    assert result.code == 1 and "verdict: REGRESSED" in result.out
    missing = eval_(saved, REGRESSED, "--baseline", "git:origin/main:.ci-grade/baseline.json", "-o", "report.md")
    assert missing.code == 0 and "no baseline at git:origin/main" in missing.err
    # a ref the clone does not hold (actions/checkout fetches one commit by default) says how to fetch it
    assert "baseline not found: origin/main is not in this clone: a shallow checkout holds only the commit it checked out; set fetch-depth: 0 on actions/checkout (or run git fetch origin main)" in missing.out
    assert "set fetch-depth: 0 on actions/checkout" in (saved / "report.md").read_text()
    elsewhere = eval_(saved, REGRESSED, "--baseline", "git:main:.ci-grade/other.json")
    assert "baseline not found: .ci-grade/other.json is not in main (no baseline committed there yet?)" in elsewhere.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("compare", "--baseline", "b.json", "missing.json"), "results file missing.json does not exist"),
        (("compare", "results.txt"), "not valid JSON"),
        (("compare", "huge.json"), "huge.json: not a results file"),
        (("compare", "deep.json"), "deep.json: not a results file: arrays or objects nested too deep"),
        (("compare", "good.json", "-o", "report.csv"), "unsupported output type (use one of .junit.xml, .xml, .md, .html, .json)"),
        (("compare", "good.json", "--min-pass-rate", "80"), "expected a fraction from 0 to 1"),
        (("compare", "good.json", "--max-score-drop", "-1"), "expected a score drop from 0 to 1"),
        (("compare", "good.json", "--max-errors", "many"), "expected a whole number"),
        (("compare", "good.json", "--fail-on", "sometimes"), "invalid choice"),
        (("compare", "--baseline", "git:main", "good.json"), "expected git:REF:PATH"),
        (("baseline", "save", "nothing.json"), "nothing.json does not exist"),
        (("baseline",), "usage"),
    ],
)
def test_usage_errors_exit_2(saved: Path, args: tuple[str, ...], message: str) -> None:
    write(saved / "results.txt", "not json")
    write(saved / "huge.json", '{"results": {"results": [{"latencyMs": 1' + "0" * 400 + "}]}}")
    write(saved / "deep.json", '{"results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run_cli(*args, cwd=saved)
    assert result.code == 2
    assert message in result.err


def test_exit_codes_of_the_real_process(saved: Path) -> None:
    project(saved, REGRESSED)
    regressed = run_cli_process("eval", "--no-progress", "--baseline", ".ci-grade/baseline.json", cwd=saved)
    assert regressed.code == 1 and "Traceback" not in regressed.err
    assert "regress" in regressed.out.lower()  # the verdict is printed: the process did not crash
    assert run_cli_process("compare", "--baseline", ".ci-grade/baseline.json", "good.json", cwd=saved).code == 0
    assert run_cli_process("compare", "--baseline", ".ci-grade/baseline.json", "nope.json", cwd=saved).code == 2


QUICKSTART = REPO / "examples" / "quickstart"


def test_quickstart_shows_a_regression_against_its_committed_baseline(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli_process(  # a real process, as the README runs it: the exit code is the gate's
        "eval", "-c", "examples/quickstart/promptfooconfig.yaml", "-o", str(out / "results.json"), "-o", str(out / "results.junit.xml"),
        "-o", str(out / "summary.md"), "--baseline", "examples/quickstart/baseline.json", "--no-progress", cwd=REPO,
    )
    assert result.code == 1, result.out + result.err
    # reproducible results: the drop is a fact, so the newly failing test and the measures regress
    assert "verdict: REGRESSED (gate failed): 1 test regressed beyond tolerance (max drop 0.10); 3 measures dropped beyond tolerance (max drop 0.02): mean score, pass rate, 'accuracy'" in result.out
    assert result.out.count("double charge offers a refund and a human: score 1.00 -> 0.33 (-0.67); newly failing (passed in the baseline)") == 1
    md = (out / "summary.md").read_text()
    assert "✗ **Regressed**" in md and "\n1 test regressed beyond tolerance (max drop 0.10)" in md
    # 7 of 9 accuracy assertions pass, as promptfoo reports it (the mean of the tests' values was 0.83).
    assert "| metric accuracy | 1.00 | 0.78 | ▼ −0.22 | – | reproducible: exact · **regression** |" in md
    assert md.count("- **double charge offers a refund and a human** · support-bot") == 1
    assert "score 1.00 → 0.33 (▼ −0.67) · **regressed** · **new failure**" in md
    # the baseline keeps the previous reply: the regression shows it before the new one
    assert "\n    ```diff\n    - I'm sorry about the double charge. Refunds for duplicate payments" in md
    assert "…\n    + You can see your invoices and change your payment method under Settings > Billing.\n    ```\n" in md  # lines cut to 160
    assert (out / "results.junit.xml").read_text().count('type="regression"') == 1


def test_quickstart_baseline_is_what_the_previous_replies_score(tmp_path: Path) -> None:
    """The committed baseline is reproduced by the bot's previous reply to the double-charge question."""
    copy = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, copy)
    config = copy / "promptfooconfig.yaml"
    regressed = "providerOutput: You can see your invoices and change your payment method under Settings > Billing."
    previous = (
        "providerOutput: \"I'm sorry about the double charge. Refunds for duplicate payments are issued automatically within "
        "5 business days. If you would like, I can hand this over to a human billing agent.\""
    )
    assert regressed in config.read_text()
    config.write_text(config.read_text().replace(regressed, previous))
    result = run_cli("eval", "--no-progress", "--baseline", "baseline.json", "--save-baseline", "fresh.json", cwd=copy)
    assert result.code == 0, result.out
    assert "verdict: PASSED (gate passed): all 6 tests passed; no regressions against the baseline" in result.out
    committed, fresh = (json.loads((copy / name).read_text()) for name in ("baseline.json", "fresh.json"))
    assert committed["info"]["config_hash"] == fresh["info"]["config_hash"]
    assert committed["info"]["config_files"] == ["examples/quickstart/promptfooconfig.yaml"]
    assert committed["tests"] == fresh["tests"]
