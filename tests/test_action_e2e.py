"""`ci-grade action` end to end: a temp git workspace, a fake event, the GitHub REST stand-in.

The action runs with the environment the runner gives a Docker action (GITHUB_* variables,
INPUT_* with hyphens, output and summary files) and talks to the stand-in through PyGithub.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_grade.gate.store import load_baseline, save_baseline
from ci_grade.github.comment import marker_for
from tests.conftest import CliResult, run_cli, run_cli_process, write
from tests.github_helpers import commands_in, parse_outputs
from tests.servers.github_server import BOT_LOGIN, GitHubServer
from tests.servers.llm_server import LLMServer

TOKEN = "ghs_e2eWorkflowToken0123456789"
MARKER = marker_for("ci-grade")

CONFIG = """
description: support bot
prompts: ['{{q}} [{{ env.GITHUB_TOKEN }}]']
providers: [echo]
tests:
  - description: greets the user
    vars: {q: hello world}
    threshold: 0.5
    assert:
      - {type: contains, value: hello}
      - {type: contains, value: world}
  - description: points to the docs
    vars: {q: see the docs}
    assert:
      - {type: icontains, value: docs}
  - file://cases.yaml
"""
GREETS_LINE = 5  # the line of "- description: greets the user" in CONFIG
CASES = """
- description: says goodbye
  vars: {q: goodbye}
  assert:
    - type: contains
      value: bye
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repo with evals/ and a committed baseline in which every test passes."""
    ws = tmp_path / "workspace"
    evals = ws / "evals"
    write(evals / "promptfooconfig.yaml", CONFIG)
    write(evals / "cases.yaml", CASES)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    result = run_cli("eval", "-o", "base.json", "--no-progress", cwd=evals)
    assert result.code == 0, result.out + result.err
    baseline = load_baseline("base.json", evals)
    assert baseline is not None and len(baseline.tests) == 3
    save_baseline(baseline, ws / ".ci-grade" / "baseline.json")
    (evals / "base.json").unlink()
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "baseline")
    monkeypatch.delenv("GITHUB_TOKEN")
    return ws


def regress(ws: Path) -> None:
    """The pull request's change: one test drops to 0.5 (still passing), one starts failing."""
    config = ws / "evals" / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("q: hello world", "q: hello there"))
    cases = ws / "evals" / "cases.yaml"
    cases.write_text(cases.read_text().replace("q: goodbye", "q: farewell"))


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, repository="octo/demo") as server:
        yield server


@dataclass
class ActionRun:
    result: CliResult
    outputs: dict[str, str]
    summary: str

    @property
    def code(self) -> int:
        return self.result.code

    def commands(self, name: str) -> list[tuple[dict[str, str], str]]:
        return [(props, message) for cmd, props, message in commands_in(self.result.out) if cmd == name]


def run_action(ws: Path, gh: GitHubServer, *, event: str = "pull_request", payload: dict | None = None, process: bool = False, env_extra: dict[str, str] | None = None, **inputs: str) -> ActionRun:
    """One action step: fresh output/summary files, the runner's variables, the given inputs."""
    step = ws.parent / f"step-{len(list(ws.parent.glob('step-*')))}"
    step.mkdir()
    if payload is None:
        payload = {"number": 7, "pull_request": {"number": 7, "head": {"repo": {"full_name": "octo/demo"}}, "base": {"repo": {"full_name": "octo/demo"}}}, "repository": {"full_name": "octo/demo"}}
    (step / "event.json").write_text(json.dumps(payload))
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(step / "event.json"),
        "GITHUB_REPOSITORY": "octo/demo",
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(step / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(step / "summary.md"),
        "GITHUB_TOKEN": TOKEN,
        # as the runner passes them: defaults from action.yml, hyphens kept
        "INPUT_CONFIG": "promptfooconfig.yaml",
        "INPUT_WORKING-DIRECTORY": "evals",
        "INPUT_BASELINE": "git:HEAD:.ci-grade/baseline.json",
        "INPUT_FAIL-ON": "regressions",
        "INPUT_COMMENT": "on",
        "INPUT_GITHUB-TOKEN": TOKEN,
        **{f"INPUT_{name.upper().replace('_', '-')}": value for name, value in inputs.items()},
        **(env_extra or {}),
    }
    if process:
        result = run_cli_process("action", cwd=ws, env=env)
    else:
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            result = run_cli("action", cwd=ws)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    outputs = parse_outputs(step / "output.txt") if (step / "output.txt").exists() else {}
    summary = (step / "summary.md").read_text(encoding="utf-8") if (step / "summary.md").exists() else ""
    return ActionRun(result, outputs, summary)


def assert_no_token(run: ActionRun, gh: GitHubServer, ws: Path) -> None:
    stdout = [line for line in run.result.out.splitlines() if not line.startswith("::add-mask::")]
    assert f"::add-mask::{TOKEN}" in run.result.out.splitlines()
    for text in ["\n".join(stdout), run.result.err, json.dumps(run.outputs), run.summary]:
        assert TOKEN not in text
    for comment in gh.comments.get(7, []):
        assert TOKEN not in comment["body"]
    for path in (ws / "evals" / "ci-grade-results").glob("*"):
        assert TOKEN not in path.read_text(encoding="utf-8")


def test_pull_request_creates_then_updates_one_comment(workspace: Path, gh: GitHubServer) -> None:
    regress(workspace)
    first = run_action(workspace, gh, process=True)
    assert first.code == 1, first.result.err
    (comment,) = gh.comments[7]
    assert comment["user"]["login"] == BOT_LOGIN and comment["body"].endswith(MARKER)
    body = comment["body"]
    assert "✗ **Regressed**" in body and "greets the user" in body and "says goodbye" in body
    assert "+ hello there [***]" in body  # the echoed token was masked, not absent
    assert first.outputs["comment-url"] == comment["html_url"]
    assert body.replace(MARKER, "").strip() in first.summary  # the same report in the job summary
    assert_no_token(first, gh, workspace)

    second = run_action(workspace, gh)
    assert second.code == 1
    assert len(gh.comments[7]) == 1 and len(gh.calls("POST")) == 1  # created once, as the running status
    patches = gh.calls("PATCH")  # the first run's report, the second run's running status and report
    assert len(patches) == 3 and {p.path for p in patches} == {f"/repos/octo/demo/issues/comments/{comment['id']}"}
    assert second.outputs["comment-url"] == first.outputs["comment-url"]
    assert_no_token(second, gh, workspace)


def test_outputs_files_and_annotations(workspace: Path, gh: GitHubServer) -> None:
    regress(workspace)
    run = run_action(workspace, gh)
    assert run.code == 1
    assert run.outputs == {
        "passed": "false",
        "verdict": "regressed",
        "pass-rate": "0.6667",
        "score": "0.5000",
        "score-delta": "-0.5000",
        "p-value": "0.0000",
        "regressions": "2",
        "failures": "1",
        "known-failures": "0",
        "not-significant": "0",
        "errors": "0",
        "baseline": "compared",
        "results-path": "evals/ci-grade-results/results.json",
        "junit-path": "evals/ci-grade-results/results.junit.xml",
        "html-path": "evals/ci-grade-results/report.html",
        "comment-url": gh.comments[7][0]["html_url"],
    }
    page = (workspace / run.outputs["html-path"]).read_text()
    assert '<span class="verdict v-regressed" id="verdict">Regressed</span>' in page
    assert "greets the user" in page and "says goodbye" in page
    results = json.loads((workspace / run.outputs["results-path"]).read_text())
    assert len(results["results"]["results"]) == 3
    junit = (workspace / run.outputs["junit-path"]).read_text()
    assert junit.count("REGRESSION") == 2 and "score 1.00 -&gt; 0.50 (-0.50)" in junit
    errors = {(props.get("file"), props.get("line")): (props["title"], message) for props, message in run.commands("error")}
    assert set(errors) == {("evals/promptfooconfig.yaml", str(GREETS_LINE)), ("evals/cases.yaml", "1")}
    title, message = errors[("evals/promptfooconfig.yaml", str(GREETS_LINE))]
    assert title == "ci-grade regression: greets the user" and "score 1.00 -> 0.50" in message
    title, message = errors[("evals/cases.yaml", "1")]
    assert title == "ci-grade regression: says goodbye" and 'Expected output to contain "bye"' in message
    assert "✗ **Regressed**" in run.summary and "says goodbye" in run.summary


def test_unchanged_configs_pass(workspace: Path, gh: GitHubServer) -> None:
    run = run_action(workspace, gh)
    assert run.code == 0, run.result.err
    assert run.outputs["passed"] == "true" and run.outputs["verdict"] == "passed"
    assert run.outputs["regressions"] == "0" and run.outputs["score-delta"] == "0.0000"
    assert not run.commands("error") and not run.commands("warning")
    assert "✓ **Passed**" in gh.comments[7][0]["body"]
    assert "ci-grade: confirm newly failing tests" not in run.result.out  # confirm 0: no empty log group


def test_a_regression_alone_fails_only_when_the_gate_says_so(workspace: Path, gh: GitHubServer) -> None:
    config = workspace / "evals" / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("q: hello world", "q: hello there"))
    gating = run_action(workspace, gh)
    assert gating.code == 1 and gating.outputs["verdict"] == "regressed" and gating.outputs["failures"] == "0"
    assert [props["line"] for props, _ in gating.commands("error")] == [str(GREETS_LINE)]
    reported = run_action(workspace, gh, fail_on="failures")
    assert reported.code == 0 and reported.outputs["passed"] == "true" and reported.outputs["verdict"] == "regressed"
    assert not reported.commands("error")
    assert [props["line"] for props, _ in reported.commands("warning")] == [str(GREETS_LINE)]


def test_comment_is_found_among_many_and_lookalikes_are_left_alone(workspace: Path, gh: GitHubServer) -> None:
    for i in range(105):
        gh.add_comment(7, f"review comment {i}", "reviewer")
    lookalike = gh.add_comment(7, f"I copied the bot's marker\n{MARKER}", "mallory")
    ours = gh.add_comment(7, f"stale report\n{MARKER}", BOT_LOGIN)
    for i in range(20):
        gh.add_comment(7, f"late comment {i}", "reviewer")
    run = run_action(workspace, gh)
    assert run.code == 0
    assert not gh.calls("POST") and len(gh.comments[7]) == 127
    assert ours["body"].startswith("### ✓ **Passed**") and lookalike["body"].startswith("I copied")
    assert run.outputs["comment-url"] == ours["html_url"]
    assert [r.query.get("page", "1") for r in gh.calls("GET", r"/issues/7/comments$")] == ["1", "2"] * 2  # the running status, then the report


@pytest.mark.parametrize(("change", "code"), [(False, 0), (True, 1)])
def test_read_only_token_degrades_to_a_warning(workspace: Path, gh: GitHubServer, change: bool, code: int) -> None:
    if change:
        regress(workspace)
    gh.fail("POST", r"/issues/7/comments$", 403)
    run = run_action(workspace, gh)
    assert run.code == code  # the gate's verdict, unchanged by the failed comment
    (warning,) = [(p, m) for p, m in run.commands("warning") if "PR comment" in m]
    assert "could not post the PR comment: GitHub answered 403" in warning[1] and "permissions: pull-requests: write" in warning[1]
    assert "\n**ci-grade**: support bot" in run.summary and "could not post the PR comment" in run.summary
    assert run.outputs["comment-url"] == "" and run.outputs["passed"] == ("true" if code == 0 else "false")
    assert gh.comments.get(7) is None
    assert_no_token(run, gh, workspace)


@pytest.mark.parametrize("cause", ["fork", "rate limit", "bad token"])
def test_the_warning_names_why_github_refused(workspace: Path, gh: GitHubServer, cause: str) -> None:
    """A fork's read-only token points at the docs' two-workflow pattern (a permission cannot
    help there); a rate limit says so, with no permission hint; a token GitHub rejects is named."""
    payload = None
    if cause == "bad token":
        payload = {"number": 7, "pull_request": {"number": 7, "head": {"repo": {"full_name": "stranger/demo"}}}, "repository": {"full_name": "octo/demo"}}
        gh.fail("GET", r"/issues/7/comments$", 401, "Bad credentials")
    elif cause == "fork":
        payload = {"number": 7, "pull_request": {"number": 7, "head": {"repo": {"full_name": "stranger/demo"}}}, "repository": {"full_name": "octo/demo"}}
        gh.fail("POST", r"/issues/7/comments$", 403)
    else:
        gh.fail("GET", r"/issues/7/comments$", 403, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", headers={"Retry-After": "600"})
    run = run_action(workspace, gh, payload=payload)
    assert run.code == 0
    (warning,) = [m for _, m in run.commands("warning") if "PR comment" in m]
    if cause == "fork":
        assert "comes from a fork" in warning and "two-workflow pattern" in warning and "permissions:" not in warning
    elif cause == "bad token":
        assert "did not accept the token" in warning and "fork" not in warning
    else:
        assert "secondary rate limit" in warning and "waits at most 60 s" in warning and "permission" not in warning and "fork" not in warning
    assert "\n**ci-grade**: support bot" in run.summary and run.outputs["comment-url"] == ""


def test_api_outage_degrades_to_a_warning(workspace: Path, gh: GitHubServer) -> None:
    gh.fail("GET", r"/comments$", 500, message="Server Error")
    run = run_action(workspace, gh)
    assert run.code == 0
    assert any("could not post the PR comment" in m for _, m in run.commands("warning"))
    assert "✓ **Passed**" in run.summary


def test_push_event_writes_the_summary_and_posts_nothing(workspace: Path, gh: GitHubServer) -> None:
    regress(workspace)
    run = run_action(workspace, gh, event="push", payload={"ref": "refs/heads/main", "before": "a" * 40, "after": "b" * 40})
    assert run.code == 1
    assert gh.requests == []
    assert "\n**ci-grade**: support bot" in run.summary and "says goodbye" in run.summary
    assert run.outputs["comment-url"] == "" and run.outputs["regressions"] == "2"
    assert "not a pull-request event" in run.result.out


def test_an_unreadable_event_payload_is_named_as_the_reason_for_no_comment(workspace: Path, gh: GitHubServer) -> None:
    run = run_action(workspace, gh, env_extra={"GITHUB_EVENT_PATH": str(workspace / "no-such-event.json")})
    assert run.code == 0 and gh.requests == []
    assert any("cannot read the event payload" in m for _, m in run.commands("warning"))
    assert "its event payload could not be read: no PR comment" in run.result.out and "not a pull-request event" not in run.result.out


def test_comment_off_and_missing_token(workspace: Path, gh: GitHubServer) -> None:
    off = run_action(workspace, gh, comment="off")
    assert off.code == 0 and gh.requests == [] and not off.commands("warning")
    no_token = run_action(workspace, gh, github_token="", env_extra={"GITHUB_TOKEN": ""})
    assert no_token.code == 0 and gh.requests == []
    assert any("no GitHub token" in m for _, m in no_token.commands("warning"))


def test_missing_baseline_judges_thresholds_only(workspace: Path, gh: GitHubServer) -> None:
    run = run_action(workspace, gh, baseline="git:HEAD:.ci-grade/nothing.json")
    assert run.code == 0 and run.outputs["score-delta"] == ""
    assert any("not found: .ci-grade/nothing.json is not in HEAD (no baseline committed there yet?); judged by thresholds only" in m for _, m in run.commands("warning"))
    assert "**Baseline not found**: .ci-grade/nothing.json is not in HEAD" in run.summary


def test_config_error_exits_2_and_says_where(workspace: Path, gh: GitHubServer) -> None:
    run_action(workspace, gh)  # an earlier, passing report
    config = workspace / "evals" / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("    threshold: 0.5\n", "    threshold: [0.5\n"))
    run = run_action(workspace, gh)
    assert run.code == 2
    assert "Traceback" not in run.result.err and "promptfooconfig.yaml" in run.result.err
    ((props, _),) = run.commands("error")
    assert props["file"] == "evals/promptfooconfig.yaml" and props.get("line")
    assert "could not run" in run.summary
    (comment,) = gh.comments[7]
    assert "could not run" in comment["body"] and "Passed" not in comment["body"]  # no stale verdict
    assert run.outputs == {}


def test_a_baseline_nested_too_deep_exits_2_at_its_path_in_the_workspace(workspace: Path, gh: GitHubServer) -> None:
    run_action(workspace, gh)  # an earlier, passing report
    (workspace / "evals" / "base.json").write_text('{"results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    run = run_action(workspace, gh, baseline="base.json")
    assert run.code == 2 and "nested too deep" in run.result.err
    ((props, _),) = run.commands("error")
    assert props["file"] == "evals/base.json"
    assert "could not run" in run.summary and "could not run" in gh.comments[7][0]["body"]


def test_an_internal_error_still_reports_that_the_run_could_not_complete(workspace: Path, gh: GitHubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    run_action(workspace, gh)  # an earlier, passing report

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the comparison fell over")

    monkeypatch.setattr("ci_grade.commands.shared.judge", broken)
    run = run_action(workspace, gh)
    assert run.code == 3 and "internal error: RuntimeError: the comparison fell over" in run.result.err
    ((props, message),) = run.commands("error")
    assert props["title"] == "ci-grade could not run" and "internal error: RuntimeError" in message
    assert "could not run" in run.summary
    (comment,) = gh.comments[7]
    assert "could not run" in comment["body"] and "Passed" not in comment["body"]  # no stale verdict


def test_pull_request_target_from_a_fork_is_warned_about(workspace: Path, gh: GitHubServer) -> None:
    payload = {"number": 7, "pull_request": {"number": 7, "head": {"repo": {"full_name": "stranger/demo"}}}, "repository": {"full_name": "octo/demo"}}
    run = run_action(workspace, gh, event="pull_request_target", payload=payload)
    assert any(p.get("title") == "ci-grade: unsafe trigger" for p, _ in run.commands("warning"))


def test_provider_keys_are_masked_first(workspace: Path, gh: GitHubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-maskMe0123456789")
    run = run_action(workspace, gh)
    lines = run.result.out.splitlines()
    assert "::add-mask::sk-maskMe0123456789" in lines[:5]
    assert lines.index(f"::add-mask::{TOKEN}") < lines.index(next(line for line in lines if line.startswith("::group::")))


def test_results_are_handed_to_the_workspace_owner(workspace: Path, gh: GitHubServer) -> None:
    if os.geteuid() != 0:  # not root: files are already ours, nothing to hand over
        run = run_action(workspace, gh)
        assert (workspace / run.outputs["results-path"]).stat().st_uid == os.geteuid()
        return
    for path in [workspace, *workspace.rglob("*")]:
        os.lchown(path, 4321, 4321)
    # as the image's system git config does (Dockerfile): the workspace belongs to another user
    safe = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}
    run = run_action(workspace, gh, env_extra=safe)
    assert run.code == 0
    for name in ("results-path", "junit-path", "html-path"):
        target = workspace / run.outputs[name]
        assert (target.stat().st_uid, target.parent.stat().st_uid) == (4321, 4321)


def test_cache_dir_serves_the_second_run(workspace: Path, gh: GitHubServer, openai_env: LLMServer) -> None:
    openai_env.on_chat("capital", "Paris")
    write(workspace / "evals" / "model.yaml", """
        prompts: ['What is the capital of France?']
        providers: [openai:chat:gpt-4.1-mini]
        tests:
          - description: knows the capital
            assert:
              - {type: icontains, value: paris}
        """)
    first = run_action(workspace, gh, config="model.yaml", baseline="", cache_dir=".cache/replies")
    assert first.code == 0, first.result.err
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1
    assert list((workspace / "evals" / ".cache" / "replies").rglob("*.json"))
    second = run_action(workspace, gh, config="model.yaml", baseline="", cache_dir=".cache/replies")
    assert second.code == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1, "the second run is served from the cache"
    assert "::add-mask::sk-test-0123456789" in second.result.out  # the key is known to the run, and masked
    assert "sk-test-0123456789" not in second.result.out.replace("::add-mask::sk-test-0123456789", "")


def test_summary_keeps_what_the_comment_must_cut(workspace: Path, gh: GitHubServer) -> None:
    """Many failures with long reasons: the comment fits GitHub's 65,536 characters, the summary
    (1 MiB allowed) carries more of the report instead of the comment's cut."""
    cases = "".join(
        f"- description: long case {i}\n  vars: {{q: 'answer {i}'}}\n  assert:\n    - {{type: contains, value: '{'missing phrase ' * 40}{i}'}}\n"
        for i in range(400)
    )
    (workspace / "evals" / "cases.yaml").write_text(cases)
    run = run_action(workspace, gh)
    assert run.code == 1
    (comment,) = gh.comments[7]
    assert len(comment["body"]) <= 65_536
    assert 65_536 < len(run.summary) <= 1_000_000
    assert run.summary.count("long case") > comment["body"].count("long case")


def test_cache_is_on_by_default_and_the_cache_input_turns_it_off(
    workspace: Path, gh: GitHubServer, openai_env: LLMServer, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMPTFOO_CACHE_ENABLED")
    openai_env.on_chat("capital", "Paris")
    write(workspace / "evals" / "model.yaml", """
        prompts: ['What is the capital of France?']
        providers: [openai:chat:gpt-4.1-mini]
        tests:
          - assert: [{type: icontains, value: paris}]
        """)
    assert run_action(workspace, gh, config="model.yaml", baseline="").code == 0
    second = run_action(workspace, gh, config="model.yaml", baseline="")
    assert second.code == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 1, "served from the default cache"
    junit = (workspace / second.outputs["junit-path"]).read_text(encoding="utf-8")
    assert "defined at: evals/model.yaml:4" in junit and 'time="0.000"' in junit, "the config line from the workspace root; cached: no latency"
    assert list((isolated_cache / "ci-grade").rglob("*.json"))
    assert run_action(workspace, gh, config="model.yaml", baseline="", cache="off", cache_dir=".cache/replies").code == 0
    assert len(openai_env.requests_to("/v1/chat/completions")) == 2
    assert not (workspace / "evals" / ".cache").exists()


FORK_SHA = "f00d" * 10


def fork_workflow_run() -> dict:
    """What a `workflow_run` workflow receives after a fork's pull request ran the evals: GitHub
    lists no pull request in it."""
    return {
        "workflow_run": {
            "id": 99, "head_branch": "improve-prompt", "head_sha": FORK_SHA, "pull_requests": [],
            "head_repository": {"full_name": "stranger/demo", "owner": {"login": "stranger"}},
        },
        "repository": {"full_name": "octo/demo"},
    }


def test_a_workflow_run_after_a_forks_pull_request_comments_on_it(workspace: Path, gh: GitHubServer) -> None:
    """The docs' two-workflow pattern: the trusted workflow finds the fork's pull request by the
    triggering run's head (branch and commit), not by anything the run uploaded."""
    gh.add_pull(12, "stranger:improve-prompt", FORK_SHA)
    gh.add_pull(13, "stranger:other-branch", FORK_SHA)
    gh.add_pull(14, "octo:improve-prompt", FORK_SHA)
    run = run_action(workspace, gh, event="workflow_run", payload=fork_workflow_run())
    assert run.code == 0
    (comment,) = gh.comments[12]
    assert comment["body"].startswith("### ") and set(gh.comments) == {12}
    assert run.outputs["comment-url"] == comment["html_url"]
    (listing,) = gh.calls("GET", r"/repos/octo/demo/pulls$")
    assert listing.query["head"] == "stranger:improve-prompt" and listing.query["state"] == "open"


def test_a_workflow_run_whose_pull_request_moved_on_posts_nothing(workspace: Path, gh: GitHubServer) -> None:
    """The pull request's head is a newer commit than the run's: that report is not its report."""
    gh.add_pull(12, "stranger:improve-prompt", "0" * 40)
    run = run_action(workspace, gh, event="workflow_run", payload=fork_workflow_run())
    assert run.code == 0 and not gh.calls("POST") and gh.comments == {}
    assert f"no open pull request has stranger:improve-prompt at {FORK_SHA[:12]} as its head" in run.result.out
    assert "\n**ci-grade**: support bot" in run.summary and run.outputs["comment-url"] == ""


def test_the_pull_request_number_input_names_the_pull_request(workspace: Path, gh: GitHubServer) -> None:
    """An event that belongs to no pull request (here workflow_dispatch) comments where the input says."""
    run = run_action(workspace, gh, event="workflow_dispatch", payload={"inputs": {}}, **{"pull_request_number": "21"})
    assert run.code == 0
    (comment,) = gh.comments[21]
    assert run.outputs["comment-url"] == comment["html_url"]


def test_a_review_event_comments_on_its_pull_request(workspace: Path, gh: GitHubServer) -> None:
    payload = {"review": {"id": 5, "state": "approved"}, "pull_request": {"number": 8, "head": {"repo": {"full_name": "octo/demo"}}}, "repository": {"full_name": "octo/demo"}}
    run = run_action(workspace, gh, event="pull_request_review", payload=payload)
    assert run.code == 0 and list(gh.comments) == [8]


def test_the_docs_fork_comment_workflow_end_to_end(workspace: Path, gh: GitHubServer, tmp_path: Path) -> None:
    """As `evals comment` runs it: no checkout (a workspace holding only the restored baseline and
    the downloaded results of the fork's run), `merge` of those results against the baseline, the
    pull request found by the run's head, `fail-on: never` (the fork's run was the check)."""
    regress(workspace)
    first = run_action(workspace, gh, comment="off")  # the fork's `evals` run, which uploads its results
    assert first.code == 1 and gh.comments == {}
    trusted = tmp_path / "trusted-workspace"
    (trusted / "pr-results").mkdir(parents=True)
    (trusted / "pr-results" / "results.json").write_bytes((workspace / first.outputs["results-path"]).read_bytes())
    (trusted / ".ci-grade").mkdir()
    (trusted / ".ci-grade" / "base-results.json").write_bytes((workspace / ".ci-grade" / "baseline.json").read_bytes())
    gh.add_pull(12, "stranger:improve-prompt", FORK_SHA)
    run = run_action(
        trusted, gh, event="workflow_run", payload=fork_workflow_run(),
        merge="pr-results/results.json", baseline=".ci-grade/base-results.json", fail_on="never", working_directory=".",
        results_path="ci-grade-comment/results.json", junit_path="ci-grade-comment/results.junit.xml",
    )
    assert run.code == 0, run.result.out + run.result.err
    (comment,) = gh.comments[12]
    assert "says goodbye" in comment["body"] and "Regressed" in comment["body"]
    assert run.outputs["comment-url"] == comment["html_url"] and run.outputs["regressions"] == first.outputs["regressions"] != "0"
    assert (trusted / "ci-grade-comment" / "results.json").is_file()


@pytest.mark.parametrize("head", ["stranger/demo", "octo/demo"])
def test_an_issue_comment_on_a_forks_pull_request_is_warned_about(workspace: Path, gh: GitHubServer, head: str) -> None:
    """`issue_comment` jobs have the repository's secrets whatever the pull request; the payload
    cannot tell a fork's, so the API is asked; only a fork's is warned about."""
    gh.add_pull(7, f"{head.split('/')[0]}:feature", "a" * 40)
    payload = {"issue": {"number": 7, "pull_request": {"url": "x"}}, "comment": {"body": "/evals"}, "repository": {"full_name": "octo/demo"}}
    run = run_action(workspace, gh, event="issue_comment", payload=payload)
    assert run.code == 0 and list(gh.comments) == [7]
    warned = [m for p, m in run.commands("warning") if p.get("title") == "ci-grade: unsafe trigger"]
    assert warned == (["running under issue_comment on a fork's pull request: its config can run code with this repository's secrets and write token. Use pull_request (see the docs)."] if head != "octo/demo" else [])
    assert gh.calls("GET", r"/repos/octo/demo/pulls/7$")


def test_the_comment_says_the_run_is_on_then_is_replaced_by_the_report(workspace: Path, gh: GitHubServer) -> None:
    regress(workspace)
    sha = "0123456789abcdef0123456789abcdef01234567"
    payload = {"number": 7, "pull_request": {"number": 7, "head": {"sha": sha, "repo": {"full_name": "octo/demo"}}, "base": {"repo": {"full_name": "octo/demo"}}}, "repository": {"full_name": "octo/demo"}}
    env = {"GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "4242", "GITHUB_SHA": "f" * 40}
    first = run_action(workspace, gh, payload=payload, env_extra=env)
    (post,) = gh.calls("POST", r"/issues/7/comments$")
    running = post.json["body"]
    assert running.startswith("### ○ **Running** · 3 rows planned · started ") and running.endswith(MARKER)
    assert f"commit [0123456](https://github.example/octo/demo/commit/{sha})" in running
    assert "[workflow run](https://github.example/octo/demo/actions/runs/4242)" in running
    (patch,) = gh.calls("PATCH")  # the same comment, now the report
    (comment,) = gh.comments[7]
    assert patch.json["body"] == comment["body"] and comment["body"].startswith("### ✗ **Regressed** · 2/3 passed · 2 regressed\n")
    assert first.outputs["comment-url"] == comment["html_url"]
    # the failing test's line, linked at the head commit (not GITHUB_SHA's merge commit), from the workspace root
    assert f"[cases.yaml:1](https://github.example/octo/demo/blob/{sha}/evals/cases.yaml#L1)" in comment["body"]
    assert "[artifacts](https://github.example/octo/demo/actions/runs/4242#artifacts)" in comment["body"]

    # the next run: the earlier verdict is replaced by the running status first, never left looking current
    run_action(workspace, gh, payload=payload, env_extra=env)
    bodies = [p.json["body"] for p in gh.calls("PATCH")[1:]]
    assert [b.splitlines()[0].split(" · ")[0] for b in bodies] == ["### ○ **Running**", "### ✗ **Regressed**"]
    assert len(gh.comments[7]) == 1


def test_no_running_status_without_a_pull_request(workspace: Path, gh: GitHubServer) -> None:
    run = run_action(workspace, gh, event="push", payload={"ref": "refs/heads/main"})
    assert run.code == 0 and not gh.calls("POST") and not gh.calls("PATCH")
    assert run.result.out.count("is not a pull-request event") == 1


def test_the_base_branch_saves_a_baseline_with_its_history_and_pull_requests_show_the_trend(workspace: Path, gh: GitHubServer) -> None:
    push = {"ref": "refs/heads/main"}
    for commit in ("a", "b"):  # two pushes to main, each adding its run to the baseline's history
        main = run_action(workspace, gh, event="push", payload=push, env_extra={"GITHUB_SHA": commit * 40}, baseline="", save_baseline=".ci-grade/main.json", baseline_history="5")
        assert main.code == 0, main.result.err
    saved = load_baseline(".ci-grade/main.json", workspace / "evals")
    assert saved is not None and len(saved.history) == 2 and all(t.output for t in saved.tests.values())
    regress(workspace)
    pr = run_action(workspace, gh, baseline=".ci-grade/main.json")
    body = gh.comments[7][0]["body"]
    assert pr.code == 1 and "#### Trend: the base branch's last 2 runs, then this one" in body
    assert '  x-axis ["aaaaaaa", "bbbbbbb", "this run"]' in body and "  bar [100.0, 100.0, 66.7]" in body and "```mermaid\nxychart-beta\n" in body


def test_a_configs_own_markdown_output_is_the_gate_report_when_there_is_a_baseline(workspace: Path, gh: GitHubServer) -> None:
    config = workspace / "evals" / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("providers: [echo]", "providers: [echo]\noutputPath: [own.md]"))
    regress(workspace)
    assert run_action(workspace, gh).code == 1
    own = (workspace / "evals" / "own.md").read_text(encoding="utf-8")
    assert "**Regressed**" in own and "says goodbye" in own and not own.startswith("# ci-grade results")
    assert run_action(workspace, gh, baseline="").code == 1  # no baseline: the rows as a table
    assert (workspace / "evals" / "own.md").read_text(encoding="utf-8").startswith("# ci-grade results")
