"""Result files by extension: promptfoo JSON (and reading it back), JSONL, JUnit, Markdown, CSV."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from ci_grade import redact
from ci_grade.evaluate import EvalOptions, evaluate
from ci_grade.redact import Redactor
from ci_grade.results.models import EvalRun
from ci_grade.results.promptfoo import from_promptfoo
from tests.conftest import run_cli, write
from tests.results_factory import render
from tests.servers.llm_server import LLMServer

JUNIT_XSD = Path(__file__).resolve().parent / "fixtures" / "junit-10-file-line.xsd"
LITERAL_KEY = "sk-literal-config-secret-42"

CONFIG = f"""
description: outputs
prompts:
  - 'Q {{{{q}}}}'
  - {{label: second, raw: 'Second {{{{q}}}} <&> "quoted"'}}
providers:
  - id: openai:gpt-4o-mini
    config: {{apiKey: {LITERAL_KEY}}}
  - {{id: echo, label: mirror}}
tests:
  - description: alpha passes
    vars: {{q: alpha}}
    assert:
      - {{type: contains, value: alpha, metric: recall}}
      - type: assert-set
        threshold: 0.5
        assert:
          - {{type: icontains, value: ALPHA}}
          - {{type: contains, value: nowhere}}
  - description: beta fails on a reason
    vars: {{q: beta, key: {LITERAL_KEY}}}
    assert:
      - {{type: contains, value: Q, metric: recall}}
      - {{type: equals, value: exactly this, weight: 2}}
  - description: gamma errors at the provider
    vars: {{q: boom}}
    assert: [{{type: contains, value: boom}}]
"""


@pytest.fixture
def evaluated(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Any]]:
    openai_env.on_chat("boom", {"error": {"message": "model overloaded (bad request)"}}, status=400)
    openai_env.on_chat("alpha", "alpha answer", usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})
    openai_env.on_chat("beta", "beta answer Q", usage={"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9})
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    monkeypatch.chdir(tmp_path)
    with redact.use(Redactor()):  # the secrets evaluate learns (the config's keys) stay known to the writers
        yield tmp_path, evaluate(EvalOptions(progress=False))


def test_json_has_promptfoos_shape(evaluated: tuple[Path, Any]) -> None:
    folder, outcome = evaluated
    data = json.loads(render(folder / "r.json", outcome.run, outcome.config_for_output))
    summary = data["results"]
    assert summary["version"] == 3
    rows = summary["results"]
    assert len(rows) == 12  # 3 tests x 2 prompts x 2 providers
    for row in rows:
        assert {"testCase", "vars", "prompt", "provider", "response", "success", "score", "namedScores", "failureReason", "gradingResult"} <= row.keys()
        assert {"raw", "label"} <= row["prompt"].keys() and {"id", "label"} <= row["provider"].keys()
        assert row["failureReason"] in (0, 1, 2)
        assert (row["failureReason"] == 0) == row["success"]
    first = rows[0]
    assert first["prompt"] == {"raw": "Q alpha", "label": "Q {{q}}", "template": "Q {{q}}"}
    assert first["provider"] == {"id": "openai:gpt-4o-mini", "label": ""}  # promptfoo's "" for no label
    assert first["response"]["output"] == "alpha answer"
    assert first["testCase"]["description"] == "alpha passes"
    assert first["namedScores"] == {"recall": 1.0}
    components = first["gradingResult"]["componentResults"]
    assert [c["assertion"]["type"] for c in components] == ["contains", "assert-set", "icontains", "contains"]
    assert [c["pass"] for c in components] == [True, True, True, False]
    failing = [r for r in rows if r["failureReason"] == 1]
    assert failing and all(r["gradingResult"]["reason"] for r in failing)
    errors = [r for r in rows if r["failureReason"] == 2]
    assert len(errors) == 2 and all("model overloaded" in r["error"] for r in errors)
    stats = summary["stats"]
    assert (stats["successes"], stats["failures"], stats["errors"]) == (
        sum(r["failureReason"] == 0 for r in rows),
        sum(r["failureReason"] == 1 for r in rows),
        2,
    )
    assert stats["tokenUsage"]["total"] == 2 * 7 + 2 * 9
    assert {"prompt", "completion", "cached", "numRequests"} <= stats["tokenUsage"].keys()


def _essentials(run: EvalRun) -> list[dict[str, Any]]:
    def assertion(a: Any) -> dict[str, Any]:
        return {
            "type": a.type, "value": a.value, "metric": a.metric, "weight": a.weight, "threshold": a.threshold,
            "status": a.status, "score": a.score, "reason": a.reason, "named_scores": a.named_scores,
            "children": [assertion(c) for c in a.children],
        }

    return [
        {
            "test_id": r.test_id, "fingerprint": r.fingerprint, "description": r.description, "repeat_index": r.repeat_index,
            "vars": r.vars, "prompt": r.prompt.model_dump(), "provider": r.provider.model_dump(), "output": r.output,
            "status": r.status, "score": r.score, "named_scores": r.named_scores, "reason": r.reason, "error": r.error,
            "token_usage": r.token_usage.model_dump(), "cost": r.cost, "location": r.location.model_dump() if r.location else None,
            "assertions": [assertion(a) for a in r.assertions],
        }
        for r in run.results
    ]


def test_json_reads_back_losslessly(evaluated: tuple[Path, Any]) -> None:
    folder, outcome = evaluated
    with redact.use(Redactor()):  # no secrets known: what is written reads back unchanged
        text = render(folder / "r.json", outcome.run, outcome.config_for_output)
    back = from_promptfoo(json.loads(text))
    assert _essentials(back) == _essentials(outcome.run)
    assert (back.stats.successes, back.stats.failures, back.stats.errors) == (outcome.run.stats.successes, outcome.run.stats.failures, 2)
    assert back.info.description == "outputs"


def test_jsonl_has_one_row_per_line(evaluated: tuple[Path, Any]) -> None:
    folder, outcome = evaluated
    lines = render(folder / "r.jsonl", outcome.run, None).splitlines()
    assert len(lines) == 12
    rows = [json.loads(line) for line in lines]
    assert [r["testId"] for r in rows] == [r.test_id for r in outcome.run.results]
    assert rows[0]["response"]["output"] == "alpha answer"


@pytest.mark.parametrize("name", ["r.junit.xml", "r.xml"])
def test_junit_validates_and_carries_reasons(evaluated: tuple[Path, Any], name: str) -> None:
    folder, outcome = evaluated
    text = render(folder / name, outcome.run, None)
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(text)
    root = ET.fromstring(text)
    suites = root.findall("testsuite")
    assert len(suites) == 4  # one per prompt x provider
    assert {s.get("name") for s in suites} == {"[openai:gpt-4o-mini] Q {{q}}", "[openai:gpt-4o-mini] second", "[mirror] Q {{q}}", "[mirror] second"}
    assert root.get("tests") == "12"
    assert int(root.get("failures") or 0) == outcome.run.stats.failures and root.get("errors") == "2"
    by_name = {(s.get("name"), c.get("name")): c for s in suites for c in s.findall("testcase")}
    beta = by_name[("[mirror] Q {{q}}", "beta fails on a reason")]
    failure = beta.find("failure")
    assert failure is not None
    assert "- equals: Expected output" in (failure.text or "")
    assert "exactly this" in (failure.text or "")
    gamma = by_name[("[openai:gpt-4o-mini] second", "gamma errors at the provider")]
    error = gamma.find("error")
    assert error is not None and "model overloaded" in (error.get("message") or "")
    passed = by_name[("[openai:gpt-4o-mini] Q {{q}}", "alpha passes")]
    assert passed.find("failure") is None and passed.find("error") is None
    properties = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert properties["score:alpha passes"] == "0.7500"  # contains 1 and the assert-set 0.5
    assert "mean_score" in properties and "metric:recall" in properties


def test_markdown_and_csv(evaluated: tuple[Path, Any]) -> None:
    folder, outcome = evaluated
    markdown = render(folder / "r.md", outcome.run, None)
    lines = markdown.splitlines()
    assert lines[0] == "# ci-grade results: outputs"
    stats = outcome.run.stats
    assert f"{stats.successes} passed, {stats.failures} failed, 2 errors (12 rows)" in markdown
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| Status") and not line.startswith("| ---")]
    assert len(table) == 12
    assert sum(line.startswith("| ERROR |") for line in table) == 2
    assert "| FAIL | beta fails on a reason | Q {{q}} | mirror | 0.33 | Expected output" in markdown
    assert all(line.count(" | ") == 5 for line in table)  # no cell breaks the table

    rows = list(csv.DictReader(io.StringIO(render(folder / "r.csv", outcome.run, None))))
    assert len(rows) == 12
    assert list(rows[0].keys())[:2] == ["test_id", "description"]
    assert {"q", "key", "prompt", "provider", "status", "score", "reason", "output"} <= rows[0].keys()
    assert [r["status"] for r in rows].count("ERROR") == 2
    assert rows[0]["output"] == "alpha answer" and rows[0]["key"] == ""


def test_markdown_and_csv_keep_untrusted_text_inert(tmp_path: Path) -> None:
    write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: ['{{x}}']
        providers: [echo]
        tests:
          - description: 'pipes | and <b>html</b>'
            vars:
              x: "=HYPERLINK(\\"http://evil\\") | <script>alert(1)</script>\\nnext line"
            assert: [{type: equals, value: nope}]
        """,
    )
    result = run_cli("eval", "--no-progress", "-o", "r.md", "-o", "r.csv", cwd=tmp_path)
    assert result.code == 1, result.err
    markdown = (tmp_path / "r.md").read_text()
    row = next(line for line in markdown.splitlines() if line.startswith("| FAIL"))
    assert "<script>" not in markdown and "<b>" not in markdown
    assert row.count(" | ") == 5 and "&lt;b&gt;html&lt;/b&gt;" in row
    (record,) = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert record["x"].startswith("'=HYPERLINK(") and record["output"].startswith("'=HYPERLINK(")
    assert record["x"][1:] == '=HYPERLINK("http://evil") | <script>alert(1)</script>\nnext line'


def test_unsupported_extension_is_rejected_before_running(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders: [openai:gpt-4o-mini]\n")
    result = run_cli("eval", "--no-progress", "-o", "ok.json", "-o", "report.pdf", cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith("ci-grade: error: cannot write report.pdf: unsupported output type")
    assert openai_env.requests == []
    assert not (tmp_path / "ok.json").exists()


def test_secrets_never_reach_any_output(tmp_path: Path, openai_env: LLMServer) -> None:
    env_key = "sk-test-0123456789"  # set by openai_env
    openai_env.on_chat(None, lambda request: f"I saw {request['messages'][0]['content']}")
    write(
        tmp_path / "promptfooconfig.yaml",
        f"""
        prompts: ['key {{{{ env.OPENAI_API_KEY }}}} literal {{{{ literal }}}}']
        providers:
          - echo
          - id: openai:gpt-4o-mini
            config: {{apiKey: {LITERAL_KEY}}}
        tests:
          - vars: {{literal: {LITERAL_KEY}}}
            assert: [{{type: equals, value: '{env_key}'}}]
        """,
    )
    names = ["r.json", "r.jsonl", "r.junit.xml", "r.xml", "r.md", "r.csv", "r.yaml", "r.txt"]
    args = [arg for name in names for arg in ("-o", name)]
    result = run_cli("eval", "--no-progress", *args, cwd=tmp_path)
    assert result.code == 1, result.err
    sent = openai_env.requests_to("/v1/chat/completions")[0].json["messages"][0]["content"]
    assert env_key in sent and LITERAL_KEY in sent  # the model saw them: the test is real
    for name in names:
        text = (tmp_path / name).read_text()
        assert env_key not in text and LITERAL_KEY not in text, name
        assert "***" in text.replace("\\*", "*"), name
    assert env_key not in result.out + result.err and LITERAL_KEY not in result.out + result.err
    assert "0 passed, 2 failed, 0 errors" in result.out and "wrote r.md" in result.out
