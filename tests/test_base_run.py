"""`--baseline run:REF`: the base evaluated in the same job, in a throwaway git repository whose
second commit regresses one test. The merge base is checked out in a temporary worktree, run with
the head's options and response cache, and compared with the head as a stored baseline is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from ci_grade.base_run import BaseCommit, checked_out
from tests.conftest import run_cli, write
from tests.servers.github_server import GitHubServer
from tests.servers.llm_server import LLMServer
from tests.test_action_e2e import TOKEN, run_action

ECHO_CONFIG = """
prompts: ['{{q}}']
providers: [echo]
tests:
  - description: greets the user
    vars: {q: hello world}
    assert: [{type: contains, value: hello}]
  - description: says goodbye
    vars: {q: goodbye}
    assert: [{type: contains, value: bye}]
"""

OPENAI_CONFIG = """
prompts: ['{{q}}']
providers: [openai:chat:gpt-4o-mini]
tests:
  - description: greets the user
    vars: {q: hello world}
    assert: [{type: contains, value: hello}]
  - description: says goodbye
    vars: {q: say goodbye}
    assert: [{type: contains, value: bye}]
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def two_commits(root: Path, config: str, regressed: tuple[str, str]) -> str:
    """main with `config` in evals/, then branch `pr` whose commit replaces `regressed[0]` by
    `regressed[1]`; returns the first commit's sha (the merge base)."""
    write(root / "evals" / "promptfooconfig.yaml", config)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "pr")
    path = root / "evals" / "promptfooconfig.yaml"
    path.write_text(path.read_text().replace(*regressed))
    git(root, "commit", "-q", "--allow-empty", "-am", "regress one test")
    return base


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary files (the base's worktree among them) go here, to see that none is left."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def worktrees(root: Path) -> list[str]:
    return [line for line in git(root, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


def test_a_regressed_commit_fails_against_its_base_measured_in_the_same_job(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    base = two_commits(root, ECHO_CONFIG, ("q: goodbye", "q: farewell"))
    # main moves on after the branch point: the base is the merge base, not main's tip
    git(root, "checkout", "-q", "main")
    write(root / "evals" / "promptfooconfig.yaml", ECHO_CONFIG.replace("q: hello world", "q: hi"))
    git(root, "commit", "-q", "-am", "main moves on")
    git(root, "checkout", "-q", "pr")

    result = run_cli("eval", "--baseline", "run:main", "-o", "report.md", "-o", "results.json", "--no-progress", cwd=root / "evals")

    assert result.code == 1, result.err
    assert "REGRESSED" in result.out and "says goodbye" in result.out
    assert f"baseline measured in this job at the merge base {base[:12]} of main" in result.out
    report = (root / "evals" / "report.md").read_text()
    assert f"Compared with the baseline measured in this job at the merge base {base[:12]} of main" in report
    assert "says goodbye" in report and "greets the user" not in report.split("Regressions")[-1].split("###")[0]
    assert worktrees(root) == [f"worktree {root.resolve()}"]
    assert list(scratch.iterdir()) == []
    assert git(root, "status", "--porcelain") == "?? evals/report.md\n?? evals/results.json".strip()


def test_an_unchanged_commit_passes(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    two_commits(root, ECHO_CONFIG, ("unchanged-nothing", "-"))
    result = run_cli("eval", "-c", "evals/promptfooconfig.yaml", "--baseline", "run:main", "--no-progress", cwd=root)
    assert result.code == 0, result.out + result.err
    assert "PASSED" in result.out and "baseline measured in this job" in result.out
    assert list(scratch.iterdir()) == []


def test_identical_requests_are_served_once_with_the_cache_and_new_failures_are_rerun(tmp_path: Path, scratch: Path, openai_env: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMPTFOO_CACHE_ENABLED")
    root = tmp_path / "repo"
    two_commits(root, OPENAI_CONFIG, ("q: say goodbye", "q: say farewell"))
    cache = tmp_path / "cache"

    result = run_cli("eval", "--baseline", "run:main", "--confirm", "2", "--cache-dir", str(cache), "--no-progress", cwd=root / "evals")

    assert result.code == 0, result.out + result.err  # one sampled base run cannot make a flip significant
    asked = [json.loads(r.body)["messages"][-1]["content"] for r in openai_env.requests_to("/v1/chat/completions")]
    # head: both tests; base: only its changed test (the other is the head's request, cached);
    # the newly failing test is confirmed by two fresh runs (never from the cache)
    assert sorted(asked) == ["hello world", "say farewell", "say farewell", "say farewell", "say goodbye"]
    assert "newly failing, not significant" in result.out and "says goodbye" in result.out and "passed 0 of 2 reruns" in result.out


def test_a_ref_git_does_not_have_is_a_usage_error_naming_fetch_depth(tmp_path: Path, scratch: Path, openai_env: LLMServer) -> None:
    root = tmp_path / "repo"
    two_commits(root, OPENAI_CONFIG, ("q: say goodbye", "q: say farewell"))
    result = run_cli("eval", "--baseline", "run:origin/main", "--no-progress", cwd=root / "evals")
    assert result.code == 2
    assert "git does not know origin/main in this clone" in result.err and "fetch-depth: 0" in result.err
    assert "Traceback" not in result.err and openai_env.requests == []


def test_no_merge_base_is_a_usage_error_naming_fetch_depth(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    two_commits(root, ECHO_CONFIG, ("q: goodbye", "q: farewell"))
    git(root, "checkout", "-q", "--orphan", "unrelated")
    git(root, "commit", "-q", "-m", "no shared history")
    result = run_cli("eval", "--baseline", "run:main", "--no-progress", cwd=root / "evals")
    assert result.code == 2
    assert "main and HEAD have no merge base" in result.err and "fetch-depth: 0" in result.err


def test_outside_a_repository_and_a_bare_run_without_a_pull_request_are_usage_errors(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", ECHO_CONFIG)
    outside = run_cli("eval", "--baseline", "run:main", "--no-progress", cwd=tmp_path)
    assert outside.code == 2 and "is not in a git repository" in outside.err
    bare = run_cli("eval", "--baseline", "run", "--no-progress", cwd=tmp_path)
    assert bare.code == 2 and "name the base, e.g. run:origin/main" in bare.err


def test_a_config_the_base_does_not_have_leaves_the_gate_to_thresholds(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    two_commits(root, ECHO_CONFIG, ("q: goodbye", "q: farewell"))
    write(root / "evals" / "new.yaml", ECHO_CONFIG)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a new eval")
    result = run_cli("eval", "-c", "new.yaml", "--baseline", "run:main", "--no-progress", cwd=root / "evals")
    assert result.code == 0, result.err
    assert "new.yaml does not exist at the merge base" in result.err and "no baseline: the gate judged thresholds only" in result.out
    assert list(scratch.iterdir()) == []


def test_a_base_config_that_cannot_load_is_a_warning_and_its_worktree_is_removed(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    two_commits(root, "prompts: [unclosed\n", ("prompts: [unclosed\n", ECHO_CONFIG.replace("q: goodbye", "q: farewell")))
    result = run_cli("eval", "--baseline", "run:main", "--no-progress", cwd=root / "evals")
    assert result.code == 1, result.err  # no baseline: the failing test fails the gate
    assert "the base's config (the merge base" in result.err and "could not be evaluated" in result.err
    assert str(scratch) not in result.err  # the worktree's path is not shown
    assert worktrees(root) == [f"worktree {root.resolve()}"] and list(scratch.iterdir()) == []


def test_a_base_config_outside_the_working_folder_is_named_by_its_path_in_the_repository_when_it_cannot_load(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    write(root / "docs" / "README.md", "notes\n")
    two_commits(root, "prompts: [unclosed\n", ("prompts: [unclosed\n", ECHO_CONFIG.replace("q: goodbye", "q: farewell")))
    config = (root / "evals" / "promptfooconfig.yaml").resolve()  # outside the working folder: shown whole
    result = run_cli("eval", "-c", str(config), "--baseline", "run:main", "--no-progress", cwd=root / "docs")
    assert result.code == 1, result.err
    assert "could not be evaluated: evals/promptfooconfig.yaml:2: invalid YAML" in result.err, result.err
    assert str(scratch) not in result.err


def test_the_worktree_is_removed_when_the_base_run_fails(tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "repo"
    sha = two_commits(root, ECHO_CONFIG, ("q: goodbye", "q: farewell"))
    with pytest.raises(RuntimeError), checked_out(BaseCommit(ref="main", sha=sha, top=root.resolve())) as tree:
        assert (tree / "evals" / "promptfooconfig.yaml").read_text() == (root / "evals" / "promptfooconfig.yaml").read_text().replace("q: farewell", "q: goodbye")
        assert len(worktrees(root)) == 2
        raise RuntimeError("the run broke")
    assert worktrees(root) == [f"worktree {root.resolve()}"] and list(scratch.iterdir()) == []


def test_compare_refuses_a_run_baseline(tmp_path: Path) -> None:
    write(tmp_path / "results.json", "{}")
    result = run_cli("compare", "--baseline", "run:main", "results.json", cwd=tmp_path)
    assert result.code == 2 and "only `ci-grade eval` and the action's eval take it" in result.err


def test_the_action_evaluates_the_pull_requests_base(tmp_path: Path, scratch: Path) -> None:
    ws = tmp_path / "workspace"
    base = two_commits(ws, ECHO_CONFIG, ("q: goodbye", "q: farewell"))
    payload = {"number": 7, "pull_request": {"number": 7, "base": {"ref": "main", "sha": base, "repo": {"full_name": "octo/demo"}}, "head": {"repo": {"full_name": "octo/fork"}}}, "repository": {"full_name": "octo/demo"}}
    with GitHubServer(token=TOKEN, repository="octo/demo") as gh:
        run = run_action(ws, gh, payload=payload, baseline="run")
        assert run.code == 1, run.result.out + run.result.err
        assert run.outputs["verdict"] == "regressed" and run.outputs["regressions"] == "1"
        body = gh.comments[7][0]["body"]
        assert f"Compared with the baseline measured in this job at the merge base {base[:12]} of main" in body
        assert "says goodbye" in body and f"measured in this job at the merge base {base[:12]} of main" in run.summary
    assert worktrees(ws) == [f"worktree {ws.resolve()}"] and list(scratch.iterdir()) == []


def test_the_action_names_fetch_depth_when_the_base_was_not_fetched(tmp_path: Path, scratch: Path) -> None:
    ws = tmp_path / "workspace"
    two_commits(ws, ECHO_CONFIG, ("q: goodbye", "q: farewell"))
    payload = {"number": 7, "pull_request": {"number": 7, "base": {"ref": "main", "sha": "0" * 40}}, "repository": {"full_name": "octo/demo"}}
    with GitHubServer(token=TOKEN, repository="octo/demo") as gh:
        run = run_action(ws, gh, payload=payload, baseline="run")
    assert run.code == 2
    assert any("fetch-depth: 0" in message for _, message in run.commands("error"))


def test_repeats_apply_to_both_runs_and_a_sampled_regression_fails_the_gate(tmp_path: Path, scratch: Path, openai_env: LLMServer) -> None:
    root = tmp_path / "repo"
    two_commits(root, OPENAI_CONFIG, ("q: say goodbye", "q: say farewell"))
    result = run_cli("eval", "--baseline", "run:main", "--repeat", "4", "--no-progress", cwd=root / "evals")
    assert result.code == 1, result.out + result.err
    asked = [json.loads(r.body)["messages"][-1]["content"] for r in openai_env.requests_to("/v1/chat/completions")]
    assert sorted(asked) == ["hello world"] * 8 + ["say farewell"] * 4 + ["say goodbye"] * 4
    assert "REGRESSED" in result.out and "pass rate 4/4 -> 0/4" in result.out


def test_a_signal_during_the_base_run_removes_its_worktree_and_writes_every_report(tmp_path: Path, scratch: Path, openai_env: LLMServer) -> None:
    root = tmp_path / "repo"
    two_commits(root, OPENAI_CONFIG, ("q: say goodbye", "q: say farewell"))
    openai_env.on_chat("say goodbye", hang=True)  # only the base asks this: its run is held there
    seen: list[int] = []

    def terminate_once_the_base_runs() -> None:
        deadline = time.monotonic() + 60
        while not any(b"say goodbye" in r.body for r in openai_env.requests) and time.monotonic() < deadline:
            time.sleep(0.02)
        seen.append(len(worktrees(root)))
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the run (a stop request), not fatal

    killer = threading.Thread(target=terminate_once_the_base_runs)
    killer.start()
    result = run_cli("eval", "--baseline", "run:main", "-o", "report.md", "--no-progress", cwd=root / "evals")
    killer.join()
    assert seen == [2] and result.code == 143, result.out + result.err
    report = (root / "evals" / "report.md").read_text()
    assert "measured in this job" in report and "says goodbye" in report
    assert worktrees(root) == [f"worktree {root.resolve()}"] and list(scratch.iterdir()) == []


def test_a_signal_during_the_heads_run_leaves_the_base_unevaluated_and_says_so(tmp_path: Path, scratch: Path, openai_env: LLMServer) -> None:
    root = tmp_path / "repo"
    two_commits(root, OPENAI_CONFIG, ("q: say goodbye", "q: say farewell"))
    openai_env.on_chat("say farewell", hang=True)  # only the head asks this: its run is held there

    def terminate_once_the_head_runs() -> None:
        deadline = time.monotonic() + 60
        while not any(b"say farewell" in r.body for r in openai_env.requests) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=terminate_once_the_head_runs)
    killer.start()
    result = run_cli("eval", "--baseline", "run:main", "--no-progress", cwd=root / "evals")
    killer.join()
    assert result.code == 143, result.out + result.err
    assert "the merge base" in result.err and "of main was not evaluated, no baseline" in result.err
    assert not any(b"say goodbye" in r.body for r in openai_env.requests)  # the base asked nothing
    assert worktrees(root) == [f"worktree {root.resolve()}"] and list(scratch.iterdir()) == []
