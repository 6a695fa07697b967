"""The HTML report in a real headless Chromium: it renders, its filters and details work (clicked
and counted as a reviewer would), it logs no console error and fetches nothing but itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.report.document import Document, Part
from ci_grade.report.html import render_html
from tests.browser import Opened, chromium, open_file
from tests.html_report_data import sample
from tests.results_factory import row, run_of

TESTS = 40


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def report(tmp_path: Path, browser: Any) -> Iterator[Opened]:
    path = tmp_path / "report.html"
    path.write_text(render_html(sample(TESTS)), encoding="utf-8")
    opened = open_file(browser, path)
    yield opened
    assert opened.problems == []  # no console error or warning (a CSP violation would be one), no page error
    assert opened.requests == [path.resolve().as_uri()]  # nothing fetched but the file itself
    opened.page.close()


def visible(opened: Opened) -> int:
    count: int = opened.page.locator("#rows tr.row:visible").count()
    return count


def show(opened: Opened, kind: str) -> None:
    opened.page.click(f".chips label:has(input[value={kind}])")


def test_it_renders_the_verdict_the_counts_and_every_row(report: Opened) -> None:
    page = report.page
    assert page.inner_text("#verdict") == "Failed"
    assert page.title() == "Support bot evals: Failed"
    assert visible(report) == TESTS and page.inner_text("#shown") == f"Showing {TESTS} of {TESTS} rows"
    assert page.inner_text(".counts").split() == [
        "Rows", "40", "Passed", "28", "Failed", "8", "Errors", "4", "Pass", "rate", "70.0%", "Regressed", "4", "Fixed", "4",
        "Known", "failures", "4", "Cost", "$0", "Duration", "1.5s",
    ]
    first = page.locator("#rows tr.row").first.inner_text().split("\t")
    assert [cell.strip() for cell in first] == ["FAIL", "test 0000: refund policy\nevals/promptfooconfig.yaml:10", "openai:gpt-4.1-mini", "support", "1.00 → 0.00", "regressed"]
    assert page.evaluate("window.pwned") is None  # the hostile output stayed text


def test_the_filters_show_what_they_name(report: Opened) -> None:
    page = report.page
    assert page.inner_text(".chips").split() == ["All", "40", "Failing", "12", "Regressed", "4", "Changed", "16"]
    show(report, "failing")
    assert visible(report) == 12
    assert set(page.locator("#rows tr.row:visible td.st").all_inner_texts()) == {"FAIL", "ERROR"}
    show(report, "regressed")
    assert visible(report) == 4
    assert set(page.locator("#rows tr.row:visible td:last-child").all_inner_texts()) == {"regressed"}
    show(report, "changed")
    assert visible(report) == 16
    show(report, "all")
    page.select_option("#provider", "anthropic:claude-sonnet-4")
    assert visible(report) == 20 and page.inner_text(".chips").split()[1] == "20"
    page.select_option("#metric", "accuracy")  # even tests measure accuracy, and run on openai: none left
    assert visible(report) == 0 and page.is_visible("#empty")
    page.select_option("#provider", "")
    assert visible(report) == 20
    show(report, "failing")
    assert visible(report) == 8  # regressions and known failures are the even ones
    page.fill("#search", "refund")
    assert visible(report) == 4 and page.inner_text("#shown") == "Showing 4 of 40 rows"
    page.fill("#search", "")
    page.select_option("#metric", "")
    show(report, "all")
    assert visible(report) == TESTS


def test_a_row_opens_on_its_prompt_outputs_diff_assertions_and_trajectory(report: Opened) -> None:
    page = report.page
    page.locator("#rows tr.row").first.click()
    detail = page.locator("#rows tr.detail:visible")
    assert detail.count() == 1
    assert detail.locator("pre.base-output").inner_text() == "Refunds take 5 days."
    assert detail.locator("pre.head-output").inner_text() == "Refunds take 30 days, sorry."
    assert detail.locator("pre.diff del").all_inner_texts() == ["5 days."]
    assert detail.locator("pre.diff ins").all_inner_texts() == ["30 days, sorry."]
    assert detail.locator("pre.diff").inner_text() == "Refunds take 5 days.30 days, sorry."
    assert detail.locator("table.asserts td.reason").all_inner_texts() == ["says 30 days where the policy says 5"]
    assert detail.locator("ol.steps li").all_inner_texts() == ['tool: search_orders {"order": "A-17"}', 'tool: refund {"amount": 20}']
    assert "You are a support agent." in detail.locator("pre").nth(1).inner_text()
    show(report, "changed")  # a filter hides an open row's details with it, and keeps them open
    page.fill("#search", "greeting")
    assert page.locator("#rows tr.detail:visible").count() == 0
    page.fill("#search", "")
    assert page.locator("#rows tr.detail:visible").count() == 1
    page.locator("#rows tr.row").first.click()
    assert page.locator("#rows tr.detail:visible").count() == 0


def test_the_hostile_output_is_shown_as_text(report: Opened) -> None:
    page = report.page
    page.fill("#search", "test 0005")
    page.locator("#rows tr.row:visible").first.click()
    assert page.locator("#rows tr.detail:visible pre.head-output").inner_text() == "</script><script>window.pwned = 1</script><img src=http://127.0.0.1:9/x.png>"
    assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None


def test_a_baseline_without_outputs_says_so(tmp_path: Path, browser: Any) -> None:
    doc = sample(10)
    assert doc.parts[0].comparison is not None
    for case in doc.parts[0].comparison.tests:
        case.base_output = None
    path = tmp_path / "old.html"
    path.write_text(render_html(doc), encoding="utf-8")
    opened = open_file(browser, path)
    opened.page.locator("#rows tr.row").first.click()
    detail = opened.page.locator("#rows tr.detail:visible")
    assert detail.locator("pre.base-output").count() == 0 and detail.locator("pre.head-output").inner_text() == "Refunds take 30 days, sorry."
    assert "The baseline keeps no outputs" in detail.inner_text()
    assert opened.problems == [] and opened.requests == [path.resolve().as_uri()]


def test_several_configs_filter_by_config_and_an_unjudged_run_renders(tmp_path: Path, browser: Any) -> None:
    one, two = run_of(row("a"), row("b", 0.0)), run_of(row("c"))
    path = tmp_path / "merged.html"
    path.write_text(render_html(Document([Part("one.yaml", one), Part("two.yaml", two)])), encoding="utf-8")
    opened = open_file(browser, path)
    page = opened.page
    assert page.inner_text("#verdict") == "Not judged" and page.is_visible("#config") and not page.is_visible("#metric")
    page.select_option("#config", label="two.yaml")
    assert visible(opened) == 1 and page.inner_text("#rows tr.row:visible td.name") == "c\ntwo.yaml"
    assert opened.problems == [] and opened.requests == [path.resolve().as_uri()]
