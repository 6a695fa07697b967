"""The sticky PR comment through the real PyGithub client against the loopback REST stand-in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ci_grade.errors import GitHubError
from ci_grade.github.comment import COMMENT_LIMIT, comment_body, marker_for, upsert_comment
from tests.servers.github_server import BOT_LOGIN, GitHubServer

MARKER = marker_for("ci-grade")


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer() as server:
        yield server


def upsert(server: GitHubServer, body: str, *, number: int = 7, marker: str = MARKER, token: str | None = None) -> object:
    return upsert_comment(api_url=server.api_url, token=token or server.token, repository=server.repository, number=number, marker=marker, body=body)


def test_creates_then_updates_the_same_comment(gh: GitHubServer) -> None:
    first = upsert(gh, "report one")
    assert first.created is True and first.url.endswith(f"#issuecomment-{first.id}")
    second = upsert(gh, "report two")
    assert second.created is False and second.id == first.id
    (comment,) = gh.comments[7]
    assert comment["body"] == f"report two\n{MARKER}" and comment["user"]["login"] == BOT_LOGIN
    assert len(gh.calls("POST")) == 1
    (patch,) = gh.calls("PATCH")
    assert patch.path == f"/repos/octo/demo/issues/comments/{first.id}"
    assert all(r.headers["Authorization"] == f"token {gh.token}" for r in gh.requests)


def test_finds_its_comment_beyond_the_first_page_and_ignores_lookalikes(gh: GitHubServer) -> None:
    for i in range(120):
        gh.add_comment(7, f"chatter {i}", "reviewer")
    lookalike_user = gh.add_comment(7, f"quoting the bot:\n{MARKER}", "mallory")
    other_title = gh.add_comment(7, f"another job's report\n{marker_for('ci-grade (matrix: gpt)')}", BOT_LOGIN)
    ours = gh.add_comment(7, f"old report\n{MARKER}", BOT_LOGIN)
    for i in range(30):
        gh.add_comment(7, f"more chatter {i}", "reviewer")
    posted = upsert(gh, "new report")
    assert posted.created is False and posted.id == ours["id"]
    assert ours["body"] == f"new report\n{MARKER}"
    assert lookalike_user["body"] == f"quoting the bot:\n{MARKER}"
    assert other_title["body"].startswith("another job's report")
    pages = [r.query.get("page", "1") for r in gh.calls("GET", r"/issues/7/comments$")]
    assert pages == ["1", "2"]
    assert not gh.calls("POST")


def test_a_personal_token_matches_its_own_login_not_the_bot(gh: GitHubServer) -> None:
    gh.user_login = "alice"
    bot_comment = gh.add_comment(7, f"from the workflow token\n{MARKER}", BOT_LOGIN)
    first = upsert(gh, "from alice")
    assert first.created is True and first.id != bot_comment["id"]
    assert gh.comments[7][-1]["user"]["login"] == "alice"
    assert upsert(gh, "from alice again").id == first.id
    assert len(gh.calls("GET", "^/user$")) == 2 and len(gh.calls("POST")) == 1


def test_each_title_keeps_its_own_comment(gh: GitHubServer) -> None:
    a = upsert(gh, "job a", marker=marker_for("evals (gpt)"))
    b = upsert(gh, "job b", marker=marker_for("evals (claude)"))
    assert a.id != b.id and len(gh.comments[7]) == 2
    assert upsert(gh, "job a again", marker=marker_for("evals (gpt)")).id == a.id


def test_read_only_token_is_a_forbidden_failure(gh: GitHubServer) -> None:
    gh.fail("POST", r"/comments$", 403)
    with pytest.raises(GitHubError) as caught:
        upsert(gh, "report")
    assert caught.value.forbidden and caught.value.status == 403
    assert "Resource not accessible by integration" in str(caught.value)
    assert gh.token not in str(caught.value)
    assert gh.comments.get(7) is None


def test_a_failed_create_is_not_retried(gh: GitHubServer) -> None:
    gh.fail("POST", r"/comments$", 502, message="Bad gateway", times=1)
    with pytest.raises(GitHubError) as caught:
        upsert(gh, "report")
    assert caught.value.forbidden is False
    assert len(gh.calls("POST")) == 1  # a retried POST could leave two comments


def test_reads_and_edits_are_retried_after_server_errors(gh: GitHubServer) -> None:
    upsert(gh, "first")
    gh.fail("GET", r"/comments$", 500, message="Server Error", times=1)
    gh.fail("PATCH", r"/issues/comments/", 503, message="Unavailable", times=1)
    posted = upsert(gh, "second")
    assert posted.created is False and gh.comments[7][0]["body"].startswith("second")
    assert len(gh.calls("PATCH")) == 2


def test_bad_credentials_and_unreachable_servers_fail_cleanly(gh: GitHubServer) -> None:
    with pytest.raises(GitHubError) as caught:
        upsert(gh, "report", token="ghp_wrongToken123")
    assert caught.value.status == 401 and "Bad credentials" in str(caught.value)
    with pytest.raises(GitHubError) as unreachable:
        upsert_comment(api_url="http://127.0.0.1:9", token="x" * 10, repository="octo/demo", number=7, marker=MARKER, body="r")
    assert unreachable.value.status is None and "cannot reach GitHub" in str(unreachable.value)


def test_comment_body_fits_the_limit_and_keeps_one_marker() -> None:
    body = comment_body(f"{MARKER}\nheader\n" + "x" * 100_000 + f"\n{MARKER}", MARKER)
    assert len(body) <= COMMENT_LIMIT
    assert body.count(MARKER) == 1 and body.endswith(MARKER)
    assert "cut to fit GitHub's size limit" in body
    assert comment_body("short", MARKER) == f"short\n{MARKER}"


def test_oversized_bodies_are_accepted_by_the_api(gh: GitHubServer) -> None:
    posted = upsert(gh, "y" * 70_000)
    assert posted.created and len(gh.comments[7][0]["body"]) <= COMMENT_LIMIT


def test_marker_is_a_hidden_single_line_comment() -> None:
    marker = marker_for("a --> <b> title")
    assert marker.startswith("<!-- ") and marker.endswith(" -->")
    assert marker.count("--") == 2 and "<b>" not in marker
    assert marker_for("x") != marker_for("y") and marker_for("x") == marker_for("x")


def test_the_stand_in_serves_repository_and_pull_request_reads(gh: GitHubServer) -> None:
    """What a non-lazy PyGithub client reads before commenting, so the stand-in stays faithful."""
    from github import Auth, BadCredentialsException, Github, UnknownObjectException

    client = Github(base_url=gh.api_url, auth=Auth.Token(gh.token), retry=None)
    repo = client.get_repo("octo/demo")
    assert repo.full_name == "octo/demo" and repo.owner.login == "octo"
    pull = repo.get_pull(7)
    assert pull.number == 7
    issue = repo.get_issue(7)
    assert issue.number == 7 and issue.pull_request is not None
    comment = issue.create_comment("hi")
    assert comment.user.login == BOT_LOGIN
    assert [c.body for c in issue.get_comments()] == ["hi"]
    assert [r.path for r in gh.requests[:3]] == ["/repos/octo/demo", "/repos/octo/demo/pulls/7", "/repos/octo/demo/issues/7"]
    with pytest.raises(BadCredentialsException):
        Github(base_url=gh.api_url, auth=Auth.Token("wrong-token"), retry=None).get_repo("octo/demo")
    with pytest.raises(UnknownObjectException):
        client.get_repo("octo/other")


def test_comment_body_drops_markers_already_in_the_report_and_cuts_exactly_to_the_limit() -> None:
    assert comment_body(f"report {MARKER} text\n\n", MARKER) == f"report  text\n{MARKER}"
    note = "\n\n_This comment was cut to fit GitHub's size limit; the job summary has the full report._\n"
    limit = 500
    body = comment_body("y" * 1000, MARKER, limit)
    assert body == "y" * (limit - len(MARKER) - 1 - len(note)) + note + "\n" + MARKER
    assert len(body) == limit
    fits = "z" * (limit - len(MARKER) - 1)
    assert comment_body(fits, MARKER, limit) == f"{fits}\n{MARKER}"


def test_the_assumed_author_is_not_reported_back_and_pygithub_logs_only_warnings(gh: GitHubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    monkeypatch.delenv("CI_GRADE_RETRY_BASE_SECONDS", raising=False)  # the default backoff applies
    root = logging.getLogger().level
    posted = upsert(gh, "report")
    assert posted.created is True and posted.author is None
    assert logging.getLogger("github").level == logging.WARNING and logging.getLogger().level == root


def test_a_comment_that_cannot_be_edited_is_replaced_and_a_vanished_duplicate_is_fine(gh: GitHubServer) -> None:
    gone = gh.add_comment(7, f"old\n{MARKER}", BOT_LOGIN)
    gh.fail("PATCH", rf"/issues/comments/{gone['id']}$", 404, message="Not Found")
    gh.fail("DELETE", r"/issues/comments/", 404, message="Not Found", times=1)  # another run deleted it first
    posted = upsert(gh, "report")
    assert posted.created is True and posted.id != gone["id"]
    assert [c["body"] for c in gh.comments[7] if MARKER in c["body"]][-1] == f"report\n{MARKER}"


def test_a_malformed_reply_from_github_is_a_github_error_naming_what_broke(gh: GitHubServer) -> None:
    """A 200 whose body is not JSON (a proxy's HTML page, say) is GitHub's failure, named with the
    error it caused (PyGithub keeps the text, and reading comments out of it fails), never a crash."""
    gh.fail("GET", r"/issues/7/comments$", 200, raw=b"<html>gateway</html>", times=1)
    with pytest.raises(GitHubError) as caught:
        upsert(gh, "report")
    assert str(caught.value).startswith("unexpected reply from GitHub: TypeError: string indices must be integers")
    assert caught.value.status is None and gh.comments.get(7) is None
