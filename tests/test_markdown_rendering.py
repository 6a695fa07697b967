"""The comment as GitHub renders it (cmark-gfm, GitHub's Markdown engine): links, collapsed
blocks, outputs in code blocks, the trend chart, and counts in words."""

from __future__ import annotations

import html
import re
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.history import RunPoint
from ci_grade.gate.models import GatePolicy
from ci_grade.report.links import Links
from ci_grade.report.markdown import render_markdown
from ci_grade.results.models import SourceRef
from tests.results_factory import row, run_of

SHA = "89abcdef0123456789abcdef0123456789abcdef"


def located(name: str, score: float, line: int, **kwargs: object):  # type: ignore[no-untyped-def]
    result = row(name, score, **kwargs)  # type: ignore[arg-type]
    result.location = SourceRef(file="evals/promptfooconfig.yaml", line=line)
    return result


def rendered(tmp_path: Path) -> tuple[str, str]:
    base = run_of(located("refund", 1.0, 5, output="Refunds take 5 days.\nAsk billing."), located("known", 0.0, 9, output="x"), located("tone", 1.0, 12, metrics={"tone": 0.9}), commit="1" * 40, created_at="2026-01-02T00:00:00+00:00")
    head = run_of(located("refund", 0.0, 5, output="No refunds.\nAsk billing.", reason="missing '5 days'"), located("known", 0.0, 9, output="x"), located("tone", 1.0, 12, metrics={"tone": 0.8}))
    head.stats.cost = 0.031
    baseline = baseline_from_run(base)
    baseline.history = [RunPoint(created_at=f"2026-01-0{d}", commit=f"{d}" * 40, tests=3, passed=2, mean_score=0.6 + d / 100, metrics={"tone": 0.9}) for d in (1, 2)]
    (tmp_path / ".git").mkdir()
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo/demo", "GITHUB_RUN_ID": "77", "GITHUB_WORKSPACE": str(tmp_path)}
    links = Links.from_env(env, head_sha=SHA, cwd=tmp_path)
    md = render_markdown(head, compare(head, baseline, GatePolicy()), title="evals", links=links)
    return md, cmarkgfm.markdown_to_html_with_extensions(md, options=Options.CMARK_OPT_UNSAFE, extensions=["table", "autolink"])


def test_the_comment_renders_as_intended(tmp_path: Path) -> None:
    md, page = rendered(tmp_path)
    assert md.splitlines()[0] == "### ✗ **Regressed** · 1/3 passed · 1 regressed · 1 known · $0.031"
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', page)
    assert (f"https://github.com/octo/demo/commit/{SHA}", SHA[:7]) in links
    assert ("https://github.com/octo/demo/actions/runs/77", "workflow run") in links
    assert ("https://github.com/octo/demo/actions/runs/77#artifacts", "artifacts") in links
    assert (f"https://github.com/octo/demo/blob/{SHA}/evals/promptfooconfig.yaml#L5", "evals/promptfooconfig.yaml:5") in links
    # statistics and known failures are collapsed; the regression is in the open
    details = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", page, re.S)
    assert [summary.split(":")[0] for summary, _ in details] == ["Statistics", "1 known failure"]
    assert "<table>" in details[0][1] and "known" in details[1][1] and "refund" not in details[1][1]
    # the outputs, before and after, in a diff code block inside the regression's item
    diff = re.search(r'<pre><code class="language-diff">(.*?)</code></pre>', page, re.S)
    assert diff and html.unescape(diff[1]) == "- Refunds take 5 days.\n- Ask billing.\n+ No refunds.\n+ Ask billing.\n"
    assert page.index("refund") < diff.start() < page.index("Known failures")
    # the trend: a Mermaid chart of the two runs of the base branch and this one, and the metric's table
    chart = re.search(r'<pre><code class="language-mermaid">(.*?)</code></pre>', page, re.S)
    assert chart and 'x-axis ["1111111", "2222222", "this run"]' in html.unescape(chart[1])
    assert "bar [66.7, 66.7, 33.3]" in chart[1] and "line [61.0, 62.0, 33.3]" in chart[1]
    assert re.search(r"<td[^>]*>tone</td>\s*<td[^>]*>0.90 – 0.90</td>\s*<td[^>]*>0.90</td>\s*<td[^>]*>0.80</td>", page)


def test_counts_are_in_words() -> None:
    from ci_grade.report.wording import plural

    assert [plural(1, "error"), plural(2, "error"), plural(0, "fixed test"), plural(1, "more known failure"), plural(1_500, "row")] == [
        "1 error", "2 errors", "0 fixed tests", "1 more known failure", "1,500 rows",
    ]
    run = run_of(*[row(f"t{i:02d}", 0.0) for i in range(12)], row("e", 0.0, "error", error="boom"))
    md = render_markdown(run, compare(run, None, GatePolicy()))
    assert "1 error" in md.splitlines()[0] and "1 errors" not in md and "1 runs" not in md
    assert "<details><summary>2 more failing tests</summary>" in md


def test_the_trend_names_each_run_by_its_commit_else_its_day() -> None:
    from ci_grade.gate.history import RunPoint
    from ci_grade.report.markdown_escape import Escaper
    from ci_grade.report.trend import trend_markdown

    history = [
        RunPoint(created_at="2026-11-27T10:00:00Z", commit="0123456789abcdef", tests=2, passed=2, mean_score=1.0),
        RunPoint(created_at="2026-11-28T09:30:00Z", tests=2, passed=1, mean_score=0.5),
        RunPoint(tests=2, passed=1, mean_score=0.5),
    ]
    chart = str(trend_markdown(history, RunPoint(tests=2, passed=2, mean_score=1.0), Escaper()))
    assert '  x-axis ["0123456", "11-28", "run", "this run"]' in chart
    assert "  bar [100.0, 50.0, 50.0, 100.0]" in chart

