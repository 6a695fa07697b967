"""The Markdown report: verdict, score table, sections, collapsing, totals, marker, size limits."""

from __future__ import annotations

import re

import pytest

from ci_grade import redact
from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.redact import Redactor
from ci_grade.report.markdown import render_markdown
from ci_grade.results.models import AssertionResult
from tests.results_factory import row, run_of


def assertions(reason: str = "") -> list[AssertionResult]:
    """A passing `contains`, then a `regex` that fails with `reason` (passes without one)."""
    return [
        AssertionResult(type="contains", metric="accuracy", status="pass", score=1.0),
        AssertionResult(type="regex", metric="accuracy", status="fail" if reason else "pass", score=0.0 if reason else 1.0, reason=reason),
    ]


def scenario():
    base = run_of(
        row("reset link", 1.0, metrics={"accuracy": 1.0}, assertions=assertions()),
        row("refund", 1.0, metrics={"accuracy": 1.0}),
        row("poem", 0.0, metrics={"accuracy": 0.0}),
        row("legacy", 1.0),
        row("old title", 1.0, fingerprint="fp-renamed"),
        commit="0123456789abcdef0123", created_at="2026-11-20T10:00:00+00:00",
    )
    head = run_of(
        row("reset link", 0.5, "fail", metrics={"accuracy": 0.5}, assertions=assertions("Expected output to match /30 minutes/"), output="Open the reset page."),
        row("refund", 1.0, metrics={"accuracy": 1.0}),
        row("poem", 1.0, metrics={"accuracy": 1.0}),
        row("brand new", 1.0),
        row("new title", 1.0, fingerprint="fp-renamed"),
        row("flaky grader", 0.0, "error", error="grader returned 503"),
        ci_grade_version="0.1.0", description="Acme support bot",
    )
    base.stats.token_usage.total = 1000
    base.stats.cost = 0.0123
    head.stats.token_usage.total = 1200
    head.stats.grading_token_usage.total = 300
    head.stats.cost = 0.0123
    return head, compare(head, baseline_from_run(base), GatePolicy())


def test_report_layout_and_content() -> None:
    run, comparison = scenario()
    md = render_markdown(run, comparison, title="LLM evals")
    lines = md.splitlines()
    # the first line: verdict, counts and cost; then the title and the run's commit
    assert lines[0] == "### ✗ **Failed** · 4/6 passed · 1 regressed · 1 fixed · 1 error · $0.0123"
    assert lines[2] == "**LLM evals**: Acme support bot"
    # with a baseline, the newly failing test is a regression, not a plain failure
    assert lines[4].startswith("1 error (max 0); 1 test regressed beyond tolerance (max drop 0.10)")
    assert "Compared with the baseline from commit 0123456789ab (2026-11-20T10:00:00+00:00). Gate: fail-on regressions, alpha 0.05, max score drop 0.10, max metric drop 0.02, max errors 0." in md
    # base, head and delta of the same 4 tests the evidence judged (not 4/5 passing before and 4/6 now)
    assert "| Pass rate | 75.0% | 75.0% | ＝ 0 pts | – | reproducible: exact · no drop |" in md
    assert "| **Mean score** | 0.75 | 0.88 | ▲ +0.12 | – | reproducible: exact · no drop |" in md  # the renamed test counts as the test it was
    # Per assertion, as promptfoo aggregates named metrics: "reset link" has two accuracy assertions,
    # so it counts twice: (1 x 2 + 1 + 0) / 4 and (0.5 x 2 + 1 + 1) / 4 (the mean of tests gave 0.67 -> 0.83).
    assert "| metric accuracy | 0.75 | 0.75 | ＝ 0.00 | – | reproducible: exact · no drop |" in md
    assert "Changes are judged over the 4 tests scored in both runs (renamed tests as the tests they were;" in md
    sections = re.findall(r"^#### (.+)$", md, re.M)
    assert sections == [
        "Regressions and new failures (1)", "Errors (1)", "Fixes (1)", "Renamed tests (1)", "Added tests (2)", "Removed tests (1)",
        "Trend: the base branch's last run, then this one",  # the baseline's one run, then this one's point
    ]
    assert '  x-axis ["0123456", "this run"]\n  y-axis "%" 0 --> 100\n  bar [80.0, 66.7]\n  line [80.0, 90.0]' in md
    regression = md.split("#### Regressions and new failures (1)")[1].split("####")[0]
    assert "- **reset link** · bot · prompt\n  score 1.00 → 0.50 (▼ −0.50) · **regressed** · **new failure**" in regression
    assert "  - ✗ regex (accuracy) 1.00 → 0.00: Expected output to match /30 minutes/" in regression
    assert "  - output, baseline (−) and this run (+):\n    ```diff\n    - ok\n    + Open the reset page.\n    ```" in regression
    assert "contains" not in regression  # passing assertions are not listed
    assert "- **flaky grader** · bot · prompt\n  1 of 1 run errored\n  - grader returned 503" in md
    assert "- **new title** (was old title) · bot · prompt\n  score 1.00 → 1.00 (＝ 0.00) · pass" in md
    assert "- **legacy** · bot · prompt\n  score was 1.00" in md
    assert md.rstrip().endswith("<sub>Tokens 1,500 (provider 1,200, grading 300) (▲ 500) · cost $0.0123 · duration 1.5s · 6 rows · ci-grade 0.1.0</sub>")


@pytest.mark.parametrize(("verdict_run", "expected"), [
    ((1.0, 1.0), ("### ✓ **Passed** · 1/1 passed", "all 1 test passed; no regressions against the baseline")),
    ((1.0, 0.6), ("### ✗ **Regressed** · 1/1 passed · 1 regressed", "1 test regressed beyond tolerance (max drop 0.10); mean score dropped 1.00 → 0.60 (-0.40, max drop 0.02)")),
])
def test_verdict_lines(verdict_run: tuple[float, float], expected: tuple[str, str]) -> None:
    before, after = verdict_run
    run = run_of(row("a", after, "pass"))
    comparison = compare(run, baseline_from_run(run_of(row("a", before))), GatePolicy())
    lines = render_markdown(run, comparison).splitlines()
    assert (lines[0], lines[4]) == expected


def test_without_baseline_the_report_says_so() -> None:
    run = run_of(row("a", 1.0, metrics={"tone": 0.9}), row("b", 0.0, reason="wrong answer"))
    md = render_markdown(run, compare(run, None, GatePolicy(min_pass_rate=0.9, max_errors=2)))
    assert "No baseline: the gate judged thresholds only. Gate: fail-on regressions, alpha 0.05, max score drop 0.10, max metric drop 0.02, min pass rate 90%, max errors 2." in md
    assert "| | Score |" in md and "| metric tone | 0.90 |" in md and "| Pass rate | 50.0% (1/2) |" in md
    assert "#### Failing tests (1)" in md and "Regressions" not in md
    assert "Base" not in md


def test_repeats_show_spread_pass_counts_and_inconclusive_drops() -> None:
    base = run_of(*[row("a", s, "pass", repeat=i, sampled=True) for i, s in enumerate([1.0, 0.4, 1.0, 0.4])])
    head = run_of(*[row("a", s, "pass", repeat=i, sampled=True) for i, s in enumerate([0.4, 0.8, 0.4, 0.6])])
    comparison = compare(head, baseline_from_run(base), GatePolicy(max_metric_drop=1.0))
    md = render_markdown(head, comparison)
    assert "#### Inconclusive drops (1)" in md
    assert "score 0.70 ±0.35 (n=4) → 0.55 ±0.19 (n=4) (▼ −0.15) · inconclusive · passed 4/4 [0.51, 1.00] → 4/4 [0.51, 1.00]" in md
    assert "✓ **Passed**" in md


def test_more_than_ten_items_collapse_into_details() -> None:
    base = run_of(*[row(f"t{i:02d}", 1.0) for i in range(25)])
    head = run_of(*[row(f"t{i:02d}", 0.0) for i in range(25)])
    md = render_markdown(head, compare(head, baseline_from_run(base), GatePolicy()))
    section = md.split("#### Regressions and new failures (25)")[1]
    before, details = section.split("<details><summary>15 more regressed or newly failing tests</summary>", 1)
    assert before.count("\n- **") == 10 and "t09" in before and "t10" not in before
    assert details.count("\n- **") == 15 and details.index("</details>") > details.index("t24")
    assert md.count("<details>") == md.count("</details>") == 2  # the statistics, then the 15


def test_long_reports_are_cut_to_the_limit_with_a_note() -> None:
    base = run_of(*[row(f"test {i}", 1.0) for i in range(400)])
    head = run_of(*[row(f"test {i}", 0.0, reason="x" * 900) for i in range(400)])
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    full = render_markdown(head, comparison, max_chars=10_000_000)
    assert "not shown" not in full and full.count("\n- **") == 400
    for limit in (65_536, 20_000, 3_000):
        md = render_markdown(head, comparison, max_chars=limit, marker="<!-- ci-grade:sticky-comment abc -->")
        assert len(md) <= limit
        assert md.rstrip().endswith("<!-- ci-grade:sticky-comment abc -->")
        assert md.count("<details>") == md.count("</details>")
        shown = md.count("\n- **")
        assert 0 < shown < 400
        assert f"_… {400 - shown} more regressed or newly failing tests not shown here (size limit); the results file lists every test._" in md
        assert md.splitlines()[0] == "### ✗ **Regressed** · 0/400 passed · 400 regressed"
        assert md.splitlines()[4].startswith("400 tests regressed beyond tolerance")


def test_byte_limit_counts_utf8() -> None:
    base = run_of(*[row(f"テスト {i}", 1.0) for i in range(300)])
    head = run_of(*[row(f"テスト {i}", 0.0, reason="失敗" * 200) for i in range(300)])
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    md = render_markdown(head, comparison, max_chars=1_000_000, max_bytes=30_000)
    assert len(md.encode()) <= 30_000 < len(render_markdown(head, comparison, max_chars=1_000_000).encode())


def test_tiny_limits_still_give_the_verdict() -> None:
    run = run_of(*[row(f"t{i}", 0.0) for i in range(50)])
    comparison = compare(run, None, GatePolicy())
    md = render_markdown(run, comparison, max_chars=300)
    assert len(md) <= 300
    assert md.startswith("✗ **Failed**: 50 tests failed")
    assert "does not fit here" in md


def test_secrets_are_masked() -> None:
    run = run_of(row("leaky", 0.0, reason="the key is sk-secret-123456", output="token sk-secret-123456"))
    with redact.use(Redactor(["sk-secret-123456"])):
        md = render_markdown(run, compare(run, None, GatePolicy()))
    assert "sk-secret" not in md and "the key is \\*\\*\\*" in md


def test_secrets_from_the_environment_are_masked_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-abcdef123")
    run = run_of(row("leaky", 0.0, reason="echo sk-env-abcdef123"))
    md = render_markdown(run, compare(run, None, GatePolicy()))
    assert "sk-env-abcdef123" not in md and "echo \\*\\*\\*" in md


def test_marker_forms() -> None:
    run = run_of(row("a", 1.0))
    comparison = compare(run, None, GatePolicy())
    assert render_markdown(run, comparison, marker="<!-- sticky:one -->").endswith("\n<!-- sticky:one -->\n")
    assert render_markdown(run, comparison, marker="pr report").endswith("\n<!-- pr report -->\n")
    hostile = render_markdown(run, comparison, marker="x --> <script>alert(1)</script> <!--")
    assert hostile.endswith("\n<!-- x - -&gt; &lt;script&gt;alert(1)&lt;/script&gt; &lt;! -->\n")
    assert "<script>" not in hostile


def test_the_smallest_report_is_the_verdict_with_as_much_of_the_reason_as_fits() -> None:
    run = run_of(*[row(f"t{i}", 0.0) for i in range(50)])
    comparison = compare(run, None, GatePolicy())
    comparison.reason = " ".join(f"reason{i}" for i in range(300))
    note = "\n\n_The full report does not fit here; see the job summary or the results file._\n"
    marker = "<!-- ci-grade:sticky-comment abc -->"
    for limit in (400, 300, 200):
        md = render_markdown(run, comparison, max_chars=limit, marker=marker)
        assert md.startswith("✗ **Failed**: reason0 reason1") and md.endswith(f"{note}\n{marker}\n")
        assert limit - 2 <= len(md) <= limit, (limit, len(md))  # the reason is cut to fill the room, no more
    whole = render_markdown(run, comparison.model_copy(update={"reason": "short"}), max_chars=200, marker=marker)
    assert whole == f"✗ **Failed**: short{note}\n{marker}\n"
    assert render_markdown(run, comparison, max_chars=10) == "✗ **Failed"
    assert render_markdown(run, comparison, max_chars=100, max_bytes=10) == "✗ **Fail"  # the glyph is 3 bytes
