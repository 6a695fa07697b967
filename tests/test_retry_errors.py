"""`eval --retry-errors PREVIOUS.json`: the loopback server fails some rows (provider and grader)
in a first run and answers in the second; only those rows are run again, the rest kept as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

CONFIG = """
description: flaky
prompts: ['Say {{q}}', 'Shout {{q}}']
providers: [openai:chat:gpt-4.1-mini]
tests:
  - description: provider fails
    vars: {q: PROVIDER-FLAKY}
    assert: [{type: contains, value: FLAKY}]
  - description: grader fails
    vars: {q: steady one}
    assert: [{type: llm-rubric, value: RUBRIC-FLAKY is steady}]
  - description: steady
    vars: {q: [s1, s2, s3]}
    assert: [{type: icontains, value: s}]
  - description: best of two
    vars: {q: pick}
    assert: [{type: select-best, value: SELECT-BEST the loudest}]
"""


def rows(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {(r["testId"], r["repeatIndex"]): r for r in data["results"]["results"]}


def chat_texts(server: LLMServer) -> list[str]:
    return [json.dumps(r.json) for r in server.requests_to("/v1/chat/completions")]


@pytest.fixture
def first_run(tmp_path: Path, openai_env: LLMServer) -> Path:
    """A run in which 2 provider calls, 2 grader calls and one of the select-best rows failed."""
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    openai_env.on_chat("PROVIDER-FLAKY", {"error": {"message": "bad request"}}, status=400, times=2)
    openai_env.on_chat("RUBRIC-FLAKY", {"error": {"message": "grader down"}}, status=400, times=2)
    openai_env.on_chat("Shout pick", {"error": {"message": "nope"}}, status=400, times=1)
    openai_env.on_chat("RUBRIC-FLAKY", {"pass": True, "score": 1.0, "reason": "steady"})
    openai_env.on_chat("SELECT-BEST", {"reason": "louder", "best": 1})
    result = run_cli("eval", "--no-progress", "-o", "first.json", cwd=tmp_path)
    assert result.code == 1
    statuses = {r["description"]: r["metadata"]["ciGrade"]["status"] for r in rows(tmp_path / "first.json").values() if r["promptIdx"] == 1}
    assert statuses == {"provider fails": "error", "grader fails": "error", "steady": "pass", "best of two": "error"}
    openai_env.requests.clear()
    return tmp_path


def test_only_errored_rows_run_again_and_the_rest_are_kept_verbatim(first_run: Path, openai_env: LLMServer) -> None:
    result = run_cli("eval", "--no-progress", "--retry-errors", "first.json", "-o", "second.json", cwd=first_run)
    assert result.code == 1, result.out + result.err  # the select-best loser fails; nothing errors
    assert "retry: ran 6 of 12 rows again, kept the others from first.json" in result.err
    texts = chat_texts(openai_env)
    assert sum("PROVIDER-FLAKY" in t and "rubric" not in t.lower() for t in texts) == 2
    assert sum("RUBRIC-FLAKY" in t for t in texts) == 2
    assert sum("SELECT-BEST" in t for t in texts) == 1  # both rows of the select-best test, graded together
    assert not any("s1" in t or "s2" in t or "s3" in t for t in texts)
    before, after = rows(first_run / "first.json"), rows(first_run / "second.json")
    assert list(after) == list(before)  # complete, in plan order
    for key, row in after.items():
        if before[key]["description"] == "steady":
            assert row == before[key]
        else:
            assert row["success"] is (row["promptIdx"] == 1 or row["description"] != "best of two")
    assert all(r["metadata"]["ciGrade"]["status"] != "error" for r in after.values())
    stats = json.loads((first_run / "second.json").read_text())["results"]["stats"]
    assert (stats["successes"], stats["failures"], stats["errors"]) == (11, 1, 0)


def test_nothing_errored_runs_nothing(first_run: Path, openai_env: LLMServer) -> None:
    assert run_cli("eval", "--no-progress", "--retry-errors", "first.json", "-o", "second.json", cwd=first_run).code == 1
    openai_env.requests.clear()
    third = run_cli("eval", "--no-progress", "--retry-errors", "second.json", "-o", "third.json", cwd=first_run)
    assert third.code == 1 and "ran 0 of 12 rows again" in third.err
    assert chat_texts(openai_env) == []
    assert rows(first_run / "third.json") == rows(first_run / "second.json")


def test_results_of_another_config_are_refused(first_run: Path, openai_env: LLMServer) -> None:
    config = first_run / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("[s1, s2, s3]", "[s1, s2]"))
    result = run_cli("eval", "--no-progress", "--retry-errors", "first.json", "-o", "second.json", cwd=first_run)
    assert result.code == 2 and "--retry-errors first.json holds results of another config or plan" in result.err
    assert chat_texts(openai_env) == [] and not (first_run / "second.json").exists()
    filtered = run_cli("eval", "--no-progress", "--retry-errors", "first.json", "--filter-first-n", "1", "-o", "second.json", cwd=first_run)
    assert filtered.code == 2 and "another config or plan" in filtered.err


def test_a_results_file_without_a_fingerprint_is_refused(first_run: Path) -> None:
    data = json.loads((first_run / "first.json").read_text())
    del data["ciGrade"]
    (first_run / "promptfoo.json").write_text(json.dumps(data))
    result = run_cli("eval", "--no-progress", "--retry-errors", "promptfoo.json", "-o", "x.json", cwd=first_run)
    assert result.code == 2 and "records no plan fingerprint" in result.err
    missing = run_cli("eval", "--no-progress", "--retry-errors", "gone.json", cwd=first_run)
    assert missing.code == 2 and "gone.json does not exist" in missing.err


def test_a_shard_is_retried_as_that_shard(tmp_path: Path, openai_env: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    openai_env.on_chat("RUBRIC-FLAKY", {"pass": True, "score": 1.0, "reason": "steady"})
    openai_env.on_chat("SELECT-BEST", {"reason": "louder", "best": 1})
    openai_env.fail(400, times=12)  # every provider call of the first attempt fails
    for k in (1, 2):
        assert run_cli("eval", "--no-progress", "--shard", f"{k}/2", "-o", f"s{k}.json", cwd=tmp_path).code == 0
    first = [*rows(tmp_path / "s1.json").values(), *rows(tmp_path / "s2.json").values()]
    assert len(first) == 12 and all(r["metadata"]["ciGrade"]["status"] == "error" for r in first)
    conflict = run_cli("eval", "--no-progress", "--retry-errors", "s1.json", "--shard", "2/2", "-o", "r1.json", cwd=tmp_path)
    assert conflict.code == 2 and "holds shard 1/2, not shard 2/2" in conflict.err
    for k in (1, 2):
        retried = run_cli("eval", "--no-progress", "--retry-errors", f"s{k}.json", "-o", f"r{k}.json", cwd=tmp_path)
        assert retried.code == 0 and f"shard {k}/2:" in retried.out, retried.err
        assert list(rows(tmp_path / f"r{k}.json")) == list(rows(tmp_path / f"s{k}.json"))
    merged = run_cli("merge", "r1.json", "r2.json", "-o", "merged.json", cwd=tmp_path)
    assert merged.code == 1  # one select-best loser
    stats = json.loads((tmp_path / "merged.json").read_text())["results"]["stats"]
    assert (stats["successes"], stats["failures"], stats["errors"]) == (11, 1, 0)
