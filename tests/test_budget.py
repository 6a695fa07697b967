"""The spending limit (`--max-cost`), `--dry-run` and cost against the baseline, end to end on the
loopback OpenAI server (which reports usage as a token per 4 characters), with priced models."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from ci_grade.commands.shared import observed
from ci_grade.errors import BudgetExhausted, UsageError
from ci_grade.evaluate import EvalOptions, evaluate
from ci_grade.gate.store import load_baselines
from ci_grade.github.inputs import read_inputs
from ci_grade.providers.budget import Budget, row_scope
from ci_grade.report import spending
from ci_grade.run.spending import Calls, SpendingPlan
from tests.conftest import run_cli, write
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import gh, run_action, workspace  # noqa: F401 (the action's fixtures)

MINI = (0.4e-6, 1.6e-6)  # gpt-4.1-mini in prices.json, USD per input and output token
VERDICT = json.dumps({"reason": "The answer names the topic plainly and stays on it, as the rubric asks; nothing in it is off topic or evasive, so it meets the rubric. " * 2, "pass": True, "score": 1.0})


def _suite(folder: Path, tests: int, *, max_tokens: int = 8, rubric: bool = False, model: str = "openai:chat:gpt-4.1-mini", extra: str = "") -> Path:
    asserts = "[{type: contains, value: answer}" + (", {type: llm-rubric, value: stays on the topic}]" if rubric else "]")
    lines = "\n".join(f"  - vars: {{topic: topic-{i:02d}}}\n    assert: {asserts}" for i in range(tests))
    return write(folder / "promptfooconfig.yaml", f"providers:\n  - id: {model}\n    config: {{max_tokens: {max_tokens}{extra}}}\nprompts: ['Write about {{{{topic}}}}']\ntests:\n{lines}\n")


def test_a_call_waits_for_calls_in_flight_then_the_budget_refuses_what_cannot_fit() -> None:
    async def scenario() -> tuple[list[str], Budget]:
        budget = Budget(1.0)
        events: list[str] = []
        await budget.reserve(0.6)

        async def second() -> None:
            with row_scope() as mark:
                try:
                    await budget.reserve(0.6)  # 0.6 + 0.6 > 1: waits for the first call to settle
                    events.append("second admitted")
                except BudgetExhausted:
                    events.append(f"second refused: {mark.refused}")

        task = asyncio.create_task(second())
        await asyncio.sleep(0)
        events.append("first settles")
        budget.settle(0.6, 0.5)  # spent 0.5: 0.5 + 0.6 > 1 and nothing left in flight
        await task
        return events, budget

    events, budget = asyncio.run(scenario())
    assert events[0] == "first settles"
    assert events[1].startswith("second refused: not run: the run's budget of $1.00 (--max-cost) is reached ($0.5 spent)")
    assert (budget.spent, budget.reserved, budget.exhausted, budget.refused) == (0.5, 0.0, True, 1)


def test_a_budget_stops_the_run_half_way_and_every_report_lists_the_rows_not_run(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Write about", "an answer")  # 9 characters: 2 completion tokens
    _suite(tmp_path, 6)
    per_call = 5 * MINI[0] + 2 * MINI[1]  # "Write about topic-00": 5 prompt tokens
    reserved = 5 * MINI[0] + 8 * MINI[1]  # max_tokens 8
    limit = 3 * per_call + reserved * 0.99  # room for three calls and not quite a fourth reservation
    done = run_cli("eval", "-j", "1", "--no-cache", "--no-progress", "--max-cost", f"{limit:.10f}", "-o", "results.json", "-o", "results.junit.xml", "--baseline", "none.json", "-o", "report.md", cwd=tmp_path)
    assert done.code == 1, done.err
    assert len(openai_env.requests_to("/v1/chat/completions")) == 3
    rows = json.loads((tmp_path / "results.json").read_text())["results"]["results"]
    assert [row["success"] for row in rows] == [True] * 3 + [False] * 3
    assert [row["metadata"]["ciGrade"].get("notRun") for row in rows] == [None] * 3 + ["budget"] * 3
    assert all(row["error"].startswith("not run: the run's budget of $") for row in rows[3:])
    junit = (tmp_path / "results.junit.xml").read_text()
    assert junit.count("not run: the run&apos;s budget") + junit.count("not run: the run's budget") >= 3
    report = (tmp_path / "report.md").read_text()
    assert "the budget (--max-cost) was reached: 3 rows not run" in report
    assert "Cost per test" in report
    assert "verdict: FAILED (gate failed): the budget (--max-cost) was reached: 3 rows not run" in done.out
    assert "3 of 6 rows were not run" in done.err


def test_under_fail_on_never_a_budget_stop_is_reported_and_does_not_fail(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Write about", "an answer")
    _suite(tmp_path, 4)
    done = run_cli("eval", "-j", "1", "--no-cache", "--no-progress", "--max-cost", "0.00001", "--fail-on", "never", cwd=tmp_path)
    assert done.code == 0, done.err
    assert "rows not run (fail-on never: reported, not gating)" in done.out


def test_a_model_without_a_price_is_refused_before_any_call_unless_its_config_prices_it(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("Write about", "an answer")
    _suite(tmp_path, 2, model="openai:chat:house-model")
    done = run_cli("eval", "--no-cache", "--no-progress", "--max-cost", "1", cwd=tmp_path)
    assert done.code == 2
    assert "openai:chat:house-model (provider)" in done.err and "inputCost and outputCost" in done.err
    assert openai_env.requests == []
    _suite(tmp_path, 2, model="openai:chat:house-model", extra=", inputCost: 0.000001, outputCost: 0.000002")
    done = run_cli("eval", "--no-cache", "--no-progress", "--max-cost", "1", cwd=tmp_path)
    assert done.code == 0, done.err
    assert len(openai_env.requests) == 2


def test_an_unpriced_default_grader_is_refused_too(tmp_path: Path, openai_env: LLMServer) -> None:
    _suite(tmp_path, 1, rubric=True)
    done = run_cli("eval", "--no-cache", "--no-progress", "--max-cost", "1", "--grader", "openai:chat:house-grader", cwd=tmp_path)
    assert done.code == 2
    assert "openai:chat:house-grader (grader)" in done.err
    assert openai_env.requests == []


def test_a_dry_run_calls_nothing_and_its_estimate_is_within_a_fifth_of_the_spend(tmp_path: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    replies = {f"topic-{i:02d}": "an answer " + "about the topic, " * (i % 5 + 1) for i in range(12)}
    openai_env.on_chat(lambda req: "Grade the output" in json.dumps(req) or "rubric" in json.dumps(req).lower(), VERDICT)
    for topic, reply in replies.items():
        openai_env.on_chat(topic, reply)
    _suite(tmp_path, 12, max_tokens=200, rubric=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROMPTFOO_CACHE_ENABLED")  # the cache on, as by default
    first = run_cli("eval", "--no-progress", "--save-baseline", "baseline.json", cwd=tmp_path)
    assert first.code == 0, first.err + first.out
    calls = len(openai_env.requests)
    assert calls == 24

    dry = run_cli("eval", "--dry-run", "--baseline", "baseline.json", cwd=tmp_path)
    assert dry.code == 0, dry.err
    assert len(openai_env.requests) == calls  # nothing was called
    assert "12 rows; 12 provider calls (12 in the response cache); 12 grader calls (one per model-graded assertion;" in dry.out
    assert re.search(r"openai:chat:gpt-4\.1-mini\s+target\s+12\s+12\b", dry.out)
    assert re.search(r"\n\s*provider\s+role\s+calls\s+cached\s+prompt tokens\s+reply tokens\s+cost\s+reply tokens from\n", dry.out), dry.out

    baseline = load_baselines("baseline.json", tmp_path)
    assert baseline is not None
    estimate = evaluate(EvalOptions(configs=[str(tmp_path / "promptfooconfig.yaml")], cache=False, dry_run=True, observed=observed(baseline))).spending
    assert estimate is not None and estimate.cost is not None
    real = evaluate(EvalOptions(configs=[str(tmp_path / "promptfooconfig.yaml")], cache=False, progress=False)).run.stats
    spent = real.cost + real.grading_cost
    assert spent > 0
    assert abs(estimate.cost - spent) <= 0.2 * spent, (estimate.cost, spent)


def test_a_rise_of_the_cost_per_test_beyond_the_limit_fails_the_gate(tmp_path: Path, openai_env: LLMServer) -> None:
    _suite(tmp_path, 4, max_tokens=400)
    openai_env.on_chat("Write about", "an answer", times=4)
    base = run_cli("eval", "--no-cache", "--no-progress", "--save-baseline", "baseline.json", cwd=tmp_path)
    assert base.code == 0, base.err
    openai_env.on_chat("Write about", "an answer, " + "and a much longer one " * 20)
    done = run_cli("eval", "--no-cache", "--no-progress", "--baseline", "baseline.json", "--max-cost-increase", "20%", "-o", "report.md", cwd=tmp_path)
    assert done.code == 1, done.out
    assert re.search(r"cost per test rose \+\d+% \(\$[\d.]+ → \$[\d.]+, max \+20%\)", done.out)
    report = (tmp_path / "report.md").read_text()
    assert "| Cost per test (max +20%) |" in report
    assert "openai:chat:gpt-4.1-mini latency p50 / p95" in report
    relaxed = run_cli("eval", "--no-cache", "--no-progress", "--baseline", "baseline.json", "--max-cost-increase", "100000%", cwd=tmp_path)
    assert relaxed.code == 0, relaxed.out


def test_the_action_dry_run_puts_the_plan_in_the_job_summary_and_posts_nothing(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    run = run_action(workspace, gh, dry_run="on", max_cost="$1")
    assert run.code == 0, run.result.out + run.result.err
    assert gh.requests == []
    assert "### ci-grade: dry run" in run.summary
    assert "| echo | target | 3 | 0 | " in run.summary
    assert "dry run: nothing was called" in run.result.out


def test_action_inputs_for_cost_are_checked() -> None:
    inputs = read_inputs({"INPUT_MAX-COST": "$2.50", "INPUT_MAX-COST-INCREASE": "20%", "INPUT_DRY-RUN": "true"})
    assert (inputs.max_cost, inputs.max_cost_increase, inputs.dry_run) == (2.5, 0.2, True)
    for name, value in (("MAX-COST", "0"), ("MAX-COST", "lots"), ("MAX-COST-INCREASE", "-5%"), ("DRY-RUN", "maybe")):
        with pytest.raises(UsageError, match=name.lower()):
            read_inputs({f"INPUT_{name}": value})


def test_the_dry_run_plans_warnings_render_under_its_table_not_as_rows_of_it() -> None:
    plan = SpendingPlan(rows=2, concurrency=4)
    plan.providers[("target", "echo")] = Calls(provider="echo", role="target", price=(0.0, 0.0), calls=2)
    plan.ungraded = ["llm-rubric: the grader's key is not set"]
    page = cmarkgfm.markdown_to_html_with_extensions(spending.markdown(plan), options=Options.CMARK_OPT_UNSAFE, extensions=["table"])
    (body,) = re.findall(r"<tbody>(.*?)</tbody>", page, re.S)
    assert body.count("<tr>") == 1 and "echo" in body and "grader" not in body
    assert re.search(r"</table>\s*<blockquote>\s*<p><strong>Warning:</strong> llm-rubric: the grader's key is not set</p>", page)
