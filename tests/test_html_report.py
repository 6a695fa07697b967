"""The HTML report's file: written by eval, merge and compare through the output registry, one
self-contained page (no network: a CSP allowing only its own inline style and script, no external
reference), its data embedded as JSON that no output can break out of, secrets masked."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ci_grade import redact
from ci_grade.redact import Redactor
from ci_grade.report.document import Document, Part
from ci_grade.report.formats import format_of
from ci_grade.report.html import render_html
from tests.conftest import run_cli, write
from tests.html_report_data import HOSTILE, sample
from tests.results_factory import row, run_of
from tests.servers.llm_server import LLMServer

DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)
SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)
STYLE = re.compile(r"<style>(.*?)</style>", re.S)
CONFIG = """
description: capitals
prompts: ['Capital of {{country}}?']
providers: [openai:gpt-4.1-mini]
tests:
  - description: france
    vars: {country: France}
    assert: [{type: contains, value: Paris, metric: accuracy}]
  - description: spain
    vars: {country: Spain}
    assert: [{type: contains, value: Madrid, metric: accuracy}]
"""


def data_of(page: str) -> dict[str, Any]:
    (block,) = DATA.findall(page)
    parsed: dict[str, Any] = json.loads(block)
    return parsed


def markup_of(page: str) -> str:
    """The page without its data block: everything the browser reads as markup, style or script."""
    return DATA.sub("", page)


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_page_is_self_contained_and_allows_only_its_own_style_and_script() -> None:
    page = render_html(sample(12))
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None
    (style,), (script,) = STYLE.findall(page), SCRIPT.findall(page)
    assert html.unescape(csp[1]) == f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; img-src data:"
    markup = markup_of(page)
    for external in ("http://", "https://", "src=", "href=", "@import", "url(", "@font-face"):
        assert external not in markup, external
    assert markup.count("<script") == 1 and page.count("<script") == 2


def test_no_output_can_end_the_data_block_and_the_data_round_trips() -> None:
    page = render_html(sample(12))
    assert page.count("</script>") == 2  # the data block's and the script's own, none from an output
    assert "<img src=" not in page
    rows = data_of(page)["rows"]
    assert [r["output"] for r in rows if r["name"].startswith("test 0005")] == [HOSTILE]


def test_each_row_carries_what_a_reviewer_drills_into() -> None:
    rows = {r["name"]: r for r in data_of(render_html(sample(12)))["rows"]}
    regressed = rows["test 0000: refund policy"]
    assert regressed["kind"] == "regressed" and regressed["regressed"] and regressed["changed"]
    assert (regressed["base_output"], regressed["output"]) == ("Refunds take 5 days.", "Refunds take 30 days, sorry.")
    assert regressed["base_status"] == "pass" and regressed["status"] == "fail"
    assert regressed["prompt"] == "You are a support agent.\nCustomer 0 asks about their order."
    assert regressed["assertions"] == [{"type": "llm-rubric", "metric": "accuracy", "status": "fail", "score": 0.0, "reason": "says 30 days where the policy says 5", "depth": 0, "weight": 1.0}]
    assert regressed["steps"] == ['tool: search_orders  {"order": "A-17"}', 'tool: refund  {"amount": 20}']
    assert regressed["where"] == "evals/promptfooconfig.yaml:10" and regressed["note"].startswith("score 1.00 -> 0.00")
    assert rows["test 0002: greeting"]["note_kind"] == "known failure"
    assert rows["test 0004: greeting"]["changed"] and rows["test 0004: greeting"]["kind"] == "changed"
    assert not rows["test 0006: greeting"]["changed"] and rows["test 0006: greeting"]["kind"] == "pass"
    assert rows["test 0003: greeting"]["error"] == "provider returned 500: overloaded"
    kinds = [r["kind"] for r in data_of(render_html(sample(12)))["rows"]]
    assert kinds == sorted(kinds, key=["regressed", "error", "fail", "changed", "pass"].index)  # the worst first


def test_a_baseline_without_outputs_leaves_the_base_side_empty() -> None:
    doc = sample(4)
    assert doc.parts[0].comparison is not None
    for case in doc.parts[0].comparison.tests:
        case.base_output = None
    rows = data_of(render_html(doc))["rows"]
    assert [r["base_output"] for r in rows] == [None] * 4
    assert [r["base_status"] for r in rows if r["name"].startswith("test 0000")] == ["pass"]


def test_secrets_are_masked_in_the_data_and_the_markup() -> None:
    secret = "sk-html-secret-0123456789"
    run = run_of(row("leaks", output=f"the key is {secret}", reason=f"saw {secret}", status="fail", score=0.0), description=f"suite {secret}")
    with redact.use(Redactor([secret])):
        page = format_of("r.html").write(Document([Part(f"config {secret}", run)], title=f"title {secret}"))
    assert isinstance(page, str)
    assert secret not in page and page.count("***") >= 4


def test_outputs_and_prompts_are_cut_to_max_output_chars() -> None:
    run = run_of(row("long", output="x" * 5000))
    (only,) = data_of(render_html(Document([Part("", run)], max_output_chars=100)))["rows"]
    assert only["output"] == "x" * 100 + "… [cut: 4,900 more characters]"


def test_eval_writes_the_html_report_against_its_baseline(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    openai_env.on_chat("France", "Paris", times=1)
    openai_env.on_chat("Spain", "Madrid")
    saved = run_cli("eval", "--no-progress", "--no-cache", "--save-baseline", "base.json", "-o", "first.html", cwd=tmp_path)
    assert saved.code == 0, saved.err
    first = data_of((tmp_path / "first.html").read_text())
    assert sorted((r["name"], r["status"], r["kind"]) for r in first["rows"]) == [("france", "pass", "pass"), ("spain", "pass", "pass")]
    openai_env.on_chat("France", "Lyon, I think")
    result = run_cli("eval", "--no-progress", "--no-cache", "--baseline", "base.json", "-o", "report.html", "-o", "r.json", cwd=tmp_path)
    assert result.code == 0, result.out  # one sampled test newly failing is not evidence: the gate passes and says so
    page = (tmp_path / "report.html").read_text()
    assert '<span class="verdict v-passed" id="verdict">Passed</span>' in page and "1 sampled test newly failing, not significant" in page
    rows = {r["name"]: r for r in data_of(page)["rows"]}
    assert rows["france"]["output"] == "Lyon, I think" and rows["france"]["kind"] == "fail" and rows["france"]["changed"]
    assert rows["france"]["base_status"] == "pass" and rows["france"]["note_kind"] == "not significant" and not rows["france"]["regressed"]
    assert rows["france"]["prompt"] == "Capital of France?" and rows["france"]["metrics"] == {"accuracy": 0.0}
    assert rows["spain"]["kind"] == "pass" and data_of(page)["configs"] == ["promptfooconfig.yaml"]
    tested = page[page.index("What the gate tested") : page.index("</details>", page.index("What the gate tested"))]
    assert "accuracy" in tested  # the metric, tested once with the pass rate it equals


def test_compare_and_merge_write_the_html_report(tmp_path: Path) -> None:
    from ci_grade.results.promptfoo import to_promptfoo

    for name, rows in (("one", [row("a"), row("b", 0.0)]), ("two", [row("c")])):
        run = run_of(*rows, description=name, config_name=f"{name}.yaml", plan_hash=name, config_hash=name)
        (tmp_path / f"{name}.json").write_text(json.dumps(to_promptfoo(run, {})))
    compared = run_cli("compare", "one.json", "-o", "one.html", cwd=tmp_path)
    assert compared.code == 1, compared.err
    assert [r["name"] for r in data_of((tmp_path / "one.html").read_text())["rows"]] == ["b", "a"]
    merged = run_cli("merge", "one.json", "two.json", "-o", "all.html", "-o", "r-{config}.json", cwd=tmp_path)
    assert merged.code == 1, merged.err
    data = data_of((tmp_path / "all.html").read_text())
    assert data["configs"] == ["one.yaml", "two.yaml"] and sorted(r["name"] for r in data["rows"]) == ["a", "b", "c"]
    assert (tmp_path / "r-one.json").exists() and (tmp_path / "r-two.json").exists()


@pytest.mark.parametrize("command", ["eval", "compare", "merge"])
def test_an_unknown_extension_names_the_html_report_among_the_choices(tmp_path: Path, command: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    args = {"eval": ["eval"], "compare": ["compare", "x.json"], "merge": ["merge", "x.json"]}[command]
    result = run_cli(*args, "-o", "report.htm", cwd=tmp_path)
    assert result.code == 2 and "cannot write report.htm: unsupported output type" in result.err and ".html" in result.err


def test_the_measures_table_shows_what_the_gate_tested_with_its_interval() -> None:
    page = markup_of(render_html(sample(12)))
    cells = re.findall(r"<tr><td>metric &#39;accuracy&#39;</td>(.*?)</tr>", page)
    assert cells == ['<td class="num">0.833</td><td class="num">0.500</td><td class="num">-0.333</td><td class="num">[-0.333, -0.333]</td><td class="num">0</td><td>regressed</td>']
