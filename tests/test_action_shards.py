"""The action's `shard`, `merge` and `retry-errors` inputs end to end (the runner's variables, the
GitHub REST stand-in): shard jobs write results and never fail on tests, the merge job gates and
publishes once, exactly as one unsharded job would."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import write
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import ActionRun, gh, regress, run_action, workspace  # noqa: F401 (fixtures)


def shard_jobs(ws: Path, github: GitHubServer, count: int = 2, **inputs: str) -> list[ActionRun]:
    return [run_action(ws, github, shard=f"{k}/{count}", results_path=f"shards/{k}.json", junit_path=f"shards/{k}.junit.xml", **inputs) for k in range(1, count + 1)]


def without_times(text: str) -> str:
    return re.sub(r"duration [0-9.]+m?s( \([▲▼] [0-9.]+m?s\))?", "", text)


def test_shard_jobs_write_results_and_leave_the_verdict_to_the_merge(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    regress(workspace)
    runs = shard_jobs(workspace, gh)
    for k, run in enumerate(runs, 1):
        assert run.code == 0, run.result.err  # failing tests do not fail a shard
        assert run.outputs == {"results-path": f"evals/shards/{k}.json", "junit-path": f"evals/shards/{k}.junit.xml"}
        assert f"### ci-grade: shard {k}/2: " in run.summary and "the merge job gives the verdict" in run.summary
        assert not run.commands("error")
        data = json.loads((workspace / run.outputs["results-path"]).read_text())
        assert data["ciGrade"]["info"]["shard"]["index"] == k
    assert gh.comments.get(7) is None and not gh.calls("POST")
    assert sum(len(json.loads((workspace / r.outputs["results-path"]).read_text())["results"]["results"]) for r in runs) == 3


def test_the_merge_job_publishes_what_one_unsharded_job_would(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    regress(workspace)
    shard_jobs(workspace, gh)
    merged = run_action(workspace, gh, merge="shards/*.json", comment_title="evals")
    whole = run_action(workspace, gh, comment_title="whole")
    assert merged.code == whole.code == 1, merged.result.err
    assert {k: v for k, v in merged.outputs.items() if k != "comment-url"} == {k: v for k, v in whole.outputs.items() if k != "comment-url"}
    assert merged.outputs["verdict"] == "regressed" and merged.outputs["regressions"] == "2"
    bodies = {c["body"].splitlines()[2].split(" · ")[0]: c["body"] for c in gh.comments[7]}
    assert set(bodies) == {"**evals**: support bot", "**whole**: support bot"}
    merged_body, whole_body = (bodies[f"**{title}**: support bot"].splitlines()[3:-1] for title in ("evals", "whole"))  # no title, no marker
    assert without_times("\n".join(merged_body)) == without_times("\n".join(whole_body)) and "#### Regressions and new failures (2)" in merged_body
    assert merged.commands("error") == whole.commands("error") and len(merged.commands("error")) == 2
    assert "shards/1.json, shards/2.json" in merged.result.out


def test_a_missing_shard_fails_the_merge_job_with_exit_2(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    shard_jobs(workspace, gh, 3)
    (workspace / "evals" / "shards" / "2.json").unlink()
    run = run_action(workspace, gh, merge="shards/*.json")
    assert run.code == 2
    (props, message), = run.commands("error")
    assert props["title"] == "ci-grade could not run" and "missing shard 2/3" in message
    assert "could not run" in gh.comments[7][0]["body"]  # the sticky comment never shows a stale pass


def test_merge_with_shard_or_retry_errors_is_a_usage_error(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    for extra in ({"shard": "1/2"}, {"retry_errors": "old.json"}):
        run = run_action(workspace, gh, merge="shards/*.json", **extra)
        assert run.code == 2 and "input `merge` merges shard results" in run.commands("error")[0][1]
    bad = run_action(workspace, gh, shard="three of four")
    assert bad.code == 2 and "input `shard` must be K/N" in bad.commands("error")[0][1]


def test_several_configs_merge_into_one_comment(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    write(workspace / "evals" / "triage.yaml", "prompts: ['{{t}}']\nproviders: [echo]\ntests:\n  - {vars: {t: bug}, assert: [{type: contains, value: bug}]}\n")
    shard_jobs(workspace, gh)
    run_action(workspace, gh, config="triage.yaml", shard="1/1", results_path="shards/triage.json")
    run = run_action(workspace, gh, merge="shards/*.json", baseline="")
    assert run.code == 0, run.result.err
    assert run.outputs["results-path"].splitlines() == ["evals/ci-grade-results/results-evals-promptfooconfig.json", "evals/ci-grade-results/results-evals-triage.json"]
    assert run.outputs["pass-rate"] == "1.0000" and run.outputs["verdict"] == "passed"
    body = gh.comments[7][0]["body"]
    assert body.startswith("## ci-grade\n\n✓ **Passed**: all 2 configs passed")
    assert "\n**evals/promptfooconfig.yaml**: support bot" in body and "\n**evals/triage.yaml**" in body  # named from the workspace


def test_retry_errors_reruns_only_the_errored_rows(workspace: Path, gh: GitHubServer, openai_env: LLMServer) -> None:  # noqa: F811
    write(workspace / "evals" / "flaky.yaml", "prompts: ['Say {{q}}']\nproviders: [openai:chat:gpt-4.1-mini]\ntests:\n  - vars: {q: [one, two, three]}\n    assert: [{type: contains, value: Say}]\n")
    env = {"OPENAI_API_KEY": "sk-test-0123456789", "OPENAI_BASE_URL": openai_env.openai_base_url}
    openai_env.on_chat("two", {"error": {"message": "bad request"}}, status=400, times=1)
    first = run_action(workspace, gh, config="flaky.yaml", baseline="", env_extra=env)
    assert first.code == 1 and first.outputs["errors"] == "1"
    (workspace / "evals" / "ci-grade-results" / "results.json").rename(workspace / "evals" / "first.json")
    openai_env.requests.clear()
    second = run_action(workspace, gh, config="flaky.yaml", baseline="", retry_errors="first.json", env_extra=env)
    assert second.code == 0, second.result.err
    assert second.outputs["errors"] == "0" and second.outputs["pass-rate"] == "1.0000"
    assert len(openai_env.requests) == 1 and "two" in json.dumps(openai_env.requests[0].json)
    assert "ran 1 of 3 rows again" in second.result.out


def test_a_shard_that_cannot_run_fails_without_a_comment(workspace: Path, gh: GitHubServer) -> None:  # noqa: F811
    (workspace / "evals" / "promptfooconfig.yaml").write_text("prompts: [\n")
    run = run_action(workspace, gh, shard="1/2", results_path="shards/1.json")
    assert run.code == 2 and run.commands("error")[0][0]["title"] == "ci-grade could not run"
    assert "could not run" in run.summary
    assert gh.comments.get(7) is None and not gh.calls("POST")  # the merge job reports it, once
