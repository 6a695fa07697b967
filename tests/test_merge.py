"""`ci-grade merge`: shards of a model-graded run against the loopback server give exactly the
results, verdicts, JUnit, report and exit code of one unsharded run; incomplete or mixed shard
sets exit 2 naming the files."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

CONFIG = """
description: shard demo
prompts:
  - 'Answer briefly: {{topic}}'
  - 'Answer in detail: {{topic}}'
providers:
  - openai:chat:gpt-4.1-mini
  - {id: echo, label: local}
tests:
  - description: about the fruit
    vars: {topic: [apples, pears, plums]}
    assert:
      - {type: llm-rubric, value: RUBRIC-OK mentions the fruit}
  - description: about boats
    vars: {topic: cars}
    assert:
      - {type: llm-rubric, value: RUBRIC-NO is about boats}
  - description: best answer
    vars: {topic: tea}
    assert:
      - {type: select-best, value: SELECT-BEST choose the clearest answer}
  - description: deterministic
    vars: {topic: [x1, x2, x3, x4]}
    assert: [{type: contains, value: x}]
  - description: local only
    providers: [local]
    vars: {topic: only}
    assert: [{type: icontains, value: ONLY}]
"""
ROWS_PER_REPEAT = 9 * 4 + 2  # nine groups on 2 prompts x 2 providers, one on the local provider only


def verdict(passed: bool) -> dict[str, Any]:
    return {"pass": passed, "score": 1.0 if passed else 0.0, "reason": "looks right" if passed else "not about boats"}


@pytest.fixture
def project(tmp_path: Path, openai_env: LLMServer) -> Path:
    """The config, a baseline in which 'about boats' passed, and the grader's replies from now on."""
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    openai_env.on_chat("RUBRIC-NO", verdict(True), times=2 * 4)  # the baseline run: 4 rows x 2 repeats
    openai_env.on_chat("RUBRIC-NO", verdict(False))
    openai_env.on_chat("RUBRIC-OK", verdict(True))
    openai_env.on_chat("SELECT-BEST", {"reason": "the third is clearest", "best": 2})
    base = run_cli("eval", "--no-progress", "--repeat", "2", "-o", "base.json", cwd=tmp_path)
    assert base.code == 1, base.err  # select-best losers fail
    return tmp_path


SMALL = """
prompts: ['{{topic}}']
providers: [echo]
tests:
  - vars: {topic: [a, b, c, d, e]}
    assert: [{type: contains, value: a}]
"""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """An echo-only config (no model): for the refusals."""
    write(tmp_path / "promptfooconfig.yaml", SMALL)
    return tmp_path


def data(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def normalized(results: dict[str, Any]) -> dict[str, Any]:
    """A results file without what differs between any two runs: times, durations, latencies."""
    copy = json.loads(json.dumps(results))
    copy.pop("evalId")
    copy["metadata"].pop("exportedAt")
    copy["metadata"].pop("evaluationCreatedAt")
    copy["results"]["timestamp"] = copy["results"]["stats"]["durationMs"] = copy["ciGrade"]["info"]["created_at"] = None
    for row in copy["results"]["results"]:
        row["latencyMs"] = None
    for prompt in copy["results"]["prompts"]:
        prompt["metrics"]["totalLatencyMs"] = None
    return copy


def timeless(text: str) -> str:
    """JUnit and Markdown without elapsed times, durations and latencies."""
    text = re.sub(r"^\|[^\n]* latency p50 / p95 \|[^\n]*\n", "", text, flags=re.MULTILINE)
    return re.sub(r' time="[0-9.]+"|duration [0-9.]+m?s( \([▲▼] [0-9.]+m?s\))?', "", text)


def shards(folder: Path, count: int, *extra: str) -> list[str]:
    names = []
    for k in range(1, count + 1):
        result = run_cli("eval", "--no-progress", "--repeat", "2", "--shard", f"{k}/{count}", "-o", f"shards/{k}.json", *extra, cwd=folder)
        assert result.code == 0, result.err
        names.append(f"shards/{k}.json")
    return names


def test_three_shards_merge_into_exactly_one_unsharded_run(project: Path) -> None:
    outputs = ["-o", "{}.json", "-o", "{}.junit.xml", "-o", "{}.md"]
    whole = run_cli("eval", "--no-progress", "--repeat", "2", "--baseline", "base.json", *[o.format("whole") for o in outputs], cwd=project)
    shards(project, 3)
    merged = run_cli("merge", "shards/*.json", "--baseline", "base.json", *[o.format("merged") for o in outputs], cwd=project)
    assert whole.code == merged.code == 1, merged.err
    one, pooled = data(project / "whole.json"), data(project / "merged.json")
    assert len(pooled["results"]["results"]) == 2 * ROWS_PER_REPEAT
    assert normalized(pooled) == normalized(one)  # rows in plan order, verdicts, scores, tokens, cost, stats
    assert pooled["results"]["stats"]["successes"] == one["results"]["stats"]["successes"] > 0
    assert pooled["ciGrade"]["info"]["shard"] is None
    assert timeless((project / "merged.junit.xml").read_text()) == timeless((project / "whole.junit.xml").read_text())
    report = (project / "merged.md").read_text()
    assert timeless(report) == timeless((project / "whole.md").read_text())
    assert "about boats" in report and "Newly failing, not significant (sampled)" in report  # model-graded: a flip needs evidence
    assert "merged 3 file(s): shards/1.json, shards/2.json, shards/3.json" in merged.out


def test_select_best_compares_all_outputs_of_a_test_inside_one_shard(project: Path, openai_env: LLMServer) -> None:
    shards(project, 4)
    calls = [r.json for r in openai_env.requests_to("/v1/chat/completions") if "SELECT-BEST" in json.dumps(r.json)]
    assert len(calls) == 2 + 2  # the baseline run and the shards: once per repeat, each with all 4 outputs
    assert all(json.dumps(call).count("Answer") >= 4 for call in calls)
    rows = [row for k in range(1, 5) for row in data(project / f"shards/{k}.json")["results"]["results"] if row["description"] == "best answer"]
    assert sorted(row["success"] for row in rows) == [False] * 6 + [True] * 2


def test_merge_passes_when_the_merged_run_passes(project: Path) -> None:
    names = shards(project, 2, "--filter-pattern", "fruit|deterministic")
    merged = run_cli("merge", *names, "-o", "merged.json", cwd=project)
    assert merged.code == 0, merged.out + merged.err
    assert data(project / "merged.json")["results"]["stats"]["successes"] == 2 * (3 + 4) * 4


def test_merge_saves_a_baseline_a_later_merge_compares_with(project: Path) -> None:
    names = shards(project, 2)
    first = run_cli("merge", *names, "--save-baseline", "merged-baseline.json", "--fail-on", "never", cwd=project)
    assert first.code == 0 and (project / "merged-baseline.json").exists()
    again = run_cli("merge", *names, "--baseline", "merged-baseline.json", "-o", "r.md", cwd=project)
    assert again.code == 0  # the same failures: known failures (failing in the baseline too) do not fail the gate
    report = (project / "r.md").read_text()
    assert "Regressions and new failures" not in report and "Known failures (failing in the baseline too)" in report


def test_merge_folds_a_glob_of_baseline_runs_as_eval_does(small: Path) -> None:
    for name in ("r1", "r2"):  # two runs of main: b-e fail in both, known failures
        assert run_cli("eval", "--no-progress", "-o", f"runs/{name}.json", cwd=small).code == 1
    assert run_cli("eval", "--no-progress", "--baseline", "runs/*.json", cwd=small).code == 0
    names = shards(small, 2)
    merged = run_cli("merge", *names, "--baseline", "runs/*.json", "-o", "m.md", cwd=small)
    assert merged.code == 0, merged.err
    assert "no baseline" not in merged.err and "Known failures (failing in the baseline too)" in (small / "m.md").read_text()


def test_a_missing_shard_exits_2_naming_it(small: Path) -> None:
    shards(small, 3)
    result = run_cli("merge", "shards/1.json", "shards/3.json", "-o", "m.json", cwd=small)
    assert result.code == 2
    assert "promptfooconfig.yaml: missing shard 2/3 (have 1/3 from shards/1.json, 3/3 from shards/3.json)" in result.err
    assert not (small / "m.json").exists()


def test_a_duplicated_shard_exits_2_naming_both_files(small: Path) -> None:
    shards(small, 2)
    shutil.copy(small / "shards" / "2.json", small / "shards" / "2-again.json")
    result = run_cli("merge", "shards/*.json", cwd=small)
    assert result.code == 2 and "duplicated shard 2/2 (shards/2-again.json, shards/2.json)" in result.err


def test_the_same_file_named_twice_counts_once(small: Path) -> None:
    names = shards(small, 2)
    result = run_cli("merge", *names, "shards/*.json", "./shards/1.json", cwd=small)
    assert result.code == 1 and "merged 2 file(s)" in result.out, result.err


def test_shards_of_different_configs_exit_2_naming_them(small: Path) -> None:
    shards(small, 2)
    config = small / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("e]", "e, f]"))
    result = run_cli("eval", "--no-progress", "--repeat", "2", "--shard", "2/2", "-o", "shards/2.json", cwd=small)
    assert result.code == 0
    merged = run_cli("merge", "shards/1.json", "shards/2.json", cwd=small)
    assert merged.code == 2
    assert re.search(r"shards of different configs for promptfooconfig\.yaml: shards/1\.json \(plan \w{12}\); shards/2\.json \(plan \w{12}\)", merged.err), merged.err


def test_shards_of_different_splits_or_repeats_exit_2(small: Path) -> None:
    shards(small, 2)
    run_cli("eval", "--no-progress", "--repeat", "2", "--shard", "3/3", "-o", "shards/3of3.json", cwd=small)
    split = run_cli("merge", "shards/*.json", cwd=small)
    assert split.code == 2 and "shards of different splits (shards/1.json is 1/2, shards/2.json is 2/2, shards/3of3.json is 3/3)" in split.err
    run_cli("eval", "--no-progress", "--shard", "1/2", "-o", "once.json", cwd=small)
    repeats = run_cli("merge", "once.json", "shards/2.json", cwd=small)
    assert repeats.code == 2 and "shards of different configs" in repeats.err


def test_a_file_without_a_fingerprint_or_a_glob_matching_nothing_exits_2(small: Path) -> None:
    run_cli("eval", "--no-progress", "-o", "base.json", cwd=small)
    results = data(small / "base.json")
    del results["ciGrade"]  # as promptfoo writes it
    (small / "promptfoo.json").write_text(json.dumps(results))
    foreign = run_cli("merge", "promptfoo.json", cwd=small)
    assert foreign.code == 2 and "promptfoo.json records no plan fingerprint" in foreign.err
    nothing = run_cli("merge", "missing/*.json", cwd=small)
    assert nothing.code == 2 and "no results files match missing/*.json" in nothing.err
    absent = run_cli("merge", "absent.json", cwd=small)
    assert absent.code == 2 and "absent.json does not exist" in absent.err
    bad_output = run_cli("merge", "base.json", "-o", "m.docx", cwd=small)
    assert bad_output.code == 2 and "unsupported output type" in bad_output.err


def test_rows_edited_into_two_shards_exit_2(small: Path) -> None:
    shards(small, 2)
    one, two = data(small / "shards/1.json"), data(small / "shards/2.json")
    two["results"]["results"].append(one["results"]["results"][0])
    (small / "shards/2.json").write_text(json.dumps(two))
    result = run_cli("merge", "shards/1.json", "shards/2.json", cwd=small)
    assert result.code == 2 and "is in both shards/1.json and shards/2.json" in result.err
