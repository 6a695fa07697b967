"""The PR comment under GitHub's rate limits and behind a private CA (GitHub Enterprise Server),
through the real PyGithub client against the loopback REST stand-in."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from ci_grade.errors import GitHubError
from ci_grade.github.client import MAX_WAIT_SECONDS
from ci_grade.github.comment import marker_for, upsert_comment
from tests.servers.github_server import BOT_LOGIN, GitHubServer

MARKER = marker_for("ci-grade")
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."


@pytest.fixture
def gh() -> Iterator[GitHubServer]:
    with GitHubServer() as server:
        yield server


def upsert(server: GitHubServer, body: str = "report") -> object:
    return upsert_comment(api_url=server.api_url, token=server.token, repository=server.repository, number=7, marker=MARKER, body=body)


def test_a_rate_limit_asking_for_more_than_the_longest_wait_gives_up_at_once(gh: GitHubServer) -> None:
    """`Retry-After: 3600` (GitHub's secondary limits send such waits): no hour-long sleep (urllib3
    would honour up to six hours); a rate-limit error at once, which is not a permission problem."""
    gh.fail("GET", r"/issues/7/comments$", 403, SECONDARY, headers={"Retry-After": "3600"})
    started = time.monotonic()
    with pytest.raises(GitHubError) as caught:
        upsert(gh)
    assert time.monotonic() - started < 10
    error = caught.value
    assert error.rate_limited and not error.forbidden and error.status == 403
    assert "secondary rate limit" in str(error) and f"waits at most {MAX_WAIT_SECONDS:.0f} s" in str(error) and "3600 s" in str(error)
    assert len(gh.calls("GET", r"/issues/7/comments$")) == 1 and not gh.calls("POST")


def test_a_rate_limited_edit_never_posts_a_second_comment(gh: GitHubServer) -> None:
    """Our comment exists; editing it is refused for a rate limit. That says nothing about whose
    comment it is: no new comment is posted (and deleted), the run reports the rate limit."""
    ours = gh.add_comment(7, f"old report\n{MARKER}", BOT_LOGIN)
    gh.fail("PATCH", r"/issues/comments/", 403, SECONDARY, headers={"Retry-After": "3600"})
    with pytest.raises(GitHubError) as caught:
        upsert(gh, "new report")
    assert caught.value.rate_limited
    assert not gh.calls("POST") and not gh.calls("DELETE")
    assert gh.comments[7] == [ours] and ours["body"] == f"old report\n{MARKER}"


def test_a_short_rate_limit_is_waited_out_and_a_refused_create_is_retried(gh: GitHubServer) -> None:
    """A 429 with `Retry-After: 1` on the create: GitHub created nothing, so the POST is sent
    again after the wait; exactly one comment results."""
    gh.fail("POST", r"/issues/7/comments$", 429, "Too many requests", times=1, headers={"Retry-After": "1"})
    posted = upsert(gh)
    assert posted.created is True  # type: ignore[attr-defined]
    assert len(gh.calls("POST")) == 2 and len(gh.comments[7]) == 1


def test_a_rate_limit_that_outlasts_the_retries_is_reported_as_one(gh: GitHubServer) -> None:
    """Every listing refused for a rate limit with short waits: after the retries, a rate-limit
    error naming the status (not "cannot reach GitHub")."""
    gh.fail("GET", r"/issues/7/comments$", 429, "Too many requests", headers={"Retry-After": "0"})
    with pytest.raises(GitHubError) as caught:
        upsert(gh)
    assert caught.value.rate_limited and caught.value.status == 429 and "cannot reach" not in str(caught.value)
    assert len(gh.calls("GET", r"/issues/7/comments$")) == 4  # the first try and 3 retries


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_github_enterprise_behind_a_private_ca_is_trusted_through_ssl_cert_file(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CA that model calls trust through SSL_CERT_FILE is trusted for the comment too; without
    it the error says the certificate was refused and what to set."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    with GitHubServer(tls=context) as server:
        assert server.api_url.startswith("https://")
        with pytest.raises(GitHubError) as caught:
            upsert(server)
        assert "TLS certificate was refused" in str(caught.value) and "SSL_CERT_FILE" in str(caught.value)
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        posted = upsert(server)
        assert posted.created is True  # type: ignore[attr-defined]
        assert len(server.comments[7]) == 1


def test_a_create_whose_reply_is_lost_is_never_sent_again(gh: GitHubServer) -> None:
    """GitHub created the comment but the reply never came back (a dropped connection): sending
    the POST again could post a second comment, so the run reports the failure instead."""
    gh.lose_replies("POST", r"/issues/7/comments$")
    with pytest.raises(GitHubError) as caught:
        upsert(gh)
    assert "cannot reach GitHub" in str(caught.value) and not caught.value.rate_limited
    assert len(gh.calls("POST")) == 1 and len(gh.comments[7]) == 1


def test_a_lost_reply_to_a_read_is_asked_again(gh: GitHubServer) -> None:
    """Reads are safe to repeat: a listing whose reply was lost is asked again and the comment is
    posted once."""
    gh.lose_replies("GET", r"/issues/7/comments$")
    posted = upsert(gh)
    assert posted.created is True  # type: ignore[attr-defined]
    assert len(gh.calls("GET", r"/issues/7/comments$")) >= 2 and len(gh.comments[7]) == 1


def rate_limit_headers(reset_in: float) -> dict[str, str]:
    """A primary rate limit's headers without `Retry-After`: no requests left until the reset."""
    return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time() + reset_in))}


def test_a_429_without_retry_after_waits_for_the_reset_then_goes_on(gh: GitHubServer) -> None:
    """GitHub answers a rate limit with 403 or 429; with no `Retry-After` and no requests left,
    the reset time says when to try again (urllib3 alone gives a 429 without the header up)."""
    gh.fail("GET", r"/issues/7/comments$", 429, "API rate limit exceeded", times=1, headers=rate_limit_headers(1))
    gh.fail("POST", r"/issues/7/comments$", 429, "API rate limit exceeded", times=1, headers=rate_limit_headers(1))
    started = time.monotonic()
    posted = upsert(gh)
    assert posted.created is True  # type: ignore[attr-defined]
    assert len(gh.calls("POST")) == 2 and len(gh.comments[7]) == 1  # the refused create sent again, once
    assert time.monotonic() - started >= 1.0  # each waited until after the reset, not at once


def test_a_429_whose_reset_is_far_off_gives_up_at_once(gh: GitHubServer) -> None:
    gh.fail("GET", r"/issues/7/comments$", 429, "API rate limit exceeded", headers=rate_limit_headers(3600))
    started = time.monotonic()
    with pytest.raises(GitHubError) as caught:
        upsert(gh)
    assert time.monotonic() - started < 10
    assert caught.value.rate_limited and caught.value.status == 429 and f"waits at most {MAX_WAIT_SECONDS:.0f} s" in str(caught.value)
    assert len(gh.calls("GET", r"/issues/7/comments$")) == 1 and not gh.calls("POST")
