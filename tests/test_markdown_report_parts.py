"""Parts of the Markdown report pinned one by one: section headings with a baseline, the
percentage-point deltas, the evidence column, spreads of two repeats, empty values, the hidden
marker comment, and how a report too long for its limit is cut."""

from __future__ import annotations

import pytest

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import CaseDelta, GatePolicy, MetricDelta
from ci_grade.report.markdown import (
    _Budget,
    _delta,
    _delta_pct,
    _evidence,
    _fit,
    _Section,
    _spread,
    render_markdown,
)
from ci_grade.report.markdown_escape import Escaper, Md
from ci_grade.results.models import EvalRun
from tests.results_factory import row, run_of


def test_known_failures_and_other_failing_tests_have_their_own_sections() -> None:
    base = run_of(row("a", 1.0), row("known", 0.0))
    head = run_of(row("a", 1.0), row("known", 0.0), row("added", 0.0))
    md = render_markdown(head, compare(head, baseline_from_run(base), GatePolicy()))
    other = md.index("#### Other failing tests (1)\n\n- **added**")
    known = md.index("#### Known failures (failing in the baseline too) (1)\n\n<details><summary>1 known failure</summary>\n\n- **known**")
    assert other < known < md.index("#### Added tests (1)")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.005, "▲ +0.5 pts"), (-0.005, "▼ −0.5 pts"), (0.25, "▲ +25.0 pts"), (0.0004, "＝ 0 pts"), (None, "–")],
)
def test_pass_rate_deltas_in_points(value: float | None, shown: str) -> None:
    assert _delta_pct(value) == shown


@pytest.mark.parametrize(
    ("measure", "shown"),
    [
        (MetricDelta(name="m", base=0.9, head=0.8, method="paired t", p_value=0.2, clusters=4), "paired t p=0.2, 4 clusters · no significant change"),
        (MetricDelta(name="m", base=0.9, head=0.8, method="paired t", p_value=0.2, inconclusive=True, mde=0.3), "paired t p=0.2 · inconclusive (MDE 0.30)"),
        (MetricDelta(name="m", base=0.9, head=0.8, method="paired t", p_value=0.2, inconclusive=True, mde=0.3, tests_needed=40), "paired t p=0.2 · inconclusive (MDE 0.30, ~40 tests to settle)"),
        (MetricDelta(name="m", base=0.9, head=0.8, method="exact", p_value=0.0), "reproducible: exact · dropped within the margin"),
        (MetricDelta(name="m", base=0.8, head=0.8, method="exact", p_value=1.0), "reproducible: exact · no drop"),
        (MetricDelta(name="m", base=0.9, head=0.8, method="paired t", p_value=0.01, significant=True), "paired t p=0.01 · significant, within the margin"),
        (MetricDelta(name="m", base=0.9, head=0.8, method="paired t", p_value=0.2, p_adjusted=0.4), "paired t p=0.2 (Holm 0.4) · no significant change"),
    ],
)
def test_the_evidence_column(measure: MetricDelta, shown: str) -> None:
    assert _evidence(measure) == shown


def test_spread_is_shown_from_two_repeats() -> None:
    case = CaseDelta(test_id="a", base_spread=0.25, base_repeats=2, head_spread=0.5, head_repeats=1)
    assert (_spread(case, "base"), _spread(case, "head")) == (" ±0.25 (n=2)", "")


def test_nothing_renders_as_nothing() -> None:
    assert Escaper().inline(None) == ""


@pytest.mark.parametrize(
    ("marker", "shown"),
    [
        ("<!-- ci-grade:sticky-comment abc -->", "<!-- ci-grade:sticky-comment abc -->"),
        ("<!--x-->", "<!--x-->"),
        ("<!--a>-->", "<!-- &lt;!- -a&gt;- -&gt; -->"),  # a '>' just before the end is rebuilt, not kept
        ("<!--a--->", "<!-- &lt;!- -a- --&gt; -->"),  # as is text ending in '-'
    ],
)
def test_marker_comments(marker: str, shown: str) -> None:
    assert Escaper.marker(marker) == shown


def test_cutting_keeps_items_by_their_estimated_size_without_trimming_one_by_one() -> None:
    sections = [_Section("A", [Md("a" * 10)] * 5), _Section("B", [Md("b" * 10)] * 5)]
    renders = []

    def render() -> str:  # a body of 100 characters plus each kept item and its newline
        renders.append(1)
        return "x" * (100 + sum(11 * s.keep for s in sections))

    comparison = compare(run_of(row("a", 1.0)), None, GatePolicy())
    text = _fit(sections, render, _Budget(max_chars=166), comparison, Escaper(), "")
    assert len(text) == 166 and [s.keep for s in sections] == [5, 1]
    assert len(renders) == 2  # the bare body, then the chosen items: no render per dropped item
    for section in sections:
        section.keep = 3
    _fit(sections, render, _Budget(max_chars=155), comparison, Escaper(), "")
    assert [s.keep for s in sections] == [5, 0]  # nothing of B while A is not complete


def test_cutting_counts_the_details_block_that_opens_after_ten_items() -> None:
    sections = [_Section("A", [Md("a" * 10)] * 12)]

    def render() -> str:
        return "x" * (100 + 11 * sections[0].keep)

    comparison = compare(run_of(row("a", 1.0)), None, GatePolicy())
    _fit(sections, render, _Budget(max_chars=300), comparison, Escaper(), "")
    assert sections[0].keep == 10  # the eleventh item would open <details>: 91 more than 90 left


def test_a_missing_delta_is_a_dash() -> None:
    assert _delta(None) == "–" and _delta(0.001) == "＝ 0.00" and _delta(-0.25) == "▼ −0.25"


def test_the_smallest_report_quotes_at_most_800_characters_of_the_reason() -> None:
    run = run_of(row("a", 0.0))
    comparison = compare(run, None, GatePolicy())
    comparison.reason = "x" * 1000
    first_line = render_markdown(run, comparison, max_chars=1000).split("\n")[0]
    assert first_line == "✗ **Failed**: " + "x" * 799 + "…"


def test_title_flaky_section_long_metric_names_and_the_pass_rate_row() -> None:
    base = run_of(*[row(n, 1.0, sampled=True, metrics={"m" * 100: 0.9}) for n in "abcd"])
    head = run_of(*[row(n, 0.0 if n == "a" else 0.75, sampled=True, metrics={"m" * 100: 0.9}) for n in "abcd"])
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    assert not comparison.same_measure
    md = render_markdown(head, comparison)
    assert md.startswith("### ✓ **Passed** · 3/4 passed\n\n**ci-grade**\n")
    assert "#### Newly failing, not significant (sampled) (1)" in md
    assert "| metric " + "m" * 59 + "… |" in md
    assert "| | Base | Head | Δ | 90% CI | Evidence |" in md  # 1 - 2 alpha: below zero when the one-sided test finds a drop
    assert "| Pass rate | 100.0% | 75.0% | ▼ −25.0 pts | [−83.8, +33.8] pts |" in md
    row_end = f"| {_evidence(comparison.pass_rate, points=True)} |"
    assert "MDE 83.3 pts" in row_end  # the pass rate's MDE in points, as its delta
    assert row_end != f"| {_evidence(comparison.mean_score)} |"
    assert next(line for line in md.splitlines() if line.startswith("| Pass rate ")).endswith(row_end)


def test_a_sampled_tests_flip_shows_its_exact_p_value() -> None:
    """A test that passed 5/5 repeats and now fails 5/5: its line carries the pass counts and
    Fisher's one-sided p (1/252 = 0.00397), written to two significant digits."""
    base = run_of(*(row("flaky", 1.0, sampled=True, repeat=r) for r in range(5)), row("steady", 1.0), repeat=5)
    head = run_of(*(row("flaky", 0.0, sampled=True, repeat=r) for r in range(5)), row("steady", 1.0), repeat=5)
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    (case,) = [c for c in comparison.tests if c.name == "flaky"]
    assert case.p_value is not None and abs(case.p_value - 1 / 252) < 1e-9
    md = render_markdown(head, comparison)
    assert "passed 5/5" in md and "→ 0/5" in md and " · p=0.004" in md


def test_the_cost_table_shows_each_change_against_the_baseline_as_a_percentage() -> None:
    from ci_grade.report.costs import cost_table

    def run(cost: float, latency: float) -> EvalRun:
        rows = [row(f"t{i}", provider="bot") for i in range(2)]
        for r in rows:
            r.cost, r.latency_ms = cost, latency
        return run_of(*rows)

    base, head = run(0.002, 100.0), run(0.003, 150.0)
    table = cost_table(compare(head, baseline_from_run(base), GatePolicy()), Escaper())
    assert "| Cost per test | $0.002 | $0.003 | +50% |" in table and "| Cost per run | $0.004 | $0.006 | +50% |" in table
    assert "| bot latency p50 / p95 | 100 ms / 100 ms | 150 ms / 150 ms | +50% / +50% |" in table


def test_a_diff_of_exactly_the_shown_lines_says_nothing_more() -> None:
    from ci_grade.report.output_diff import MAX_LINES, output_diff

    half = (MAX_LINES - 1) // 2  # a hunk header, `half` removed lines and `half + 1` added ones: MAX_LINES lines
    before, after = "\n".join(f"old {i}" for i in range(half)), "\n".join(f"new {i}" for i in range(half + 1))
    shown = output_diff(before, after, Escaper())
    assert shown.count("\n    - old") == half and shown.count("\n    + new") == half + 1 and "more changed line" not in shown
    longer = output_diff(before + "\nold x", after, Escaper())
    assert "… 1 more changed line\n" in longer


def test_a_report_of_several_configs_ends_with_the_sticky_comments_marker_only_when_asked() -> None:
    from ci_grade.report.sections import Section, render_report

    base, head = run_of(row("a"), row("b")), run_of(row("a"), row("b", 0.0))
    sections = [Section(name, head, compare(head, baseline_from_run(base), GatePolicy())) for name in ("one.yaml", "two.yaml")]
    marked = render_report(sections, title="evals", marker="<!-- ci-grade:evals -->")
    assert marked.endswith("\n<!-- ci-grade:evals -->\n") and marked.count("<!-- ci-grade:evals -->") == 1
    assert "ci-grade:evals" not in render_report(sections, title="evals")


def test_a_merge_of_two_configs_names_each_in_the_junit_file_and_one_config_names_none() -> None:
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import format_of

    junit = format_of("r.junit.xml")
    two = junit.write(Document([Part("one.yaml", run_of(row("a"))), Part("two.yaml", run_of(row("b")))]))
    one = junit.write(Document([Part("one.yaml", run_of(row("a")))]))
    assert "one.yaml" in two and "two.yaml" in two and "one.yaml" not in one


def test_the_report_names_the_head_commit_by_its_first_seven_characters() -> None:
    from ci_grade.report.markdown import render_markdown

    base, head = run_of(row("a")), run_of(row("a"), commit="0123456789abcdef0123456789abcdef01234567")
    md = render_markdown(head, compare(head, baseline_from_run(base), GatePolicy()), title="evals")
    assert "commit 0123456" in md and "01234567" not in md
