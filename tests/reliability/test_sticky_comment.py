"""One sticky comment, even under concurrency.

Eight `ci-grade action` processes run at once on one pull request against the GitHub REST
stand-in, which holds their first listings until all eight have asked (so all eight see no
comment and all eight post one: the worst case). They converge on exactly one comment, and
another user's look-alike comment is never touched. Identities: a personal token, the workflow
token, a GitHub App's token with and without `comment-author`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ci_grade.github.comment import marker_for, upsert_comment
from tests.conftest import CliResult, run_cli_process, write
from tests.github_helpers import commands_in, parse_outputs
from tests.servers.github_server import BOT_LOGIN, GitHubServer

TOKEN = "ghs_stickyWorkflowToken01234"
APP_TOKEN = "ghs_appInstallationToken5678"
MARKER = marker_for("ci-grade")
RUNS = 8


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, repository="octo/demo") as server:
        server.add_token(APP_TOKEN, "evals-app[bot]", app=True)
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "promptfooconfig.yaml", """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello}
            assert: [{type: contains, value: hello}]
        """)
    return ws


def action(ws: Path, gh: GitHubServer, run: int, token: str = TOKEN, **inputs: str) -> tuple[CliResult, dict[str, str]]:
    step = ws.parent / f"step-{run}"
    step.mkdir()
    (step / "event.json").write_text(json.dumps({"number": 7, "pull_request": {"number": 7}, "repository": {"full_name": "octo/demo"}}))
    env = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(step / "event.json"),
        "GITHUB_REPOSITORY": "octo/demo", "GITHUB_API_URL": gh.api_url, "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(step / "output.txt"), "INPUT_GITHUB-TOKEN": token,
        "INPUT_RESULTS-PATH": f"out-{run}/results.json", "INPUT_JUNIT-PATH": f"out-{run}/results.xml",
        **{f"INPUT_{name.upper().replace('_', '-')}": value for name, value in inputs.items()},
    }
    result = run_cli_process("action", cwd=ws, env=env)
    return result, parse_outputs(step / "output.txt")


def markers(gh: GitHubServer) -> list[dict]:
    return [c for c in gh.comments.get(7, []) if MARKER in c["body"]]


def test_eight_runs_at_once_leave_one_comment(workspace: Path, gh: GitHubServer) -> None:
    lookalike = gh.add_comment(7, f"quoting the bot:\n{MARKER}", "mallory")
    other_title = gh.add_comment(7, f"the other job\n{marker_for('ci-grade (gpt)')}", BOT_LOGIN)
    gh.hold_listings(RUNS)
    with ThreadPoolExecutor(RUNS) as pool:
        runs = list(pool.map(lambda i: action(workspace, gh, i), range(RUNS)))
    for result, _ in runs:
        assert result.code == 0, result.err
        assert not [m for name, _, m in commands_in(result.out) if name == "warning"], result.out
    assert len(gh.calls("POST", r"/issues/7/comments$")) == RUNS, "every run saw no comment and posted one"
    ours = [c for c in markers(gh) if c["user"]["login"] == BOT_LOGIN]
    assert len(ours) == 1 and ours[0]["body"].startswith("### ")
    assert {outputs["comment-url"] for _, outputs in runs} == {ours[0]["html_url"]}
    assert lookalike in gh.comments[7] and lookalike["body"] == f"quoting the bot:\n{MARKER}"
    assert other_title in gh.comments[7] and other_title["body"].startswith("the other job")
    untouchable = {f"/issues/comments/{lookalike['id']}", f"/issues/comments/{other_title['id']}"}
    assert not [r for r in gh.requests if r.method in ("PATCH", "DELETE") and any(r.path.endswith(p) for p in untouchable)]
    assert len(gh.calls("DELETE")) >= RUNS - 1


def test_runs_racing_an_existing_comment_update_it(workspace: Path, gh: GitHubServer) -> None:
    stale = gh.add_comment(7, f"stale report\n{MARKER}", BOT_LOGIN)
    duplicate = gh.add_comment(7, f"a duplicate from an older version\n{MARKER}", BOT_LOGIN)
    gh.hold_listings(4)
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda i: action(workspace, gh, i), range(4)))
    assert all(result.code == 0 for result, _ in runs)
    assert markers(gh) == [stale] and stale["body"].startswith("### ")
    assert not gh.calls("POST"), "the comment existed: nobody posted"
    assert [r.path for r in gh.calls("DELETE")].count(f"/repos/octo/demo/issues/comments/{duplicate['id']}") == 4  # three of them found it gone


def test_a_github_app_token_converges_and_comment_author_saves_the_round_trip(workspace: Path, gh: GitHubServer) -> None:
    workflow_comment = gh.add_comment(7, f"from the workflow token\n{MARKER}", BOT_LOGIN)
    first, _ = action(workspace, gh, 0, APP_TOKEN)
    second, _ = action(workspace, gh, 1, APP_TOKEN)
    assert first.code == second.code == 0
    apps = [c for c in markers(gh) if c["user"]["login"] == "evals-app[bot]"]
    assert len(apps) == 1 and len(gh.calls("POST")) == 2 and len(gh.calls("DELETE")) == 1, "the second run posted, learned who it is, folded back"
    for run in (first, second):
        (warning,) = [m for name, _, m in commands_in(run.out) if name == "warning"]
        assert "set the input comment-author: evals-app[bot]" in warning
    posts = len(gh.calls("POST"))
    third, outputs = action(workspace, gh, 2, APP_TOKEN, comment_author="evals-app[bot]")
    assert third.code == 0 and len(gh.calls("POST")) == posts, "with comment-author the comment is found and updated"
    assert not [m for name, _, m in commands_in(third.out) if name == "warning"]
    assert outputs["comment-url"] == apps[0]["html_url"]
    assert workflow_comment in gh.comments[7] and workflow_comment["body"].startswith("from the workflow token")


def test_a_personal_token_is_known_by_its_login(workspace: Path, gh: GitHubServer) -> None:
    gh.add_token("ghp_alicePersonalToken0001", "alice")
    bots = gh.add_comment(7, f"from the workflow\n{MARKER}", BOT_LOGIN)
    for run in range(2):
        assert action(workspace, gh, run, "ghp_alicePersonalToken0001")[0].code == 0
    assert [c["user"]["login"] for c in markers(gh)] == [BOT_LOGIN, "alice"] and bots["body"].startswith("from the workflow")


def upsert(gh: GitHubServer, body: str) -> object:
    return upsert_comment(api_url=gh.api_url, token=TOKEN, repository="octo/demo", number=7, marker=MARKER, body=body)


def test_deleting_a_comment_already_deleted_is_not_a_failure(gh: GitHubServer) -> None:
    keep = gh.add_comment(7, f"one\n{MARKER}", BOT_LOGIN)
    gh.add_comment(7, f"two\n{MARKER}", BOT_LOGIN)
    gh.add_comment(7, f"three\n{MARKER}", BOT_LOGIN)
    gh.fail("DELETE", r"/issues/comments/", 404, message="Not Found", times=1)  # another run was first
    gh.fail("DELETE", r"/issues/comments/", 502, message="Bad gateway", times=1)  # retried: DELETE is idempotent
    posted = upsert(gh, "report")
    assert posted.id == keep["id"] and posted.created is False
    assert len(gh.calls("DELETE")) == 3
    assert [c["id"] for c in markers(gh)] == [keep["id"], keep["id"] + 1], "a 404 means another run deleted it: not retried"


def test_an_oldest_comment_deleted_by_hand_mid_run_is_replaced(gh: GitHubServer) -> None:
    gone = gh.add_comment(7, f"old\n{MARKER}", BOT_LOGIN)
    gh.fail("PATCH", rf"/issues/comments/{gone['id']}$", 404, message="Not Found")
    posted = upsert(gh, "report")
    assert posted.created is True and [c["body"] for c in markers(gh)][-1] == f"report\n{MARKER}"
